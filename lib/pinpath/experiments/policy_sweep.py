"""Transfers through several policies over sizes, memory kinds and directions (C2, C3, C4, C5)."""

from __future__ import annotations

import pandas as pd

from ..errors import LockFailed
from ..memkinds import host_buffer, supports
from ..policies import make_policy
from ..schema import LOCK_OUTCOMES, frame
from ..vocab import MemoryKind, Policy
from .sweep import DeviceBuffers, grid, repeat_transfers, transfers_frame

__all__ = ["policy_sweep", "lock_outcomes"]


def policy_sweep(rt, *, policies=(Policy.STAGE_PER_COPY, Policy.STAGE_POOLED), sizes_nbytes,
                 directions=("h2d", "d2h"), kinds=(MemoryKind.HEAP,), repeats: int = 10, warmup: int = 1,
                 verify: str = "first") -> pd.DataFrame:
    """TRANSFERS rows (with ``repeat``) of each policy for each kind, size and direction.

    The buffer is mapped before and unmapped after its transfers, so map-time policies
    see it as an offload runtime would. A (kind, direction) pair that cannot be done -
    a D2H into read-only memory - is left out. The phases (query, lock, alloc, grant,
    copy_in, dma, wait, copy_out, unlock, free) say where the time goes.
    """
    rows = []
    with DeviceBuffers(rt) as dev:
        for pt in grid(kind=kinds, nbytes=sizes_nbytes, direction=directions, policy=policies):
            if supports(pt["kind"], pt["direction"]):
                continue
            n = pt["nbytes"]
            dptr = dev.get(n)
            with host_buffer(pt["kind"], n, rt=rt) as buf, make_policy(pt["policy"], rt) as pol:
                pol.map(buf)
                for i, r in repeat_transfers(pol, buf, dev, dptr, pt["direction"], repeats=repeats,
                                             warmup=warmup, verify=verify):
                    rows.append((r, {"repeat": i, "backing": buf.backing}))
                pol.unmap(buf)
    return transfers_frame(rows, rt.name)


def lock_outcomes(rt, *, kinds=tuple(MemoryKind), sizes_nbytes=(4096,)) -> pd.DataFrame:
    """What the runtime answers when asked to lock each kind of host memory: the native
    call, its return code and error, and how long it took (C5). Granted locks are undone."""
    rows = []
    for pt in grid(kind=kinds, nbytes=sizes_nbytes):
        with host_buffer(pt["kind"], pt["nbytes"], rt=rt) as buf:
            with rt.recorder.span() as calls:
                try:
                    rt.lock(buf.ptr, buf.nbytes, read_only=not buf.writable)
                    err = ""
                except LockFailed as e:
                    err = f"{e.rc_name} ({e.rc})"
            call = calls[-1]
            if not err:
                rt.unlock(buf.ptr, buf.nbytes)
            rows.append({"kind": str(buf.kind), "nbytes": buf.nbytes, "backing": buf.backing,
                         "read_only_flag": not buf.writable, "call": call[0], "ns": call[2] - call[1],
                         "rc": call[3], "error": err, "granted": not err, "platform": rt.name})
    return frame(rows, LOCK_OUTCOMES)
