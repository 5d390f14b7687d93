"""What locking, unlocking, re-locking and querying cost over sizes (C6, C7, C9), and the
three cases of carlobertolli's test (C12, C13's first part)."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ..errors import LockFailed
from ..memkinds import host_buffer
from ..runtimes.base import device_alloc, event_pair, queue
from ..schema import C12, LOCK_COST, frame
from ..vocab import Direction, MemoryKind

__all__ = ["lock_cost", "c12_cases"]
_now = time.perf_counter_ns


def _timed(rt, fn, *args, **kw):
    """Run one runtime operation; return (its last native call, error text, result)."""
    with rt.recorder.span() as calls:
        try:
            out, err = fn(*args, **kw), ""
        except LockFailed as e:
            out, err = None, f"{e.rc_name} ({e.rc})"
    call = calls[-1]
    return call, err, out


def lock_cost(rt, *, sizes_nbytes, repeats: int = 10, warmup: int = 2) -> pd.DataFrame:
    """Per size: lock of pageable heap memory, query while locked, a re-lock of the locked
    range (and the unlock of that inner lock when it was granted), the unlock, a query of
    the pageable memory; then lock, unlock and query of memory the runtime pinned itself
    (prior pinning, as with hipHostMalloc / cudaMallocHost). Each figure is the duration
    of the native call from the trace."""
    rows = []

    def add(op, state, kind, n, i, res):
        call, err, _ = res
        if i >= 0:
            rows.append({"op": op, "state": state, "kind": kind, "nbytes": n, "repeat": i, "call": call[0],
                         "ns": call[2] - call[1], "rc": call[3], "error": err, "platform": rt.name})

    for n in sizes_nbytes:
        with host_buffer(MemoryKind.HEAP, n) as b:
            for i in range(-warmup, repeats):
                lock = _timed(rt, rt.lock, b.ptr, n)
                add("lock", "pageable", b.kind, n, i, lock)
                if lock[1]:
                    continue
                add("query", "locked", b.kind, n, i, _timed(rt, rt.query, b.ptr))
                relock = _timed(rt, rt.lock, b.ptr, n)
                add("relock", "locked", b.kind, n, i, relock)
                if not relock[1]:
                    add("unlock_after_relock", "locked", b.kind, n, i, _timed(rt, rt.unlock, b.ptr, n))
                add("unlock", "locked", b.kind, n, i, _timed(rt, rt.unlock, b.ptr, n))
                add("query", "pageable", b.kind, n, i, _timed(rt, rt.query, b.ptr))
        with host_buffer(MemoryKind.PINNED, n, rt=rt) as b:
            for i in range(-warmup, repeats):
                lock = _timed(rt, rt.lock, b.ptr, n)
                add("lock", "pinned", b.kind, n, i, lock)
                if not lock[1]:
                    add("unlock", "pinned", b.kind, n, i, _timed(rt, rt.unlock, b.ptr, n))
                add("query", "pinned", b.kind, n, i, _timed(rt, rt.query, b.ptr))
    return frame(rows, LOCK_COST)


def c12_cases(rt, *, nbytes: int, repeats: int = 5, warmup: int = 1, direction: str = "h2d",
              verify: str = "first") -> pd.DataFrame:
    """carlobertolli's three cases on ``nbytes`` of heap memory, timing what lies between
    his braces and, apart, the unlock:

    1. ``{ lock(a); async_copy(locked a) }`` on memory not locked before;
    2. ``lock(a); { async_copy(locked a) }``;
    3. ``lock(a); { lock(locked a) again; async_copy }`` - a re-lock of locked memory;

    plus the same copy from the pageable pointer as a reference. Where a runtime refuses
    the re-lock (CUDA answers "already registered") the copy uses the first lock's alias
    and the refusal is recorded in ``lock_rc`` / ``lock_error``.
    """
    direction = Direction(direction)
    rows = []
    with host_buffer(MemoryKind.HEAP, nbytes) as b, device_alloc(rt, nbytes) as dptr, \
            queue(rt) as q, event_pair(rt) as (e0, e1):
        pattern = b.array.copy()
        if direction == Direction.D2H:
            rt.write_device(dptr, pattern)

        def copy(alias):
            dst, src = (dptr, alias) if direction == Direction.H2D else (alias, dptr)
            t0 = _now()
            if e0 is not None:
                rt.record_event(e0, q)
            rt.copy_async(dst, src, nbytes, direction, q)
            if e1 is not None:
                rt.record_event(e1, q)
            t1 = _now()
            rt.wait(q)
            return t1 - t0, _now() - t1

        def verified(check):
            if not check:
                return None
            got = rt.read_device(dptr, nbytes) if direction == Direction.H2D else b.array
            return bool(np.array_equal(got, pattern))

        def poison(check):
            if check:
                if direction == Direction.H2D:
                    rt.fill_device(dptr, 0xA5, nbytes)
                else:
                    b.array[:] = 0xA5

        for i in range(-warmup, repeats):
            check = verify == "all" or (verify == "first" and i == 0)
            for case in ("1_lock_copy", "2_prelocked_copy", "3_relock_copy", "pageable_copy"):
                poison(check)
                lock_ns = unlock_ns = 0
                lock_rc, lock_err = 0, ""
                outer = rt.lock(b.ptr, nbytes) if case in ("2_prelocked_copy", "3_relock_copy") else None
                t0 = _now()
                if case == "1_lock_copy":
                    alias = rt.lock(b.ptr, nbytes)
                    lock_ns = _now() - t0
                elif case == "3_relock_copy":
                    try:
                        alias = rt.lock(b.ptr, nbytes)
                    except LockFailed as e:
                        alias, lock_rc, lock_err = outer, e.rc, f"{e.rc_name} ({e.rc})"
                    lock_ns = _now() - t0
                else:
                    alias = outer if outer is not None else b.ptr
                dma_ns, wait_ns = copy(alias)
                inside_ns = _now() - t0
                if case == "1_lock_copy" or (case == "3_relock_copy" and not lock_err):
                    u0 = _now()
                    rt.unlock(b.ptr, nbytes)
                    unlock_ns = _now() - u0
                if outer is not None:
                    rt.unlock(b.ptr, nbytes)
                if i >= 0:
                    rows.append({"case": case, "nbytes": nbytes, "repeat": i, "lock_ns": lock_ns, "dma_ns": dma_ns,
                                 "wait_ns": wait_ns, "inside_ns": inside_ns, "unlock_ns": unlock_ns,
                                 "dma_event_ns": rt.elapsed_ns(e0, e1) if e0 is not None else None,
                                 "lock_rc": lock_rc, "lock_error": lock_err, "verified": verified(check),
                                 "platform": rt.name})
    return frame(rows, C12)
