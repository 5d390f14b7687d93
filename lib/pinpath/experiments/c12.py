"""carlobertolli's three cases (C12), both readings of his braces, from Python and from C."""

from __future__ import annotations

import time
from contextlib import ExitStack

import pandas as pd

from ..errors import LockFailed
from ..memkinds import host_buffer
from ..runtimes.base import event_pair, has
from ..schema import C12
from ..vocab import Capability, Direction, MemoryKind
from .sweep import SEED, Sweep

__all__ = ["c12_cases", "CASES", "COUNTED"]
_now = time.perf_counter_ns

CASES = ("1_lock_copy", "2_prelocked_copy", "3_relock_copy", "pageable_copy")
#: case 3 with the re-lock and its unlock counted by pinpath (native only, where the runtime keeps no count)
COUNTED = "3_relock_counted_copy"


def _stream(q) -> int:
    """The queue as the C library takes it: a CUDA stream's handle; 0 where it is no handle."""
    try:
        return int(q)
    except TypeError:
        return 0


def c12_cases(rt, *, nbytes: int, repeats: int = 5, warmup: int = 1, verify: str = "first",
              native: bool = True, seed: int = SEED) -> pd.DataFrame:
    """On ``nbytes`` of heap memory (malloc), H2D, each case once per round in a shuffled order:

    1. ``{ lock(a); async_copy(locked a) }`` on memory not locked before;
    2. ``lock(a); { async_copy(locked a) }``;
    3. ``lock(a); { lock(locked a) again; async_copy }`` - a re-lock of locked memory;

    plus the copy from the pageable pointer as a reference. Carlo's braces hold the lock and the
    copy's enqueue with no wait: ``braces_ns`` is that reading (his code), ``braces_wait_ns``
    the reading that includes the wait; the unlock is timed apart, after. Where a runtime
    answers the re-lock "already registered" the copy uses the first lock, as his code would.
    From C as well (``source`` native) where the library builds and can copy; there, where the
    runtime keeps no count of locks, case 3 also as a counting runtime takes it (``COUNTED``).
    """
    lib = None
    if native and has(rt, Capability.NATIVE):
        from ..nativelib import load
        lib = load(rt.name)
        lib = lib if lib.has_copy else None
    sweep = Sweep(repeats=repeats, warmup=warmup, verify=verify, seed=seed, label="C12 cases", platform=rt.name)
    with ExitStack() as stack:
        b = stack.enter_context(host_buffer(MemoryKind.HEAP, nbytes))
        dptr = stack.enter_context(rt.device_buffer(nbytes)).ptr
        q = stack.enter_context(rt.queue()).handle
        e0, e1 = stack.enter_context(event_pair(rt))
        sources = ["python"] + (["native"] if lib is not None else [])
        points = [(case, src) for case in CASES for src in sources if not (src == "native" and case == "pageable_copy")]
        if lib is not None and not lib.locks_counted:   # the path a counting runtime takes (ROCT's count's analogue)
            points.append((COUNTED, "native"))
        for i, (case, src) in sweep.rounds(points):
            dst = sweep.poisoned(rt, Direction.H2D, b.array, dptr, nbytes, i)
            if src == "native":
                row = _native_case(lib, 4 if case == COUNTED else int(case[0]), b, dptr, nbytes, q)
            else:
                row = _python_case(rt, case, b, dptr, nbytes, q, e0, e1)
            row["verified"] = dst.verdict(f"C12 {case} ({src})")
            sweep.add(i, {"case": case, "nbytes": nbytes, "source": src, **row})
    return sweep.frame(C12)


def _python_case(rt, case, b, dptr, nbytes, q, e0, e1) -> dict:
    lock_ns = unlock_ns = 0
    lock_rc, lock_err = 0, ""
    outer = rt.lock(b.ptr, nbytes) if case in ("2_prelocked_copy", "3_relock_copy") else None
    inner = False
    t0 = _now()
    if case == "1_lock_copy":
        alias, inner = rt.lock(b.ptr, nbytes), True
    elif case == "3_relock_copy":
        try:
            alias, inner = rt.lock(b.ptr, nbytes), True
        except LockFailed as e:
            if not e.already_pinned:
                raise
            alias, lock_rc, lock_err = outer, e.rc, e.answer
    else:
        alias = outer if outer is not None else b.ptr
    t1 = _now()
    if e0 is not None:
        rt.record_event(e0, q)
    rt.copy_async(dptr, alias, nbytes, Direction.H2D, q)
    t2 = _now()
    if e1 is not None:
        rt.record_event(e1, q)
    rt.wait(q)
    t3 = _now()
    if inner:
        lock_ns = t1 - t0
        u0 = _now()
        rt.unlock(b.ptr, nbytes)
        unlock_ns = _now() - u0
    elif case == "3_relock_copy":
        lock_ns = t1 - t0
    if outer is not None:
        rt.unlock(b.ptr, nbytes)
    return {"lock_ns": lock_ns, "enqueue_ns": t2 - t1, "wait_ns": t3 - t2, "braces_ns": t2 - t0,
            "braces_wait_ns": t3 - t0, "unlock_ns": unlock_ns,
            "dma_event_ns": rt.elapsed_ns(e0, e1) if e0 is not None else None, "lock_rc": lock_rc,
            "lock_error": lock_err}


def _native_case(lib, case: int, b, dptr, nbytes, q) -> dict:
    if case in (2, 3, 4):
        rc = lib.lock_once(b.ptr, nbytes)
        if rc != 0:
            raise LockFailed(lib.platform, "lock (native, before the braces)", rc, lib.rc_name(rc), nbytes, b.ptr)
    try:
        r = lib.c12(case, b.ptr, dptr, nbytes, 1, stream=_stream(q))
    finally:
        if case in (2, 3, 4):
            lib.unlock_once(b.ptr, nbytes)
    lock_rc = int(r.rc[0][0]) if r.rc[0][0] > 0 else 0
    lock, enq, wait = int(r.lock_ns[0]), int(r.enqueue_ns[0]), int(r.wait_ns[0])
    return {"lock_ns": lock, "enqueue_ns": enq, "wait_ns": wait, "braces_ns": lock + enq,
            "braces_wait_ns": lock + enq + wait, "unlock_ns": int(r.unlock_ns[0]), "dma_event_ns": None,
            "lock_rc": lock_rc, "lock_error": f"{lib.rc_name(lock_rc)} ({lock_rc})" if lock_rc else ""}
