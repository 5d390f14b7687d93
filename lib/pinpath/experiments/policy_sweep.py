"""Transfers through several policies over sizes, memory kinds and directions (C2, C3, C4, C5)."""

from __future__ import annotations

from contextlib import ExitStack

import pandas as pd

from ..errors import LockFailed, NotAvailable
from ..memkinds import host_buffer, supports
from ..policies import make_policy
from ..schema import LOCK_OUTCOMES, frame
from ..vocab import MemoryKind, Policy
from .native import native_policy_sweep, use_native
from .sweep import SEED, DeviceBuffers, Sweep, grid, thread_place, transfer

__all__ = ["policy_sweep", "lock_outcomes"]


def policy_sweep(rt, *, policies=(Policy.STAGE_PER_COPY, Policy.STAGE_POOLED), sizes_nbytes,
                 directions=("h2d", "d2h"), kinds=(MemoryKind.HEAP,), repeats: int = 10, warmup: int = 1,
                 verify: str = "first", app_pinned=False, label: str = "policy sweep",
                 engine: str = "auto", evict_nbytes: int = 0, seed: int = SEED) -> pd.DataFrame:
    """Executed by the native engine where it runs (``engine`` "auto" or "native";
    experiments.native: ``repeat`` is then an independent repeat), else by the Python policies
    (``engine`` "python", the ``engine`` column says which).

    TRANSFERS rows (with ``repeat``, ``backing``, ``app_pinned`` and where the timing thread ran
    when the round began: ``thread_cpu``, ``thread_node``, ``gpu_node``) of each policy for each
    kind, size and direction, every point visited once per round in a shuffled order.

    Each (kind, size, policy) has its own host buffer, mapped before the first round and
    unmapped after the last, so map-time policies see it as an offload runtime would. With
    ``app_pinned`` (True, or the values to sweep: ``(True, False)``) the application registers
    each buffer itself first (as QMCPACK does with hipHostRegister) and unregisters it at the end. A (kind, direction) pair that cannot be done
    - a D2H into read-only memory - is left out; a kind this machine cannot make (rodata
    without a compiler) gives one row saying why (``not_available``). The phases (query, lock,
    alloc, grant, copy_in, dma, wait, copy_out, unlock, free) say where the time goes.

    ``evict_nbytes`` > 0 measures the buffers cold (that much other memory written before each
    transfer, untimed: the engine's ``Plan.evict_nbytes``); on the engine only, NotAvailable elsewhere.
    ``seed``: the shuffles' (a fresh process of ``replicate.replicated`` passes its own).
    """
    if evict_nbytes and not use_native(rt, engine):
        raise NotAvailable(f"{rt.name}: buffers made cold between transfers are measured on the native engine only")
    if use_native(rt, engine):
        return native_policy_sweep(rt, policies=policies, sizes_nbytes=sizes_nbytes, directions=directions,
                                   kinds=kinds, repeats=repeats, verify=verify, app_pinned=app_pinned, label=label,
                                   evict_nbytes=evict_nbytes, seed=seed)
    sweep, missing = Sweep(repeats=repeats, warmup=warmup, verify=verify, seed=seed, label=label, platform=rt.name), []
    with ExitStack() as stack:
        dev = stack.enter_context(DeviceBuffers(rt))
        dptrs = {n: dev.get(n) for n in sizes_nbytes}
        pols = {p: stack.enter_context(make_policy(p, rt)) for p in policies}
        bufs = {}
        pinned_axis = list(app_pinned) if isinstance(app_pinned, (list, tuple)) else [bool(app_pinned)]
        for pt in grid(kind=kinds, nbytes=sizes_nbytes, policy=policies, app_pinned=pinned_axis):
            key = tuple(pt.values())
            try:
                buf = stack.enter_context(host_buffer(pt["kind"], pt["nbytes"], rt=rt))
            except NotAvailable as e:
                missing.append({"kind": str(pt["kind"]), "nbytes": pt["nbytes"], "not_available": str(e)})
                continue
            if pt["app_pinned"]:
                rt.lock(buf.ptr, buf.nbytes)
                stack.callback(rt.unlock, buf.ptr, buf.nbytes)
            pols[pt["policy"]].map(buf)
            stack.callback(pols[pt["policy"]].unmap, buf)
            bufs[key] = buf
        points = [pt for pt in grid(kind=kinds, nbytes=sizes_nbytes, policy=policies, app_pinned=pinned_axis,
                                    direction=directions)
                  if (pt["kind"], pt["nbytes"], pt["policy"], pt["app_pinned"]) in bufs
                  and not supports(pt["kind"], pt["direction"])]
        places = {}   # round -> where the timing thread ran when it began
        for i, pt in sweep.rounds(points):
            if i not in places:
                places[i] = thread_place(rt)
            buf = bufs[(pt["kind"], pt["nbytes"], pt["policy"], pt["app_pinned"])]
            r = transfer(pols[pt["policy"]], buf, dev, dptrs[pt["nbytes"]], pt["direction"],
                         verify=sweep.checks(i))
            sweep.add(i, (r, {"backing": buf.backing, "app_pinned": pt["app_pinned"], "engine": "python", **places[i]}))
    out = sweep.transfers()
    if missing:
        out = pd.concat([out, pd.DataFrame(missing).assign(platform=rt.name)], ignore_index=True)
    return out


def lock_outcomes(rt, *, kinds=tuple(MemoryKind), sizes_nbytes=(4096,), read_only_flag: bool = False) -> pd.DataFrame:
    """What the runtime answers when asked to lock each kind of host memory with the flags an
    offload runtime passes (C5); with ``read_only_flag`` the runtime's read-only flag is added
    to read-only buffers (a labelled second reading: no offload runtime knows memory is
    read-only). Granted locks are undone; a kind this machine cannot make is a row saying why."""
    rows = []
    for pt in grid(kind=kinds, nbytes=sizes_nbytes):
        base = {"kind": str(pt["kind"]), "nbytes": pt["nbytes"], "read_only_flag": False, "platform": rt.name}
        try:
            with ExitStack() as stack:
                buf = stack.enter_context(host_buffer(pt["kind"], pt["nbytes"], rt=rt))
                flag = read_only_flag and not buf.writable
                with rt.recorder.span() as calls:
                    try:
                        rt.lock(buf.ptr, buf.nbytes, read_only=flag)
                        err, already = "", False
                    except LockFailed as e:
                        err, already = e.answer, e.already_pinned
                call = calls[-1]
                if not err:
                    rt.unlock(buf.ptr, buf.nbytes)
                rows.append({**base, "backing": buf.backing, "read_only_flag": flag, "call": call[0],
                             "ns": call[2] - call[1], "rc": call[3], "error": err, "granted": not err,
                             "already_pinned": already, "not_available": ""})
        except NotAvailable as e:
            rows.append({**base, "backing": "", "call": "", "ns": 0, "rc": -1, "error": "", "granted": None,
                         "already_pinned": False, "not_available": str(e)})
    return frame(rows, LOCK_OUTCOMES)
