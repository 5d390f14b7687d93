"""``make compare`` as a regression check: for each claim's figure, whether two runs differ
beyond both runs' intervals.

Two runs' figures of one claim *differ* when their 95 % intervals do not overlap (a figure
without an interval is its own point). A *regression* is a claim whose verdict changed and
whose intervals do not overlap: a verdict that moved while the figures overlap is within what
the runs can tell apart, and is reported but not failed. ``compare --strict`` exits 1 on a
regression.

``runs`` are what ``pinpath.compare`` passes the pages: (manifest, claims frame[, run folder])
per run; the first run is the baseline every other is checked against.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import pandas as pd

from .. import layout
from .fmt import _isnum, format_measured

__all__ = ["COLUMNS", "check", "check_frames", "read_claims", "regressions", "lines", "markdown"]

COLUMNS = ("id", "metric", "base_run", "run", "base_verdict", "verdict", "base_figure", "figure",
           "overlap", "verdict_changed", "regression", "finding")
_OLD_VERDICTS = {"not applicable here": "not applicable"}


def read_claims(path: Path | str) -> pd.DataFrame:
    """A run's claims.csv (a run folder's ``report/claims.csv``, or the file itself)."""
    p = Path(path)
    return pd.read_csv(layout.path(p, "claims") if p.is_dir() else p)


def _interval(r: dict) -> tuple[float, float] | None:
    """[low, high] of a claim row; the figure itself where it has no interval; None without a figure."""
    if not _isnum(r.get("measured")):
        return None
    v = float(r["measured"])
    lo = float(r["low"]) if _isnum(r.get("low")) else v
    hi = float(r["high"]) if _isnum(r.get("high")) else v
    return min(lo, v), max(hi, v)


def _verdict(r: dict) -> str:
    v = r.get("verdict")
    v = "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
    return _OLD_VERDICTS.get(v, v)


def _figure(r: dict) -> str:
    unit = r.get("unit")
    return format_measured(r.get("measured"), r.get("low"), r.get("high"), "" if not isinstance(unit, str) else unit)


def _finding(overlap: bool | None, changed: bool) -> str:
    if overlap is None:
        return "no figure in one of the runs to compare"
    if changed and not overlap:
        return "regression: the verdict changed and the intervals do not overlap"
    if changed:
        return "the verdict changed, but the intervals overlap (within what the runs can tell apart)"
    return "same verdict; the figures differ beyond both intervals" if not overlap else "same verdict; intervals overlap"


def check_frames(base: pd.DataFrame, other: pd.DataFrame, *, base_run: str = "A", run: str = "B") -> pd.DataFrame:
    """One row per claim id in either frame: both verdicts and figures, whether the intervals
    overlap (null where either run has no figure), whether the verdict changed, and whether that
    is a regression (changed, and the intervals do not overlap)."""
    a = {str(r["id"]): r for r in base.to_dict("records")}
    b = {str(r["id"]): r for r in other.to_dict("records")}
    rows = []
    for cid in dict.fromkeys([*a, *b]):
        ra, rb = a.get(cid, {}), b.get(cid, {})
        ia, ib = _interval(ra), _interval(rb)
        overlap = None if ia is None or ib is None else bool(ia[0] <= ib[1] and ib[0] <= ia[1])
        va, vb = _verdict(ra) or "not in this run", _verdict(rb) or "not in this run"
        changed = va != vb
        rows.append({"id": cid, "metric": str(ra.get("metric") or rb.get("metric") or ""),
                     "base_run": base_run, "run": run, "base_verdict": va, "verdict": vb,
                     "base_figure": _figure(ra), "figure": _figure(rb), "overlap": overlap,
                     "verdict_changed": changed, "regression": bool(changed and overlap is False),
                     "finding": _finding(overlap, changed)})
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    return df.astype({"overlap": "boolean", "verdict_changed": bool, "regression": bool})


def _run_id(run, i: int) -> str:
    man = run[0] or {}
    return str(man.get("run_id") or (Path(run[2]).name if len(run) > 2 and run[2] is not None else f"run {i + 1}"))


def check(runs: Sequence[tuple]) -> pd.DataFrame:
    """``check_frames`` of every run against the first (``runs`` as ``pinpath.compare`` builds them)."""
    if len(runs) < 2:
        return pd.DataFrame(columns=list(COLUMNS))
    base = runs[0]
    parts = [check_frames(base[1], r[1], base_run=_run_id(base, 0), run=_run_id(r, i))
             for i, r in enumerate(runs[1:], 1)]
    return pd.concat(parts, ignore_index=True)


def regressions(checked: pd.DataFrame) -> pd.DataFrame:
    """The rows ``compare --strict`` fails on."""
    return checked[checked.regression.astype(bool)] if len(checked) else checked


def lines(checked: pd.DataFrame) -> list[str]:
    """Plain text for the terminal: a count, then one line per claim that differs."""
    if not len(checked):
        return ["regression check: fewer than two runs"]
    with_fig = checked[checked.overlap.notna()]
    apart = with_fig[~with_fig.overlap.astype(bool)]
    out = [f"regression check: {len(with_fig)} figure(s) in both runs, {len(with_fig) - len(apart)} with overlapping "
           f"intervals; {int(checked.verdict_changed.sum())} verdict(s) changed; "
           f"{int(checked.regression.sum())} regression(s)"]
    for r in checked[checked.verdict_changed | (checked.overlap == False)].itertuples():  # noqa: E712
        out.append(f"  {r.id} ({r.base_run} -> {r.run}): {r.base_verdict} -> {r.verdict}; "
                   f"{r.base_figure or 'no figure'} vs {r.figure or 'no figure'}: {r.finding}")
    return out


def markdown(checked: pd.DataFrame) -> str:
    """The same as a short GFM section for compare.md: the count, then a bullet per claim whose
    verdict changed or whose figures lie apart (regressions in bold)."""
    if not len(checked):
        return ""
    text = lines(checked)
    bullets = [f"- {'**' + t.strip() + '**' if ': regression:' in t else t.strip()}" for t in text[1:]]
    return "\n".join(["### Regression check", "", text[0].removeprefix("regression check: ") + ".", "", *bullets]) + "\n"
