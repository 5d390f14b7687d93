"""The mechanics every experiment shares, written once: ``Sweep``, the one driver of a sweep's
order (shuffled rounds, warm-up, independent repeats, an engine plan's rounds), its poisoning
and byte verification outside the timed region and its rows; the grid of points, device buffers
with a known pattern, one waited transfer, and the frames."""

from __future__ import annotations

import dataclasses
import itertools
import random
from contextlib import ExitStack, nullcontext
from typing import Iterable, Iterator, Sequence

import numpy as np
import pandas as pd

from .. import progress
from ..closing import Closing
from ..errors import BadParameter, VerificationFailed
from ..memkinds import POISON, HostBuffer, fill_random
from ..records import TransferRecord
from ..schema import TRANSFERS, frame, transfer_row
from ..osinfo import find_vma
from ..vocab import Direction, Relock

__all__ = ["grid", "rounds", "Sweep", "checks", "poison", "Poisoned", "transfer", "transfers_frame",
           "POISON", "VERIFY_MODES", "DeviceBuffers", "SEED"]

VERIFY_MODES = ("all", "first", "none")
SEED = 20201019   #: the shuffles of every experiment start from this seed (aomp#160 was opened in Oct 2020)


def grid(**axes: Iterable) -> Iterator[dict]:
    """The cartesian product of the axes, as dicts, in the order given."""
    names = list(axes)
    for values in itertools.product(*(list(axes[n]) for n in names)):
        yield dict(zip(names, values))


def rounds(points: Sequence, *, repeats: int, warmup: int = 0, seed: int = SEED,
           label: str = "") -> Iterator[tuple[int, object]]:
    """(repeat, point) for ``warmup`` untimed rounds (repeat < 0) then ``repeats`` kept ones;
    every round visits every point once, in a freshly shuffled order, so that drift over the
    run (clocks, caches, other tenants) spreads over all points instead of biasing the last."""
    return Sweep(repeats=repeats, warmup=warmup, seed=seed, label=label).rounds(points)


class Sweep:
    """The one driver of an experiment's sweep: its order, its verification and its rows, so
    that an experiment states only what it measures at a point. One seeded generator serves
    every shuffle of the sweep, in the order the experiment asks for them.

    Order:
    - ``rounds(points)``: (repeat, point): ``warmup`` untimed rounds (repeat < 0), then
      ``repeats`` kept ones, every round all points in a freshly shuffled order;
    - ``independent(items)``: (repeat, items freshly shuffled) per independent repeat (a fresh
      engine plan, process or buffer set each), ``repeats`` of them;
    - ``in_plan(points, rounds)``: the visits planned inside one engine plan: (-1, point) once
      each in the given order (the warm-up), then ``rounds`` shuffled rounds;
    - ``in_order()``: the repeats of one point in order, warm-up first (repeat < 0);
    - ``shuffled(items)``: one fresh shuffled copy.

    Verification (outside the timed region): ``checks(repeat)`` says whether ``verify``
    ("all", "first", "none") checks that repeat; ``poisoned(...)`` poisons a destination for it.

    Rows: ``add(repeat, *rows)`` keeps rows but the warm-up's; a dict row is given the repeat
    (its column named ``key``; None: none) and ``platform``, a (record, context) pair of a
    transfer the repeat in its context; ``frame(table)`` and ``transfers()`` make the frame.
    An engine plan marks its warm-up ops ``warmup=True``; ``plan_rows(executed)`` drops them.
    """

    def __init__(self, *, repeats: int = 1, warmup: int = 0, verify: str = "none", seed: int = SEED,
                 label: str = "", platform: str = "", key: str | None = "repeat") -> None:
        if repeats < 1 or warmup < 0:
            raise BadParameter(f"repeats must be at least 1 and warm-up at least 0, got {repeats} and {warmup}")
        if verify not in VERIFY_MODES:
            raise BadParameter(f"verify must be one of {', '.join(VERIFY_MODES)}, got {verify!r}")
        self.repeats, self.warmup, self.verify, self.seed, self.label = repeats, warmup, verify, seed, label
        self.platform, self.key = platform, key
        self.rng = random.Random(seed)
        self.rows: list = []

    # -- order -----------------------------------------------------------------------------
    def shuffled(self, items: Iterable, *, seed: int | None = None) -> list:
        """``items`` in a fresh shuffled order (from ``seed``'s own generator where given)."""
        out = list(items)
        (self.rng if seed is None else random.Random(seed)).shuffle(out)
        return out

    def rounds(self, points: Sequence) -> Iterator[tuple[int, object]]:
        order = list(points)
        total = self.warmup + self.repeats
        for n, r in enumerate(range(-self.warmup, self.repeats), 1):
            self.rng.shuffle(order)
            for p in order:
                yield r, p
            self._step(n, total)

    def independent(self, items: Iterable) -> Iterator[tuple[int, list]]:
        for r in range(self.repeats):
            yield r, self.shuffled(items)
            self._step(r + 1, self.repeats)

    def in_order(self) -> range:
        return range(-self.warmup, self.repeats)

    def in_plan(self, points: Sequence, rounds: int, rounds_of=None) -> Iterator[tuple[int, object]]:
        """(-1, point) for every point (the warm-up), then ``rounds`` rounds of (round, point) in
        a shuffled order; ``rounds_of(point)``: fewer rounds for that point."""
        order = list(points)
        for p in order:
            yield -1, p
        for i in range(rounds):
            self.rng.shuffle(order)
            for p in order:
                if rounds_of is None or i < rounds_of(p):
                    yield i, p

    def _step(self, n: int, total: int) -> None:
        if self.label:
            progress.step(self.label, n, total)

    # -- verification ----------------------------------------------------------------------
    def checks(self, repeat: int) -> bool:
        """Whether ``repeat``'s transfers are byte-checked."""
        return checks(self.verify, repeat)

    def poisoned(self, rt, direction: Direction, host: np.ndarray, dev_ptr: int, nbytes: int, repeat: int, *,
                 want: np.ndarray | None = None) -> "Poisoned":
        """The destination of a coming transfer, poisoned now where ``repeat`` is checked."""
        return Poisoned(rt, direction, host, dev_ptr, nbytes, on=self.checks(repeat), want=want)

    # -- rows ------------------------------------------------------------------------------
    def add(self, repeat: int | None, *rows) -> None:
        """Keep ``rows`` of ``repeat`` (dropped in the warm-up); ``repeat`` None: rows outside
        the rounds (a map before them, an unmap after), kept as they are."""
        if repeat is None:
            self.rows.extend(rows)
            return
        if repeat < 0:
            return
        for row in rows:
            if isinstance(row, tuple):      # (TransferRecord, context)
                rec, ctx = row
                row = (rec, {self.key: repeat, **ctx} if self.key else ctx)
            else:
                row = {**({self.key: repeat} if self.key else {}), **row,
                       **({"platform": self.platform} if self.platform else {})}
            self.rows.append(row)

    def plan_rows(self, executed) -> pd.DataFrame:
        """An executed engine plan's TRANSFERS rows without its warm-up ops."""
        return executed.transfers(keep=lambda i, c: not c.get("warmup")).drop(columns=["warmup"])

    def frame(self, table: dict) -> pd.DataFrame:
        return frame(self.rows, table)

    def transfers(self) -> pd.DataFrame:
        """The kept (record, context) pairs as a TRANSFERS frame."""
        return transfers_frame(self.rows, self.platform)


def checks(verify: str, repeat: int) -> bool:
    """Whether the transfer of ``repeat`` is byte-checked under ``verify``."""
    if verify not in VERIFY_MODES:
        raise BadParameter(f"verify must be one of {', '.join(VERIFY_MODES)}, got {verify!r}")
    return verify == "all" or (verify == "first" and repeat == 0)


def poison(rt, direction: Direction, host: np.ndarray, dev_ptr: int, nbytes: int) -> None:
    """Overwrite the destination of a coming transfer with POISON (outside the timed region)."""
    if Direction(direction) == Direction.H2D:
        rt.fill_device(dev_ptr, POISON, nbytes)
    else:
        host[:nbytes] = POISON


def page_locked(rt, ptr: int) -> bool:
    """Whether the page at ``ptr`` is locked now: Linux's VmFlags where mlock is the runtime
    (read directly, so it adds no call to the trace), the runtime's own query elsewhere."""
    if rt.relock == Relock.UNCOUNTED:
        vma = find_vma(ptr)
        return bool(vma is not None and vma.locked)
    return rt.query(ptr).locked


class Poisoned:
    """The destination of one coming transfer, poisoned now (``on``) and compared with its
    source by ``verdict`` after it, both outside the timed region. ``host`` is the host side;
    a D2H's source is ``want``, what the device held (``DeviceBuffers.content``)."""

    def __init__(self, rt, direction: Direction, host: np.ndarray, dev_ptr: int, nbytes: int, *, on: bool,
                 want: np.ndarray | None = None) -> None:
        self.rt, self.direction, self.host, self.dev_ptr, self.nbytes = rt, Direction(direction), host, dev_ptr, nbytes
        self.on, self.want = on, want
        if on:
            poison(rt, self.direction, host, dev_ptr, nbytes)

    def verdict(self, what: str, *, want: np.ndarray | None = None) -> bool | None:
        """True once the destination equals the source (``want``: a D2H's source known only
        now, e.g. a kernel's output), None unchecked; VerificationFailed naming ``what`` if it
        differs."""
        if not self.on:
            return None
        n, host = self.nbytes, self.host[:self.nbytes]
        if self.direction == Direction.H2D:
            got, want = self.rt.read_device(self.dev_ptr, n), host
        else:
            got, want = host, (self.want if want is None else want)[:n]
        if not np.array_equal(got, want):
            raise VerificationFailed(f"{what} left the destination different from the source")
        return True


#: the patterns DeviceBuffers wrote, by (nbytes, seed): made once per process (a fill of a GiB
#: costs about half a second, and every repeat allocates its device buffers anew); read-only
_PATTERNS: dict[tuple[int, int], np.ndarray] = {}
_PATTERNS_MAX_NBYTES = 2 << 30


def _pattern(nbytes: int, seed: int) -> np.ndarray:
    got = _PATTERNS.get((nbytes, seed))
    if got is None:
        while _PATTERNS and sum(a.nbytes for a in _PATTERNS.values()) + nbytes > _PATTERNS_MAX_NBYTES:
            del _PATTERNS[next(iter(_PATTERNS))]   # the oldest first
        got = np.empty(nbytes, dtype=np.uint8)
        fill_random(got, seed)
        got.flags.writeable = False
        _PATTERNS[(nbytes, seed)] = got
    return got


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
        ptr = self._stack.enter_context(self.rt.device_buffer(nbytes)).ptr
        pattern = _pattern(nbytes, seed)
        self.rt.write_device(ptr, pattern)
        self.content[ptr] = pattern
        return ptr

    def refresh(self, ptr: int) -> None:
        """Write the pattern again (after an H2D overwrote it)."""
        self.rt.write_device(ptr, self.content[ptr])

    def close(self) -> None:
        self._stack.close()


def _waited(rec: TransferRecord, sync: TransferRecord) -> TransferRecord:
    """A transfer with the wait of the ``sync`` that completed it folded in."""
    if sync.wait_ns == 0:
        return rec
    return dataclasses.replace(rec, wait_ns=rec.wait_ns + sync.wait_ns, end_ns=sync.end_ns,
                               calls=rec.calls + sync.calls)


def transfer(policy, buf: HostBuffer, dev: DeviceBuffers, dev_ptr: int, direction: Direction, *,
             verify: bool, nbytes: int | None = None, offset: int = 0, around=None) -> TransferRecord:
    """One transfer through ``policy``, waited for: an asynchronous policy's ``sync`` follows
    and its wait is folded into the record, so every policy's time covers the whole copy. With
    ``verify`` the destination is poisoned before and compared after, both untimed. ``around``:
    a context manager entered around the policy's calls only (a CUPTI tag sees no check's copy)."""
    direction = Direction(direction)
    n = buf.nbytes - offset if nbytes is None else nbytes
    rt = policy.rt
    if verify and direction == Direction.D2H:
        dev.refresh(dev_ptr)
    dst = Poisoned(rt, direction, buf.array[offset:], dev_ptr, n, on=verify, want=dev.content.get(dev_ptr))
    with around if around is not None else nullcontext():
        rec = _waited(policy.transfer(buf, dev_ptr, direction, nbytes=n, offset=offset), policy.sync())
    if verify and rec.moved:
        ok = dst.verdict(f"{rec.policy}: {rec.direction} of {n} bytes ({rec.kind}, path {rec.path})")
        rec = dataclasses.replace(rec, verified=ok)
    return rec


def transfers_frame(rows: Iterable[tuple[TransferRecord, dict]], platform: str) -> pd.DataFrame:
    """(record, context) pairs -> a TRANSFERS frame."""
    return frame((transfer_row(r, platform=platform, **ctx) for r, ctx in rows), TRANSFERS)
