"""Per-transfer overhead and aggregate throughput against the number of host threads
offloading at once (C13)."""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack

import numpy as np
import pandas as pd

from ..errors import VerificationFailed
from ..policies import make_policy
from ..schema import THREADS, frame
from ..vocab import Direction, MemoryKind
from .sweep import DeviceBuffers, grid

__all__ = ["concurrency"]
_now = time.perf_counter_ns


def concurrency(rt, *, policies, threads=(1, 2, 4, 8, 16), nbytes: int = 15360, transfers: int = 200,
                kind: str = MemoryKind.HEAP, direction: str = "h2d") -> pd.DataFrame:
    """For each policy and thread count: every thread maps its own buffer and makes
    ``transfers`` transfers on its own queue, all released by one barrier. Per thread:
    the median runtime overhead per transfer (total minus DMA enqueue and wait), the
    median total, and the run's wall time and aggregate throughput. The last transfer of
    every thread is checked byte for byte."""
    direction = Direction(direction)
    rows = []
    for pt in grid(policy=policies, threads=threads):
        n_threads = pt["threads"]
        with ExitStack() as stack:
            pol = stack.enter_context(make_policy(pt["policy"], rt, per_thread_queues=True))
            dev = stack.enter_context(DeviceBuffers(rt))
            bufs = [stack.enter_context(pol.host_buffer(kind, nbytes, seed=i)) for i in range(n_threads)]
            dptrs = [dev.get(nbytes, seed=100 + i) for i in range(n_threads)]
            for b in bufs:
                pol.map(b)
            barrier = threading.Barrier(n_threads)
            recs: list[list] = [[] for _ in range(n_threads)]
            errors: list[BaseException] = []

            def work(i: int) -> None:
                try:
                    pol.transfer(bufs[i], dptrs[i], direction)   # the thread's queue and first-use costs
                    barrier.wait()
                    for _ in range(transfers):
                        recs[i].append(pol.transfer(bufs[i], dptrs[i], direction))
                except BaseException as e:   # re-raised in the caller below
                    errors.append(e)
                    barrier.abort()

            ts = [threading.Thread(target=work, args=(i,), name=f"pinpath-offload-{i}") for i in range(n_threads)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            if errors:
                raise errors[0]
            for i, (b, d) in enumerate(zip(bufs, dptrs)):
                got = rt.read_device(d, nbytes) if direction == Direction.H2D else b.array
                want = b.array if direction == Direction.H2D else dev.content[d]
                if recs[i][-1].moved and not np.array_equal(got, want):
                    raise VerificationFailed(f"concurrency: thread {i} of {n_threads} ({pt['policy']}) moved wrong bytes")
            for b in bufs:
                pol.unmap(b)
            start = min(r[0].start_ns for r in recs)
            wall = max(r[-1].end_ns for r in recs) - start
            for i, rs in enumerate(recs):
                total = np.array([r.total_ns for r in rs])
                moving = np.array([r.dma_ns + r.wait_ns for r in rs])
                rows.append({"policy": str(pt["policy"]), "threads": n_threads, "thread": i, "transfers": len(rs),
                             "nbytes": nbytes, "overhead_ns": int(np.median(total - moving)),
                             "total_ns": int(np.median(total)), "wall_ns": wall,
                             "aggregate_gb_per_s": n_threads * transfers * nbytes / wall, "platform": rt.name})
    return frame(rows, THREADS)
