"""A replica of the miniqmc offload region of the thread (C1, C10, C14).

``einspline_spo_omp<T>::multi_evaluate_vgh`` at miniqmc 46073436: arrays mapped once with
``target enter data``; per region invocation one H2D of the walker positions (24 nw bytes),
one kernel, one D2H of value, gradient and hessian of 192 splines per walker
(15,360 nw bytes), then the region's end, where an asynchronous runtime waits once;
384 invocations per Monte Carlo step, 5 steps by default.
"""

from __future__ import annotations

import dataclasses
import time
from contextlib import ExitStack

import numpy as np
import pandas as pd

from ..kernels import NSPLINES, out_nbytes, pos_nbytes, replica_expected
from ..policies import DEFAULT_THRESHOLD_NBYTES, make_policy
from ..records import TransferRecord
from ..runtimes.base import has
from ..schema import calls_frame
from ..trace import records
from ..vocab import Capability, Direction, MemoryKind
from .native import native_replica, use_native
from .sweep import DeviceBuffers, SEED, Poisoned, Sweep, grid, page_locked

__all__ = ["replica", "api_stats", "api_calls", "calls_stats", "INVOCATIONS_PER_STEP"]

INVOCATIONS_PER_STEP = 384   #: one region per electron move: 32 atoms x 12 electrons (NiO cell)
_now = time.perf_counter_ns


def _kernel_record(pol, rt, pos_d: int, out_d: int, nw: int, nsplines: int) -> TransferRecord:
    """The replica kernel on the policy's queue of this thread (its ``sync`` waits for it)."""
    with rt.recorder.span() as calls:
        t0 = _now()
        rt.launch_replica(pol.q, pos_d, out_d, nw, nsplines)
        t1 = _now()
    pol.enqueued()
    return TransferRecord(event="kernel", policy=pol.policy, path="kernel", kind="", direction="", nbytes=0,
                          thread_id=rt.recorder.thread_id, start_ns=t0, end_ns=t1, calls=tuple(records(calls)))


class _Region:
    """One (policy, nw, user_pinned) point of the replica: its buffers, mapped once."""

    def __init__(self, stack: ExitStack, rt, policy: str, nw: int, user_pinned: bool, nsplines: int,
                 threshold_nbytes: int, seed: int) -> None:
        self.rt, self.nw, self.user_pinned, self.nsplines = rt, nw, user_pinned, nsplines
        self.pol = stack.enter_context(make_policy(policy, rt, threshold_nbytes=threshold_nbytes))
        self.pos = stack.enter_context(self.pol.host_buffer(MemoryKind.HEAP, pos_nbytes(nw), seed=seed))
        self.out = stack.enter_context(self.pol.host_buffer(MemoryKind.HEAP, out_nbytes(nw, nsplines), seed=seed + 1))
        self.dev = stack.enter_context(DeviceBuffers(rt))
        self.pos_d, self.out_d = self.dev.get(self.pos.nbytes), self.dev.get(self.out.nbytes)
        self.ctx = {"nw": nw, "user_pinned": user_pinned, "counted": False}   # no counted arm in Python
        self.lost = ""         # the hazard once the application's pin is seen gone
        self.pinned = False    # the application's own registration of its arrays, held
        if user_pinned:        # the application registers its arrays first, as QMCPACK does
            for b in (self.pos, self.out):
                rt.lock(b.ptr, b.nbytes)
            self.pinned = True
            stack.callback(self._unpin)   # runs before the buffers are freed, also when a step raised
        self.mapped = [(self.pol.map(b), name) for name, b in (("pos", self.pos), ("out", self.out))]

    def unmap(self) -> list[tuple[TransferRecord, str]]:
        recs = [(self.pol.unmap(b), name) for name, b in (("pos", self.pos), ("out", self.out))]
        self._unpin()
        return recs

    def _unpin(self) -> None:
        """The application's unregister of its arrays, once (munlock of memory a runtime already
        unlocked is not refused)."""
        if self.pinned:
            self.pinned = False
            for b in (self.pos, self.out):
                self.rt.unlock(b.ptr, b.nbytes)

    def invocation(self, rng, kernel: bool, check: bool) -> list[tuple[TransferRecord, str]]:
        rt, pol, nw = self.rt, self.pol, self.nw
        pos_vals = self.pos.array.view(np.float64)
        pos_vals[:] = rng.uniform(-1.0, 1.0, 3 * nw)
        pos_dst = Poisoned(rt, Direction.H2D, self.pos.array, self.pos_d, self.pos.nbytes, on=check)
        out_dst = Poisoned(rt, Direction.D2H, self.out.array, self.out_d, self.out.nbytes, on=check)
        recs = [(pol.transfer(self.pos, self.pos_d, Direction.H2D), "pos")]
        if kernel:
            recs.append((_kernel_record(pol, rt, self.pos_d, self.out_d, nw, self.nsplines), ""))
        recs.append((pol.transfer(self.out, self.out_d, Direction.D2H), "out"))
        recs.append((pol.sync(), ""))
        if check:
            want = replica_expected(pos_vals, nw, self.nsplines).view(np.uint8).ravel() if kernel \
                else self.dev.content[self.out_d]
            ok_pos = pos_dst.verdict(f"replica {pol.policy}: H2D of the positions")
            ok_out = out_dst.verdict(f"replica {pol.policy}: D2H of the output", want=want)
            recs = [(dataclasses.replace(r, verified=ok_pos if a == "pos" else ok_out) if r.moved else r, a)
                    for r, a in recs]
        if self.user_pinned and not self.lost and not all(page_locked(rt, b.ptr) for b in (self.pos, self.out)):
            self.lost = "the application's pinned arrays were unlocked by the runtime"
        if self.lost:
            recs = [(dataclasses.replace(r, hazard=self.lost) if r.event == "transfer" else r, a) for r, a in recs]
        return recs


def replica(rt, *, policies, nw_values=(16,), steps: int = 5, invocations_per_step: int = INVOCATIONS_PER_STEP,
            user_pinned=(False,), nsplines: int = NSPLINES, threshold_nbytes: int = DEFAULT_THRESHOLD_NBYTES,
            verify: str = "first", seed: int = SEED, engine: str = "auto",
            kernel_only: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run the region under each policy, walker count and user-pinning choice: on the native
    engine where it runs (experiments.native.native_replica: every step an independent repeat),
    else through the Python policies (``engine`` column "python"), as follows.

    Every point keeps its own buffers and policy; each Monte Carlo step visits the points in a
    shuffled order and runs ``invocations_per_step`` regions of each. With ``user_pinned``
    the application registers both arrays itself before mapping them (as QMCPACK does with
    hipHostRegister) and unregisters them at the end; if the runtime's unlock undoes the
    application's pin (mlock keeps no count) the rows from then on carry that hazard. On the
    engine, where the runtime keeps no count, the user-pinned regions of lock_always also
    run as a counting runtime would (``counted`` True: the runtime's lock of
    the registered arrays counted by pinpath, ROCT's count's analogue; see ``native_replica``). Where
    the runtime launches kernels the kernel writes output derived from the positions and
    every checked D2H is compared with ``kernels.replica_expected``; elsewhere the region
    runs its transfers only and the D2H is compared with what the device holds.
    ``kernel_only`` (the engine only, timed in C): each invocation is also run without its copies
    (``native_replica``); the Python policies leave it out (no ``kernel_only`` rows).

    Returns
    -------
    (transfers, calls) : TRANSFERS rows (events map, transfer, kernel, sync, unmap) with the
        context columns nw, user_pinned, counted, step, invocation, array; and their CALLS.
    """
    if use_native(rt, engine):
        return native_replica(rt, policies=policies, nw_values=nw_values, steps=steps,
                              invocations_per_step=invocations_per_step, user_pinned=user_pinned, nsplines=nsplines,
                              threshold_nbytes=threshold_nbytes, verify=verify, seed=seed, kernel_only=kernel_only)
    sweep, recs = Sweep(repeats=steps, verify=verify, seed=seed, label="replica steps", platform=rt.name, key=None), []
    kernel = has(rt, Capability.KERNELS)
    if kernel:
        rt.prepare_kernels()
    rng = np.random.default_rng(seed)

    def keep(rec, region, **more):
        recs.append(rec)
        sweep.add(None, (rec, {**region.ctx, "kernel": kernel, "engine": "python", **more}))

    with ExitStack() as stack:
        regions = {}
        for pt in grid(policy=policies, nw=nw_values, user_pinned=user_pinned):
            key = (str(pt["policy"]), pt["nw"], pt["user_pinned"])
            regions[key] = reg = _Region(stack, rt, *key, nsplines, threshold_nbytes, seed)
            for rec, name in reg.mapped:
                keep(rec, reg, step=-1, invocation=-1, array=name)
        for step, key in sweep.rounds(list(regions)):
            reg = regions[key]
            for inv in range(invocations_per_step):
                check = sweep.checks(step * invocations_per_step + inv)
                for rec, name in reg.invocation(rng, kernel, check):
                    keep(rec, reg, step=step, invocation=inv, array=name)
        for reg in regions.values():
            for rec, name in reg.unmap():
                keep(rec, reg, step=steps, invocation=-1, array=name)
    transfers = sweep.transfers()
    transfers.insert(0, "transfer_id", range(len(transfers)))
    return transfers, calls_frame(recs, rt.call_categories)


def api_stats(transfers: pd.DataFrame, calls: pd.DataFrame, *, by: str = "user_pinned") -> pd.DataFrame:
    """rocprof's ``hsa_stats.csv`` table of every native call the replica made (map, unmap and
    the region's waits included, as a tracer sees them), one table per value of ``by`` and of
    ``counted`` (the arm whose re-locks pinpath counted), with the call's category and how many of
    its calls the runtime refused: ``calls_stats`` of ``api_calls``."""
    return calls_stats(api_calls(transfers, calls, by=by), by=by)


def calls_stats(api: pd.DataFrame, *, by: str = "user_pinned") -> pd.DataFrame:
    """``api_stats``'s table from ``api_calls``'s rows (those of several processes too)."""
    from ..records import CallRecord
    from ..schema import API_STATS, frame, stats_frame
    from ..trace import hsa_stats
    frames = []
    for (value, counted), g in api.groupby([by, "counted"]):
        crs = [CallRecord(r.call, r.start_ns, r.end_ns, r.rc, r.thread_id) for r in g.itertuples()]
        st = stats_frame(hsa_stats(crs))
        st[by], st["counted"] = value, bool(counted)
        st["category"] = st.Name.map(dict(zip(g.call, g.category)))
        st["refused"] = st.Name.map((g.rc > 0).groupby(g.call).sum()).astype("int64")
        frames.append(st)
    return frame(pd.concat(frames, ignore_index=True).to_dict("records"), API_STATS)


def _with_counted(transfers: pd.DataFrame) -> pd.DataFrame:
    """``transfers`` with its ``counted`` column (False where a run has none)."""
    return transfers if "counted" in transfers else transfers.assign(counted=False)


#: the replica's events that are the application's own calls, not the runtime's
APPLICATION_EVENTS = ("app_lock", "app_unlock")


def api_calls(transfers: pd.DataFrame, calls: pd.DataFrame, *, by: str = "user_pinned") -> pd.DataFrame:
    """Every native call of the replica with ``by``, ``counted`` (the arm where pinpath counted
    the runtime's re-locks: its calls ``engine.COUNT_CALLS``), its ``repeat`` (the step: an
    independent repeat on the engine) and who made it: ``caller`` "application" for the
    application's own register and unregister of its arrays (as rocprof sees them too), "runtime"
    for the rest."""
    cols = ["transfer_id", by, "counted", "event", "step"]
    out = calls.merge(_with_counted(transfers)[cols], on="transfer_id")
    out["caller"] = np.where(out.event.isin(APPLICATION_EVENTS), "application", "runtime")
    return out.rename(columns={"step": "repeat"}).drop(columns=["event"])
