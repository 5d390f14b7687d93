"""The mechanics every experiment shares, written once: the grid of points, warm-up and
repeats, poisoning and byte verification outside the timed region, and the frames."""

from __future__ import annotations

import dataclasses
import itertools
from contextlib import ExitStack
from typing import Iterable, Iterator

import numpy as np
import pandas as pd

from ..closing import Closing
from ..errors import BadParameter, VerificationFailed
from ..memkinds import HostBuffer, fill_random
from ..records import TransferRecord
from ..runtimes.base import device_alloc
from ..schema import TRANSFERS, frame, transfer_row
from ..vocab import Direction

__all__ = ["grid", "transfer", "repeat_transfers", "transfers_frame", "POISON", "VERIFY_MODES",
           "DeviceBuffers"]

POISON = 0xA5                          #: written over the destination before a verified transfer
VERIFY_MODES = ("all", "first", "none")


def grid(**axes: Iterable) -> Iterator[dict]:
    """The cartesian product of the axes, as dicts, in the order given."""
    names = list(axes)
    for values in itertools.product(*(list(axes[n]) for n in names)):
        yield dict(zip(names, values))


def _poison(rt, buf: HostBuffer, dev_ptr: int, direction: Direction, nbytes: int, offset: int) -> None:
    if direction == Direction.H2D:
        rt.fill_device(dev_ptr, POISON, nbytes)
    else:
        buf.array[offset:offset + nbytes] = POISON


def _check(rt, rec: TransferRecord, buf: HostBuffer, dev_ptr: int, nbytes: int, offset: int,
           device_content: np.ndarray | None) -> bool:
    host = buf.array[offset:offset + nbytes]
    if rec.direction == Direction.H2D:
        ok = np.array_equal(rt.read_device(dev_ptr, nbytes), host)
    else:
        ok = np.array_equal(host, device_content[:nbytes])
    if not ok:
        raise VerificationFailed(
            f"{rec.policy}: {rec.direction} of {nbytes} bytes ({rec.kind}, path {rec.path}) "
            "left the destination different from the source")
    return True


def transfer(policy, buf: HostBuffer, dev_ptr: int, direction: Direction, *, verify: bool,
             device_content: np.ndarray | None = None, nbytes: int | None = None,
             offset: int = 0) -> TransferRecord:
    """One transfer through ``policy``; with ``verify`` the destination is poisoned before
    and compared after, both outside the timed region. A verified D2H needs
    ``device_content``: what the device buffer holds."""
    direction = Direction(direction)
    if verify and direction == Direction.D2H and device_content is None:
        raise ValueError("a verified D2H transfer needs device_content")
    n = buf.nbytes - offset if nbytes is None else nbytes
    if verify:
        _poison(policy.rt, buf, dev_ptr, direction, n, offset)
    rec = policy.transfer(buf, dev_ptr, direction, nbytes=n, offset=offset)
    if verify and rec.moved:
        rec = dataclasses.replace(rec, verified=_check(policy.rt, rec, buf, dev_ptr, n, offset, device_content))
    return rec


class DeviceBuffers(Closing):
    """Device allocations filled with a known random pattern (the source of D2H transfers).

    The pattern is kept on the host so that a D2H destination can be compared with it.
    """

    def __init__(self, rt) -> None:
        self.rt = rt
        self._stack = ExitStack()
        self.content: dict[int, np.ndarray] = {}

    def get(self, nbytes: int, seed: int = 7) -> int:
        """A device allocation of ``nbytes`` holding a random pattern."""
        ptr = self._stack.enter_context(device_alloc(self.rt, nbytes))
        pattern = np.empty(nbytes, dtype=np.uint8)
        fill_random(pattern, seed)
        self.rt.write_device(ptr, pattern)
        self.content[ptr] = pattern
        return ptr

    def refresh(self, ptr: int) -> None:
        """Write the pattern again (after an H2D overwrote it)."""
        self.rt.write_device(ptr, self.content[ptr])

    def close(self) -> None:
        self._stack.close()


def repeat_transfers(policy, buf: HostBuffer, dev: DeviceBuffers, dev_ptr: int, direction: Direction, *,
                     repeats: int, warmup: int, verify: str = "first",
                     nbytes: int | None = None, offset: int = 0) -> list[tuple[int, TransferRecord]]:
    """``warmup`` untimed-kept transfers, then ``repeats`` kept ones as (repeat, record).

    ``verify``: "all" checks every kept transfer, "first" the first one, "none" none.
    """
    if verify not in VERIFY_MODES:
        raise BadParameter(f"verify must be one of {', '.join(VERIFY_MODES)}, got {verify!r}")
    out = []
    for i in range(-warmup, repeats):
        check = verify == "all" or (verify == "first" and i == 0)
        if check and Direction(direction) == Direction.D2H:
            dev.refresh(dev_ptr)
        rec = transfer(policy, buf, dev_ptr, direction, verify=check, device_content=dev.content.get(dev_ptr),
                       nbytes=nbytes, offset=offset)
        if i >= 0:
            out.append((i, rec))
    return out


def transfers_frame(rows: Iterable[tuple[TransferRecord, dict]], platform: str) -> pd.DataFrame:
    """(record, context) pairs -> a TRANSFERS frame."""
    return frame((transfer_row(r, platform=platform, **ctx) for r, ctx in rows), TRANSFERS)
