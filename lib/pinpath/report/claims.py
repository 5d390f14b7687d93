"""The 15 claims of the thread as declarative data, and one verdict function.

Each claim names its subject (the runtime it speaks of: HSA/ROCT, HIP, the CUDA runtime/driver,
LLVM's AMDGPU or CUDA plugin, or any runtime), the data sets it reads (written once, in the
registry of notebooks: ``registry.claim_datasets``) and one or more tests. A claim is read *as
meant* where the platform measured is its subject, as an *analogue* where the platform only has
the same question (the row names the analogue), and is *not applicable* elsewhere, with its
reason. Claims about a plugin's call pattern are judged only from what the real runtime did
(``real`` tests); a model of the plugin shows its own call pattern by construction and is given
for information only.

A test is a metric with a unit, a comparison and a threshold, measured per group (size,
direction ...) with a 95 % interval taken over the independent repeats (``stats``). A test holds
when every group's interval lies on the claim's side of the threshold (or a majority, where the
test says so), does not hold when one lies entirely on the other side, and is inconclusive
otherwise; with fewer than ``stats.MIN_REPEATS`` repeats it is at best inconclusive. A test whose
situation never arose in the run is not applicable, saying so. A claim holds when all its tests
hold. Each row's ``why`` is one sentence written from the data (what was measured, on what, and
what decided); the interval rule that decided is in ``rule_detail``. The thread's figures are
quoted from it; measured ones come from the run's data files, never typed in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from ..registry import claim_datasets, notebook
from ..stats import MIN_REPEATS, Estimate, diff_ci, median_ci, proportion_ci, ratio_ci, share_ci
from ..trace import null_call_ns
from ..units import binary_size, fmt_ns
from ..vocab import Verdict
from .fmt import format_measured
from .rundata import RunData

__all__ = ["Claim", "Test", "Result", "CLAIMS", "GPU", "SUBJECTS", "AS_MEANT", "ANALOGUE", "MODEL_ONLY", "evaluate",
           "judge", "judge_notebook", "load_run", "verdict_of", "judged_rows", "READINGS", "Missing", "fmt_value", "rule_text", "rules_markdown",
           "COLUMNS"]

GPU = ("cuda", "hsa", "hip")
#: subject -> (its name in words, the platforms where it is measured as meant; None: every platform,
#: (): only through the real runtime's record)
SUBJECTS = {"hsa": ("HSA/ROCT", ("hsa",)), "hip": ("HIP", ("hip",)), "cuda": ("the CUDA runtime/driver", ("cuda",)),
            "amdgpu_plugin": ("LLVM's AMDGPU plugin", ()), "cuda_plugin": ("LLVM's CUDA plugin", ()),
            "plugins": ("LLVM's CUDA and AMDGPU plugins", ()),
            "any": ("any runtime", None)}
AS_MEANT, ANALOGUE = "as meant", "analogue"
MODEL_ONLY = "not applicable here (a model shows its own call pattern)"
COLUMNS = ("id", "who", "claim", "short", "thread", "subject", "reading", "analogue", "metric", "measured", "low",
           "high", "unit", "comparison", "threshold", "n_repeats", "within_spread", "between_spread", "difference",
           "difference_low", "difference_high", "verdict", "why", "rule_detail", "detail", "rule", "notebook",
           "platform")


class Missing(Exception):
    """A data set a claim needs is not in the run, or holds nothing the test can use."""


@dataclass(frozen=True)
class Result:
    """What a test measured: (group, estimate) pairs, or why the test does not apply here.

    ``facts``: per group label (or "" for all), the data half of the row's "why" sentence: what
    was measured, on what. ``differences``: per group, the absolute difference (ns) beside a ratio.
    ``never_arose``: the situation the claim is about did not occur in the run (then the test is
    not applicable, saying so)."""
    groups: list[tuple[str, Estimate]] = field(default_factory=list)
    detail: str = ""
    not_applicable: str = ""
    facts: dict = field(default_factory=dict)
    differences: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Test:
    metric: str                                  #: words: what is measured
    unit: str                                    #: "x", "ns", "count", "fraction"
    comparison: str                              #: ">=", ">", "<=", "<", or "within" (|value - 1| <= threshold)
    threshold: float
    measure: Callable[[RunData], Result]         #: the run's data -> result
    over: str = "every"                          #: every group must hold, or a "majority" of them
    so: str = "{metric} is {v}"                  #: what the figure means, in words ({v}: the figure)


@dataclass(frozen=True)
class Claim:
    id: str
    who: str
    text: str
    short: str
    thread: str                                  #: the thread's figure or statement
    tests: tuple[Test, ...]
    subject: str = "any"                         #: a SUBJECTS key
    analogues: dict = field(default_factory=dict)   #: platform -> the analogue measured there, in words
    elsewhere: str = "the claim is about a GPU runtime; the host platform measures the operating system's share only"
    real: tuple[Test, ...] = ()                  #: tests on the real runtime's record (plugin claims)
    real_datasets: tuple[str, ...] = ()
    real_vendor: str = ""                        #: the real runtime's vendor that is the subject

    @property
    def datasets(self) -> tuple[str, ...]:
        """The data sets it reads, as the registry of notebooks links it to the notebook judging it."""
        return claim_datasets(self.id)


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


def _bar(t: Test) -> str:
    return (f"within {100 * t.threshold:.0f} % of 1" if t.comparison == "within"
            else f"{t.comparison} {fmt_value(t.threshold, t.unit)}")


def rule_text(t: Test) -> str:
    scope = "for a majority of the groups" if t.over == "majority" else "in every group"
    return f"{t.metric} {_bar(t)} {scope}"


def _too_few(groups: list[tuple[str, Estimate]]) -> str:
    """Why a timed test can be no better than inconclusive: fewer than MIN_REPEATS repeats."""
    timed = [e.n_repeats for _, e in groups if e.n_repeats > 0]
    if timed and min(timed) < MIN_REPEATS:
        return (f"only {min(timed)} independent repeat{'s' if min(timed) > 1 else ''} behind it (a data set without "
                f"a repeat column counts as one), {MIN_REPEATS} needed for a verdict")
    return ""


def _test_verdict(t: Test, r: Result) -> tuple[str, tuple[str, Estimate] | None, str]:
    """The test's verdict, the group that decided it, and why it was capped at inconclusive."""
    if r.not_applicable:
        return Verdict.NOT_APPLICABLE, None, ""
    if not r.groups:
        return Verdict.NOT_MEASURED, None, ""
    words = [verdict_of(e, t.comparison, t.threshold) for _, e in r.groups]
    if Verdict.NOT_MEASURED in words:
        return Verdict.NOT_MEASURED, r.groups[words.index(Verdict.NOT_MEASURED)], ""
    if t.over == "majority":
        n, yes, no = len(words), words.count(Verdict.HOLDS), words.count(Verdict.DOES_NOT_HOLD)
        word = Verdict.HOLDS if yes > n / 2 else Verdict.DOES_NOT_HOLD if no >= n / 2 else Verdict.INCONCLUSIVE
        pick = next((g for g, w in zip(r.groups, words) if w == word), r.groups[0])
    else:
        word = next((w for w in (Verdict.DOES_NOT_HOLD, Verdict.INCONCLUSIVE) if w in words), Verdict.HOLDS)
        if word == Verdict.HOLDS:
            dist = [abs(e.value - (1 if t.comparison == "within" else t.threshold)) for _, e in r.groups]
            pick = r.groups[int(np.argmin(dist))]
        else:
            pick = r.groups[words.index(word)]
    capped = _too_few(r.groups) if word in (Verdict.HOLDS, Verdict.DOES_NOT_HOLD) else ""
    return (Verdict.INCONCLUSIVE if capped else word), pick, capped


def _combine(words: list[str]) -> str:
    """The claim's verdict from its tests'. A test that is not applicable leaves the claim shown in
    part only: it cannot hold as a whole then (at best inconclusive)."""
    real = [w for w in words if w != Verdict.NOT_APPLICABLE]
    if not real:
        return Verdict.NOT_APPLICABLE
    for word in (Verdict.NOT_MEASURED, Verdict.DOES_NOT_HOLD, Verdict.INCONCLUSIVE):
        if word in real:
            return word
    return Verdict.INCONCLUSIVE if len(real) < len(words) else Verdict.HOLDS


# -- reading a run ----------------------------------------------------------------------------
def load_run(run_dir: Path) -> tuple[RunData, list[str]]:
    """The run's data (``RunData.read``) and the files that could not be read."""
    data = RunData.read(run_dir)
    return data, data.unreadable


def judged_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The rows a claim is judged on: where a data set has rows the C engine executed and timed
    (``engine == "native"``), those only; otherwise every row (the Python policies')."""
    if "engine" in df and (df.engine == "native").any():
        return df[df.engine == "native"]
    return df


def _get(data: RunData, name: str) -> pd.DataFrame:
    df = data.get(name)
    if df is None or not len(df):
        raise Missing(f"no {name} data in this run")
    return judged_rows(df)


def _rep(df: pd.DataFrame):
    """The repeat labels of ``df``'s rows, or None (the calls are the unit: one repeat)."""
    return df["repeat"].to_numpy() if "repeat" in df else None


def _null_ns(data: RunData, dataset: str) -> float:
    return null_call_ns(data.harness_for(dataset))


# -- measures shared by several claims ----------------------------------------------------------
def _calls(data: RunData, op: str, state: str, kind: str = "heap", dataset: str = "lock_cost") -> tuple[pd.DataFrame, str]:
    """Rows of one op on one state: from C where the run has them, else Python net of the
    harness's null call (labelled); computed once per run (C6, C7 and C9 share them)."""
    return data.memo(("calls", op, state, kind, dataset), lambda: _calls_of(data, op, state, kind, dataset))


def _calls_of(data: RunData, op: str, state: str, kind: str, dataset: str) -> tuple[pd.DataFrame, str]:
    lc = _get(data, dataset)
    rows = lc[(lc.op == op) & (lc.state == state) & (lc.kind == kind)]
    native = rows[rows.source == "native"]
    if len(native):
        return native, "timed in C"
    py = rows[rows.source == "python"].copy()
    null = _null_ns(data, dataset)
    py["ns"] = (py.ns - null).clip(lower=1)
    return py, f"Python, net of the {fmt_ns(null)} null call (no C library in this run)"


def _answer(rows: pd.DataFrame) -> str:
    """The runtime's refusal of ``rows``' calls in words ("" where every call was granted)."""
    errs = sorted(set(rows.error) - {""}) if "error" in rows else []
    return ", ".join(errs)


_OPS = {("lock", "pageable"): "a lock of pageable memory", ("query", "pageable"): "a pointer query of pageable memory",
        ("query", "locked"): "a query of locked memory", ("relock", "locked"): "a re-lock of locked memory",
        ("unlock", "locked"): "an unlock", ("unlock_after_relock", "locked"): "the unlock of a second lock"}


def _op_fact(rows: pd.DataFrame, op: str, state: str, size: str) -> str:
    what, took = _OPS.get((op, state), f"{op} ({state})"), fmt_ns(median_ci(rows.ns, _rep(rows)).value)
    refused = _answer(rows)
    if refused and (rows.error != "").all():
        return f"the runtime refuses {what} ({refused}) in {took} at {size}"
    return f"{what} takes {took} at {size}"


def _per_size(data, num: tuple[str, str], den: tuple[str, str], *, kind: str = "heap",
              dataset: str = "lock_cost") -> Result:
    a, src = _calls(data, *num, kind=kind, dataset=dataset)
    b, _ = _calls(data, *den, kind=kind, dataset=dataset)
    groups, facts = [], {}
    for n in sorted(set(a.nbytes) & set(b.nbytes)):
        ga, gb, size = a[a.nbytes == n], b[b.nbytes == n], binary_size(n)
        groups.append((size, ratio_ci(ga.ns, gb.ns, _rep(ga), _rep(gb))))
        facts[size] = f"{_op_fact(ga, *num, size)}, {_op_fact(gb, *den, size).replace(' at ' + size, '')} ({src})"
    if not groups:
        raise Missing(f"no sizes with both {num[0]} ({num[1]}) and {den[0]} ({den[1]})")
    return Result(groups, f"{num[0]} / {den[0]} per size, {src}", facts=facts)


def _transfers(data: RunData, name: str) -> pd.DataFrame:
    t = _get(data, name)
    return t[t.event == "transfer"] if "event" in t else t


def _label(key) -> str:
    key = key if isinstance(key, tuple) else (key,)
    return " ".join(binary_size(k) if isinstance(k, (int, np.integer)) else str(k) for k in key)


def _backings(a: pd.DataFrame, b: pd.DataFrame) -> str:
    """Where the two arms of a comparison sat on different page backings, that in words."""
    if "backing" not in a or "backing" not in b:
        return ""
    ba, bb = (", ".join(sorted(set(x.backing.dropna().astype(str)))) for x in (a, b))
    return f" (on different page backings: {ba} against {bb})" if ba != bb else ""


def _policy_ratio(t: pd.DataFrame, a: str, b: str, by=("nbytes", "direction")) -> tuple[list, dict]:
    """Per group: ratio of the policies' time per transfer, and the facts sentence."""
    out, facts = [], {}
    for key, g in t.groupby(list(by)):
        ga, gb = g[g.policy == a], g[g.policy == b]
        if len(ga) and len(gb):
            label = _label(key)
            out.append((label, ratio_ci(ga.total_ns, gb.total_ns, _rep(ga), _rep(gb))))
            facts[label] = (f"a {label} transfer takes {fmt_ns(median_ci(ga.total_ns, _rep(ga)).value)} under {a} "
                            f"and {fmt_ns(median_ci(gb.total_ns, _rep(gb)).value)} under {b}" + _backings(ga, gb))
    return out, facts


def _exact(value: float, n: int = 1) -> Estimate:
    return Estimate(float(value), float(value), float(value), n)


def _real_vendor(data: RunData) -> str:
    runs = data.get("real_runs")
    if runs is None or not len(runs) or "vendor" not in runs:
        return ""
    return str(runs.vendor.dropna().iloc[0]) if runs.vendor.notna().any() else ""


def _real_steady(data: RunData) -> pd.DataFrame:
    """The real runtime's untraced invocations without the first one (a warm-up)."""
    inv = _get(data, "real_invocations")
    if "step" not in inv:   # a run where the real runtime did not run (its not_applicable row)
        why = inv.not_applicable.iloc[0] if "not_applicable" in inv and len(inv) else "no invocation recorded"
        raise Missing(f"the real runtime did not run: {why}")
    inv = inv[~inv.traced.astype(bool)] if "traced" in inv else inv
    return inv[~((inv.step == inv.step.min()) & (inv.invocation == 0))]


def _real_note(data: RunData) -> str:
    """What the real libomptarget did here (notebook 13), for a claim judged elsewhere; once per run."""
    return data.memo(("real_note",), lambda: _real_note_of(data))


def _real_note_of(data: RunData) -> str:
    copies, phases, vendor = data.get("real_copies"), data.get("real_phases"), _real_vendor(data)
    if copies is None or not len(copies) or not vendor:
        return ""
    plugin = {"nvidia": "LLVM's CUDA plugin", "amd": "LLVM's AMDGPU plugin"}.get(vendor, vendor)
    inv = copies[copies.segment == "invocation"]
    n_inv = max(inv.groupby(["variant", "nw", "step", "invocation"]).ngroups, 1)
    per = ", ".join(f"{len(g) / n_inv:.2f} {d.upper()}"
                    for d, g in inv.groupby("direction"))
    note = f"the real libomptarget here ({plugin}, notebook 13): {per} copies per region invocation"
    if phases is not None and len(phases):
        ph = phases[phases.segment == "invocation"]
        allocs = int(ph.phase.str.contains("alloc", case=False).sum())
        note += f", {allocs} allocation phases among its {len(ph)} profiled phases inside invocations"
    return note


# -- the tests ------------------------------------------------------------------------------------
def _model_calls(data: RunData, name: str, calls_name: str, policy: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """A model's events (map, transfer, unmap ...) of ``policy``, its transfers, and their calls; once per run."""
    return data.memo(("model_calls", name, calls_name, policy), lambda: _model_calls_of(data, name, calls_name, policy))


def _model_calls_of(data: RunData, name: str, calls_name: str, policy: str):
    every, calls = _get(data, name), _get(data, calls_name)
    ev = every[every.policy == policy]
    t = ev[ev.event == "transfer"] if "event" in ev else ev
    return ev, t, calls[calls.transfer_id.isin(ev.transfer_id)]


def _c1_model(data):
    """For information: the 2020 plugin's model makes one allocation per transfer by construction."""
    out, parts = [], []
    for pol in ("stage_per_copy", "nextgen_lock_mapped"):
        _, t, c = _model_calls(data, "replica", "replica_calls", pol)
        c = c[c.transfer_id.isin(t.transfer_id)]
        if len(t):
            per = float((c.category == "alloc").sum()) / len(t)
            out.append((pol, _exact(per, len(t))))
            parts.append(f"{pol} {per:.2f}")
    if not out:
        raise Missing("the replica ran neither stage_per_copy nor nextgen_lock_mapped")
    return Result(out[:1], "the models' allocations per transfer of arrays mapped once: " + ", ".join(parts)
                  + " (a model shows its own call pattern by construction)")


def _c1_real(data):
    """Allocations per transfer in the real runtime's record of its native calls (real_calls)."""
    calls, copies = _get(data, "real_calls"), _get(data, "real_copies")
    inv = copies[copies.segment == "invocation"]
    allocs = calls[(calls.segment == "invocation") & (calls.category == "alloc")]
    if not len(inv):
        raise Missing("the real runtime made no copies inside the region")
    per = len(allocs) / len(inv)
    return Result([("real runtime", _exact(per, len(inv)))], _real_note(data),
                  facts={"": f"the real runtime made {len(allocs)} allocations in {len(inv)} copies of arrays "
                                 "mapped once"})


def _c2_share(data):
    t = _transfers(data, "staging")
    f = t[(t.policy == "stage_per_copy") & (t.nbytes == t.nbytes.min())]
    if not len(f):
        raise Missing("no stage_per_copy transfers")
    groups, facts = [], {}
    for d, g in f.groupby("direction"):
        label = f"{binary_size(int(f.nbytes.iloc[0]))} {d}"
        part = g.alloc_ns + g.grant_ns + g.free_ns
        groups.append((label, share_ci(part, g.total_ns, _rep(g))))
        facts[label] = (f"a per-copy staged {label} transfer takes {fmt_ns(median_ci(g.total_ns, _rep(g)).value)}, "
                        f"of which allocate + grant + free {fmt_ns(median_ci(part, _rep(g)).value)}")
    return Result(groups, "share of allocate + grant + free in a per-copy staged transfer at the smallest size",
                  facts=facts)


def _c2_reuse(data):
    groups, facts = _policy_ratio(_transfers(data, "staging"), "stage_per_copy", "stage_pooled")
    return Result(groups, "per-copy / pooled time per transfer", facts=facts)


def _c3(data):
    t = _transfers(data, "lock_or_stage")
    groups, facts = _policy_ratio(t[t.kind == "heap"], "lock_always", "stage_per_copy")
    return Result(groups, "lock_always / stage_per_copy time per transfer, malloc'd memory", facts=facts)


def _c4_cost(data):
    return _per_size(data, ("query", "pageable"), ("lock", "pageable"), dataset="query_cost")


def _c4_saving(data):
    """On memory the application pinned, checking first against always locking (which, on a
    runtime that refuses a second lock, pays the refusal and then copies directly)."""
    t = _transfers(data, "query_saving")
    if "app_pinned" not in t:
        raise Missing("query_saving has no app_pinned column")
    pinned = t[t.app_pinned.astype(bool)]
    groups, facts = _policy_ratio(pinned, "query_then_lock", "lock_always")
    la = pinned[pinned.policy == "lock_always"]
    paths = ", ".join(f"{p} {n}" for p, n in la.path.value_counts().items())
    staged, _ = _policy_ratio(pinned, "query_then_lock", "stage_per_copy")
    detail = (f"on memory the application pinned: query_then_lock / lock_always (lock_always's paths: {paths or 'none'}); "
              "for information, query_then_lock / stage_per_copy " + ", ".join(f"{g} {_fmt_est(e, 'x')}" for g, e in staged[:4]))
    return Result(groups, detail, facts=facts)


_READ_ONLY = ("read_only", "read_only_file", "rodata")


def _c5(data):
    """The claim names rodata: is a lock of rodata refused with the runtime's default flags?"""
    o = _get(data, "lock_outcomes")
    o = o[(o.read_only_flag == False) | o.read_only_flag.isna()] if "read_only_flag" in o else o   # noqa: E712
    ro = o[(o.kind == "rodata") & (o.not_available == "")]
    if not len(ro):
        raise Missing("no rodata buffer could be made")
    refused = not ro.granted.astype(bool).all()
    kinds = o[o.not_available == ""]
    no = sorted(set(kinds[~kinds.granted.astype(bool)].kind))
    paths = data.get("kind_paths")
    fell = sorted(set(judged_rows(paths)[(judged_rows(paths).path == "lock_failed_staged")].kind)) \
        if paths is not None and len(paths) else []
    stack = o[o.kind == "stack"]
    detail = (f"refused with the runtime's default flags: {', '.join(no) or 'none'}; lock_always staged instead: "
              f"{', '.join(fell) or 'none'}; the host stack: "
              + ("granted" if len(stack) and stack.granted.astype(bool).all() else "refused" if len(stack) else "not measured"))
    if "pinned" in no:
        detail += "; memory from the pinned allocator is refused too, so an always-locking runtime stages it"
    flag = data.get("lock_outcomes_read_only_flag")
    if flag is not None and len(flag):
        f = flag[flag.kind.isin(_READ_ONLY) & flag.read_only_flag.astype(bool)]
        if len(f):
            detail += (f"; with the read-only flag (no offload runtime passes it): refused "
                       f"{', '.join(sorted(set(f[~f.granted.astype(bool)].kind))) or 'none'}")
    answer = _answer(ro[~ro.granted.astype(bool)]) if refused else "granted"
    fact = (f"a lock of rodata is {'refused (' + answer + ')' if refused else 'granted'}; the host stack's is "
            + ("granted" if len(stack) and stack.granted.astype(bool).all() else "refused" if len(stack) else "untested"))
    return Result([("rodata", _exact(1.0 if refused else 0.0, len(ro)))], detail, facts={"": fact})


def _c6(data):
    return _per_size(data, ("lock", "pageable"), ("query", "pageable"))


def _path_ns(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """A path of several calls (a re-lock and its unlock): per repeat, the sum of each call's median
    in that repeat; without repeat labels, one value (the sum of the medians: a single repeat)."""
    if all("repeat" in p for p in parts):
        total = sum(p.groupby("repeat").ns.median() for p in parts).dropna()
        return pd.DataFrame({"ns": total.to_numpy(dtype=float), "repeat": total.index.to_numpy()})
    return pd.DataFrame({"ns": [float(sum(p.ns.median() for p in parts))]})


def _c7(data):
    """The re-lock path against a query; where the runtime grants the re-lock, the unlock that
    second lock needs is part of the path."""
    lc = _get(data, "lock_cost")
    if (lc.op == "unlock_after_relock").any():
        relock, src = _calls(data, "relock", "locked")
        unlock, _ = _calls(data, "unlock_after_relock", "locked")
        query, _ = _calls(data, "query", "locked")
        groups, facts = [], {}
        for n in sorted(set(relock.nbytes) & set(query.nbytes) & set(unlock.nbytes)):
            size = binary_size(n)
            a, u, q = (x[x.nbytes == n] for x in (relock, unlock, query))
            path = _path_ns([a, u])
            groups.append((size, ratio_ci(path.ns, q.ns, _rep(path), _rep(q))))
            facts[size] = (f"a granted re-lock takes {fmt_ns(a.ns.median())} and its unlock {fmt_ns(u.ns.median())} "
                           f"at {size}, a query of locked memory {fmt_ns(q.ns.median())} ({src})")
        return Result(groups, "(re-lock + its unlock) / query per size", facts=facts)
    r = _per_size(data, ("relock", "locked"), ("query", "locked"))
    answers = _answer(lc[lc.op == "relock"])
    return Result(r.groups, r.detail + ("; the re-lock is answered " + answers + ", so no unlock follows" if answers
                                        else "; the re-lock is granted"), facts=r.facts)


def _c8(data):
    s = _get(data, "semantics")
    twice = s[s.probe == "lock_twice_unlock_once"]
    second, still = twice[twice.action == "lock A again"], twice[twice.action == "query A"].locked
    if not len(second) or not len(still):
        raise Missing("the lock-twice probe did not reach its query")
    counted = second.error.iloc[0] == "" and bool(still.iloc[0])
    detail = ("second lock " + ("granted" if second.error.iloc[0] == "" else f"refused ({second.error.iloc[0]})")
              + ("; still locked after one unlock" if bool(still.iloc[0]) else "; not locked after one unlock"))
    return Result([("lock twice, unlock once", _exact(1.0 if counted else 0.0))], detail,
                  facts={"": f"locked twice and unlocked once, the memory is {detail}"})


def _c9_lock(data):
    return _per_size(data, ("lock", "pageable"), ("relock", "locked"))


def _c9_unlock(data):
    inner, _ = _calls(data, "unlock_after_relock", "locked")
    if not len(inner):
        answers = _answer(_get(data, "lock_cost").query("op == 'relock'"))
        return Result(not_applicable=f"never arose: the runtime refuses the second lock ({answers or 'refused'}) "
                                     "and makes no unlock of memory the application pinned")
    return _per_size(data, ("unlock", "locked"), ("unlock_after_relock", "locked"))


def _c10_split(data) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The runtime's calls and the application's own (``caller == "application"``) of api_calls."""
    c = _get(data, "api_calls")
    app = c["caller"].astype(str) == "application" if "caller" in c else pd.Series(False, index=c.index)
    return c[~app], c[app]


def _c10_lock(data):
    c, _ = _c10_split(data)
    lock = c[c.category == "lock"]
    a, b = lock[lock.user_pinned.astype(bool)], lock[~lock.user_pinned.astype(bool)]
    if not len(a) or not len(b):
        raise Missing("the replica made no lock calls with or without user pinning")
    refused = int((a.rc > 0).sum())
    with_ = (f"{len(a)} lock calls of the runtime with user pinning"
             + (" (all refused: the path a runtime that always tries pays)" if refused == len(a)
                else f" ({refused} refused)" if refused else "") + f" average {fmt_ns(a.duration_ns.mean())}")
    detail = f"{with_}; {len(b)} without average {fmt_ns(b.duration_ns.mean())}; thread: 51438 ns vs 84873 ns"
    return Result([("lock calls", ratio_ci(a.duration_ns, b.duration_ns, _rep(a), _rep(b)))], detail,
                  facts={"": with_ + f", against {fmt_ns(b.duration_ns.mean())} for {len(b)} real locks without"})


def _c10_total(data):
    """Every native call over the replica, the application's own pinning calls included (the
    thread's table has them: hsa_amd_memory_lock_to_pool)."""
    c, app = _c10_split(data)
    if not len(app):
        raise Missing("the application's own pinning calls are not recorded in api_calls (no caller == "
                      "'application' rows), and the thread's table counts them")
    everything = pd.concat([c, app])
    pinned = everything.user_pinned.astype(bool)
    a, b = everything[pinned].duration_ns.sum(), everything[~pinned].duration_ns.sum()
    if not b:
        raise Missing("no replica calls without user pinning")
    if "repeat" in everything:   # the replica's native-call time per repeat, the repeats resampled
        sums = everything.groupby(["user_pinned", "repeat"]).duration_ns.sum().reset_index()
        sa, sb = sums[sums.user_pinned.astype(bool)], sums[~sums.user_pinned.astype(bool)]
        est = ratio_ci(sa.duration_ns, sb.duration_ns, sa.repeat.to_numpy(), sb.repeat.to_numpy())
    else:
        est = Estimate(a / b, a / b, a / b, len(everything), 1)   # one run: a single repeat
    detail = (f"all native calls over the replica: {fmt_ns(a)} with user pinning (of which the application's own "
              f"{len(app)} calls {fmt_ns(app.duration_ns.sum())}), {fmt_ns(b)} without")
    return Result([("whole replica", est)], detail,
                  facts={"": f"with user pinning the replica's native calls take {fmt_ns(a)}, the application's "
                                 f"{len(app)} own pinning calls included, and {fmt_ns(b)} without"})


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


_LOCKING = ("lock_always", "query_then_lock", "nextgen")


def _amortised(events: pd.DataFrame) -> pd.DataFrame:
    """Transfers of one policy with its map and unmap time spread evenly over them."""
    t = events[events.event == "transfer"]
    extra = events[events.event.isin(["map", "unmap"])].total_ns.sum()
    return t.assign(total_ns=t.total_ns + (extra / len(t) if len(t) else 0))


def _c14_model(data):
    """For information: the tracked model's locks, map events included, and its time per transfer
    with the map-time locks spread over its transfers, against the best other locking model."""
    every = _get(data, "tracked")
    ev, t, calls = _model_calls(data, "tracked", "tracked_calls", "nextgen_lock_mapped")
    if not len(t):
        raise Missing("no nextgen_lock_mapped transfers")
    kinds = ev.set_index("transfer_id").event
    lock_events = kinds.reindex(calls[calls.category == "lock"].transfer_id).value_counts()
    locks = int(lock_events.sum())
    others = [p for p in _LOCKING if (every.policy == p).any()]
    if not others:
        raise Missing("no locking policies to compare")
    amort = {p: _amortised(every[every.policy == p]) for p in others + ["nextgen_lock_mapped"]}
    best = min(others, key=lambda p: amort[p].total_ns.median())
    groups = []
    for nw in sorted(set(t.nw)) if "nw" in t else [None]:
        a = amort["nextgen_lock_mapped"] if nw is None else amort["nextgen_lock_mapped"].query("nw == @nw")
        b = amort[best] if nw is None else amort[best].query("nw == @nw")
        groups.append((f"nw={nw} vs {best}", ratio_ci(a.total_ns, b.total_ns, _rep(a), _rep(b))))
    detail = (f"{locks} lock calls for {len(t)} tracked transfers ("
              + ", ".join(f"{n} in {e} events" for e, n in lock_events.items()) + "); median per transfer with map and "
              "unmap spread over the transfers: " + ", ".join(f"{p} {fmt_ns(v.total_ns.median())}" for p, v in amort.items()))
    if (every.policy == "driver_pageable").any():
        detail += (f"; what LLVM's CUDA plugin really does (driver_pageable, it registers nothing): "
                   f"{fmt_ns(every[(every.policy == 'driver_pageable') & (every.event == 'transfer')].total_ns.median())}")
    return Result(groups, detail)


def _c14_real(data):
    """The real runtime with LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS=1 against its plain variant."""
    inv = _real_steady(data)
    groups, facts = [], {}
    for nw, g in inv.groupby("nw"):
        a, b = g[g.variant == "lock_mapped"], g[g.variant == "plain"]
        if len(a) and len(b):
            label = f"nw={nw}"
            groups.append((label, ratio_ci(a.ns, b.ns, _rep(a), _rep(b))))
            facts[label] = (f"the real runtime takes {fmt_ns(a.ns.median())} per region invocation with mapped buffers "
                            f"locked and tracked, {fmt_ns(b.ns.median())} without (nw={nw})")
    if not groups:
        raise Missing("the real runtime ran no lock_mapped and plain variants")
    return Result(groups, _real_note(data), facts=facts)


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


def _c12_claim(wait: bool) -> Claim:
    """carlobertolli's claim in one reading of his braces: as written (lock + enqueue, C12a) or
    with the copy's wait inside them (C12b)."""
    words, plus = ("with the wait", " + wait") if wait else ("without the wait", "")
    return Claim(
        "C12b" if wait else "C12a", "carlobertolli", "10^8 doubles: (1) lock + copy is slowest by orders of magnitude; "
        "(2) and (3) are alike. " + ("Read with the copy's wait inside the braces." if wait
                                     else "Read as his braces are written: lock + enqueue, no wait."),
        "lock+copy far slower; re-lock+copy like copy" + (" (with the wait)" if wait else ""),
        "(1) 'slowest by several orders of magnitude'; (2) ~ (3)", (Test(f"case 1 / case 2, braces {words}", "x", ">=", 100, lambda d: _c12(d, "1", wait), so="case 1 takes {v} case 2"),
         Test(f"case 3 / case 2, braces {words}", "x", "within", 0.10, lambda d: _c12(d, "3", wait),
              so="case 3 takes {v} case 2")),
        subject="hsa", analogues={"cuda": f"cudaHostRegister + cudaMemcpyAsync{plus}; case 3's re-register is refused (712)",
                                  "hip": f"hipHostRegister + hipMemcpyAsync{plus}"})


_REFUSAL = "a runtime that always tries to lock pays"

CLAIMS: dict[str, Claim] = {c.id: c for c in (
    Claim("C1", "ye-luo", "Arrays already mapped with target enter data still show memory_pool_allocate, "
          "agents_allow_access and memory_pool_free per transfer.", "allocation per transfer of mapped arrays",
          "allocate / allow_access / free once per transfer (one miniqmc region)", (Test("staging allocations per transfer under the 2020 plugin's model", "count", ">=", 1, _c1_model),),
          subject="amdgpu_plugin", real_vendor="amd", real_datasets=("real_calls", "real_copies"),
          real=(Test("allocations per transfer of arrays mapped once, the real runtime", "count", ">=", 1, _c1_real,
                     so="the real runtime allocates {v} times per transfer"),),
          elsewhere="the claim is about the AMDGPU plugin's calls, which only the real runtime on AMD shows"),
    Claim("C2", "JonChesterfield", "Data is staged to a fine-grain region allocated per memcpy; buffer reuse would "
          "be cheaper if allocation is expensive.", "per-copy staging buffer; reuse is cheaper",
          "'if memory_pool_allocate is expensive ... we should do some buffer reuse'", (Test("share of allocate + grant + free in a per-copy transfer (smallest size)", "fraction", ">=", 0.5, _c2_share,
                so="allocating and freeing the staging buffer is {v} of the transfer"),
           Test("per-copy / pooled time per transfer", "x", ">", 1, _c2_reuse,
                so="a buffer allocated per copy takes {v} the time of a reused one")),
          subject="hsa", analogues={"cuda": "a staging buffer from cudaMallocHost per copy against a reused one",
                                    "hip": "a staging buffer from hipHostMalloc per copy against a reused one"}),
    Claim("C3", "JonChesterfield", "Lock the user pointer and copy from it: faster on the happy path.",
          "lock-then-copy beats staging", "'things should now be faster on the happy path'", (Test("lock_always / stage_per_copy time per transfer", "x", "<", 1, _c3, over="majority",
                so="lock, copy and unlock take {v} the time of per-copy staging"),),
          subject="hsa", analogues={"cuda": "cudaHostRegister, copy, cudaHostUnregister against staging through "
                                            "cudaMallocHost per copy",
                                    "hip": "hipHostRegister, copy, hipHostUnregister against per-copy staging"}),
    Claim("C4", "ye-luo", "Query the pointer (hsa_amd_pointer_info) to see whether it is pinned and skip staging.",
          "query first, skip staging", "query instead of lock", (Test("query / lock of pageable memory", "x", "<", 1, _c4_cost, so="a query costs {v} a lock"),
           Test("query_then_lock / lock_always on memory the application pinned", "x", "<", 1, _c4_saving,
                so="checking first takes {v} the time of always trying to lock")),
          subject="hsa", analogues={"cuda": "cudaPointerGetAttributes against cudaHostRegister (whose answer on "
                                            "registered memory is a refusal, 712)",
                                    "hip": "hipPointerGetAttributes against hipHostRegister"}),
    Claim("C5", "JonChesterfield", "Unconditionally lock; if the lock fails, allocate + memcpy: needed for pointers "
          "into rodata and probably the host stack.", "read-only memory needs the staging fallback",
          "locks of rodata (and maybe the stack) fail", (Test("lock of rodata refused with the runtime's default flags (1 = refused)", "count", ">=", 1, _c5,
                so="the refusal count is {v}"),),
          subject="hsa", analogues={"cuda": "cudaHostRegister of rodata (LLVM's CUDA plugin never calls it)",
                                    "hip": "hipHostRegister of rodata"}),
    Claim("C6", "ye-luo", "On NVIDIA GPUs registering pinned memory is expensive while checking whether a pointer is "
          "pinned is cheap.", "register expensive, query cheap", "register expensive, query cheap", (Test("register / query of pageable memory", "x", ">=", 10, _c6, so="a register costs {v} a query"),),
          subject="cuda", elsewhere="the claim is about NVIDIA's runtime"),
    Claim("C7", "JonChesterfield", "Calling lock on already locked memory costs about the same check as a query.",
          "re-lock costs about a query", "'roct has to do ~ the same check'", (Test("re-lock path / query of locked memory", "x", "<=", 2, _c7, so="the re-lock path costs {v} a query"),),
          subject="hsa", analogues={"cuda": f"what a refused re-register (712) costs: what {_REFUSAL}",
                                    "hip": "hipHostRegister of registered memory (refused) against a query"}),
    Claim("C8", "ye-luo / JonChesterfield", "HSA refcounts locks (ROCT registration_count).", "HSA counts locks",
          "fmm_register_memory / fmm_deregister_memory keep a registration count", (Test("memory still locked after lock, lock, unlock (1 = counted)", "count", ">=", 1, _c8,
                so="the count test gives {v}"),),
          subject="hsa", elsewhere="the claim is about HSA/ROCT's registration count; other runtimes have no count "
                                   "to compare (CUDA refuses a second register, mlock keeps no count)"),
    Claim("C9", "ye-luo", "Lock 35 us, unlock 7 us; with memory pinned by HIP beforehand lock 0.9 us, unlock 0.7 us.",
          "prior pinning makes lock and unlock cheap", "35 us -> 0.9 us (lock), 7 us -> 0.7 us (unlock)", (Test("lock of pageable / the runtime's lock path on memory the application locked", "x", ">=", 10, _c9_lock,
                so="a real lock costs {v} the lock path on memory the application locked"),
           Test("unlock / unlock of that second lock", "x", ">=", 5, _c9_unlock,
                so="an unlock costs {v} the unlock of the second lock")),
          subject="hsa", analogues={"cuda": f"a real cudaHostRegister against its refusal (712) on memory the "
                                            f"application registered: what {_REFUSAL}; no second unlock exists",
                                    "hip": "hipHostRegister on memory the application registered"}),
    Claim("C10", "ye-luo", "rocprof: hsa_amd_memory_lock avg 84873 ns without user pinning, 51438 ns with.",
          "user pinning makes the runtime's locks cheaper", "lock 803 calls avg 84873 ns -> avg 51438 ns",
          (Test("the runtime's average lock call with / without the application pinning its arrays", "x", "<", 1,
                _c10_lock, so="the runtime's lock path with user pinning costs {v} a lock without"),
           Test("all native-call time with / without user pinning, the application's pinning included", "x", "<=", 1,
                _c10_total, so="user pinning makes the replica's native calls {v} as long")),
          subject="hsa", analogues={"cuda": f"cudaHostRegister of memory the application registered is refused "
                                            f"(712): the average is what {_REFUSAL}",
                                    "hip": "hipHostRegister with and without the application's registration"}),
    Claim("C11", "JonChesterfield", "The lock must be held for the call: another thread might unlock the same page "
          "meanwhile; locked memory is scarce.", "another thread's unlock can unpin our page",
          "another thread's unlock of the same page", (Test("share of copies relying on another's lock that saw the page unlocked mid-copy", "fraction", ">", 0, _c11,
                so="the hazard rate is {v}"),),
          subject="any"),
    _c12_claim(False),
    _c12_claim(True),
    Claim("C13", "ye-luo", "With concurrent offload (QMCPACK) runtime costs go beyond the 1.6 us of re-lock + unlock.",
          "concurrency pushes the re-lock path past 1.6 us", "0.9 us + 0.7 us = 1.6 us with one thread",
          (Test("re-lock path per transfer at the most threads", "ns", ">", 1600, _c13_level,
                so="the path costs {v} with the most threads"),
           Test("re-lock path per transfer, most threads / one thread", "x", ">", 1, _c13_growth,
                so="the path costs {v} its one-thread cost")),
          subject="hsa", analogues={"cuda": "the refused re-register (712) and unregister path under concurrency, "
                                            "against HSA's 1.6 us", "hip": "the hipHostRegister path under concurrency"}),
    Claim("C14", "ye-luo", "plugin-nextgen keeps track of locked memory (D142514); the HSA async copy remains very slow.",
          "tracked locked memory pays", "tracked locked memory; slow async copy", (Test("tracked / best other locking model, time per transfer with map-time locks", "x", "<", 1, _c14_model),),
          subject="amdgpu_plugin", real_vendor="amd", real_datasets=("real_invocations",),
          real=(Test("real runtime, locked and tracked mapped buffers / plain, time per invocation", "x", "<", 1,
                     _c14_real, so="tracking locked memory takes {v} the time per invocation"),),
          elsewhere="the claim is about the AMDGPU plugin's tracking and HSA's async copy"),
    Claim("C15", "JonChesterfield", "The CUDA plugin overlaps tasks that the AMD plugin runs sequentially.",
          "overlap across queues pays", "overlap across streams", (Test("wall time over the most queues / one queue", "x", "<=", 0.9, _c15,
                so="the chains take {v} the wall time of one queue"),),
          subject="plugins", analogues={"cuda": "whether this GPU overlaps streams, the capability the CUDA plugin "
                                                    "uses; the AMD plugin's half needs AMD hardware",
                                            "hsa": "whether HSA queues overlap, the capability the AMD plugin could use",
                                            "hip": "whether HIP streams overlap"}),
)}


def _producer(data: RunData, c: Claim) -> str:
    return next((data.notebook_of(d) for d in c.datasets if data.notebook_of(d)), "")


def _not_measured(datasets, data: RunData, status: dict | None) -> str:
    """Why a claim reading ``datasets`` cannot be judged from this run (a data set missing or from
    a notebook that is not ok)."""
    for d in datasets:
        nb = data.notebook_of(d)
        if d not in data:
            owners = data.notebooks()
            failed = [f"{k} {v.get('status')}" + (f": {v['error']}" if v.get("error") else "")
                      for k, v in (status or {}).items() if v.get("status") != "ok" and k not in owners]
            return f"no {d} data in this run" + (f" ({'; '.join(failed)})" if failed else "")
        st = (status or {}).get(nb, {}).get("status", "ok") if status is not None else "ok"
        if st != "ok":
            err = (status or {}).get(nb, {}).get("error", "")
            return f"its notebook {nb} is {st}" + (f": {err}" if err else "")
    return ""


def _reading(c: Claim, platform: str, data: RunData) -> tuple[str, str, tuple[Test, ...], tuple[str, ...]]:
    """(reading, the analogue or why not applicable, the tests that judge, the data sets they read)."""
    where = SUBJECTS[c.subject][1]
    if c.real:
        vendor = _real_vendor(data)
        if vendor == c.real_vendor:
            return AS_MEANT, "", c.real, c.real_datasets
        if platform in ("hsa", "hip") and c.real_vendor == "amd":   # the real run is missing or failed here
            return AS_MEANT, "", c.real, c.real_datasets + ("real_runs",)
        return Verdict.NOT_APPLICABLE, f"{MODEL_ONLY}: {c.elsewhere}", c.tests, c.datasets
    if where is None or platform in where:
        return AS_MEANT, "", c.tests, c.datasets
    if platform in c.analogues:
        return ANALOGUE, c.analogues[platform], c.tests, c.datasets
    return Verdict.NOT_APPLICABLE, f"not applicable on {platform}: {c.elsewhere}", c.tests, c.datasets


def _row(c: Claim, platform: str, reading: str, analogue: str, verdict: str, why: str, rule_detail: str,
         primary: tuple[str, Estimate] | None, detail: str, notebook: str, test: Test | None = None,
         difference: Estimate | None = None) -> dict:
    t = test or c.tests[0]
    e = primary[1] if primary else Estimate(math.nan, math.nan, math.nan, 0)
    d = difference or Estimate(math.nan, math.nan, math.nan, 0)
    return {"id": c.id, "who": c.who, "claim": c.text, "short": c.short, "thread": c.thread,
            "subject": SUBJECTS[c.subject][0], "reading": reading, "analogue": analogue,
            "metric": t.metric + (f" [{primary[0]}]" if primary else ""), "measured": e.value, "low": e.low,
            "high": e.high, "unit": t.unit, "comparison": t.comparison, "threshold": t.threshold,
            "n_repeats": e.n_repeats or math.nan, "within_spread": e.within_spread, "between_spread": e.between_spread,
            "difference": d.value, "difference_low": d.low, "difference_high": d.high,
            "verdict": verdict, "why": why, "rule_detail": rule_detail, "detail": detail,
            "rule": "; and ".join(rule_text(x) for x in (c.real if reading == AS_MEANT and c.real else c.tests)),
            "notebook": notebook, "platform": platform}


_RULE_DETAIL = {Verdict.HOLDS: "every test holds with its whole interval on the claim's side",
                Verdict.DOES_NOT_HOLD: "a test's interval lies entirely on the other side of its threshold",
                Verdict.INCONCLUSIVE: "an interval straddles its threshold",
                Verdict.NOT_MEASURED: "a test found nothing to measure",
                Verdict.NOT_APPLICABLE: "no test applies on this platform"}


def _sentence(t: Test, r: Result, word: str, pick: tuple[str, Estimate], capped: str) -> str:
    """The row's "why": what was measured, on what, and what decided."""
    label, e = pick
    facts = r.facts.get(label) or r.facts.get("") or f"{t.metric} measured at {label}"
    so = t.so.format(v=_fmt_est(e, t.unit), metric=t.metric)
    if capped:
        end = f"{capped}, so at best inconclusive"
    elif word == Verdict.HOLDS:
        end = f"which meets the claim's {_bar(t)}"
    elif word == Verdict.DOES_NOT_HOLD:
        end = f"which misses the claim's {_bar(t)}"
    else:
        end = f"whose interval straddles the claim's {_bar(t)}"
    return f"{facts}; so {so}, {end}"


def judge_claim(c: Claim, data: RunData, platform: str, status: dict | None = None) -> dict:
    """One claims-table row for ``c`` on ``data``."""
    notebook = _producer(data, c)
    reading, analogue, tests, datasets = _reading(c, platform, data)
    applicable = reading != Verdict.NOT_APPLICABLE
    reason = _not_measured(datasets, data, status)
    if reason and applicable:
        return _row(c, platform, reading, analogue, Verdict.NOT_MEASURED, f"not measured: {reason}",
                    _RULE_DETAIL[Verdict.NOT_MEASURED], None, "", notebook)
    words, parts, picks, unapplied = [], [], [], []
    for t in tests:
        try:
            r = t.measure(data)
        except (Missing, KeyError, ValueError, IndexError, ZeroDivisionError) as e:
            words.append(Verdict.NOT_MEASURED)
            parts.append(f"{t.metric}: not measured ({e})")
            picks.append((Verdict.NOT_MEASURED, None, t, Result(), "", f"{t.metric}: not measured ({e})"))
            continue
        word, pick, capped = _test_verdict(t, r)
        words.append(word)
        if word == Verdict.NOT_APPLICABLE:
            unapplied.append((t.metric, r.not_applicable))
        picks.append((word, pick, t, r, capped, ""))
        shown = f"{_fmt_est(pick[1], t.unit)} [{pick[0]}]" if pick else r.not_applicable
        parts.append(f"{t.metric}: {shown} -> {word}" + (f" ({capped})" if capped else "")
                     + (f" ({r.detail})" if r.detail else ""))
    if not applicable:
        extra = _real_note(data) if c.real else ""
        info = "; ".join(parts + ([extra] if extra else []))
        return _row(c, platform, Verdict.NOT_APPLICABLE, "", Verdict.NOT_APPLICABLE, analogue,
                    _RULE_DETAIL[Verdict.NOT_APPLICABLE], None,
                    ("measured here for information: " + info) if info else "", notebook)
    word = _combine(words)
    # the row shows the test that decided the verdict (the first with that word and a figure)
    deciding = next((p for p in picks if p[0] == word and p[1]), next((p for p in picks if p[1]), None))
    if word == Verdict.NOT_MEASURED:
        why = "not measured: " + "; ".join(p[5] for p in picks if p[5])
        measured = [p[3].facts.get(p[1][0]) or p[3].facts.get("") for p in picks if p[1] and p[0] != word]
        if any(measured):
            why += "; what was measured: " + "; ".join(m for m in measured if m)
    elif word == Verdict.NOT_APPLICABLE:
        why = "not applicable (" + "; ".join(reason for _, reason in unapplied) + ")"
    else:
        _, pick, t, r, capped, _ = deciding
        why = _sentence(t, r, deciding[0], pick, capped)
        others = [f"{p[2].metric} {_fmt_est(p[1][1], p[2].unit)}" + (f" ({_fmt_est(p[3].differences[p[1][0]], 'ns')} "
                  "apart)" if p[1][0] in p[3].differences else "") + f", {p[0]}"
                  for p in picks if p is not deciding and p[1]]
        if others:
            why += " (also " + "; ".join(others) + ")"
        if unapplied:
            why += "; but " + "; ".join(f"for {m}: {reason}" for m, reason in unapplied) + \
                (", so the claim is shown in part only" if word == Verdict.INCONCLUSIVE and deciding[0] == Verdict.HOLDS
                 else "")
    primary, test = (deciding[1], deciding[2]) if deciding else (None, None)
    diff = deciding[3].differences.get(primary[0]) if deciding and primary else None
    return _row(c, platform, reading, analogue, word, why, _RULE_DETAIL[word], primary, "; ".join(parts), notebook,
                test, diff)


#: a claim of the thread judged in more than one reading: its id -> the rows' ids
READINGS = {"C12": ("C12a", "C12b")}


def judge(ids, data: RunData | dict, platform: str, status: dict[str, dict] | None = None) -> pd.DataFrame:
    """The claims ``ids`` judged on ``data`` (a ``RunData``, as a run folder or a notebook keeps it,
    or data sets by name); a claim read two ways (``READINGS``) gives one row per reading."""
    data = RunData.of(data)
    ids = [j for i in ids for j in READINGS.get(i, (i,))]
    return pd.DataFrame([judge_claim(CLAIMS[i], data, platform, status) for i in ids], columns=list(COLUMNS))


def judge_notebook(stem: str, data: RunData | dict, platform: str, status: dict[str, dict] | None = None) -> pd.DataFrame:
    """The claims the registry links to notebook ``stem``, judged on ``data`` (its judge cell)."""
    return judge(list(notebook(stem).claims), data, platform, status)


def rules_markdown() -> str:
    """The rule of every claim as a Markdown table, generated from the declarations above (the
    claims document carries it; a test keeps the two the same)."""
    lines = ["| id | subject | as meant on | analogue on | data sets | holds when |", "|---|---|---|---|---|---|"]
    for c in CLAIMS.values():
        name, where = SUBJECTS[c.subject]
        meant = ("every platform" if where is None else ", ".join(where) if where
                 else f"the real runtime ({c.real_vendor or 'none'}) only" if c.real else "none here")
        analogue = "; ".join(f"{p}: {a}" for p, a in c.analogues.items()) or "none"
        rules = "; and ".join(rule_text(t) for t in c.tests)
        if c.real:
            rules = ("real runtime: " + "; and ".join(rule_text(t) for t in c.real)
                     + f" (the model, for information only: {rules})")
        datasets = ", ".join(c.datasets + tuple(d for d in c.real_datasets if d not in c.datasets))
        lines.append(f"| {c.id} | {name} | {meant} | {analogue} | {datasets} | {rules} |")
    return "\n".join(lines) + "\n"


def evaluate(run_dir: Path, platform: str, status: dict[str, dict] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """One row per claim, and the data files that could not be read."""
    data, unreadable = load_run(run_dir)
    return judge(list(CLAIMS), data, platform, status), unreadable
