"""``make compare`` as a regression check: for each claim's figure, whether two runs differ
beyond both runs' intervals.

Two runs' figures of one claim *differ* when their 95 % intervals do not overlap (a figure
without an interval is its own point). A *regression* is a claim whose verdict changed and
whose intervals do not overlap: a verdict that moved while the figures overlap is within what
the runs can tell apart, and is reported but not failed. ``compare --strict`` exits 1 on a
regression.

``runs`` are what ``pinpath.compare`` passes the pages: (manifest, claims frame[, run folder])
per run; the first run is the baseline every other is checked against.

Rows are matched by claim id and, where a claim was judged apart in a cold cache state (claims.csv's
``state`` opens "cache cold;"), by that arm too (``row_key``): neither row of a split claim is
dropped. Two runs *agree* on a claim when their verdicts are the same and their intervals overlap
(``agree``); ``note_references`` writes into a committed reference's whys where another reference
gives a different verdict.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Sequence

import pandas as pd

from .. import layout
from .fmt import READINGS, _isnum, format_measured, format_repeats

__all__ = ["COLUMNS", "check", "check_frames", "read_claims", "regressions", "lines", "markdown", "row_key", "arm",
           "agreement_lines", "note_disagreements", "note_references", "DIFFERS"]

COLUMNS = ("id", "arm", "metric", "base_run", "run", "base_verdict", "verdict", "base_figure", "figure",
           "base_repeats", "repeats", "base_mechanism", "mechanism", "overlap", "verdict_changed", "agree",
           "regression", "finding")
_COLD = re.compile(r"^cache cold\b")
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


def arm(r: dict) -> str:
    """"cold" for a row of a claim judged apart in a cold cache state, '' for its main row."""
    state = r.get("state")
    return "cold" if isinstance(state, str) and _COLD.match(state) else ""


def row_key(r: dict) -> str:
    """What matches a claims.csv row across runs: its id, and " (cold)" for a split cold row."""
    cold = arm(r)
    return f"{r.get('id')}" + (f" ({cold})" if cold else "")


def _text(v) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)


def _mechanism(r: dict) -> str:
    """What a row's figure measured: its reading (as meant, an analogue) and the group that
    decided, which names the re-lock mechanism where there is one ("[16 KiB, re-lock counted by
    pinpath (analogue of ROCT's count)]")."""
    reading = READINGS.get(_text(r.get("reading")), _text(r.get("reading")))
    if reading.startswith("not applicable"):
        return ""
    group = re.search(r"\[([^\]]*)\]\s*$", _text(r.get("metric")))
    return "; ".join(x for x in (reading, group.group(1) if group else "") if x)


def _repeats(r: dict) -> str:
    return format_repeats(r.get("n_repeats"), r.get("repeat_unit"), r.get("between_spread"))


def _finding(overlap: bool | None, changed: bool) -> str:
    if overlap is None:
        return "no figure in one of the runs to compare" + ("; the verdict changed" if changed else "; the same verdict")
    if changed and not overlap:
        return "regression: the verdict changed and the intervals do not overlap"
    if changed:
        return "the verdict changed, but the intervals overlap (within what the runs can tell apart)"
    return "same verdict; the figures differ beyond both intervals" if not overlap else "same verdict; intervals overlap"


def check_frames(base: pd.DataFrame, other: pd.DataFrame, *, base_run: str = "A", run: str = "B") -> pd.DataFrame:
    """One row per claim (``row_key``: its id, and its cold arm apart) in either frame: both
    verdicts, figures, repeats with the spread between them and mechanisms measured, whether the
    intervals overlap (null where either run has no figure), whether the verdict changed, whether
    the runs agree (the same verdict, and intervals that overlap where both have one), and whether
    it is a regression (changed, and the intervals do not overlap)."""
    a = {row_key(r): r for r in base.to_dict("records")}
    b = {row_key(r): r for r in other.to_dict("records")}
    rows = []
    for key in dict.fromkeys([*a, *b]):
        ra, rb = a.get(key, {}), b.get(key, {})
        ia, ib = _interval(ra), _interval(rb)
        overlap = None if ia is None or ib is None else bool(ia[0] <= ib[1] and ib[0] <= ia[1])
        va, vb = _verdict(ra) or "not in this run", _verdict(rb) or "not in this run"
        changed = va != vb
        rows.append({"id": str(ra.get("id") or rb.get("id")), "arm": arm(ra or rb),
                     "metric": str(ra.get("metric") or rb.get("metric") or ""),
                     "base_run": base_run, "run": run, "base_verdict": va, "verdict": vb,
                     "base_figure": _figure(ra), "figure": _figure(rb), "base_repeats": _repeats(ra),
                     "repeats": _repeats(rb), "base_mechanism": _mechanism(ra), "mechanism": _mechanism(rb),
                     "overlap": overlap, "verdict_changed": changed, "agree": bool(not changed and overlap is not False),
                     "regression": bool(changed and overlap is False), "finding": _finding(overlap, changed)})
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    return df.astype({"overlap": "boolean", "verdict_changed": bool, "agree": bool, "regression": bool})


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
        out.append(f"  {r.id}{f' ({r.arm})' if r.arm else ''} ({r.base_run} -> {r.run}): {r.base_verdict} -> {r.verdict}; "
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


# -- two references: agreement, and the why of a claim whose verdict differs between them ------------
#: what a reference's why says where another reference gives a different verdict (it ends the why)
DIFFERS = "the verdict differs between the references: "


def agreement_lines(checked: pd.DataFrame) -> list[str]:
    """The claims of two runs (``check_frames``) as a table in text: per claim both verdicts, both
    figures with their intervals, the repeats behind them with the spread between them, the
    mechanism each measured, and whether the runs agree (same verdict, overlapping intervals)."""
    if not len(checked):
        return ["agreement: fewer than two runs"]
    a, b = checked.base_run.iloc[0], checked.run.iloc[0]
    out = [f"agreement of {a} and {b}: {int(checked.agree.sum())} of {len(checked)} claims agree (the same verdict, "
           "intervals that overlap)"]
    for r in checked.itertuples():
        out.append(f"{r.id}{f' ({r.arm})' if r.arm else ''}: {'agree' if r.agree else 'DIFFER'} - {r.finding}")
        for run, verdict, fig, rep, mech in ((r.base_run, r.base_verdict, r.base_figure, r.base_repeats, r.base_mechanism),
                                             (r.run, r.verdict, r.figure, r.repeats, r.mechanism)):
            out.append(f"  {run}: {verdict}; {fig or 'no figure'}" + (f" {rep}" if rep else "")
                       + (f"; measured: {mech}" if mech else ""))
    return out


def _label(ref_dir: Path, man: dict) -> str:
    device = (man.get("runtime") or {}).get("device") or "an unnamed device"
    commit = str((man.get("judged_by") or man.get("git") or {}).get("commit") or "unknown")[:7]
    return f"{Path(ref_dir).name} ({device}, commit {commit})"


def note_disagreements(claims: pd.DataFrame, other: pd.DataFrame, label: str) -> pd.DataFrame:
    """``claims`` with the why of every row whose verdict ``other`` (another reference's claims,
    ``label`` naming it) gives differently ending "; the verdict differs between the references:
    <label> gives <verdict> (<figure> over N processes (...))"; a note written before is replaced,
    so noting again changes nothing."""
    out = claims.copy()
    theirs = {row_key(r): r for r in other.to_dict("records")}
    whys = []
    for r in out.to_dict("records"):
        why = _text(r.get("why")).split("; " + DIFFERS)[0]
        o = theirs.get(row_key(r))
        if o is not None and _verdict(o) and _verdict(r) and _verdict(o) != _verdict(r):
            fig = " ".join(x for x in (_figure(o), _repeats(o)) if x)
            why += f"; {DIFFERS}{label} gives {_verdict(o)}" + (f" ({fig})" if fig else "")
        whys.append(why)
    if len(out):
        out["why"] = whys
    return out


def references_beside(ref_dir: Path) -> list[tuple[Path, str]]:
    """The other committed references in ``ref_dir``'s folder that have a claims.csv: (folder, label)."""
    import json
    ref_dir = Path(ref_dir)
    out = []
    for d in sorted(p for p in ref_dir.resolve().parent.iterdir() if p.is_dir() and p.resolve() != ref_dir.resolve()):
        try:
            man = json.loads(layout.path(d, "manifest").read_text())
        except (OSError, ValueError):
            continue
        if layout.path(d, "claims").is_file():
            out.append((d, _label(d, man)))
    return out


def noted(claims: pd.DataFrame, ref_dir: Path) -> pd.DataFrame:
    """``claims`` of the reference ``ref_dir`` with every other reference beside it noted (``note_disagreements``)."""
    for d, label in references_beside(ref_dir):
        claims = note_disagreements(claims, read_claims(d), label)
    return claims


def _whys(claims: pd.DataFrame) -> list[str]:
    return [_text(w) for w in claims.why] if "why" in claims else []


def note_references(ref_dir: Path) -> list[Path]:
    """Write the notes both ways: ``ref_dir``'s claims.csv against every other reference beside it,
    and theirs against it; the folders whose claims.csv was written (their pages are to be
    rendered again)."""
    import json

    from ..atomic import write_text_atomic
    ref_dir = Path(ref_dir)
    own = layout.path(ref_dir, "claims")
    label = _label(ref_dir, json.loads(layout.path(ref_dir, "manifest").read_text()))
    written = []
    for d, _ in references_beside(ref_dir):
        theirs = read_claims(d)
        got = note_disagreements(theirs, read_claims(ref_dir), label)
        if _whys(got) != _whys(theirs):
            write_text_atomic(layout.path(d, "claims"), got.to_csv(index=False))
            written.append(d)
    mine = read_claims(ref_dir)
    got = noted(mine, ref_dir)
    if _whys(got) != _whys(mine):
        write_text_atomic(own, got.to_csv(index=False))
        written.append(ref_dir)
    return written
