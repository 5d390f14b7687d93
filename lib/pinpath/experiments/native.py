"""Experiments executed by the native engine (``pinpath.engine``): the policy sweep, the miniqmc
replica and C13's threads, with independent repeats as the unit.

A repeat is a fresh round: host buffers allocated anew, a fresh policy state (empty map and
pool), its own shuffled order; inside it, every point is warmed up once (rows dropped) and then
visited ``rounds`` times in shuffled order. Bytes are checked outside the timed plan: for
each point a short plan of its own (map, transfer, unmap) moves a poisoned destination, and
the rows of that point in that repeat carry the result in ``verified``.
"""

from __future__ import annotations

from contextlib import ExitStack

import numpy as np
import pandas as pd

from .. import engine as native_engine
from ..kernels import NSPLINES, out_nbytes, pos_nbytes, replica_expected
from ..memkinds import host_buffer, supports
from ..errors import BadParameter, NotAvailable
from ..runtimes.base import has
from ..schema import frame, THREADS
from ..vocab import POLICY_STEPS, Capability, Direction, MemoryKind, Policy
from .sweep import SEED, DeviceBuffers, Poisoned, Sweep, grid, page_locked, thread_place

__all__ = ["use_native", "native_why_not", "native_policy_sweep", "native_replica", "native_concurrency", "ROUNDS",
           "cache_state"]

ROUNDS = 2   #: visits of every point inside one repeat (their median is the repeat's figure)
#: from this size a point is visited once per repeat after its warm-up: its transfers take 50 ms
#: and more, and in the H200 reference they spread 1-16 % within a repeat against 20-46 % between
#: repeats, so the time is better spent on repeats
ONE_ROUND_NBYTES = 256 << 20


def rounds_for(nbytes: int, rounds: int) -> int:
    """The rounds a point of ``nbytes`` gets in a repeat of ``rounds``."""
    return 1 if nbytes >= ONE_ROUND_NBYTES else rounds


def cache_state(evict_nbytes: int) -> str:
    """The cache state a plan's transfers meet: "hot" (nothing written between them) or "cold"."""
    return "cold" if evict_nbytes else "hot"


def native_why_not(rt) -> str:
    """"" where the engine runs on ``rt``'s platform, else why not (the Python policies are used)."""
    return native_engine.why_not(rt.name) if rt.name in ("cuda", "hsa", "host") else \
        f"the native engine has no {rt.name} build (cuda, hsa and host only)"


def use_native(rt, engine: str) -> bool:
    """Whether an experiment runs on the engine: "native" (it must run; NotAvailable with the
    reason if not), "auto" (where it runs), "python" (never)."""
    if engine not in ("auto", "native", "python"):
        raise BadParameter(f"engine must be auto, native or python, not {engine!r}")
    if engine == "python":
        return False
    reason = native_why_not(rt)
    if reason and engine == "native":
        raise NotAvailable(f"{rt.name}: the native engine is not available: {reason}")
    return not reason


def _check_point(eng, policy, rt, buf, dev: DeviceBuffers, dptr: int, direction, *, threshold_nbytes: int,
                 app_pinned: bool) -> bool:
    """One transfer of a poisoned destination through the policy, outside the timed plan."""
    dst = Poisoned(rt, direction, buf.array, dptr, buf.nbytes, on=True, want=dev.content.get(dptr))
    if Direction(direction) == Direction.D2H:
        dev.refresh(dptr)
    p = native_engine.Plan()
    b = p.buffer(buf.ptr, dptr, buf.nbytes, str(buf.kind))
    if app_pinned:
        p.app_lock(b)
    p.map(b)
    i = p.transfer(b, direction)
    p.unmap(b)
    if app_pinned:
        p.app_unlock(b)
    done = eng.run(policy, p, threshold_nbytes=threshold_nbytes)
    if done.path(i) in ("copy_failed", "lock_failed_error"):
        return False
    return dst.verdict(f"{policy} (native): {direction} of {buf.nbytes} bytes ({buf.kind})")


def native_policy_sweep(rt, *, policies, sizes_nbytes, directions=("h2d", "d2h"), kinds=(MemoryKind.HEAP,),
                        repeats: int = 5, rounds: int = ROUNDS, verify: str = "first", app_pinned=False,
                        threshold_nbytes: int = 1 << 20, label: str = "policy sweep",
                        seed: int = SEED, evict_nbytes: int = 0) -> pd.DataFrame:
    """policy_sweep's rows, executed by the engine: per repeat and policy (policies in a shuffled
    order) one plan that maps every buffer, warms every point up once, visits every point
    ``rounds`` times in a shuffled order and unmaps. Columns as policy_sweep's, plus ``round``,
    ``engine`` and the cache state the transfers met (``cache``: "hot", each right after the plan's
    previous op, or "cold": ``evict_nbytes`` > 0 of other memory written before each, untimed;
    ``evict_nbytes``) and where the timing thread ran when the plan began (``thread_cpu``,
    ``thread_node``, ``gpu_node``: ``sweep.thread_place``); ``repeat`` is the independent repeat."""
    eng = native_engine.load(rt.name)
    pinned_axis = list(app_pinned) if isinstance(app_pinned, (list, tuple)) else [bool(app_pinned)]
    sweep = Sweep(repeats=repeats, verify=verify, seed=seed, label=label)
    frames, missing = [], []
    for r, order in sweep.independent(policies):
        for policy in order:
            with ExitStack() as stack:
                dev = stack.enter_context(DeviceBuffers(rt))
                dptrs = {n: dev.get(n) for n in sizes_nbytes}
                plan, bufs, points = native_engine.Plan(), {}, []
                for pt in grid(kind=kinds, nbytes=sizes_nbytes, app_pinned=pinned_axis):
                    try:
                        buf = stack.enter_context(host_buffer(pt["kind"], pt["nbytes"], rt=rt, seed=r))
                    except NotAvailable as e:
                        if r == 0:
                            missing.append({"kind": str(pt["kind"]), "nbytes": pt["nbytes"], "policy": str(policy),
                                            "not_available": str(e)})
                        continue
                    key = (pt["kind"], pt["nbytes"], pt["app_pinned"])
                    bufs[key] = (buf, plan.buffer(buf.ptr, dptrs[pt["nbytes"]], buf.nbytes, str(buf.kind)))
                    points += [(key, d) for d in directions if not supports(pt["kind"], d)]
                plan.evict_nbytes = int(evict_nbytes)
                place = thread_place(rt)   # where the plan's thread runs (the engine times in this thread)
                ctx = {k: {"repeat": r, "backing": buf.backing, "app_pinned": k[2], "cache": cache_state(evict_nbytes),
                           "evict_nbytes": int(evict_nbytes), **place} for k, (buf, _) in bufs.items()}
                for k, (_, b) in bufs.items():
                    if k[2]:
                        plan.app_lock(b, warmup=True, **ctx[k])
                    plan.map(b, warmup=True, **ctx[k])
                for i, (k, d) in sweep.in_plan(points, rounds, lambda pt: rounds_for(pt[0][1], rounds)):
                    plan.transfer(bufs[k][1], d, warmup=i < 0, round=i, **ctx[k])
                for k, (_, b) in bufs.items():
                    plan.unmap(b, warmup=True, **ctx[k])
                    if k[2]:
                        plan.app_unlock(b, warmup=True, **ctx[k])
                done = eng.run(policy, plan, threshold_nbytes=threshold_nbytes)
                rows = sweep.plan_rows(done)
                if sweep.checks(r):
                    ok = {(str(k[0]), k[1], k[2], d): _check_point(eng, policy, rt, bufs[k][0], dev, dptrs[k[1]], d,
                                                                   threshold_nbytes=threshold_nbytes, app_pinned=k[2])
                          for k, d in set(points)}
                    rows["verified"] = pd.array([ok.get(key) for key in zip(rows.kind, rows.nbytes, rows.app_pinned,
                                                                            rows.direction)], dtype="boolean")
                frames.append(rows)
    if evict_nbytes:
        eng.drop_scratch()   # the memory written to make the buffers cold, given back
    out = pd.concat(frames, ignore_index=True) if frames else frame([], {})
    if missing:
        out = pd.concat([out, pd.DataFrame(missing).assign(platform=rt.name)], ignore_index=True)
    return out


def native_replica(rt, *, policies, nw_values=(16,), steps: int = 5, invocations_per_step: int = 384,
                   user_pinned=(False,), nsplines: int = NSPLINES, threshold_nbytes: int = 1 << 20,
                   verify: str = "first", seed: int = SEED, kernel_only: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The replica (experiments.replica) executed by the engine. Every step is an independent
    repeat of every region (policy, nw, user_pinned), the regions in a shuffled order: fresh
    buffers; the application's own pins (``app_lock``) when ``user_pinned``; map; the step's
    invocations (H2D of the positions, the kernel where the runtime has one, D2H of the output,
    the region's end); unmap; unpin. Rows as replica's (events map, transfer, kernel, sync, unmap,
    app_lock, app_unlock), with ``step`` = the repeat; the calls frame's transfer_id is the row.
    Where the runtime keeps no count of locks (CUDA refuses a re-lock, mlock does not stack), each
    user-pinned region of a policy that locks every transfer without asking first (lock_always) also runs as a
    counting runtime (ROCT) would, rows with ``counted`` True: the application's registration
    entered in pinpath's count, the runtime's lock of it and its unlock counted there (calls
    ``engine.COUNT_CALLS``, no runtime call); every other row has ``counted`` False.
    ``kernel_only``: each invocation also runs without its copies, right after it (before it, every
    other invocation, as ``region --paired`` does): the kernel and the region's end (the policies
    that model a runtime wait for their queue there), rows with ``kernel_only`` True."""
    eng = native_engine.load(rt.name)
    kernel = has(rt, Capability.KERNELS)   # the runtime's kernel handle (0: the engine's own, host)
    kernel_fn = rt.kernel_handle() if kernel else 0
    rng = np.random.default_rng(seed)
    regions = [(str(pt["policy"]), pt["nw"], pt["user_pinned"], False)
               for pt in grid(policy=policies, nw=nw_values, user_pinned=user_pinned)]
    if not eng.locks_counted:   # the counted arm: the path a counting runtime takes (ROCT's count's analogue)
        regions += [(p, nw, True, True) for p, nw, pinned, _ in list(regions)
                    if pinned and POLICY_STEPS[Policy(p)].transfer == "lock_copy_unlock"
                    and not POLICY_STEPS[Policy(p)].query_first]   # a query finds the registration: no lock
    sweep = Sweep(repeats=steps, verify=verify, seed=seed, label="replica steps")
    frames, call_frames, n_rows = [], [], 0
    for step, (policy, nw, pinned, counted) in sweep.rounds(regions):
        with ExitStack() as stack:
            # the pinned allocator hands out runtime-pinned memory and tracks it (adopt)
            kind = MemoryKind.PINNED if policy == Policy.PINNED_ALLOCATOR else MemoryKind.HEAP
            pos = stack.enter_context(host_buffer(kind, pos_nbytes(nw), rt=rt, seed=seed + step))
            out = stack.enter_context(host_buffer(kind, out_nbytes(nw, nsplines), rt=rt, seed=seed + step + 1))
            dev = stack.enter_context(DeviceBuffers(rt))
            pos_d, out_d = dev.get(pos.nbytes), dev.get(out.nbytes)
            pos.array.view(np.float64)[:] = rng.uniform(-1.0, 1.0, 3 * nw)
            # poisoned every step, checked on the steps ``verify`` names
            pos_dst = Poisoned(rt, Direction.H2D, pos.array, pos_d, pos.nbytes, on=True)
            out_dst = Poisoned(rt, Direction.D2H, out.array, out_d, out.nbytes, on=True)
            plan = native_engine.Plan()
            bp = plan.buffer(pos.ptr, pos_d, pos.nbytes, str(kind))
            bo = plan.buffer(out.ptr, out_d, out.nbytes, str(kind))
            ctx = {"nw": nw, "user_pinned": pinned, "counted": counted, "kernel": kernel, "step": step, "repeat": step,
                   **({"kernel_only": False} if kernel_only else {})}
            arrays = (("pos", bp), ("out", bo))
            if kind == MemoryKind.PINNED:
                for name, b in arrays:
                    plan.adopt(b, invocation=-1, array=name, **ctx)
            if pinned:
                for name, b in arrays:
                    plan.app_lock(b, pinpath_count=counted, invocation=-1, array=name, **ctx)
            for name, b in arrays:
                plan.map(b, invocation=-1, array=name, **ctx)
            for inv in range(invocations_per_step):
                alone = {**ctx, "kernel_only": True, "invocation": inv, "array": ""}
                first = kernel_only and inv % 2 == 1
                if first:
                    _kernel_only(plan, bp, bo, nw, nsplines, kernel, alone)
                plan.transfer(bp, "h2d", wait=False, pinpath_count=counted, invocation=inv, array="pos", **ctx)
                if kernel:
                    plan.kernel(bp, bo, nw, nsplines, invocation=inv, array="", **ctx)
                plan.transfer(bo, "d2h", wait=False, pinpath_count=counted, invocation=inv, array="out", **ctx)
                plan.sync(bp, invocation=inv, array="", **ctx)
                if kernel_only and not first:
                    _kernel_only(plan, bp, bo, nw, nsplines, kernel, alone)
            for name, b in arrays:
                plan.unmap(b, invocation=-1, array=name, **ctx)
            done = eng.run(policy, plan, threshold_nbytes=threshold_nbytes, kernel_fn=kernel_fn)
            rows, calls = done.transfers(), done.calls(rt.call_categories)
            if pinned:   # the application's pins still held? (mlock keeps no count: a runtime's unlock undoes them)
                if not all(page_locked(rt, b.ptr) for b in (pos, out)):
                    moved = rows.event == "transfer"
                    rows.loc[moved, "hazard"] = "the application's pinned arrays were unlocked by the runtime " \
                                                "during this step"
                unpin = native_engine.Plan()
                for name, b in arrays:
                    unpin.app_unlock(unpin.buffer(*plan.buffers[b][:3]), pinpath_count=counted, invocation=-1, array=name,
                                     **ctx)
                undone = eng.run(policy, unpin)
                more = undone.calls(rt.call_categories)
                more["transfer_id"] += len(rows)
                rows, calls = pd.concat([rows, undone.transfers()], ignore_index=True), pd.concat([calls, more])
            if sweep.checks(step):
                want = replica_expected(pos.array.view(np.float64), nw, nsplines).view(np.uint8).ravel() \
                    if kernel else dev.content[out_d]
                ok_pos = pos_dst.verdict(f"replica {policy} (native): H2D of the positions")
                ok_out = out_dst.verdict(f"replica {policy} (native): D2H of the output", want=want)
                moved = rows.event == "transfer"
                rows.loc[moved, "verified"] = np.where(rows.loc[moved, "array"] == "pos", ok_pos, ok_out)
            calls["transfer_id"] += n_rows
            rows.insert(0, "transfer_id", range(n_rows, n_rows + len(rows)))
            n_rows += len(rows)
            frames.append(rows)
            call_frames.append(calls)
    return pd.concat(frames, ignore_index=True), pd.concat(call_frames, ignore_index=True)


def _kernel_only(plan, bp: int, bo: int, nw: int, nsplines: int, kernel: bool, ctx: dict) -> None:
    """One invocation of the replica without its copies: the kernel (where the runtime has one) and the region's end."""
    if kernel:
        plan.kernel(bp, bo, nw, nsplines, **ctx)
    plan.sync(bp, **ctx)


def native_concurrency(rt, *, policies, threads=(1, 2, 4, 8, 16), nbytes: int = 15360, transfers: int = 200,
                       repeats: int = 5, app_pinned: bool = True, direction: str = "h2d") -> pd.DataFrame:
    """C13 executed by the engine: per repeat and point (policy, threads; shuffled), each thread
    pins its own buffer as the application would, maps it, makes one untimed transfer and then
    ``transfers`` timed ones on its own queue, the threads released together by the engine's
    start gate. THREADS rows (one per thread and repeat, with ``repeat`` and ``engine``)."""
    eng = native_engine.load(rt.name)
    sweep = Sweep(repeats=repeats, verify="first", seed=SEED + 13, platform=rt.name)
    runtime_cats = ("query", "lock", "alloc", "grant", "unlock", "free")
    for r, pt in sweep.rounds(list(grid(policy=policies, threads=threads))):
        n = pt["threads"]
        with ExitStack() as stack:
            dev = stack.enter_context(DeviceBuffers(rt))
            bufs = [stack.enter_context(host_buffer(MemoryKind.HEAP, nbytes, rt=rt, seed=i)) for i in range(n)]
            plan = native_engine.Plan()
            bs = [plan.buffer(b.ptr, dev.get(nbytes, seed=100 + i), nbytes) for i, b in enumerate(bufs)]
            for t, b in enumerate(bs):
                if app_pinned:
                    plan.app_lock(b, thread=t, timed=False)
                plan.map(b, thread=t, timed=False)
                plan.transfer(b, direction, thread=t, timed=False)
            for k in range(transfers):
                for t, b in enumerate(bs):
                    plan.transfer(b, direction, thread=t, timed=True)
            for t, b in enumerate(bs):
                plan.unmap(b, thread=t, timed=False)
                if app_pinned:
                    plan.app_unlock(b, thread=t, timed=False)
            done = eng.run(pt["policy"], plan)
            df = done.transfers(keep=lambda i, c: c["timed"])
            if sweep.checks(r):   # each thread's bytes, moved once more outside the timed plan
                for b, i in zip(bufs, range(n)):
                    _check_point(eng, pt["policy"], rt, b, dev, plan.buffers[bs[i]][1], direction,
                                 threshold_nbytes=1 << 20, app_pinned=app_pinned)
            wall = int(df.end_ns.max() - df.start_ns.min())
            own = df[[f"{c}_ns" for c in runtime_cats]].sum(axis=1)
            for t, g in df.groupby("thread_id"):
                moving = g.dma_ns + g.wait_ns
                sweep.add(r, {"policy": str(pt["policy"]), "threads": n, "thread": int(t), "transfers": len(g),
                              "nbytes": nbytes, "path": g.path.mode().iloc[0],
                              "overhead_ns": int(np.median(g.total_ns - moving)), "total_ns": int(g.total_ns.median()),
                              "native_ns": int(own[g.index].median()), "wall_ns": wall,
                              "aggregate_gb_per_s": n * transfers * nbytes / wall, "engine": "native"})
    return sweep.frame(THREADS)
