"""What changes a transfer's cost (issue #17, notebook 14): each state measured on its own, timed
in C (``native/state.c`` through ``pinpath.statelib``), in independent rounds.

A round is the unit of repeat: every point of a section once, in a freshly shuffled order
(``sweep.rounds``), on buffers mapped afresh for it (``ps_buffer``, every page written), with every
registration and allocation the round made undone before the next. ``section(..., unit="process")``
runs each repeat in a fresh process (``in_processes``, through ``processes.run``: the runtime started
anew); with "round" the rounds run in this process, whose runtime is not restarted (its CUDA context
is the notebook's too).
Figures are the median of the per-round medians with a bootstrap interval over the rounds
(``repeat_summary``), and the spread within a round beside the spread between rounds.

Every row carries the timing thread's CPU and NUMA node and the GPU's NUMA node
(``machine_state.placement``), read when its round started.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Sequence

import numpy as np
import pandas as pd

from .. import machine_state as ms
from ..osinfo import backing
from ..schema import GPU_STATE, STATE_EFFECTS, STATE_SUMMARY, frame
from ..stats import paired_ratio_ci
from ..statelib import CACHE_POLICIES
from ..units import fmt_nbytes
from . import processes
from .processes import REPEAT_UNITS
from .repeats import over_repeats, spreads
from .sweep import SEED, Sweep

__all__ = ["AGES", "CACHE", "EVICT_NBYTES", "IRQ_RELATION", "CACHE_RATIO", "registration_age", "allocator_state",
           "page_backing", "thread_placement", "cache_residency", "cache_ratios", "gpu_readings",
           "repeat_medians", "repeat_summary", "placements", "open_or_reason", "section", "sections", "in_processes",
           "read_gpu",
           "conclusion", "SECTIONS", "REPEAT_UNITS"]

#: cache_ratios' columns
CACHE_RATIO = {"policy": "str", "nbytes": "int", "evict_nbytes": "int", "hot_ns": "float", "cold_ns": "float",
               "cold_over_hot": "float", "low": "float", "high": "float", "repeats": "int"}
AGES = ("first", "fresh", "held")   #: first call after the first register; right after a re-register; kept registered


def _row(lib, section: str, state: str, op: str, nbytes: int, call: int, ns, rc, place: dict, **extra) -> dict:
    """One call's row (the sweep adds its repeat and platform)."""
    rc = int(rc)
    return {"section": section, "state": state, "op": op, "nbytes": int(nbytes), "call": call, "ns": int(ns),
            "rc": rc, "error": "" if rc == 0 else f"{lib.rc_name(rc)} ({rc})", **place, **extra}


def _place(lib) -> dict:
    return ms.placement(lib.device)


def registration_age(lib, *, sizes_nbytes: Sequence[int], calls: int = 20, repeats: int = 5, warmup: int = 1,
                     ops: Sequence[str] = ("query", "reregister"), seed: int = SEED) -> pd.DataFrame:
    """The pointer query and the re-register of registered memory (CUDA: refused, 712) at each
    registration age (``AGES``), per size, on 4 KiB-backed buffers mapped afresh each round. The
    ops the platform lacks (the host's query) are left out; ``attrs["skipped"]`` says so."""
    ops = [op for op in ops if op != "query" or lib.has_query]
    sweep = Sweep(repeats=repeats, warmup=warmup, seed=seed, label="registration age", platform=lib.platform)
    for i, (op, n) in sweep.rounds([(op, n) for op in ops for n in sizes_nbytes]):
        place = _place(lib)
        with lib.buffer(n, thp=False) as p:
            b = backing(p, n)
            r = lib.reg_age(p, n, op, calls)
        extra = {"backing": b, "label": f"{op}, {fmt_nbytes(n)}"}
        sweep.add(i, _row(lib, "registration_age", "first", "register", n, 0, r.register_ns, 0, place, **extra),
                  _row(lib, "registration_age", "first", op, n, 0, r.first_ns, r.first_rc, place, **extra),
                  *(_row(lib, "registration_age", age, op, n, k, ns[k], rc[k], place, **extra)
                    for age, ns, rc in (("held", r.held_ns, r.held_rc), ("fresh", r.fresh_ns, r.fresh_rc))
                   for k in range(calls) if rc[k] != -1))
    out = sweep.frame(STATE_EFFECTS)
    out.attrs["skipped"] = [] if lib.has_query else [f"query: {lib.platform} has no pointer query"]
    return out


def allocator_state(lib, *, sizes_nbytes: Sequence[int], live_counts: Sequence[int], calls: int = 20,
                    repeats: int = 5, warmup: int = 1, registered_nbytes: int = 4096, seed: int = SEED) -> pd.DataFrame:
    """The pinned allocator's allocate and free (cudaMallocHost/cudaFreeHost; the host's
    mmap+mlock) per size, with nothing else held, with N pinned allocations held, with N
    registrations of ``registered_nbytes`` held, and right after N allocations were freed."""
    states = [("empty", 0, 0, 0)]
    for n in live_counts:
        states += [(f"{n} live pinned", n, 0, 0), (f"{n} live registered", 0, n, 0), (f"after {n} frees", 0, 0, n)]
    sweep = Sweep(repeats=repeats, warmup=warmup, seed=seed, label="allocator state", platform=lib.platform)
    for i, ((label, pinned, regd, frees), n) in sweep.rounds([(s, n) for s in states for n in sizes_nbytes]):
        place = _place(lib)
        a = lib.alloc_state(n, calls, live_pinned=pinned, live_registered=regd, registered_nbytes=registered_nbytes,
                            prior_frees=frees)
        extra = {"live_pinned": pinned, "live_registered": regd, "prior_frees": frees, "backing": "runtime",
                 "label": f"{label}, {fmt_nbytes(n)}"}
        for k in range(calls):
            sweep.add(i, _row(lib, "allocator", label, "alloc", n, k, a.alloc_ns[k], a.rc[k], place, **extra))
            if a.free_ns[k]:
                sweep.add(i, _row(lib, "allocator", label, "free", n, k, a.free_ns[k], 0, place, **extra))
    return sweep.frame(STATE_EFFECTS)


_LOCK_COPY_OPS = ("copy_pageable", "lock", "copy_locked", "unlock")


def _lock_copy_rows(lib, section: str, state: str, n: int, lc, place: dict, **extra) -> list[dict]:
    rows = []
    for k in range(len(lc.lock_ns)):
        for j, op in enumerate(_LOCK_COPY_OPS):
            if lc.rc[k, j] != -1:
                rows.append(_row(lib, section, state, op, n, k, lc[j][k], lc.rc[k, j], place, **extra))
    return rows


def page_backing(lib, *, sizes_nbytes: Sequence[int], calls: int = 5, repeats: int = 5,
                 warmup: int = 1, seed: int = SEED) -> pd.DataFrame:
    """Lock, unlock, and the copy of the buffer pageable and locked, on buffers that asked for
    4 KiB pages and for transparent huge pages; ``state`` is what Linux reports the buffer got
    (``backing_asked`` what it asked for). The copy is H2D (CUDA), memcpy (host), none (HSA)."""
    sweep = Sweep(repeats=repeats, warmup=warmup, seed=seed, label="page backing", platform=lib.platform)
    with lib.destination(max(sizes_nbytes)) as dst:
        for i, (thp, n) in sweep.rounds([(t, n) for t in (False, True) for n in sizes_nbytes]):
            place = _place(lib)
            with lib.buffer(n, thp=thp) as p:
                got = backing(p, n)
                lc = lib.lock_copy(p, n, dst, calls)
            sweep.add(i, *_lock_copy_rows(lib, "backing", got, n, lc, place, backing=got,
                                          backing_asked="thp" if thp else "4k", label=f"{got}, {fmt_nbytes(n)}"))
    return sweep.frame(STATE_EFFECTS)


IRQ_RELATION = "the GPU's interrupt CPU"


def placements(gpu_node: int, *, per_node: int = 2, irq_cpus: Sequence[int] | None = None) -> list[tuple[int, int, str]]:
    """(cpu, its node, relation to the GPU) to pin the timing thread to: up to ``per_node`` CPUs
    of every NUMA node this process may run on (the first and the last of each), and the first CPU
    the GPU's interrupts are delivered to (``irq_cpus``; read now from /proc where None) that this
    process may run on, its relation ending in IRQ_RELATION (a pick already made is relabelled)."""
    out = []
    by_node = ms.cpus_by_node()
    for node, cpus in by_node.items():
        relation = "GPU's node" if gpu_node >= 0 and node == gpu_node else \
            ("other node" if gpu_node >= 0 and node >= 0 else "GPU node unknown")
        picks = list(dict.fromkeys([cpus[0], cpus[-1]]))[:per_node]
        out += [(c, node, relation) for c in picks]
    allowed = {c for cpus in by_node.values() for c in cpus}
    irq = next((c for c in (ms.gpu_irq_cpus() if irq_cpus is None else irq_cpus) if c in allowed), None)
    if irq is None:
        return out
    node = next(n for n, cpus in by_node.items() if irq in cpus)
    relation = next((rel for c, _, rel in out if c == irq), None) or \
        next((rel for _, n, rel in out if n == node), "GPU node unknown")
    return [x for x in out if x[0] != irq] + [(irq, node, f"{relation}, {IRQ_RELATION}")]


def thread_placement(lib, *, sizes_nbytes: Sequence[int], calls: int = 20, repeats: int = 5,
                     warmup: int = 1, seed: int = SEED) -> pd.DataFrame:
    """The timing thread pinned (sched_setaffinity) to CPUs of each NUMA node in turn: the null
    call, the re-register of held registered memory (4 KiB), and per size the copy pageable and
    locked with the lock and unlock, and one H2D under each of the cache section's policies with
    the buffer hot (``h2d_pinned``, ``h2d_pageable``, ``h2d_lock``, ``h2d_staged``: ps_cache with
    nothing evicted, both of its arms hot). ``state``: "cpu C, node N (relation to the GPU's
    node)"; the GPU's interrupt CPU, found now, is one of the CPUs (``placements``), ``irq_cpu``
    in its rows."""
    gnode = ms.placement(lib.device)["gpu_node"]
    points = [(c, node, rel, n) for c, node, rel in placements(gnode) for n in sizes_nbytes]
    sweep = Sweep(repeats=repeats, warmup=warmup, seed=seed, label="thread placement", platform=lib.platform)
    with lib.destination(max(sizes_nbytes)) as dst:
        for i, (cpu, node, rel, n) in sweep.rounds(points):
            with ms.pinned_to(cpu):
                place = _place(lib)
                state = f"cpu {cpu}, node {node} ({rel})"
                null_ns, null_rc = lib.null(calls)
                with lib.buffer(n, thp=False) as p:
                    got = backing(p, n)
                    lc = lib.lock_copy(p, n, dst, max(1, calls // 4))
                    hot = {pol: lib.cache(pol, p, n, dst, None, 0, max(1, calls // 8)) for pol in CACHE_POLICIES} \
                        if lib.has_copy and dst else {}
                with lib.buffer(4096, thp=False) as p:
                    age = lib.reg_age(p, 4096, "reregister", calls)
            extra = {"cpu": cpu, "cpu_node": node, "relation": rel, "irq_cpu": rel.endswith(IRQ_RELATION)}
            sweep.add(i, *_lock_copy_rows(lib, "placement", state, n, lc, place, label=f"{state}, {fmt_nbytes(n)}",
                                          backing=got, **extra))
            sweep.add(i, *(_row(lib, "placement", state, f"h2d_{pol}", n, 2 * k + j, ns[k], c.rc[k, j], place,
                                label=f"{state}, {fmt_nbytes(n)}", backing=got, cache="hot", **extra)
                           for pol, c in hot.items() for j, ns in enumerate((c.hot_ns, c.cold_ns))
                           for k in range(len(ns))))
            sweep.add(i, *(_row(lib, "placement", state, "null", 0, k, null_ns[k], null_rc[k], place,
                                label=f"{state}, null", backing="", **extra) for k in range(calls)))
            sweep.add(i, *(_row(lib, "placement", state, "reregister_held", 4096, k, age.held_ns[k], age.held_rc[k],
                                place, label=f"{state}, re-register 4 KiB", backing="4k", **extra)
                           for k in range(calls)))
    return sweep.frame(STATE_EFFECTS)


CACHE = ("hot", "cold")   #: the buffer just copied; other memory written since (``evict_nbytes``)
EVICT_NBYTES = 512 << 20   #: other memory written before a cold transfer, unless told (an application's compute phase)


def cache_residency(lib, *, sizes_nbytes: Sequence[int], policies: Sequence[str] = tuple(CACHE_POLICIES),
                    evict_nbytes: int = EVICT_NBYTES, calls: int = 10, repeats: int = 5, warmup: int = 1,
                    seed: int = SEED) -> pd.DataFrame:
    """One H2D per policy (``statelib.CACHE_POLICIES``: pinned, pageable, lock = register + copy +
    unregister, staged = memcpy into a pinned buffer + its copy) and size, the buffer ``hot`` (an
    untimed transfer of it just before) and ``cold`` (``evict_nbytes`` of other memory written
    just before), hot and cold interleaved ``calls`` times per point and round (state.c's
    ps_cache); neither preparation is timed. ``cache`` and ``state``: hot or cold."""
    if not lib.has_copy:
        from ..nativelib import NativeUnavailable
        raise NativeUnavailable(f"{lib.platform}: state.c makes no copies here, so there is no cache state to time")
    sweep = Sweep(repeats=repeats, warmup=warmup, seed=seed, label="cache residency", platform=lib.platform)
    with lib.destination(max(sizes_nbytes)) as dst, lib.buffer(max(evict_nbytes, 4096), thp=False) as evict:
        for i, (policy, n) in sweep.rounds([(pol, n) for pol in policies for n in sizes_nbytes]):
            place = _place(lib)
            with lib.buffer(n, thp=False) as p:
                got = backing(p, n)
                c = lib.cache(policy, p, n, dst, evict, evict_nbytes, calls)
            extra = {"backing": got, "evict_nbytes": int(evict_nbytes), "policy": policy}
            sweep.add(i, *(_row(lib, "cache", cache, policy, n, k, ns[k], c.rc[k, j], place, cache=cache,
                                label=f"{policy}, {fmt_nbytes(n)}, {cache}", **extra)
                           for j, (cache, ns) in enumerate((("hot", c.hot_ns), ("cold", c.cold_ns)))
                           for k in range(calls)))
    return sweep.frame(STATE_EFFECTS)


def cache_ratios(df: pd.DataFrame) -> pd.DataFrame:
    """Per policy and size: the hot and cold medians of round medians, and cold / hot paired by
    round (the median of the rounds' own ratios, with its bootstrap 95 % interval over the rounds,
    the independent repeats)."""
    ok = df[df.rc == 0]
    rows = []
    for (policy, n), g in ok.groupby(["op", "nbytes"], sort=False):
        hot, cold = g[g.cache == "hot"], g[g.cache == "cold"]
        if not len(hot) or not len(cold):
            continue
        e = paired_ratio_ci(cold.ns, hot.ns, cold.repeat, hot.repeat)
        rows.append({"policy": policy, "nbytes": int(n), "evict_nbytes": int(g.evict_nbytes.iloc[0]),
                     "hot_ns": over_repeats([x.ns.to_numpy(float) for _, x in hot.groupby("repeat")]).value,
                     "cold_ns": over_repeats([x.ns.to_numpy(float) for _, x in cold.groupby("repeat")]).value,
                     "cold_over_hot": e.value, "low": e.low, "high": e.high, "repeats": e.n_repeats})
    order = {p: i for i, p in enumerate(CACHE_POLICIES)}
    return frame(sorted(rows, key=lambda r: (order.get(r["policy"], len(order)), r["nbytes"])), CACHE_RATIO)


def gpu_readings(snapshots: Sequence[tuple[str, dict]], platform: str) -> pd.DataFrame:
    """GPU_STATE rows, one per field of each (when, ``machine_state.snapshot``): its text and whether
    it was available."""
    rows = []
    for when, snap in snapshots:
        for f in ms.FIELDS:
            if f == "unavailable":
                continue
            v = snap.get(f, "")
            ok = v not in ("", None) and not (isinstance(v, int) and v < 0)
            rows.append({"when": when, "field": f, "value": str(v) if ok else "", "available": ok,
                         "unavailable": "" if ok else snap.get("unavailable", ""), "platform": platform})
    return frame(rows, GPU_STATE)


# -- the repeat as the unit ---------------------------------------------------------------------
def repeat_medians(df: pd.DataFrame, by: Sequence[str] = ("section", "state", "op", "nbytes")) -> pd.DataFrame:
    """The median ns of every round (``repeat``) per ``by``, successful calls only; keeps ``label``."""
    ok = df[df.rc == 0]
    keys = [*by, "repeat"] + (["label"] if "label" in df.columns and "label" not in by else [])
    return ok.groupby(keys, as_index=False, sort=False).ns.median()


def repeat_summary(df: pd.DataFrame, by: Sequence[str] = ("section", "state", "op", "nbytes")) -> pd.DataFrame:
    """STATE_SUMMARY per ``by``: the median of the round medians with its bootstrap 95 % interval
    over the rounds; the spread within a round (median over rounds of IQR / median; NaN where a
    round has one call, e.g. the ``first`` age) and between rounds ((largest - smallest round
    median) / their median)."""
    ok = df[df.rc == 0]
    rows = []
    for key, g in ok.groupby(list(by), sort=False):
        per = [x.ns.to_numpy(dtype=float) for _, x in g.groupby("repeat")]
        e, (within, between) = over_repeats(per), spreads(per)
        rows.append({**dict(zip(by, key if isinstance(key, tuple) else (key,))), "repeats": len(per),
                     "calls": int(sum(map(len, per))), "median_ns": e.value, "lo_ns": e.low, "hi_ns": e.high,
                     "within_spread": within, "between_spread": between})
    return frame(rows, {**{b: STATE_EFFECTS.get(b, "str") for b in by}, **STATE_SUMMARY})


# -- for the notebook ---------------------------------------------------------------------------
def open_or_reason(rt) -> tuple[object | None, str]:
    """state.c for ``rt``'s platform, or None and why not in one sentence."""
    from ..nativelib import NativeUnavailable
    from ..statelib import load
    try:
        return load(rt.name, getattr(rt, "device", 0)), ""
    except NativeUnavailable as e:
        return None, str(e)


SECTIONS = {"registration_age": registration_age, "allocator_state": allocator_state, "page_backing": page_backing,
            "thread_placement": thread_placement, "cache_residency": cache_residency}


def in_processes(name: str, lib, *, repeats: int = 5, warmup: int = 1, timeout_s: int = 600, **kw) -> pd.DataFrame:
    """Section ``name`` with each repeat a fresh process (``processes.run``):
    the runtime started anew, ``warmup`` untimed rounds, then one timed round in its own shuffled
    order; ``repeat`` is the process's number. NativeUnavailable (one sentence) if one fails."""
    got = _processes({name: kw}, lib, repeats=repeats, warmup=warmup, timeout_s=timeout_s)[name]
    if isinstance(got, str):
        from ..nativelib import NativeUnavailable
        raise NativeUnavailable(got)
    return got


def _processes(specs: dict, lib, *, repeats: int, warmup: int, timeout_s: int) -> dict:
    """Each repeat a fresh process that runs every section of ``specs`` ({name: kwargs}) in an order
    of its own (``processes.run``); {name: rows over the processes, or why it could not run}.
    NativeUnavailable where a process fails as a whole."""
    from ..nativelib import NativeUnavailable
    try:
        got = processes.run(__name__, specs, platform=lib.platform, device=lib.device, repeats=repeats,
                            warmup=warmup, timeout_s=timeout_s)
    except processes.Failed as e:
        raise NativeUnavailable(str(e)) from None
    return {name: g if isinstance(g, str) else g.drop(columns=processes.UNIT_COLUMN) for name, g in got.items()}


@contextmanager
def open_for_process(platform: str, device: int):
    """What a fresh process of ``processes.run`` opens first: state.c for ``platform``."""
    from ..statelib import load
    yield load(platform, device)


def _not_available(why: str) -> pd.DataFrame:
    return pd.DataFrame([{"not_available": why}])


def section(fn, lib, reason: str = "", *, unit: str = "process", **kw) -> pd.DataFrame:
    """``fn(lib, **kw)`` with ``unit`` "round" (rounds in this process), or with "process" each
    repeat a fresh process (``in_processes``); or a one-row frame whose ``not_available`` says why
    it could not run (no library here, a platform without the call, a setup the runtime refused)."""
    counts = {k: kw.pop(k) for k in ("repeats", "warmup") if k in kw}
    return sections(lib, reason, unit=unit, **counts, **{fn.__name__: kw})[fn.__name__]


def sections(lib, reason: str = "", *, unit: str = "process", repeats: int = 5, warmup: int = 1,
             **specs: dict) -> dict[str, pd.DataFrame]:
    """Several sections at once, ``specs`` naming each (a key of SECTIONS) with its keyword
    arguments: with ``unit`` "process" each repeat is one fresh process that runs them all, in an
    order of its own (one process start per repeat, not per section and repeat); with "round" one
    after another in this process. {name: its frame, or a one-row frame saying why not}."""
    from ..errors import BadParameter
    from ..nativelib import NativeUnavailable
    processes.check_unit(unit)
    unknown = sorted(set(specs) - set(SECTIONS))
    if unknown:
        raise BadParameter(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(SECTIONS)}")
    if lib is None:
        return {name: _not_available(reason) for name in specs}
    if unit == "round":
        out = {}
        for name, kw in specs.items():
            try:
                out[name] = SECTIONS[name](lib, repeats=repeats, warmup=warmup, **kw)
            except NativeUnavailable as e:
                out[name] = _not_available(str(e))
        return out
    try:
        got = _processes(specs, lib, repeats=repeats, warmup=warmup, timeout_s=600)
    except NativeUnavailable as e:
        return {name: _not_available(str(e)) for name in specs}
    return {name: _not_available(g) if isinstance(g, str) else frame(g.to_dict("records"), STATE_EFFECTS)
            for name, g in got.items()}


def read_gpu(when: str, device: int = 0) -> tuple[str, dict]:
    """(when, ``machine_state.snapshot``): the GPU's clocks and persistence and the thread's placement now."""
    return when, ms.snapshot(device)


def _ratio(s: pd.DataFrame, num: dict, den: dict) -> float:
    pick = lambda q: s.loc[np.logical_and.reduce([s[k] == v for k, v in q.items()]), "median_ns"]  # noqa: E731
    a, b = pick(num), pick(den)
    return float(a.iloc[0] / b.iloc[0]) if len(a) and len(b) and b.iloc[0] else float("nan")


def conclusion(age: pd.DataFrame, alloc: pd.DataFrame, back: pd.DataFrame, place: pd.DataFrame,
               cache: pd.DataFrame | None = None) -> str:
    """A short Markdown conclusion written from the sections' data (medians of round medians; the
    cache section's cold / hot paired by round)."""
    lines = []
    cache = pd.DataFrame([{"not_available": "the cache section was not run"}]) if cache is None else cache
    if "not_available" not in age.columns and len(age):
        s = repeat_summary(age)
        for (op, n), _ in s[s.op != "register"].groupby(["op", "nbytes"], sort=False):
            q = {"op": op, "nbytes": n}
            lines.append(f"- **registration age**, {op} at {fmt_nbytes(n)}: first / held "
                         f"{_ratio(s, {**q, 'state': 'first'}, {**q, 'state': 'held'}):.3g}x, fresh / held "
                         f"{_ratio(s, {**q, 'state': 'fresh'}, {**q, 'state': 'held'}):.3g}x.")
    if "not_available" not in alloc.columns and len(alloc):
        s = repeat_summary(alloc)
        a = s[s.op == "alloc"]
        for n, g in a.groupby("nbytes"):
            hi, lo = g.loc[g.median_ns.idxmax()], g.loc[g.median_ns.idxmin()]
            lines.append(f"- **allocator state**, pinned allocate of {fmt_nbytes(n)}: from {lo.median_ns / 1e3:.3g} us "
                         f"({lo.state}) to {hi.median_ns / 1e3:.3g} us ({hi.state}), {hi.median_ns / lo.median_ns:.3g}x.")
    if "not_available" not in back.columns and len(back):
        s = repeat_summary(back)
        for n in sorted(set(s.nbytes)):
            parts = [f"{op} {_ratio(s, {'op': op, 'nbytes': n, 'state': 'thp'}, {'op': op, 'nbytes': n, 'state': '4k'}):.3g}x"
                     for op in _LOCK_COPY_OPS if op in set(s.op)]
            lines.append(f"- **page backing** at {fmt_nbytes(n)}, THP / 4 KiB: " + ", ".join(parts)
                         + (" (THP was not granted here)" if "thp" not in set(s.state) else "") + ".")
    if "not_available" not in place.columns and len(place):
        s = repeat_summary(place)
        for (op, n), g in s.groupby(["op", "nbytes"], sort=False):
            if g.median_ns.min() > 0 and len(g) > 1:
                lines.append(f"- **thread placement**, {op}{f' {fmt_nbytes(n)}' if n else ''}: largest / smallest "
                             f"median over the CPUs {g.median_ns.max() / g.median_ns.min():.3g}x "
                             f"({len(set(g.state))} CPUs).")
    if "not_available" not in cache.columns and len(cache):
        for policy, g in cache_ratios(cache).groupby("policy", sort=False):
            parts = [f"{fmt_nbytes(r.nbytes)} {r.cold_over_hot:.3g}x ({r.low:.3g}-{r.high:.3g})" for r in g.itertuples()]
            lines.append(f"- **cache residency**, {policy} H2D, cold / hot after {fmt_nbytes(g.evict_nbytes.iloc[0])} "
                         "of other memory was written: " + ", ".join(parts) + ".")
    reasons = [str(d.not_available.iloc[0]) for d in (age, alloc, back, place, cache) if "not_available" in d.columns]
    lines += [f"- not measured here: {r}" for r in dict.fromkeys(reasons)]
    return "**What this notebook found** (medians of the per-round medians; the intervals are in the tables " \
           "above)\n\n" + "\n".join(lines)

