"""A replica of the miniqmc offload region of the thread (C1, C10, C14).

``einspline_spo_omp<T>::multi_evaluate_vgh`` at miniqmc 46073436: arrays mapped once with
``target enter data``; per region invocation one H2D of the walker positions (24 nw bytes),
one kernel, one D2H of value, gradient and hessian of 192 splines per walker
(15,360 nw bytes); 384 invocations per Monte Carlo step, 5 steps by default.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ..kernels import NSPLINES, VGH_DIM, replica_expected
from ..policies import DEFAULT_THRESHOLD_NBYTES, make_policy
from ..records import TransferRecord
from ..schema import calls_frame
from ..trace import records
from ..runtimes.base import has
from ..vocab import Capability, Direction, MemoryKind
from .sweep import DeviceBuffers, grid, transfers_frame

__all__ = ["replica", "api_stats", "INVOCATIONS_PER_STEP", "pos_nbytes", "out_nbytes"]

INVOCATIONS_PER_STEP = 384   #: one region per electron move: 32 atoms x 12 electrons (NiO cell)
_now = time.perf_counter_ns


def pos_nbytes(nw: int) -> int:
    return 3 * 8 * nw


def out_nbytes(nw: int, nsplines: int = NSPLINES) -> int:
    return VGH_DIM * 8 * nw * nsplines


def _kernel_record(policy: str, rt, q, pos_d: int, out_d: int, nw: int, nsplines: int) -> TransferRecord:
    with rt.recorder.span() as calls:
        t0 = _now()
        rt.launch_replica(q, pos_d, out_d, nw, nsplines)
        t1 = _now()
    return TransferRecord(event="kernel", policy=policy, path="kernel", kind="", direction="", nbytes=0,
                          thread_id=rt.recorder.thread_id, start_ns=t0, end_ns=t1, calls=tuple(records(calls)))


def replica(rt, *, policies, nw_values=(16,), steps: int = 5, invocations_per_step: int = INVOCATIONS_PER_STEP,
            user_pinned=(False,), nsplines: int = NSPLINES, threshold_nbytes: int = DEFAULT_THRESHOLD_NBYTES,
            verify: str = "first", seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run the region under each policy, walker count and user-pinning choice.

    With ``user_pinned`` the application locks both host arrays itself before mapping
    them (as QMCPACK does with hipHostRegister) and unlocks them at the end. Where the
    runtime can launch kernels the kernel writes output derived from the positions and
    every verified D2H is compared with ``kernels.replica_expected``; elsewhere the region
    runs its transfers only and the D2H is compared with what the device holds.

    Returns
    -------
    (transfers, calls) : TRANSFERS rows (events map, transfer, kernel, unmap) with the
        context columns policy, nw, user_pinned, step, invocation, array; and their CALLS.
    """
    rows, recs = [], []
    kernel = has(rt, Capability.KERNELS)
    if kernel:
        rt.prepare_kernels()
    rng = np.random.default_rng(seed)
    for pt in grid(policy=policies, nw=nw_values, user_pinned=user_pinned):
        nw = pt["nw"]
        ctx = {"nw": nw, "user_pinned": pt["user_pinned"], "kernel": kernel}
        with make_policy(pt["policy"], rt, threshold_nbytes=threshold_nbytes) as pol, \
                pol.host_buffer(MemoryKind.HEAP, pos_nbytes(nw), seed=seed) as pos, \
                pol.host_buffer(MemoryKind.HEAP, out_nbytes(nw, nsplines), seed=seed + 1) as out, \
                DeviceBuffers(rt) as dev:
            pos_d, out_d = dev.get(pos.nbytes), dev.get(out.nbytes)
            pos_vals = pos.array.view(np.float64)
            if pt["user_pinned"]:
                for b in (pos, out):
                    rt.lock(b.ptr, b.nbytes)

            def keep(rec, **more):
                recs.append(rec)
                rows.append((rec, {**ctx, **more}))

            for name, b in (("pos", pos), ("out", out)):
                keep(pol.map(b), step=-1, invocation=-1, array=name)
            for step in range(steps):
                for inv in range(invocations_per_step):
                    k = step * invocations_per_step + inv
                    check = verify == "all" or (verify == "first" and k == 0)
                    pos_vals[:] = rng.uniform(-1.0, 1.0, 3 * nw)
                    r = pol.transfer(pos, pos_d, Direction.H2D)
                    if check:
                        r = _verified(r, np.array_equal(rt.read_device(pos_d, pos.nbytes), pos.array))
                    keep(r, step=step, invocation=inv, array="pos")
                    if kernel:
                        keep(_kernel_record(pol.policy, rt, pol.q, pos_d, out_d, nw, nsplines),
                             step=step, invocation=inv, array="")
                    if check:
                        out.array[:] = 0xA5
                    r = pol.transfer(out, out_d, Direction.D2H)
                    if check:
                        want = replica_expected(pos_vals, nw, nsplines).view(np.uint8).ravel() \
                            if kernel else dev.content[out_d]
                        r = _verified(r, np.array_equal(out.array, want))
                    keep(r, step=step, invocation=inv, array="out")
            for name, b in (("pos", pos), ("out", out)):
                keep(pol.unmap(b), step=steps, invocation=-1, array=name)
            if pt["user_pinned"]:
                for b in (pos, out):
                    rt.unlock(b.ptr, b.nbytes)
    transfers = transfers_frame(rows, rt.name)
    transfers.insert(0, "transfer_id", range(len(transfers)))
    return transfers, calls_frame(recs, rt.call_categories)


def _verified(rec: TransferRecord, ok: bool) -> TransferRecord:
    import dataclasses
    from ..errors import VerificationFailed
    if rec.moved and not ok:
        raise VerificationFailed(f"replica: {rec.policy} {rec.direction} of {rec.nbytes} bytes (path {rec.path}) "
                                 "did not deliver the expected bytes")
    return dataclasses.replace(rec, verified=ok if rec.moved else None)


def api_stats(transfers: pd.DataFrame, calls: pd.DataFrame, *, by: str = "user_pinned") -> pd.DataFrame:
    """rocprof's ``hsa_stats.csv`` table of every native call the replica made (map and unmap
    included, as a tracer sees them), one table per value of ``by``, with the call's category."""
    from ..records import CallRecord
    from ..schema import stats_frame
    from ..trace import hsa_stats
    frames = []
    merged = calls.merge(transfers[["transfer_id", by]], on="transfer_id")
    for value, g in merged.groupby(by):
        recs = [CallRecord(r.call, r.start_ns, r.end_ns, r.rc, r.thread_id) for r in g.itertuples()]
        st = stats_frame(hsa_stats(recs))
        st[by] = value
        st["category"] = st.Name.map(dict(zip(g.call, g.category)))
        st["refused"] = st.Name.map((g.rc > 0).groupby(g.call).sum()).astype("int64")   # calls with an error code
        frames.append(st)
    return pd.concat(frames, ignore_index=True)
