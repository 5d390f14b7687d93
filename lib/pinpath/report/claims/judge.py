"""Judging the claims on a run: one row per claim (or reading) with its verdict and a why written from the data."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pandas as pd

from ...registry import notebook
from ...stats import Estimate
from ...vocab import Verdict
from ..fmt import format_repeats
from ..rundata import RunData
from .catalogue import CLAIMS, READINGS
from .load import load_run, repeat_unit
from .measures.common import _real_note, _real_vendor
from .model import ANALOGUE, AS_MEANT, COLUMNS, MODEL_ONLY, SUBJECTS, Claim, Missing, Result, Test
from .verdict import _bar, _combine, _fmt_est, _test_verdict, rule_text


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
        vendors = c.real_vendor.split()
        if _real_vendor(data) in vendors:
            return AS_MEANT, "", c.real, c.real_datasets
        if platform in ("hsa", "hip") and "amd" in vendors:   # the real run is missing or failed here
            return AS_MEANT, "", c.real, c.real_datasets + (() if "nvidia" in vendors else ("real_runs",))
        if platform == "cuda" and "nvidia" in vendors and "amd" in vendors:
            return AS_MEANT, "", c.real, c.real_datasets
        return Verdict.NOT_APPLICABLE, f"{c.real_only}: {c.elsewhere}", c.tests, c.datasets
    if where is None or platform in where:
        return AS_MEANT, "", c.tests, c.datasets
    if platform in c.analogues:
        return ANALOGUE, c.analogues[platform], c.tests, c.datasets
    return Verdict.NOT_APPLICABLE, f"not applicable on {platform}: {c.elsewhere}", c.tests, c.datasets


def _row(c: Claim, platform: str, reading: str, analogue: str, verdict: str, why: str, rule_detail: str,
         primary: tuple[str, Estimate] | None, detail: str, notebook: str, test: Test | None = None,
         difference: Estimate | None = None, unit: str = "") -> dict:
    t = test or c.tests[0]
    e = primary[1] if primary else Estimate(math.nan, math.nan, math.nan, 0)
    d = difference or Estimate(math.nan, math.nan, math.nan, 0)
    return {"id": c.id, "who": c.who, "claim": c.text, "short": c.short, "thread": c.thread,
            "subject": SUBJECTS[c.subject][0], "reading": reading, "analogue": analogue,
            "metric": t.metric + (f" [{primary[0]}]" if primary else ""), "measured": e.value, "low": e.low,
            "high": e.high, "unit": t.unit, "comparison": t.comparison, "threshold": t.threshold,
            "n_repeats": e.n_repeats or math.nan, "repeat_unit": unit if primary else "",
            "within_spread": e.within_spread, "between_spread": e.between_spread,
            "difference": d.value, "difference_low": d.low, "difference_high": d.high,
            "verdict": verdict, "why": why, "rule_detail": rule_detail, "detail": detail,
            "rule": "; and ".join(rule_text(x) for x in (c.real if reading == AS_MEANT and c.real else c.tests)),
            "notebook": notebook, "platform": platform}


_RULE_DETAIL = {Verdict.HOLDS: "every test holds with its whole interval on the claim's side",
                Verdict.DOES_NOT_HOLD: "a test's interval lies entirely on the other side of its threshold",
                Verdict.INCONCLUSIVE: "an interval straddles its threshold",
                Verdict.NOT_MEASURED: "a test found nothing to measure",
                Verdict.NOT_APPLICABLE: "no test applies on this platform"}


def _units(data: RunData, datasets) -> str:
    """What a repeat of the claim's data sets was (``load.repeat_unit``), "" where none says."""
    return " and ".join(dict.fromkeys(u for d in datasets if (u := repeat_unit(data.get(d)))))


def _sentence(t: Test, r: Result, word: str, pick: tuple[str, Estimate], capped: str, unit: str = "",
              aside: str = "") -> str:
    """The row's "why" as one sentence that ends on its conclusion: what was measured, on what,
    ``aside`` (the other tests' figures), then over how many repeats of ``unit`` with what spread
    between them, and what decided."""
    label, e = pick
    facts = r.facts.get(label) or r.facts.get("") or f"{t.metric} measured at {label}"
    so = t.so.format(v=_fmt_est(e, t.unit), metric=t.metric)
    over = format_repeats(e.n_repeats, unit, e.between_spread)
    so += f" {over}" if over else ""
    if capped:
        end = f"{capped}, so at best inconclusive"
    elif word == Verdict.HOLDS:
        end = f"which meets the claim's {_bar(t)}"
    elif word == Verdict.DOES_NOT_HOLD:
        end = f"which misses the claim's {_bar(t)}"
    else:
        end = f"whose interval straddles the claim's {_bar(t)}"
    return f"{facts}{aside}; so {so}, {end}"


def judge_claim(c: Claim, data: RunData, platform: str, status: dict | None = None, *,
                prefer: frozenset[str] = frozenset()) -> dict:
    """One claims-table row for ``c`` on ``data``; the row shows the test that decided its verdict,
    among several such the first whose metric is in ``prefer`` (``judge_states``: a test whose figure
    moves with the cache state)."""
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
    # the row shows the test that decided the verdict (the first with that word and a figure, preferred first)
    deciding = next((p for p in picks if p[0] == word and p[1] and p[2].metric in prefer), None) or \
        next((p for p in picks if p[0] == word and p[1]), next((p for p in picks if p[1]), None))
    if word == Verdict.NOT_MEASURED:
        why = "not measured: " + "; ".join(p[5] for p in picks if p[5])
        measured = [p[3].facts.get(p[1][0]) or p[3].facts.get("") for p in picks if p[1] and p[0] != word]
        if any(measured):
            why += "; what was measured: " + "; ".join(m for m in measured if m)
    elif word == Verdict.NOT_APPLICABLE:
        why = "not applicable (" + "; ".join(reason for _, reason in unapplied) + ")"
    else:
        _, pick, t, r, capped, _ = deciding
        others = [f"{p[2].metric} {_fmt_est(p[1][1], p[2].unit)}" + (f" ({_fmt_est(p[3].differences[p[1][0]], 'ns')} "
                  "apart)" if p[1][0] in p[3].differences else "") + f", {p[0]}"
                  for p in picks if p is not deciding and p[1]]
        aside = (" (also " + "; ".join(others) + ")") if others else ""
        aside += "".join(f"; for {m}: {reason}" for m, reason in unapplied)
        why = _sentence(t, r, deciding[0], pick, capped, r.unit or _units(data, datasets), aside)
        if unapplied and word == Verdict.INCONCLUSIVE and deciding[0] == Verdict.HOLDS:
            why += ", so the claim is shown in part only"
    primary, test = (deciding[1], deciding[2]) if deciding else (None, None)
    diff = deciding[3].differences.get(primary[0]) if deciding and primary else None
    unit = (deciding[3].unit or _units(data, datasets)) if deciding and primary and primary[1].n_repeats else ""
    return _row(c, platform, reading, analogue, word, why, _RULE_DETAIL[word], primary, "; ".join(parts), notebook,
                test, diff, unit)


COLD_ARM = "_cold"   #: a data set's cold arm: ``<name>_cold``, the same measurement with the buffers cold


def _cache_of(f: pd.DataFrame) -> pd.Series:
    """Each row's cache state (rows that name none were measured hot: each transfer right after the previous op)."""
    return f.cache.fillna("hot").replace("", "hot") if "cache" in f.columns else pd.Series("hot", index=f.index)


def _caches(data: RunData, datasets) -> list[str]:
    """The cache states the rows of ``datasets`` were measured in."""
    return sorted({str(v) for d in datasets if d in data for v in _cache_of(data[d])}) or ["hot"]


def _seen(data: RunData, datasets, column: str) -> list[int]:
    """The known (>= 0) values of ``column`` in the rows of ``datasets``."""
    return sorted({int(v) for d in datasets if d in data and column in data[d].columns
                   for v in data[d][column].dropna() if v >= 0})


def _state(data: RunData, datasets) -> str:
    """The state a row's figures were measured in: the cache state(s) and the CPU(s) and NUMA
    node(s) the timing thread ran on (rows that record none: "not pinned")."""
    cpus, nodes = _seen(data, datasets, "thread_cpu"), _seen(data, datasets, "thread_node")
    node = f" (NUMA node {', '.join(map(str, nodes))})" if nodes else ""
    return f"cache {' and '.join(_caches(data, datasets))}; " + \
        (f"timing thread on CPU {', '.join(map(str, cpus))}{node}" if cpus else "timing thread not pinned")


def _arms(data: RunData, datasets) -> dict[str, RunData]:
    """The claim's data by cache state: each data set's rows of that state, and for "cold" a data
    set's cold arm (``<name>_cold``) in its place where the run has one."""
    cold = {d: d + COLD_ARM for d in datasets if d + COLD_ARM in data}
    caches = sorted(set(_caches(data, datasets)) | ({"cold"} if cold else set()))
    if len(caches) == 1:
        return {caches[0]: data}
    arms = {}
    for k in caches:
        frames = {**data._frames, **({d: data[c] for d, c in cold.items()} if k == "cold" else {})}
        arm = copy.copy(data)
        arm._frames = {n: f[_cache_of(f) == k] if n in datasets and "cache" in f.columns else f for n, f in frames.items()}
        arm._memo = {}
        arms[k] = arm
    return arms


def _figures(c: Claim, data: RunData, platform: str) -> dict[str, str]:
    """Each of ``c``'s tests' figure on ``data`` (its deciding group and estimate, as text; '' where
    it has none): what tells whether a test read data of one cache state or data the states share."""
    out = {}
    for t in _reading(c, platform, data)[2]:
        try:
            _, pick, _ = _test_verdict(t, t.measure(data))
        except (Missing, KeyError, ValueError, IndexError, ZeroDivisionError):
            pick = None
        out[t.metric] = f"{pick[0]} {_fmt_est(pick[1], t.unit)}" if pick else ""
    return out


def judge_states(c: Claim, data: RunData, platform: str, status: dict | None = None) -> list[dict]:
    """``c`` judged on its data, its row naming the state (``state``). Where its data were measured
    in more than one cache state (rows by ``cache``, or a cold arm ``<name>_cold``), it is judged in
    each apart, never on the states mixed: one row per state where their verdicts (holds, does not
    hold, inconclusive) differ, else the hot row (the thread's state) saying what the others gave."""
    arms = _arms(data, c.datasets)
    rows = {k: {**judge_claim(c, arm, platform, status), "state": _state(arm, c.datasets)} for k, arm in arms.items()}
    if len(rows) == 1:
        return list(rows.values())
    decided = {r["verdict"] for r in rows.values() if r["verdict"] in (Verdict.HOLDS, Verdict.DOES_NOT_HOLD,
                                                                         Verdict.INCONCLUSIVE)}
    if len(decided) > 1:     # each state's row shows a test whose figure moved with the state, where one did
        figures = [_figures(c, arm, platform) for arm in arms.values()]
        moved = frozenset(m for m in figures[0] if len({f.get(m) for f in figures}) > 1)
        return [{**judge_claim(c, arm, platform, status, prefer=moved), "state": rows[k]["state"]}
                for k, arm in arms.items()]
    shown = rows.get("hot") or next(iter(rows.values()))
    others = "; ".join(f"{k}: {'the same verdict' if r['verdict'] == shown['verdict'] else r['verdict']}"
                       for k, r in rows.items() if r is not shown)
    return [{**shown, "state": f"{shown['state']} ({others})"}]


def judge(ids, data: RunData | dict, platform: str, status: dict[str, dict] | None = None) -> pd.DataFrame:
    """The claims ``ids`` judged on ``data`` (a ``RunData``, as a run folder or a notebook keeps it,
    or data sets by name); a claim read two ways (``READINGS``) gives one row per reading, and one
    per cache state where the states' verdicts differ (``judge_states``)."""
    data = RunData.of(data)
    ids = [j for i in ids for j in READINGS.get(i, (i,))]
    return pd.DataFrame([r for i in ids for r in judge_states(CLAIMS[i], data, platform, status)], columns=list(COLUMNS))


def judge_notebook(stem: str, data: RunData | dict, platform: str, status: dict[str, dict] | None = None) -> pd.DataFrame:
    """The claims the registry links to notebook ``stem``, judged on ``data`` (its judge cell)."""
    return judge(list(notebook(stem).claims), data, platform, status)


def rules_markdown() -> str:
    """The rule of every claim as a Markdown table, generated from the declarations in ``catalogue`` (the
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
