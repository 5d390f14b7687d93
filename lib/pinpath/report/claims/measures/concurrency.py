"""The tests of the claims about concurrency, the lock + copy cases and overlap (C11, C12, C13, C15)."""

from __future__ import annotations

from ....stats import diff_ci, median_ci, proportion_ci, ratio_ci
from ....units import binary_size, fmt_ns
from ...rundata import RunData
from ..load import _get, _rep, judged_rows
from ..model import Missing, Result
from ..verdict import _fmt_est
from .common import _answer


_RELIED = ("already_locked", "external_pinned", "pinned_direct")   # paths that rely on a lock someone else holds


def _c11(data):
    h = _get(data, "hazard")
    first = h[h.policy == "query_then_lock"] if (h.policy == "query_then_lock").any() else h
    relied = first[first.a_path.isin(_RELIED)]
    paths = ", ".join(f"{p} {c}" for p, c in first.a_path.value_counts().items())
    lim = data.get("limits")
    scarce = ""
    if lim is not None and len(lim):
        scarce = (f"; past a {binary_size(int(lim.limit_nbytes.iloc[0]))} RLIMIT_MEMLOCK, "
                  f"{int((~lim.granted.astype(bool)).sum())} of {len(lim)} requests were refused"
                  + (" and the kernel counted no locked memory (VmLck 0), so the limit was never exercised"
                     if "vmlck_nbytes" in lim and (lim.vmlck_nbytes == 0).all() else ""))
    if not len(relied):
        return Result(not_applicable=f"never arose: none of the {len(first)} copies relied on another thread's lock "
                                     f"(their paths: {paths}){scarce}")
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
    reading = "lock + enqueue + wait" if wait else "lock + enqueue, no wait"
    diff = diff_ci(a[col], b[col], _rep(a), _rep(b))
    refused = _answer(a.rename(columns={"lock_error": "error"})) if "lock_error" in a else ""
    fact = (f"with the braces around {reading} ({'timed in C' if src == 'native' else 'Python'}), case {which} takes "
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
        # per call: its re-lock and that re-lock's unlock, if any (not the sum of a thread's calls)
        per = nat.groupby(["threads", "thread", "repeat", "call"]).ns.sum().reset_index()
        relock = nat[nat.op == "relock"]
        refused = len(relock) and "rc" in relock and (relock.rc > 0).all()
        path = (f"a re-lock, refused (rc {int(relock.rc.iloc[0])}), and no unlock" if refused and set(nat.op) == {"relock"}
                else "a re-lock and its unlock")
        src = "timed in C (no interpreter)"
    else:
        conc = _get(data, "concurrency")
        per = conc[conc.policy == "lock_always"].rename(columns={"native_ns": "ns"})
        src, path = "the runtime's calls from the trace (Python)", "a re-lock and its unlock"
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
    return per, detail, fact, (lo, hi)


def _c13_level(data):
    per, detail, fact, (lo, hi) = _c13_cost(data)
    most = per[per.threads == hi]
    return Result([(f"{hi} threads", median_ci(most.ns, _rep(most)))], detail, facts={"": fact})


def _c13_growth(data):
    per, detail, fact, (lo, hi) = _c13_cost(data)
    if hi == lo:
        raise Missing("one thread count only")
    a, b = per[per.threads == hi], per[per.threads == lo]
    return Result([(f"{hi} vs {lo} threads", ratio_ci(a.ns, b.ns, _rep(a), _rep(b)))], facts={"": fact})


def _c15(data):
    ov = _get(data, "overlap")
    if "not_applicable" in ov:
        return Result(not_applicable=str(ov.not_applicable.iloc[0]))
    one, most = ov[ov.queues == ov.queues.min()], ov[ov.queues == ov.queues.max()]
    q = int(most.queues.iloc[0])
    return Result([(f"{q} queues vs 1", ratio_ci(most.wall_ns, one.wall_ns, _rep(most), _rep(one)))],
                  "wall time of all chains: most queues / one queue",
                  facts={"": f"the same chains of copies and kernels take {fmt_ns(most.wall_ns.median())} over {q} "
                                 f"queues and {fmt_ns(one.wall_ns.median())} over one"})
