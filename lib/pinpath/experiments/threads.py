"""Per-transfer runtime cost against the number of host threads offloading at once (C13), on
the path the claim is about: memory the application already pinned, re-locked (and unlocked
where the runtime grants the re-lock) by the runtime on every transfer; and the tracked path."""

from __future__ import annotations

import threading
import time
from collections import Counter
from contextlib import ExitStack

import numpy as np
import pandas as pd

from .. import progress
from ..memkinds import host_buffer
from ..policies import make_policy
from ..schema import NATIVE_THREADS, THREADS
from ..vocab import Direction, MemoryKind, Policy
from .native import native_concurrency, use_native
from .sweep import SEED, DeviceBuffers, Sweep, grid, transfer

__all__ = ["concurrency", "concurrency_native", "RUNTIME_CATEGORIES"]
_now = time.perf_counter_ns

#: the runtime's own work on a transfer, as the trace names it (copies and waits move bytes)
RUNTIME_CATEGORIES = ("lock", "unlock", "query", "alloc", "grant", "free")


def _run_threads(n: int, work, barrier: threading.Barrier) -> None:
    """``work(i)`` on n threads that meet at ``barrier``; a thread that fails breaks the barrier
    (so the others do not wait for it forever), and its error is raised here."""
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            work(i)
        except threading.BrokenBarrierError:
            pass                     # another thread failed: its error is the one raised
        except BaseException as e:   # re-raised in the caller below
            errors.append(e)
            barrier.abort()

    ts = [threading.Thread(target=guarded, args=(i,), name=f"pinpath-offload-{i}") for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def concurrency(rt, *, policies=(Policy.LOCK_ALWAYS, Policy.NEXTGEN_LOCK_MAPPED), threads=(1, 2, 4, 8, 16),
                nbytes: int = 15360, transfers: int = 200, app_pinned: bool = True,
                kind: str = MemoryKind.HEAP, direction: str = "h2d", repeats: int = 5,
                engine: str = "auto") -> pd.DataFrame:
    """On the native engine where it runs (experiments.native.native_concurrency: pthreads,
    ``repeats`` independent repeats), else through the Python policies on Python threads (one
    repeat), as follows. For each policy and thread count (points in a shuffled order): every thread registers
    its own buffer as the application would (``app_pinned``), maps it, and makes ``transfers``
    transfers on its own queue, all released by one barrier. Per thread: the median runtime
    overhead per transfer (total minus the copy's enqueue and wait), the median time of the
    runtime's own calls in it (``native_ns``, from the trace: the interpreter's share is the
    difference), the path most transfers took, and the run's wall time and aggregate throughput.
    Once the timed threads have ended, each thread moves its buffer once more, checked byte for byte."""
    if use_native(rt, engine) and kind == MemoryKind.HEAP:
        return native_concurrency(rt, policies=policies, threads=threads, nbytes=nbytes, transfers=transfers,
                                  repeats=repeats, app_pinned=app_pinned, direction=direction)
    direction = Direction(direction)
    sweep = Sweep(repeats=1, verify="all", label="C13 threads", platform=rt.name)
    for rep, pt in sweep.rounds(list(grid(policy=policies, threads=threads))):
        n_threads = pt["threads"]
        with ExitStack() as stack:
            pol = stack.enter_context(make_policy(pt["policy"], rt, per_thread_queues=True))
            dev = stack.enter_context(DeviceBuffers(rt))
            bufs = [stack.enter_context(pol.host_buffer(kind, nbytes, seed=i)) for i in range(n_threads)]
            dptrs = [dev.get(nbytes, seed=100 + i) for i in range(n_threads)]
            for b in bufs:
                if app_pinned:
                    rt.lock(b.ptr, b.nbytes)
                    stack.callback(rt.unlock, b.ptr, b.nbytes)
                pol.map(b)
                stack.callback(pol.unmap, b)
            barrier = threading.Barrier(n_threads)
            recs: list[list] = [[] for _ in range(n_threads)]

            def work(i: int) -> None:
                transfer(pol, bufs[i], dev, dptrs[i], direction, verify=False)   # the queue's first use
                barrier.wait()
                for _ in range(transfers):
                    recs[i].append(transfer(pol, bufs[i], dev, dptrs[i], direction, verify=False))

            _run_threads(n_threads, work, barrier)
            start = min(r[0].start_ns for r in recs)
            wall = max(r[-1].end_ns for r in recs) - start
            for i in range(n_threads):      # the bytes, checked once the timed threads have ended
                transfer(pol, bufs[i], dev, dptrs[i], direction, verify=sweep.checks(rep))
            for i, rs in enumerate(recs):
                total = np.array([r.total_ns for r in rs])
                moving = np.array([r.dma_ns + r.wait_ns for r in rs])
                own = np.array([sum(c.duration_ns for c in r.calls if rt.call_categories.get(c.call) in RUNTIME_CATEGORIES)
                                for r in rs])
                sweep.add(rep, {"policy": str(pt["policy"]), "threads": n_threads, "thread": i, "transfers": len(rs),
                                "nbytes": nbytes, "path": Counter(r.path for r in rs).most_common(1)[0][0],
                                "overhead_ns": int(np.median(total - moving)), "total_ns": int(np.median(total)),
                                "native_ns": int(np.median(own)), "wall_ns": wall,
                                "aggregate_gb_per_s": n_threads * transfers * nbytes / wall, "engine": "python"})
    return sweep.frame(THREADS)


def concurrency_native(rt, lib, *, threads=(1, 2, 4, 8, 16), nbytes: int = 15360, reps: int = 200,
                       warmup: int = 10, repeats: int = 5, seed: int = SEED + 13) -> pd.DataFrame:
    """The same re-lock path from C, with no interpreter: each of ``threads`` Python threads
    calls the C library's loop (which runs with the interpreter lock released) on its own
    buffer, which the application has locked: per call, the re-lock and, where the runtime
    granted it, the unlock of that re-lock (C13's 0.9 us + 0.7 us); where the runtime keeps no
    count, then the same path counted by pinpath (ops ``relock_counted``,
    ``unlock_after_relock_counted``: ROCT's count's analogue, one mutex for all threads as fmm's).
    ``repeats`` independent
    repeats (fresh buffers, the thread counts in a new shuffled order), ``reps`` calls each
    (``call``)."""
    sweep = Sweep(repeats=repeats, seed=seed, platform=rt.name)   # repeat r in its own order (seed + r)
    points = [(r, n) for r in range(repeats) for n in sweep.shuffled(threads, seed=sweep.seed + r)]
    for k, (r, n_threads) in enumerate(points):
        with ExitStack() as stack:
            bufs = [stack.enter_context(host_buffer(MemoryKind.HEAP, nbytes, seed=i)) for i in range(n_threads)]
            for b in bufs:
                rt.lock(b.ptr, b.nbytes)
                stack.callback(rt.unlock, b.ptr, b.nbytes)
            barrier = threading.Barrier(n_threads)
            out: list = [None] * n_threads

            counted: list = [None] * n_threads

            def work(i: int) -> None:
                lib.relock_unlock(bufs[i].ptr, nbytes, 1)      # this thread's runtime start, untimed
                barrier.wait()
                out[i] = lib.relock_unlock(bufs[i].ptr, nbytes, reps, warmup=warmup)
                if not lib.locks_counted:   # the same path as a counting runtime takes it, all threads at once
                    barrier.wait()
                    counted[i] = lib.counted_relock_unlock(bufs[i].ptr, nbytes, reps, warmup=warmup)

            _run_threads(n_threads, work, barrier)
            for suffix, results in (("", out), ("_counted", counted)):
                for i, res in enumerate(results):
                    for c in range(len(res.lock_ns) if res is not None else 0):
                        sweep.add(r, {"threads": n_threads, "thread": i, "call": c, "op": "relock" + suffix,
                                      "ns": int(res.lock_ns[c]), "rc": int(res.lock_rc[c])})
                        if res.unlock_rc[c] != -1:
                            sweep.add(r, {"threads": n_threads, "thread": i, "call": c,
                                          "op": "unlock_after_relock" + suffix,
                                          "ns": int(res.unlock_ns[c]), "rc": int(res.unlock_rc[c])})
        progress.step("C13 native", k + 1, len(points))
    return sweep.frame(NATIVE_THREADS)
