"""The replay of a pattern's classes on this node: ONE function, ``replay``. It runs on the
native engine (``pinpath.engine``: C executes the plan, so no interpreter time is in a row) where
that engine runs on the platform, else on pinpath's Python policies; the ``engine`` column says
which ("native" or "python").

For each variant (a policy, whether the application registered the buffer first, the nextgen
threshold) and each (size, direction, reuse) class, a repeat is a host buffer's whole life as the
application gives it to the runtime: [register], map, its first transfer (``use`` 0), a second one
where the class reuses the buffer (``use`` 1), unmap, [unregister]. Rows are the timed events; the
repeats visit the classes in a shuffled order; a warm-up round is dropped. One host buffer per size
serves every class and variant: no two lives overlap, and memory is the sum of the sizes.
"""

from __future__ import annotations

import random
import time
from contextlib import ExitStack
from typing import Mapping

import pandas as pd

from .. import engine as native_engine
from ..errors import LockFailed, RuntimeCallFailed
from ..experiments.native import _check_point, use_native
from ..experiments.sweep import SEED, DeviceBuffers, checks, rounds, transfer
from ..memkinds import host_buffer
from ..policies import DEFAULT_THRESHOLD_NBYTES, make_policy
from ..vocab import MemoryKind

__all__ = ["replay", "REPLAY_COLUMNS", "ENGINES"]

ENGINES = ("auto", "native", "python")
REPLAY_COLUMNS = ["variant", "policy", "event", "nbytes", "direction", "reuse", "use", "repeat", "ns", "path",
                  "error", "engine"]
_NATIVE_EVENTS = {"app_lock": "register", "app_unlock": "unregister", "map": "map", "unmap": "unmap",
                  "transfer": "transfer"}


def replay(rt, classes: pd.DataFrame, policies: Mapping[str, tuple], repeats: int, *,
           verify: str = "first", warmup: int = 1, engine: str = "auto") -> pd.DataFrame:
    """Per-event times of every class under every variant.

    ``classes``: rows with nbytes, direction (h2d/d2h), reuse (>= 1). ``policies``: variant ->
    (policy name, user_pinned, threshold_nbytes or None). ``engine``: "auto" (native where it
    runs), "native" or "python". Returns REPLAY_COLUMNS: event is register, map, transfer, unmap
    or unregister; ``ns`` the event's time (a transfer's includes the wait for its copy);
    ``error`` the runtime's answer where a class was refused under a variant (one row, event
    "refused": the class is not replayed under that variant)."""
    classes = classes[["nbytes", "direction", "reuse"]].drop_duplicates()
    with ExitStack() as stack:
        dev = stack.enter_context(DeviceBuffers(rt))
        dptrs = {int(n): dev.get(int(n)) for n in classes.nbytes.unique()}
        hosts = {n: stack.enter_context(host_buffer(MemoryKind.HEAP, n, rt=rt)) for n in dptrs}
        body = _native if use_native(rt, engine) else _python
        rows = body(rt, classes, policies, repeats, dev=dev, dptrs=dptrs, hosts=hosts, verify=verify,
                    warmup=warmup, stack=stack)
    return pd.DataFrame(rows, columns=REPLAY_COLUMNS)


def _python(rt, classes, policies, repeats, *, dev, dptrs, hosts, verify, warmup, stack) -> list[dict]:
    rows = []
    pols = {}
    for variant, (policy, pinned, thr) in policies.items():
        kw = {} if thr is None else {"threshold_nbytes": int(thr)}
        pols[variant] = stack.enter_context(make_policy(policy, rt, **kw))
    refused: dict = {}
    points = [(variant, c) for variant in policies for c in classes.itertuples(index=False)]
    for i, (variant, c) in rounds(points, repeats=repeats, warmup=warmup, label="advise replay"):
        if (variant, c) in refused:
            continue
        policy, pinned, _ = policies[variant]
        pol, buf = pols[variant], hosts[int(c.nbytes)]
        base = {"variant": variant, "policy": policy, "nbytes": int(c.nbytes), "direction": c.direction,
                "reuse": int(c.reuse), "repeat": i, "engine": "python", "error": ""}
        events = []
        try:
            if pinned:   # the application registers the buffer (cudaHostRegister / hipHostRegister)
                t0 = time.perf_counter_ns()
                rt.lock(buf.ptr, buf.nbytes)
                events.append(("register", -1, time.perf_counter_ns() - t0, ""))
            try:
                m = pol.map(buf)
                events.append(("map", -1, m.total_ns, m.path))
                for use in range(min(int(c.reuse), 2)):
                    r = transfer(pol, buf, dev, dptrs[int(c.nbytes)], c.direction, verify=checks(verify, max(i, 0)))
                    events.append(("transfer", use, r.total_ns, r.path))
                u = pol.unmap(buf)
                events.append(("unmap", -1, u.total_ns, u.path))
            finally:
                if pinned:
                    t0 = time.perf_counter_ns()
                    rt.unlock(buf.ptr, buf.nbytes)
                    events.append(("unregister", -1, time.perf_counter_ns() - t0, ""))
        except (LockFailed, RuntimeCallFailed) as e:
            refused[(variant, c)] = str(e)
            rows.append({**base, "event": "refused", "use": -1, "ns": float("nan"), "path": "", "error": str(e)})
            continue
        if i >= 0:
            rows += [{**base, "event": ev, "use": use, "ns": float(ns), "path": str(path)}
                     for ev, use, ns, path in events]
    return rows


def _native(rt, classes, policies, repeats, *, dev, dptrs, hosts, verify, warmup, stack) -> list[dict]:
    """Per repeat and variant one plan (an engine run has one policy): the repeat's lives of every
    class in a shuffled order; the variants in a shuffled order per repeat, so drift over the run
    spreads over all of them. Bytes are checked outside the timed plans, once per class and
    variant (``_check_point``)."""
    eng = native_engine.load(rt.name)
    rows, todo = [], {}
    for variant, (policy, pinned, thr) in policies.items():
        todo[variant] = []
        for c in classes.itertuples(index=False):
            n = int(c.nbytes)
            if verify != "none" and not _check_point(eng, policy, rt, hosts[n], dev, dptrs[n], c.direction,
                                                     threshold_nbytes=_threshold(thr), app_pinned=bool(pinned)):
                rows.append({"variant": variant, "policy": policy, "event": "refused", "nbytes": n,
                             "direction": c.direction, "reuse": int(c.reuse), "use": -1, "repeat": -1,
                             "ns": float("nan"), "path": "", "error": "the runtime moved no bytes (copy refused)",
                             "engine": "native"})
            else:
                todo[variant].append(c)
    rng = random.Random(SEED)
    variants = [v for v in policies if todo[v]]
    for r in range(-warmup, repeats):
        rng.shuffle(variants)
        for variant in variants:
            policy, pinned, thr = policies[variant]
            plan = native_engine.Plan()
            bidx = {n: plan.buffer(b.ptr, dptrs[n], n, str(b.kind)) for n, b in hosts.items()}
            lives = todo[variant]
            rng.shuffle(lives)
            for c in lives:
                b, ctx = bidx[int(c.nbytes)], {"cls_direction": c.direction, "reuse": int(c.reuse),
                                               "cls_nbytes": int(c.nbytes)}
                if pinned:
                    plan.app_lock(b, use=-1, **ctx)
                plan.map(b, use=-1, **ctx)
                for use in range(min(int(c.reuse), 2)):
                    plan.transfer(b, c.direction, use=use, **ctx)
                plan.unmap(b, use=-1, **ctx)
                if pinned:
                    plan.app_unlock(b, use=-1, **ctx)
            t = eng.run(policy, plan, threshold_nbytes=_threshold(thr)).transfers()
            if r < 0:
                continue
            rows += [{"variant": variant, "policy": policy, "event": _NATIVE_EVENTS[e.event], "nbytes": int(e.cls_nbytes),
                      "direction": e.cls_direction, "reuse": int(e.reuse), "use": int(e.use), "repeat": r,
                      "ns": float(e.total_ns), "path": e.path, "error": e.error, "engine": "native"}
                     for e in t.itertuples(index=False)]
    return _refuse_failed_lives(rows)


def _refuse_failed_lives(rows: list[dict]) -> list[dict]:
    """A class whose registration or map the runtime refused under a variant is not replayed
    there: its rows become one "refused" row with the runtime's answer (as the Python path does)."""
    key = lambda r: (r["variant"], r["nbytes"], r["direction"], r["reuse"])   # noqa: E731
    failed = {}
    for r in rows:
        if r["error"] and r["event"] in ("register", "map"):
            failed.setdefault(key(r), r)
    out = [r for r in rows if key(r) not in failed or r["event"] == "refused"]
    out += [{**r, "event": "refused", "use": -1, "repeat": -1, "ns": float("nan"), "path": ""} for r in failed.values()]
    return out


def _threshold(thr) -> int:
    return DEFAULT_THRESHOLD_NBYTES if thr is None else int(thr)
