"""A test's verdict from its intervals, a claim's from its tests', and the words for both."""

from __future__ import annotations

import math

import numpy as np

from ...stats import MIN_REPEATS, Estimate
from ...vocab import Verdict
from ..fmt import format_measured
from .model import Result, Test


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
