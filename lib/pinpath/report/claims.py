"""The 15 claims of the thread as declarative data, and one verdict function.

Each claim names the data sets it reads (``schema.DATASETS`` names, never notebook stems),
the platforms where it is meaningful, and one or more tests. A test is a metric with a unit,
a comparison and a threshold, measured per group (size, direction ...) with a 95 % interval.
A test holds when every group's interval lies on the claim's side of the threshold (or a
majority, where the test says so), does not hold when one lies entirely on the other side,
and is inconclusive otherwise. A claim holds when all its tests hold. The rule text in the
report is generated from the same numbers. The thread's figures are quoted from it;
measured ones come from the run's data files, never typed in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from ..stats import Estimate, median_ci, proportion_ci, ratio_ci, share_ci
from ..trace import null_call_ns
from ..units import fmt_nbytes, fmt_ns
from ..vocab import Verdict
from .fmt import format_measured

__all__ = ["Claim", "Test", "Result", "CLAIMS", "GPU", "evaluate", "judge", "load_run", "verdict_of",
           "Missing", "fmt_value", "rule_text", "rules_markdown", "COLUMNS"]

GPU = ("cuda", "hsa", "hip")
COLUMNS = ("id", "who", "claim", "short", "thread", "metric", "measured", "low", "high", "unit", "comparison",
           "threshold", "verdict", "why", "detail", "rule", "notebook", "platform")


class Missing(Exception):
    """A data set a claim needs is not in the run, or holds nothing the test can use."""


@dataclass(frozen=True)
class Result:
    """What a test measured: (group, estimate) pairs, or why the test does not apply here."""
    groups: list[tuple[str, Estimate]] = field(default_factory=list)
    detail: str = ""
    not_applicable: str = ""


@dataclass(frozen=True)
class Test:
    metric: str                                  #: words: what is measured
    unit: str                                    #: "x", "ns", "count", "fraction"
    comparison: str                              #: ">=", ">", "<=", "<", or "within" (|value - 1| <= threshold)
    threshold: float
    measure: Callable[[dict], Result]            #: data sets by name -> result
    over: str = "every"                          #: every group must hold, or a "majority" of them


@dataclass(frozen=True)
class Claim:
    id: str
    who: str
    text: str
    short: str
    thread: str                                  #: the thread's figure or statement
    datasets: tuple[str, ...]
    tests: tuple[Test, ...]
    platforms: tuple[str, ...] | None = GPU      #: where the claim is meaningful; None: everywhere
    elsewhere: str = "the claim is about a GPU runtime; the host platform measures the operating system's share only"


# -- formatting and the verdict ------------------------------------------------------------------
def fmt_value(v: float, unit: str) -> str:
    return format_measured(v, unit=unit) or "n/a"


def _fmt_est(e: Estimate, unit: str) -> str:
    if e.low == e.high == e.value:
        return fmt_value(e.value, unit)
    return format_measured(e.value, e.low, e.high, unit) or "n/a"


def verdict_of(e: Estimate, comparison: str, threshold: float) -> str:
    """The verdict one interval gives: holds, does not hold, or inconclusive (it straddles)."""
    lo, hi = e.low, e.high
    if any(math.isnan(v) for v in (e.value, lo, hi)):
        return Verdict.NOT_MEASURED
    sides = {">=": (lo >= threshold, hi < threshold), ">": (lo > threshold, hi <= threshold),
             "<=": (hi <= threshold, lo > threshold), "<": (hi < threshold, lo >= threshold),
             "within": (lo >= 1 - threshold and hi <= 1 + threshold, hi < 1 - threshold or lo > 1 + threshold)}
    holds, fails = sides[comparison]
    return Verdict.HOLDS if holds else Verdict.DOES_NOT_HOLD if fails else Verdict.INCONCLUSIVE


def rule_text(t: Test) -> str:
    side = (f"within {100 * t.threshold:.0f} % of 1" if t.comparison == "within"
            else f"{t.comparison} {fmt_value(t.threshold, t.unit)}")
    scope = "for a majority of the groups" if t.over == "majority" else "in every group"
    return f"{t.metric} {side} {scope}"


def _test_verdict(t: Test, r: Result) -> tuple[str, tuple[str, Estimate] | None]:
    """The test's verdict and the group that decided it."""
    if r.not_applicable:
        return Verdict.NOT_APPLICABLE, None
    if not r.groups:
        return Verdict.NOT_MEASURED, None
    words = [verdict_of(e, t.comparison, t.threshold) for _, e in r.groups]
    if Verdict.NOT_MEASURED in words:
        return Verdict.NOT_MEASURED, r.groups[words.index(Verdict.NOT_MEASURED)]
    if t.over == "majority":
        n, yes, no = len(words), words.count(Verdict.HOLDS), words.count(Verdict.DOES_NOT_HOLD)
        word = Verdict.HOLDS if yes > n / 2 else Verdict.DOES_NOT_HOLD if no >= n / 2 else Verdict.INCONCLUSIVE
        pick = next((g for g, w in zip(r.groups, words) if w == word), r.groups[0])
        return word, pick
    for word in (Verdict.DOES_NOT_HOLD, Verdict.INCONCLUSIVE):
        if word in words:
            return word, r.groups[words.index(word)]
    dist = [abs(e.value - (1 if t.comparison == "within" else t.threshold)) for _, e in r.groups]
    return Verdict.HOLDS, r.groups[int(np.argmin(dist))]


def _combine(words: list[str]) -> str:
    real = [w for w in words if w != Verdict.NOT_APPLICABLE]
    if not real:
        return Verdict.NOT_APPLICABLE
    for word in (Verdict.NOT_MEASURED, Verdict.DOES_NOT_HOLD, Verdict.INCONCLUSIVE):
        if word in real:
            return word
    return Verdict.HOLDS


# -- reading a run ----------------------------------------------------------------------------
def load_run(run_dir: Path) -> tuple[dict, list[str]]:
    """Data sets by name (plus ``"_notebook"``: data set -> the notebook that wrote it, and
    ``"_harness"``: notebook -> its harness frame), and the files that could not be read."""
    import pyarrow.parquet as pq
    data: dict = {"_notebook": {}, "_harness": {}}
    bad = []
    for p in sorted(Path(run_dir, "data").glob("*.parquet")):
        try:
            table = pq.read_table(p)
        except Exception:   # truncated or not parquet at all: the report names it
            bad.append(p.name)
            continue
        meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items() if k.startswith(b"pinpath.")}
        df = table.to_pandas()
        if p.stem.startswith("harness."):
            data["_harness"][p.stem.split(".", 1)[1]] = df
            continue
        data[p.stem] = df
        data["_notebook"][p.stem] = meta.get("pinpath.notebook", "")
    return data, bad


def _get(data: dict, name: str) -> pd.DataFrame:
    df = data.get(name)
    if df is None or not len(df):
        raise Missing(f"no {name} data in this run")
    return df


def _null_ns(data: dict, dataset: str) -> float:
    return null_call_ns(data.get("_harness", {}).get(data.get("_notebook", {}).get(dataset, "")))


# -- measures shared by several claims ----------------------------------------------------------
def _calls(data: dict, op: str, state: str, kind: str = "heap", dataset: str = "lock_cost") -> tuple[pd.DataFrame, str]:
    """Rows of one op on one state: from C where the run has them, else Python net of the
    harness's null call (labelled)."""
    lc = _get(data, dataset)
    rows = lc[(lc.op == op) & (lc.state == state) & (lc.kind == kind)]
    native = rows[rows.source == "native"]
    if len(native):
        return native, "timed in C"
    py = rows[rows.source == "python"].copy()
    null = _null_ns(data, dataset)
    py["ns"] = (py.ns - null).clip(lower=1)
    return py, f"Python, net of the {fmt_ns(null)} null call (no C library in this run)"


def _per_size(data, num: tuple[str, str], den: tuple[str, str], *, kind: str = "heap",
              dataset: str = "lock_cost") -> Result:
    a, src = _calls(data, *num, kind=kind, dataset=dataset)
    b, _ = _calls(data, *den, kind=kind, dataset=dataset)
    groups = [(fmt_nbytes(n), ratio_ci(a[a.nbytes == n].ns, b[b.nbytes == n].ns))
              for n in sorted(set(a.nbytes) & set(b.nbytes))]
    if not groups:
        raise Missing(f"no sizes with both {num[0]} ({num[1]}) and {den[0]} ({den[1]})")
    return Result(groups, f"{num[0]} / {den[0]} per size, {src}")


def _transfers(data: dict, name: str) -> pd.DataFrame:
    t = _get(data, name)
    return t[t.event == "transfer"] if "event" in t else t


def _policy_ratio(t: pd.DataFrame, a: str, b: str, by=("nbytes", "direction")) -> list[tuple[str, Estimate]]:
    out = []
    for key, g in t.groupby(list(by)):
        key = key if isinstance(key, tuple) else (key,)
        ga, gb = g[g.policy == a], g[g.policy == b]
        if len(ga) and len(gb):
            label = " ".join(fmt_nbytes(k) if isinstance(k, (int, np.integer)) else str(k) for k in key)
            out.append((label, ratio_ci(ga.total_ns, gb.total_ns)))
    return out


def _exact(value: float, n: int = 1) -> Estimate:
    return Estimate(float(value), float(value), float(value), n)


# -- the tests ------------------------------------------------------------------------------------
def _c1_alloc(data):
    t, calls = _transfers(data, "replica"), _get(data, "replica_calls")
    out = []
    for pol in ("stage_per_copy", "nextgen_lock_mapped"):
        ids = t[t.policy == pol].transfer_id
        c = calls[calls.transfer_id.isin(ids)]
        out.append((pol, _exact(float((c.category == "alloc").sum()) / max(len(ids), 1), len(ids))))
    spc, tracked = out
    if not spc[1].n:
        raise Missing("the replica ran no stage_per_copy transfers")
    grants = calls[calls.transfer_id.isin(t[t.policy == "stage_per_copy"].transfer_id) & (calls.category == "grant")]
    detail = (f"the 2020 plugin's model (stage_per_copy): {spc[1].value:.2f} allocations, "
              f"{len(grants) / spc[1].n:.2f} grants per transfer of arrays mapped once; the tracked policy: "
              f"{tracked[1].value:.2f} (a model shows its own call pattern by construction)")
    return Result([("stage_per_copy", spc[1])], detail)


def _c1_tracked(data):
    t, calls = _transfers(data, "replica"), _get(data, "replica_calls")
    ids = t[t.policy == "nextgen_lock_mapped"].transfer_id
    if not len(ids):
        raise Missing("the replica ran no nextgen_lock_mapped transfers")
    c = calls[calls.transfer_id.isin(ids)]
    return Result([("nextgen_lock_mapped", _exact(float((c.category == "alloc").sum()) / len(ids), len(ids)))])


def _c2_share(data):
    t = _transfers(data, "staging")
    f = t[(t.policy == "stage_per_copy") & (t.nbytes == t.nbytes.min())]
    if not len(f):
        raise Missing("no stage_per_copy transfers")
    groups = [(f"{fmt_nbytes(int(f.nbytes.iloc[0]))} {d}", share_ci(g.alloc_ns + g.grant_ns + g.free_ns, g.total_ns))
              for d, g in f.groupby("direction")]
    return Result(groups, "share of allocate + grant + free in a per-copy staged transfer at the smallest size")


def _c2_reuse(data):
    t = _transfers(data, "staging")
    return Result(_policy_ratio(t, "stage_per_copy", "stage_pooled"), "per-copy / pooled time per transfer")


def _c3(data):
    t = _transfers(data, "lock_or_stage")
    return Result(_policy_ratio(t[t.kind == "heap"], "lock_always", "stage_per_copy"),
                  "lock_always / stage_per_copy time per transfer, malloc'd memory")


def _c4_cost(data):
    return _per_size(data, ("query", "pageable"), ("lock", "pageable"), dataset="query_cost")


def _c4_saving(data):
    t = _transfers(data, "query_saving")
    pinned = t[t.app_pinned.astype(bool)] if "app_pinned" in t else t.iloc[0:0]
    groups = _policy_ratio(pinned, "query_then_lock", "stage_per_copy")
    heap = t[~t.app_pinned.astype(bool)] if "app_pinned" in t else t
    extra = _policy_ratio(heap, "query_then_lock", "lock_always")
    detail = ("on memory the application pinned: query_then_lock / stage_per_copy; on unpinned memory the query "
              "only adds: query_then_lock / lock_always " + ", ".join(f"{g} {_fmt_est(e, 'x')}" for g, e in extra[:4]))
    return Result(groups, detail)


_READ_ONLY = ("read_only", "read_only_file", "rodata")


def _c5(data):
    o = _get(data, "lock_outcomes")
    ro = o[o.kind.isin(_READ_ONLY) & (o.not_available == "")]
    if not len(ro):
        raise Missing("no read-only kind could be made")
    refused = sorted(set(ro[~ro.granted.astype(bool)].kind))
    paths = data.get("kind_paths")
    fell = sorted(set(paths[(paths.path == "lock_failed_staged") & paths.kind.isin(_READ_ONLY)].kind)) \
        if paths is not None and len(paths) else []
    stack = o[o.kind == "stack"]
    flag = data.get("lock_outcomes_read_only_flag")
    detail = (f"refused with the runtime's default flags: {', '.join(refused) or 'none of ' + ', '.join(sorted(set(ro.kind)))}; "
              f"lock_always staged instead: {', '.join(fell) or 'none'}; the host stack: "
              + ("granted" if len(stack) and stack.granted.astype(bool).all() else "refused" if len(stack) else "not measured"))
    if flag is not None and len(flag):
        f = flag[flag.kind.isin(_READ_ONLY) & flag.read_only_flag.astype(bool)]
        if len(f):
            detail += (f"; with the read-only flag (no offload runtime passes it): refused "
                       f"{', '.join(sorted(set(f[~f.granted.astype(bool)].kind))) or 'none'}")
    return Result([("read-only kinds", _exact(len(refused), len(set(ro.kind))))], detail)


def _c6(data):
    return _per_size(data, ("lock", "pageable"), ("query", "pageable"))


def _c7(data):
    r = _per_size(data, ("relock", "locked"), ("query", "locked"))
    lc = _get(data, "lock_cost")
    answers = sorted(set(lc[lc.op == "relock"].error) - {""})
    return Result(r.groups, r.detail + ("; the re-lock is answered " + ", ".join(answers) if answers
                                        else "; the re-lock is granted"))


def _c8(data):
    s = _get(data, "semantics")
    twice = s[s.probe == "lock_twice_unlock_once"]
    second, still = twice[twice.action == "lock A again"], twice[twice.action == "query A"].locked
    if not len(second) or not len(still):
        raise Missing("the lock-twice probe did not reach its query")
    counted = second.error.iloc[0] == "" and bool(still.iloc[0])
    detail = ("second lock " + ("granted" if second.error.iloc[0] == "" else f"refused ({second.error.iloc[0]})")
              + ("; still locked after one unlock" if bool(still.iloc[0]) else "; not locked after one unlock"))
    return Result([("lock twice, unlock once", _exact(1.0 if counted else 0.0))], detail)


def _c9_lock(data):
    return _per_size(data, ("lock", "pageable"), ("relock", "locked"))


def _c9_unlock(data):
    inner, _ = _calls(data, "unlock_after_relock", "locked")
    if not len(inner):
        lc = _get(data, "lock_cost")
        answers = sorted(set(lc[lc.op == "relock"].error) - {""})
        return Result(not_applicable=f"the runtime refuses the re-lock ({', '.join(answers) or 'refused'}), so a "
                                     "runtime makes no unlock of memory the application pinned")
    return _per_size(data, ("unlock", "locked"), ("unlock_after_relock", "locked"))


def _c10_lock(data):
    c = _get(data, "api_calls")
    lock = c[c.category == "lock"]
    a, b = lock[lock.user_pinned.astype(bool)], lock[~lock.user_pinned.astype(bool)]
    if not len(a) or not len(b):
        raise Missing("the replica made no lock calls with or without user pinning")
    refused = int((a.rc > 0).sum())
    detail = (f"average lock call {fmt_ns(a.duration_ns.mean())} with user pinning ({len(a)} calls"
              + (f", {refused} answered 'already registered'" if refused else "") + f"), {fmt_ns(b.duration_ns.mean())} "
              f"without ({len(b)}); thread: 51438 ns vs 84873 ns")
    return Result([("lock calls", ratio_ci(a.duration_ns, b.duration_ns))], detail)


def _c10_total(data):
    c = _get(data, "api_calls")
    per = c.groupby(["user_pinned", "transfer_id"]).duration_ns.sum().reset_index()
    a, b = per[per.user_pinned.astype(bool)], per[~per.user_pinned.astype(bool)]
    if not len(a) or not len(b):
        raise Missing("no replica calls with or without user pinning")
    detail = (f"the runtime's native-call time over the whole replica: {fmt_ns(a.duration_ns.sum())} with user pinning, "
              f"{fmt_ns(b.duration_ns.sum())} without")
    return Result([("native-call time per event", ratio_ci(a.duration_ns, b.duration_ns))], detail)


def _c11(data):
    h = _get(data, "hazard")
    first = h[h.policy == "query_then_lock"] if (h.policy == "query_then_lock").any() else h
    n, k = len(first), int(first.hazard.astype(bool).sum())
    inside = int(first.unlock_inside_copy.astype(bool).sum())
    paths = ", ".join(f"{p} {c}" for p, c in first.a_path.value_counts().items())
    late = (first.b_unlock_end_ns - first.a_copy_end_ns)[~first.unlock_inside_copy.astype(bool)]
    own = h[h.policy == "lock_always"]
    detail = (f"{k} of {n} copies through query_then_lock saw the page they relied on unlocked mid-copy (read from "
              f"{first.observed_by.iloc[0]}; their paths: {paths}); the other thread's unlock fell inside the copy "
              f"{inside} times" + (f", and otherwise returned a median {fmt_ns(late.median())} after the copy ended"
                                   if len(late) else "")
              + ("" if k else f"; none seen: a hazard rate above {100 * 3 / n:.2g} % per copy would have shown "
                              "with 95 % probability")
              + (f"; holding its own lock (lock_always): {int(own.hazard.astype(bool).sum())} of {len(own)}" if len(own) else ""))
    lim = data.get("limits")
    if lim is not None and len(lim):
        detail += (f"; past a {fmt_nbytes(int(lim.limit_nbytes.iloc[0]))} RLIMIT_MEMLOCK, "
                   f"{int((~lim.granted.astype(bool)).sum())} of {len(lim)} requests were refused")
    return Result([("query_then_lock", proportion_ci(k, n))], detail)   # k = 0 proves no absence: inconclusive


def _c12(data, which: str):
    c = _get(data, "c12")
    src = "native" if (c.source == "native").any() else "python"
    c = c[c.source == src]
    m = {k: g.braces_ns for k, g in c.groupby("case")}
    if "2_prelocked_copy" not in m:
        raise Missing("no case 2")
    other = {k: g.braces_wait_ns for k, g in c.groupby("case")}
    num = "1_lock_copy" if which == "1" else "3_relock_copy"
    detail = (f"Carlo's reading (lock + enqueue, no wait), {'timed in C' if src == 'native' else 'Python'}; "
              f"with the wait: case 1 / case 2 {_fmt_est(ratio_ci(other.get('1_lock_copy', []), other['2_prelocked_copy']), 'x')}, "
              f"case 3 / case 2 {_fmt_est(ratio_ci(other.get('3_relock_copy', []), other['2_prelocked_copy']), 'x')}")
    return Result([(f"case {which} / case 2", ratio_ci(m.get(num, []), m["2_prelocked_copy"]))], detail)


def _c13_cost(data):
    nat = data.get("concurrency_native")
    if nat is not None and len(nat):
        per = nat.groupby(["threads", "thread", "repeat"]).ns.sum().reset_index()   # re-lock + its unlock
        src = "timed in C (no interpreter)"
    else:
        conc = _get(data, "concurrency")
        per = conc[conc.policy == "lock_always"].rename(columns={"native_ns": "ns"})
        src = "the runtime's calls from the trace (Python)"
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
        tr = conc[conc.policy == "nextgen_lock_mapped"].groupby("threads").overhead_ns.median()
        if len(tr):
            py += f"; the tracked path: {fmt_ns(tr.iloc[0])} -> {fmt_ns(tr.iloc[-1])}"
    detail = (f"re-lock path per transfer, {src}: {_fmt_est(median_ci(per[per.threads == lo].ns), 'ns')} with {lo} "
              f"thread(s), {_fmt_est(median_ci(per[per.threads == hi].ns), 'ns')} with {hi}" + py)
    return Result([(f"{hi} threads", median_ci(per[per.threads == hi].ns))], detail), per


def _c13_level(data):
    return _c13_cost(data)[0]


def _c13_growth(data):
    _, per = _c13_cost(data)
    hi, lo = per.threads.max(), per.threads.min()
    if hi == lo:
        raise Missing("one thread count only")
    return Result([(f"{hi} vs {lo} threads", ratio_ci(per[per.threads == hi].ns, per[per.threads == lo].ns))])


_LOCKING = ("lock_always", "query_then_lock", "nextgen")


def _c14_locks(data):
    t, calls = _transfers(data, "tracked"), _get(data, "tracked_calls")
    ids = t[t.policy == "nextgen_lock_mapped"].transfer_id
    if not len(ids):
        raise Missing("no nextgen_lock_mapped transfers")
    locks = int(((calls.category == "lock") & calls.transfer_id.isin(ids)).sum())
    return Result([("tracked transfers", _exact(locks, len(ids)))], f"{locks} lock calls in {len(ids)} tracked transfers")


def _c14_time(data):
    t = _transfers(data, "tracked")
    others = [p for p in _LOCKING if (t.policy == p).any()]
    tracked = t[t.policy == "nextgen_lock_mapped"]
    if not others or not len(tracked):
        raise Missing("no locking policies to compare")
    med = {p: t[t.policy == p].total_ns.median() for p in others}
    best = min(med, key=med.get)
    groups = [(f"nw={nw} vs {best}", ratio_ci(g[g.policy == "nextgen_lock_mapped"].total_ns, g[g.policy == best].total_ns))
              for nw, g in t.groupby("nw")]
    detail = "median per transfer: " + ", ".join(f"{p} {fmt_ns(v)}" for p, v in med.items()) + \
        f", nextgen_lock_mapped {fmt_ns(tracked.total_ns.median())}"
    if (t.policy == "driver_pageable").any():
        detail += (f"; what LLVM's CUDA plugin really does (driver_pageable, it registers nothing): "
                   f"{fmt_ns(t[t.policy == 'driver_pageable'].total_ns.median())}")
    bw = data.get("copy")
    if bw is not None and len(bw):
        big = bw[bw.nbytes == bw.nbytes.max()]
        a = big[big.case == "pinned"].gb_per_s.median()
        link = data.get("link")
        peak = link.peak_gb_per_s.iloc[0] if link is not None and len(link) else float("nan")
        detail += (f"; async pinned copy {a:.1f} GB/s at {fmt_nbytes(int(big.nbytes.iloc[0]))}"
                   + (f" ({100 * a / peak:.0f} % of the link's raw peak)" if peak == peak else ""))
    return Result(groups, detail)


def _c15(data):
    ov = _get(data, "overlap")
    if "not_applicable" in ov:
        return Result(not_applicable=str(ov.not_applicable.iloc[0]))
    one, most = ov[ov.queues == ov.queues.min()], ov[ov.queues == ov.queues.max()]
    return Result([(f"{int(most.queues.iloc[0])} queues vs 1", ratio_ci(most.wall_ns, one.wall_ns))],
                  "wall time of all chains: most queues / one queue")


CLAIMS: dict[str, Claim] = {c.id: c for c in (
    Claim("C1", "ye-luo", "Arrays already mapped with target enter data still show memory_pool_allocate, "
          "agents_allow_access and memory_pool_free per transfer.", "allocation per transfer of mapped arrays",
          "allocate / allow_access / free once per transfer (one miniqmc region)", ("replica", "replica_calls"),
          (Test("staging allocations per transfer under the 2020 plugin's model", "count", ">=", 1, _c1_alloc),
           Test("allocations per transfer under the tracked policy", "count", "<=", 0, _c1_tracked))),
    Claim("C2", "JonChesterfield", "Data is staged to a fine-grain region allocated per memcpy; buffer reuse would "
          "be cheaper if allocation is expensive.", "per-copy staging buffer; reuse is cheaper",
          "'if memory_pool_allocate is expensive ... we should do some buffer reuse'", ("staging",),
          (Test("share of allocate + grant + free in a per-copy transfer (smallest size)", "fraction", ">=", 0.5, _c2_share),
           Test("per-copy / pooled time per transfer", "x", ">", 1, _c2_reuse))),
    Claim("C3", "JonChesterfield", "Lock the user pointer and copy from it: faster on the happy path.",
          "lock-then-copy beats staging", "'things should now be faster on the happy path'", ("lock_or_stage",),
          (Test("lock_always / stage_per_copy time per transfer", "x", "<", 1, _c3, over="majority"),)),
    Claim("C4", "ye-luo", "Query the pointer (hsa_amd_pointer_info) to see whether it is pinned and skip staging.",
          "query first, skip staging", "query instead of lock", ("query_cost", "query_saving"),
          (Test("query / lock of pageable memory", "x", "<", 1, _c4_cost),
           Test("query_then_lock / stage_per_copy on memory the application pinned", "x", "<", 1, _c4_saving))),
    Claim("C5", "JonChesterfield", "Unconditionally lock; if the lock fails, allocate + memcpy: needed for pointers "
          "into rodata and probably the host stack.", "read-only memory needs the staging fallback",
          "locks of rodata (and maybe the stack) fail", ("lock_outcomes", "kind_paths"),
          (Test("read-only kinds whose lock the runtime refused with its default flags", "count", ">=", 1, _c5),)),
    Claim("C6", "ye-luo", "On NVIDIA GPUs registering pinned memory is expensive while checking whether a pointer is "
          "pinned is cheap.", "register expensive, query cheap", "register expensive, query cheap", ("lock_cost",),
          (Test("register / query of pageable memory", "x", ">=", 10, _c6),), platforms=("cuda",),
          elsewhere="the claim is about NVIDIA's runtime"),
    Claim("C7", "JonChesterfield", "Calling lock on already locked memory costs about the same check as a query.",
          "re-lock costs about a query", "'roct has to do ~ the same check'", ("lock_cost",),
          (Test("re-lock / query of locked memory", "x", "<=", 2, _c7),)),
    Claim("C8", "ye-luo / JonChesterfield", "HSA refcounts locks (ROCT registration_count).", "HSA counts locks",
          "fmm_register_memory / fmm_deregister_memory keep a registration count", ("semantics",),
          (Test("memory still locked after lock, lock, unlock (1 = counted)", "count", ">=", 1, _c8),),
          platforms=("hsa",), elsewhere="the claim is about HSA/ROCT's registration count"),
    Claim("C9", "ye-luo", "Lock 35 us, unlock 7 us; with memory pinned by HIP beforehand lock 0.9 us, unlock 0.7 us.",
          "prior pinning makes lock and unlock cheap", "35 us -> 0.9 us (lock), 7 us -> 0.7 us (unlock)", ("lock_cost",),
          (Test("lock of pageable / the runtime's lock of memory the application locked", "x", ">=", 10, _c9_lock),
           Test("unlock / unlock of that second lock", "x", ">=", 5, _c9_unlock))),
    Claim("C10", "ye-luo", "rocprof: hsa_amd_memory_lock avg 84873 ns without user pinning, 51438 ns with.",
          "user pinning makes the runtime's locks cheaper", "lock 803 calls avg 84873 ns -> avg 51438 ns",
          ("api_calls",),
          (Test("average lock call with / without the application pinning its arrays", "x", "<", 1, _c10_lock),
           Test("the runtime's native-call time per event with / without user pinning", "x", "<=", 1, _c10_total))),
    Claim("C11", "JonChesterfield", "The lock must be held for the call: another thread might unlock the same page "
          "meanwhile; locked memory is scarce.", "another thread's unlock can unpin our page",
          "another thread's unlock of the same page", ("hazard",),
          (Test("share of copies relying on another's lock that saw the page unlocked mid-copy", "fraction", ">", 0, _c11),),
          platforms=None),
    Claim("C12", "carlobertolli", "10^8 doubles: (1) lock + copy is slowest by orders of magnitude; (2) and (3) are alike.",
          "lock+copy far slower; re-lock+copy like copy", "(1) 'slowest by several orders of magnitude'; (2) ~ (3)",
          ("c12",),
          (Test("case 1 / case 2, his braces (lock + enqueue)", "x", ">=", 100, lambda d: _c12(d, "1")),
           Test("case 3 / case 2, his braces", "x", "within", 0.10, lambda d: _c12(d, "3")))),
    Claim("C13", "ye-luo", "With concurrent offload (QMCPACK) runtime costs go beyond the 1.6 us of re-lock + unlock.",
          "concurrency pushes the re-lock path past 1.6 us", "0.9 us + 0.7 us = 1.6 us with one thread",
          ("concurrency",),
          (Test("re-lock path per transfer at the most threads", "ns", ">", 1600, _c13_level),
           Test("re-lock path per transfer, most threads / one thread", "x", ">", 1, _c13_growth))),
    Claim("C14", "ye-luo", "plugin-nextgen keeps track of locked memory (D142514); the HSA async copy remains very slow.",
          "tracked locked memory pays", "tracked locked memory; slow async copy", ("tracked", "tracked_calls"),
          (Test("lock calls made by tracked transfers", "count", "<=", 0, _c14_locks),
           Test("tracked / best other locking policy, time per transfer", "x", "<", 1, _c14_time))),
    Claim("C15", "JonChesterfield", "The CUDA plugin overlaps tasks that the AMD plugin runs sequentially.",
          "overlap across queues pays", "overlap across streams", ("overlap",),
          (Test("wall time over the most queues / one queue", "x", "<=", 0.9, _c15),)),
)}


def _producer(data: dict, c: Claim) -> str:
    return next((data.get("_notebook", {}).get(d, "") for d in c.datasets if data.get("_notebook", {}).get(d)), "")


def _not_measured(c: Claim, data: dict, status: dict | None) -> str:
    """Why ``c`` cannot be judged from this run (a data set missing or from a notebook that is not ok)."""
    for d in c.datasets:
        nb = data.get("_notebook", {}).get(d)
        if d not in data:
            owners = {v for v in data.get("_notebook", {}).values()}
            failed = [f"{k} {v.get('status')}" + (f": {v['error']}" if v.get("error") else "")
                      for k, v in (status or {}).items() if v.get("status") != "ok" and k not in owners]
            return f"no {d} data in this run" + (f" ({'; '.join(failed)})" if failed else "")
        st = (status or {}).get(nb, {}).get("status", "ok") if status is not None else "ok"
        if st != "ok":
            err = (status or {}).get(nb, {}).get("error", "")
            return f"its notebook {nb} is {st}" + (f": {err}" if err else "")
    return ""


def _row(c: Claim, platform: str, verdict: str, why: str, primary: tuple[str, Estimate] | None, detail: str,
         notebook: str, test: Test | None = None) -> dict:
    t = test or c.tests[0]
    e = primary[1] if primary else Estimate(math.nan, math.nan, math.nan, 0)
    return {"id": c.id, "who": c.who, "claim": c.text, "short": c.short, "thread": c.thread,
            "metric": t.metric + (f" [{primary[0]}]" if primary else ""), "measured": e.value, "low": e.low,
            "high": e.high, "unit": t.unit, "comparison": t.comparison, "threshold": t.threshold,
            "verdict": verdict, "why": why, "detail": detail, "rule": "; and ".join(rule_text(x) for x in c.tests),
            "notebook": notebook, "platform": platform}


def judge_claim(c: Claim, data: dict, platform: str, status: dict | None = None) -> dict:
    """One claims-table row for ``c`` on ``data``."""
    notebook = _producer(data, c)
    applicable = c.platforms is None or platform in c.platforms
    reason = _not_measured(c, data, status)
    if reason and applicable:
        return _row(c, platform, Verdict.NOT_MEASURED, f"not measured: {reason}", None, "", notebook)
    words, parts, picks = [], [], []
    for t in c.tests:
        try:
            r = t.measure(data)
        except (Missing, KeyError, ValueError, IndexError, ZeroDivisionError) as e:
            words.append(Verdict.NOT_MEASURED)
            parts.append(f"{t.metric}: not measured ({e})")
            continue
        word, pick = _test_verdict(t, r)
        words.append(word)
        picks.append((word, pick, t))
        shown = f"{_fmt_est(pick[1], t.unit)} [{pick[0]}]" if pick else r.not_applicable
        parts.append(f"{t.metric}: {shown} -> {word}" + (f" ({r.detail})" if r.detail else ""))
    if not applicable:
        return _row(c, platform, Verdict.NOT_APPLICABLE, f"not applicable on {platform}: {c.elsewhere}", None,
                    ("measured here for information: " + "; ".join(parts)) if parts else "", notebook)
    word = _combine(words)
    # the row shows the test that decided the verdict (the first one that holds, where all hold)
    _, primary, test = next((p for p in picks if p[0] == word and p[1]), next((p for p in picks if p[1]),
                                                                                 (None, None, None)))
    why = {Verdict.HOLDS: "every test holds with its whole interval on the claim's side",
           Verdict.DOES_NOT_HOLD: "a test's interval lies entirely on the other side of its threshold",
           Verdict.INCONCLUSIVE: "an interval straddles its threshold",
           Verdict.NOT_MEASURED: "a test found nothing to measure",
           Verdict.NOT_APPLICABLE: "no test applies on this platform"}[word]
    return _row(c, platform, word, why, primary, "; ".join(parts), notebook, test)


def judge(ids, data: dict, platform: str, status: dict[str, dict] | None = None) -> pd.DataFrame:
    """The claims ``ids`` judged on ``data`` (data sets by name, as ``load_run`` returns them or as
    a notebook keeps them)."""
    data = {"_notebook": {}, "_harness": {}, **data}
    return pd.DataFrame([judge_claim(CLAIMS[i], data, platform, status) for i in ids], columns=list(COLUMNS))


def rules_markdown() -> str:
    """The rule of every claim as a Markdown table, generated from the declarations above (the
    claims document carries it; a test keeps the two the same)."""
    lines = ["| id | platforms | data sets | holds when |", "|---|---|---|---|"]
    for c in CLAIMS.values():
        where = ", ".join(c.platforms) if c.platforms else "every platform"
        lines.append(f"| {c.id} | {where} | {', '.join(c.datasets)} | " + "; and ".join(rule_text(t) for t in c.tests) + " |")
    return "\n".join(lines) + "\n"


def evaluate(run_dir: Path, platform: str, status: dict[str, dict] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """One row per claim, and the data files that could not be read."""
    data, unreadable = load_run(run_dir)
    return judge(list(CLAIMS), data, platform, status), unreadable
