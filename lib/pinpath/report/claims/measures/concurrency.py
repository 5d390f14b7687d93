"""The tests of the claims about concurrency, the lock + copy cases and overlap (C11, C12, C13, C15)."""

from __future__ import annotations

from ....stats import Estimate, diff_ci, median_ci, proportion_ci, ratio_ci
from ....units import binary_size, fmt_ns
from ...rundata import RunData
from ..load import _get, _rep, judged_rows, repeat_unit
from ..model import Missing, Result
from ..verdict import _fmt_est
from .common import COUNTED, GRANTED, _answer, _no_relock, _refused_all


_RELIED = ("already_locked", "external_pinned", "pinned_direct")   # paths that rely on a lock someone else holds
#: the answers of a race (experiments.limits.RACE_ANSWERS) in which B's unlock took effect under A's copies
_TOOK_EFFECT = ("returns mid-copy", "fails", "corrupts")


def _c11_meant(data):
    """C11 as meant (hazard_meant): B locked A's whole range, A's copies relied on it, B unlocked
    while they were in flight. The figure is the count of races in which the unlock took effect
    under the copies (it returned before they ended, a call failed, or A's bytes differ); races
    whose timestamps cannot tell (``undecided``) widen its interval."""
    h = _get(data, "hazard_meant")
    if not len(h):
        raise Missing("no race ran (pinpath's C library does not build for this runtime)")
    answers = h.answer.value_counts()
    told = ", ".join(f"{a} {n}" for a, n in answers.items())
    raced = h[h.in_flight.astype(bool) & ~h.answer.isin(["no premise", "not in flight"])]
    if not len(raced):
        return Result(not_applicable=f"never arose: B's unlock never fell inside A's copies of a range B had locked "
                                     f"(answers: {told})")
    k, undecided = int(raced.answer.isin(_TOOK_EFFECT).sum()), int((raced.answer == "undecided").sum())
    mech = str(h.mechanism.iloc[0])
    us = lambda col: f"{raced[col].median() / 1e3:.0f} us"   # noqa: E731
    fact = (f"in {len(raced)} races on {mech}, thread B unlocked the {binary_size(int(h.nbytes.iloc[0]))} range "
            f"thread A's {int(h.copies.iloc[0])} copies relied on while they ran ({told}); B's unlock took a median "
            f"{us('b_unlock_ns')} against {us('idle_unlock_ns')} with nothing in flight and ended a median "
            f"{us('unlock_end_after_copy_ns')} after the copies (negative: before); A's bytes verified in "
            f"{int(h.copy_verified.astype(bool).sum())} of {len(h)}")
    return Result([("B locked A's whole range", Estimate(k, k, k + undecided, len(raced)))],
                  f"races whose unlock took effect under the copies: {k} of {len(raced)} ({told})", facts={"": fact})


def _c11(data):
    """The page-sharing case: B's half page ends inside A's first page."""
    h = _get(data, "hazard")
    first = h[h.policy == "query_then_lock"] if (h.policy == "query_then_lock").any() else h
    relied = first[first.a_path.isin(_RELIED)]
    paths = ", ".join(f"{p} {c}" for p, c in first.a_path.value_counts().items())
    lim = data.get("limits")
    scarce = ""
    if lim is not None and len(lim):
        bypass = "vmlck_nbytes" in lim and (lim.vmlck_nbytes == 0).all()
        scarce = (f"; past a {binary_size(int(lim.limit_nbytes.iloc[0]))} RLIMIT_MEMLOCK, "
                  f"{int((~lim.granted.astype(bool)).sum())} of {len(lim)} requests were refused"
                  + ("; the RLIMIT_MEMLOCK half is not applicable here: the runtime's pins bypass the limit (the "
                     "kernel counted no locked memory, VmLck 0)" if bypass else ""))
    if not len(relied):
        after = ""
        if {"b_unlock_end_ns", "a_copy_end_ns", "b_unlock_start_ns"} <= set(first.columns) and len(first):
            late = first.b_unlock_end_ns - first.a_copy_end_ns
            took = (first.b_unlock_end_ns - first.b_unlock_start_ns) / 1e6
            after = (f"; the other thread's unlock of the shared page took {took.min():.2f}-{took.max():.2f} ms and "
                     f"ended after A's copy in {int((late > 0).sum())} of {len(first)}")
        return Result(not_applicable=f"never arose: none of the {len(first)} copies relied on another thread's lock "
                                     f"(their paths: {paths}){after}{scarce}")
    n, k = len(relied), int(relied.hazard.astype(bool).sum())
    inside = int(relied.unlock_inside_copy.astype(bool).sum())
    own = h[h.policy == "lock_always"]
    detail = (f"{k} of {n} copies that relied on another thread's lock saw the page unlocked mid-copy (read from "
              f"{relied.observed_by.iloc[0]}; all paths: {paths}); the other thread's unlock fell inside the copy "
              f"{inside} times" + (f"; holding its own lock (lock_always): {int(own.hazard.astype(bool).sum())} of {len(own)}"
                                   if len(own) else "") + scarce)
    return Result([("relied on another's lock", proportion_ci(k, n))], detail,
                  facts={"": f"{n} copies relied on another thread's lock and {k} of them saw the page unlocked "
                                 f"mid-copy (the other's unlock fell inside the copy {inside} times)"})


def _c12(data, which: str, wait: bool):
    c = _get(data, "c12")
    src = "native" if (c.source == "native").any() else "python"
    c = c[c.source == src]
    col = "braces_wait_ns" if wait else "braces_ns"
    m = {k: g for k, g in c.groupby("case")}
    if "2_prelocked_copy" not in m:
        raise Missing("no case 2")
    num = "1_lock_copy" if which == "1" else "3_relock_copy"
    if num not in m:
        raise Missing(f"no case {which}")
    a, b = m[num], m["2_prelocked_copy"]
    label = f"case {which} / case 2"
    if which == "3":   # which mechanism case 3's re-lock is: granted, or refused and then counted by pinpath
        refused = _refused_all(a[["lock_rc"]]) if "lock_rc" in a else ""
        if refused and "3_relock_counted_copy" not in m:
            e = ratio_ci(a[col], b[col], _rep(a), _rep(b))
            return _no_relock(refused, f"case 3 with the refusal takes {_fmt_est(e, 'x')} case 2")
        if refused:
            a, label = m["3_relock_counted_copy"], f"case 3 / case 2, {COUNTED}"
        else:
            label = f"case 3 / case 2, {GRANTED}"
    reading = "lock + enqueue + wait" if wait else "lock + enqueue, no wait"
    diff = diff_ci(a[col], b[col], _rep(a), _rep(b))
    refused = _answer(a.rename(columns={"lock_error": "error"})) if "lock_error" in a else ""
    what = f"case {which}" + (" (its re-lock counted by pinpath)" if COUNTED in label else "")
    fact = (f"with the braces around {reading} ({'timed in C' if src == 'native' else 'Python'}), {what} takes "
            f"{fmt_ns(median_ci(a[col], _rep(a)).value)}" + (f" (its lock refused: {refused})" if refused else "")
            + f" and case 2 {fmt_ns(median_ci(b[col], _rep(b)).value)}, {_fmt_est(diff, 'ns')} apart")
    return Result([(label, ratio_ci(a[col], b[col], _rep(a), _rep(b)))], f"carlobertolli's braces read as {reading}",
                  facts={label: fact}, differences={label: diff})


def _c13_cost(data: RunData):
    """The re-lock path per transfer and thread count, its words and the thread counts; computed
    once per run (both of C13's tests read it)."""
    return data.memo(("c13_cost",), lambda: _c13_cost_of(data))


def _c13_cost_of(data: RunData):
    nat = data.get("concurrency_native")
    if nat is not None and len(nat):
        nat = judged_rows(nat)
        unit = repeat_unit(nat)
        relock = nat[nat.op == "relock"]
        refused = _refused_all(relock[["rc"]]) if len(relock) and "rc" in relock else ""
        counted = nat[nat.op.isin(["relock_counted", "unlock_after_relock_counted"])]
        if refused and not len(counted):
            one = relock.groupby("threads").ns.median()
            return _no_relock(refused, "the refusal takes " + ", ".join(f"{fmt_ns(v)} with {t} thread(s)"
                                                                        for t, v in one.items()))
        mech = COUNTED if refused else GRANTED
        nat = counted if refused else nat[nat.op.isin(["relock", "unlock_after_relock"])]
        # per call: its re-lock and that re-lock's unlock, if any (not the sum of a thread's calls)
        per = nat.groupby(["threads", "thread", "repeat", "call"]).ns.sum().reset_index()
        path = (f"a re-lock and its unlock, {mech}; the runtime refused the re-lock itself ({refused})" if refused
                else f"a re-lock and its unlock, {mech}")
        src = "timed in C (no interpreter)"
    else:
        conc = _get(data, "concurrency")
        per = conc[conc.policy == "lock_always"].rename(columns={"native_ns": "ns"})
        unit = repeat_unit(conc)
        src, path, mech = "the runtime's calls from the trace (Python)", "a re-lock and its unlock", "lock_always's path"
    if not len(per):
        raise Missing("no concurrency rows")
    hi, lo = per.threads.max(), per.threads.min()
    conc = data.get("concurrency")
    py = ""
    if conc is not None and len(conc):
        la = conc[conc.policy == "lock_always"].groupby("threads")[["overhead_ns", "native_ns"]].median()
        if len(la):
            py = (f"; pinpath's overhead per transfer (Python) {fmt_ns(la.overhead_ns.iloc[0])} with {la.index[0]} "
                  f"thread(s), {fmt_ns(la.overhead_ns.iloc[-1])} with {la.index[-1]}, of which the runtime's calls "
                  f"{fmt_ns(la.native_ns.iloc[0])} and {fmt_ns(la.native_ns.iloc[-1])}: the rest is the interpreter's")
    one, most = per[per.threads == lo], per[per.threads == hi]
    e_lo, e_hi = median_ci(one.ns, _rep(one)), median_ci(most.ns, _rep(most))
    detail = f"re-lock path per transfer, {src}: {_fmt_est(e_lo, 'ns')} with {lo} thread(s), {_fmt_est(e_hi, 'ns')} with {hi}" + py
    fact = (f"the re-lock path ({path}, {src}) takes {fmt_ns(e_lo.value)} per transfer with {lo} "
            f"thread(s) in a hot loop and {fmt_ns(e_hi.value)} with {hi}")
    return per, detail, fact, (lo, hi), mech, unit


def _c13_level(data):
    cost = _c13_cost(data)
    if isinstance(cost, Result):   # no re-lock was performed
        return cost
    per, detail, fact, (lo, hi), mech, unit = cost
    most = per[per.threads == hi]
    return Result([(f"{hi} threads, {mech}", median_ci(most.ns, _rep(most)))], detail, facts={"": fact}, unit=unit)


def _c13_growth(data):
    cost = _c13_cost(data)
    if isinstance(cost, Result):
        return cost
    per, detail, fact, (lo, hi), mech, unit = cost
    if hi == lo:
        raise Missing("one thread count only")
    a, b = per[per.threads == hi], per[per.threads == lo]
    return Result([(f"{hi} vs {lo} threads, {mech}", ratio_ci(a.ns, b.ns, _rep(a), _rep(b)))], facts={"": fact},
                  unit=unit)


def _c15(data):
    """For information: raw queues, the same chains on one queue and spread over several."""
    ov = _get(data, "overlap")
    if "not_applicable" in ov:
        return Result(not_applicable=str(ov.not_applicable.iloc[0]))
    one, most = ov[ov.queues == ov.queues.min()], ov[ov.queues == ov.queues.max()]
    q = int(most.queues.iloc[0])
    return Result([(f"{q} queues vs 1", ratio_ci(most.wall_ns, one.wall_ns, _rep(most), _rep(one)))],
                  "wall time of all chains: most queues / one queue",
                  facts={"": f"the same chains of copies and kernels take {fmt_ns(most.wall_ns.median())} over {q} "
                                 f"queues and {fmt_ns(one.wall_ns.median())} over one"})


def _c15_rounds(data, vendor: str):
    """overlap_real's rounds on ``vendor``'s plugin, the process as the repeat; Missing with the reason."""
    real = _get(data, "overlap_real")
    if "not_applicable" in real:
        raise Missing(str(real.not_applicable.iloc[0]))
    rows = real[real.vendor == vendor]
    if not len(rows):
        plugin = {"nvidia": "LLVM's CUDA plugin", "amd": "LLVM's AMDGPU plugin"}[vendor]
        raise Missing(f"{plugin}'s half needs {'an NVIDIA' if vendor == 'nvidia' else 'an AMD'} GPU; the real runtime "
                      f"ran on {', '.join(sorted(set(real.vendor)))} here")
    return rows.rename(columns={"process": "repeat"})


def _c15_plugin(data, vendor: str):
    """``target nowait`` regions with one wait against the same regions waited one by one, per
    variant: the wall time per round through the real libomptarget; the streams the CUDA plugin
    used (cudalog) and the raw-queue figure beside it, for information."""
    rows = _c15_rounds(data, vendor)
    streams = data.get("overlap_streams")
    used = ""
    if streams is not None and len(streams) and "streams" in streams and (streams.source == "cudalog").any():
        timed = streams[streams["round"] >= 0].groupby("mode").streams.max()
        used = "; the plugin's copies and kernels went to " + " and ".join(
            f"{int(n)} stream(s) in a {m} round" for m, n in timed.items())
    groups, facts = [], {}
    for variant, g in rows.groupby("variant", sort=False):
        a, b = g[g["mode"] == "nowait"], g[g["mode"] == "wait"]
        if not len(a) or not len(b):
            continue
        label = f"{variant}"
        groups.append((label, ratio_ci(a.ns, b.ns, _rep(a), _rep(b))))
        facts[label] = (f"through the real libomptarget ({vendor}), {int(g.chains.iloc[0])} target regions of "
                        f"{binary_size(int(g.nbytes.iloc[0]))} each way ({variant}) take "
                        f"{fmt_ns(median_ci(a.ns, _rep(a)).value)} a round as nowait tasks with one wait and "
                        f"{fmt_ns(median_ci(b.ns, _rep(b)).value)} waited one by one{used}")
    if not groups:
        raise Missing("no rounds of both modes")
    raw = ""
    try:
        r = _c15(data)
        raw = "; for information, raw queues: " + (r.not_applicable or ", ".join(f"{g} {_fmt_est(e, 'x')}" for g, e in r.groups))
    except Missing:
        pass
    return Result(groups, "wall time per round, nowait / waited, per variant" + used + raw, facts=facts)
