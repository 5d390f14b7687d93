"""What locking, unlocking, re-locking and querying cost over sizes and page backings (C4,
C6, C7, C9), timed twice on the very same buffers: through pinpath's Python path (the native
call's duration from the trace) and from C (pinpath.nativelib), where the library builds."""

from __future__ import annotations

from contextlib import ExitStack

import pandas as pd

from ..errors import LockFailed, NotAvailable
from ..memkinds import host_buffer
from ..runtimes.base import has
from ..schema import LOCK_COST
from ..vocab import Capability, MemoryKind
from .sweep import SEED, Sweep, grid

__all__ = ["lock_cost", "COUNTED_CALL"]

def _timed(rt, fn, *args) -> tuple[str, int, int, str]:
    """Run one runtime operation: (its last native call's name, duration, return code, the
    runtime's answer where it refused)."""
    with rt.recorder.span() as calls:
        try:
            fn(*args)
            err = ""
        except LockFailed as e:
            err = e.answer
    name, t0, t1, rc = calls[-1][:4]
    return name, t1 - t0, rc, err


def _python_round(rt, b, add) -> None:
    """lock, query while locked, re-lock (+ its unlock where granted), unlock, query."""
    lock = _timed(rt, rt.lock, b.ptr, b.nbytes)
    add("lock", "pageable", *lock)
    if lock[3]:
        return
    add("query", "locked", *_timed(rt, rt.query, b.ptr))
    relock = _timed(rt, rt.lock, b.ptr, b.nbytes)
    add("relock", "locked", *relock)
    if not relock[3]:
        add("unlock_after_relock", "locked", *_timed(rt, rt.unlock, b.ptr, b.nbytes))
    add("unlock", "locked", *_timed(rt, rt.unlock, b.ptr, b.nbytes))
    add("query", "pageable", *_timed(rt, rt.query, b.ptr))


#: the call of a re-lock counted by pinpath (no runtime call), as LOCK_COST's ``call`` names it
COUNTED_CALL = "pinpath_count"


def _native_round(lib, b, add) -> None:
    """The same calls from C on the same buffer, one rep each (the C loop times each call). Where
    the runtime keeps no count of locks (CUDA refuses a re-lock, mlock does not stack), the re-lock
    and its unlock also as a counting runtime takes them, counted by pinpath (ROCT's count's
    analogue; ``call`` pinpath_count, ops ``relock_counted`` and ``unlock_after_relock_counted``)."""
    def put(op, state, ns, rc, call=None):
        add(op, state, call or op, int(ns), int(rc), "" if rc == 0 else f"{lib.rc_name(rc)} ({int(rc)})", "native")
    put("lock", "pageable", *(v[0] for v in lib.lock(b.ptr, b.nbytes, 1)))
    put("unlock", "locked", *(v[0] for v in lib.unlock(b.ptr, b.nbytes, 1)))
    if lib.has_query:
        put("query", "pageable", *(v[0] for v in lib.query(b.ptr, 1)))
    if lib.lock_once(b.ptr, b.nbytes) != 0:
        return
    try:
        if lib.has_query:
            put("query", "locked", *(v[0] for v in lib.query(b.ptr, 1)))
        rl = lib.relock_unlock(b.ptr, b.nbytes, 1)
        put("relock", "locked", rl.lock_ns[0], rl.lock_rc[0])
        if rl.unlock_rc[0] != -1:
            put("unlock_after_relock", "locked", rl.unlock_ns[0], rl.unlock_rc[0])
        if not lib.locks_counted:
            cr = lib.counted_relock_unlock(b.ptr, b.nbytes, 1)
            put("relock_counted", "locked", cr.lock_ns[0], cr.lock_rc[0], COUNTED_CALL)
            put("unlock_after_relock_counted", "locked", cr.unlock_ns[0], cr.unlock_rc[0], COUNTED_CALL)
    finally:
        lib.unlock_once(b.ptr, b.nbytes)


def lock_cost(rt, *, sizes_nbytes, kinds=(MemoryKind.HEAP, MemoryKind.HUGE_PAGES), repeats: int = 10,
              warmup: int = 2, native: bool = True, label: str = "lock cost", seed: int = SEED) -> pd.DataFrame:
    """LOCK_COST rows per (kind, size), every point once per round in a shuffled order.

    On each buffer, in Python: lock of pageable memory, query while locked, a re-lock of the
    locked range (the runtime's lock of memory the application pinned: C9's "pinned via HIP
    beforehand") and the unlock of that inner lock where the runtime granted it, the unlock,
    a query of pageable memory; then the same calls from C where the C library builds
    (``source`` says which). Then lock and query of memory the runtime itself allocated
    pinned (``state`` "pinned"). ``backing`` is what Linux reports for each buffer: the
    default kinds set 4 KiB-backed malloc memory beside transparent-huge-page memory.
    """
    lib = None
    if native and has(rt, Capability.NATIVE):
        from ..nativelib import load
        lib = load(rt.name)
    sweep = Sweep(repeats=repeats, warmup=warmup, seed=seed, label=label, platform=rt.name)
    with ExitStack() as stack:
        bufs, skipped = {}, []
        for pt in grid(kind=kinds, nbytes=sizes_nbytes):
            try:
                bufs[(pt["kind"], pt["nbytes"])] = stack.enter_context(host_buffer(pt["kind"], pt["nbytes"], rt=rt))
            except NotAvailable as e:
                skipped.append(str(e))
        pinned = {n: stack.enter_context(host_buffer(MemoryKind.PINNED, n, rt=rt)) for n in sizes_nbytes}
        points = [("user", k) for k in bufs] + [("pinned", (MemoryKind.PINNED, n)) for n in sizes_nbytes]
        for i, (what, key) in sweep.rounds(points):
            b = bufs[key] if what == "user" else pinned[key[1]]

            def add(op, state, call, ns, rc, err, source="python"):
                sweep.add(i, {"op": op, "state": state, "kind": str(b.kind), "backing": b.backing,
                              "nbytes": b.nbytes, "call": call, "ns": ns, "rc": rc, "error": err, "source": source})
            if what == "user":
                _python_round(rt, b, add)
                if lib is not None:
                    _native_round(lib, b, add)
            else:
                lock = _timed(rt, rt.lock, b.ptr, b.nbytes)
                add("lock", "pinned", *lock)
                if not lock[3]:
                    add("unlock", "pinned", *_timed(rt, rt.unlock, b.ptr, b.nbytes))
                add("query", "pinned", *_timed(rt, rt.query, b.ptr))
    out = sweep.frame(LOCK_COST)
    out.attrs["skipped"] = skipped
    return out
