"""The same chains of H2D, kernel and D2H run on one queue and spread over several (C15);
H2D and D2H only where the runtime launches no kernels."""

from __future__ import annotations

import time
from contextlib import ExitStack

import numpy as np
import pandas as pd

from ..kernels import NSPLINES, out_nbytes, replica_expected
from ..memkinds import host_buffer
from ..errors import NotAvailable
from ..runtimes.base import device_alloc, has, need, queue
from ..schema import OVERLAP
from ..vocab import Capability, Direction, MemoryKind
from .sweep import Sweep, poison

__all__ = ["overlap", "overlap_or_reason"]
_now = time.perf_counter_ns


def overlap(rt, *, nbytes: int = 16 << 20, chains: int = 8, queues=(1, 2, 4), repeats: int = 3) -> pd.DataFrame:
    """Each chain: H2D of ``nbytes`` from pinned memory, the replica kernel reading the
    first walkers of it, D2H of its output (``nbytes`` rounded to whole walkers). The
    chains go round-robin on 1, 2, 4 ... queues, each queue held by one latch until
    everything is enqueued, so enqueue time stays out; the wall time runs from the latch's
    release to the last queue's completion. Outputs are checked on the first repeat.

    Where ``rt`` has no kernels a chain is the H2D and a D2H of the same device
    buffer back (``nbytes``), checked against the H2D's input; the ``kernel`` column says
    which. A runtime without a latch cannot run this; it raises NotAvailable with the
    reason, which the notebook reports as not applicable."""
    need(rt, Capability.LATCH)
    kernel = has(rt, Capability.KERNELS)
    if kernel:
        rt.prepare_kernels()
    nw = max(1, nbytes // out_nbytes(1))
    d2h_nbytes = out_nbytes(nw) if kernel else nbytes
    sweep = Sweep(repeats=repeats, warmup=1, verify="first", platform=rt.name)
    with ExitStack() as stack:
        ins = [stack.enter_context(host_buffer(MemoryKind.PINNED, nbytes, rt=rt, seed=i)) for i in range(chains)]
        outs = [stack.enter_context(host_buffer(MemoryKind.PINNED, d2h_nbytes, rt=rt, seed=50 + i)) for i in range(chains)]
        d_in = [stack.enter_context(device_alloc(rt, nbytes)) for _ in range(chains)]
        d_out = [stack.enter_context(device_alloc(rt, d2h_nbytes)) for _ in range(chains)] if kernel else d_in
        for b in ins:   # positions in a range the kernel's arithmetic keeps exact
            b.array.view(np.float64)[: 3 * nw] = np.linspace(-1, 1, 3 * nw)
        for n_queues in queues:
            qs = [stack.enter_context(queue(rt)) for _ in range(n_queues)]
            for rep in sweep.in_order():
                for o, d in zip(outs, d_out):   # every repeat's, checked or not
                    poison(rt, Direction.D2H, o.array, d, o.nbytes)
                latch = rt.new_latch()
                try:
                    for q in qs:
                        rt.hold(latch, q)
                    for c in range(chains):
                        q = qs[c % n_queues]
                        rt.copy_async(d_in[c], ins[c].ptr, nbytes, Direction.H2D, q)
                        if kernel:
                            rt.launch_replica(q, d_in[c], d_out[c], nw, NSPLINES)
                        rt.copy_async(outs[c].ptr, d_out[c], d2h_nbytes, Direction.D2H, q)
                    t0 = _now()
                    rt.release(latch)
                    for q in qs:
                        rt.wait(q)
                    wall = _now() - t0
                finally:
                    rt.free_latch(latch)
                ok = None
                if sweep.checks(rep):   # a D2H left different is a row saying so, not an error
                    ok = all(np.array_equal(o.array, _expected(i, nw, kernel)) for i, o in zip(ins, outs))
                sweep.add(rep, {"queues": n_queues, "chains": chains, "nbytes": nbytes, "wall_ns": wall,
                                "verified": ok, "kernel": kernel})
    return sweep.frame(OVERLAP)


def _expected(inp, nw: int, kernel: bool) -> np.ndarray:
    """The bytes a chain's D2H must deliver: the kernel's output, or the H2D's input."""
    if not kernel:
        return inp.array
    return replica_expected(inp.array.view(np.float64)[: 3 * nw], nw).view(np.uint8).ravel()


def overlap_or_reason(rt, **kw) -> pd.DataFrame:
    """``overlap``, or where the runtime cannot run it a one-row frame whose
    ``not_applicable`` column says why (the claims table shows it as not applicable)."""
    try:
        return overlap(rt, **kw)
    except NotAvailable as e:
        return pd.DataFrame([{"not_applicable": str(e), "platform": rt.name}])
