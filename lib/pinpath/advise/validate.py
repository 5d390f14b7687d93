"""prediction.csv's rows against the real figures (``advise --real``): per variant the predicted
transfer time of the median step (or region) beside the real one, each variant's difference from
plain, and, where the runtime probe's waits split into states (``wake_state``), the same per state
against the application's steps in that state.

- ``read_real(path) -> frame``: ``--real``'s file, its ``ns`` per step (or invocation);
- ``grain(pred, real) -> "step" | "region"``: what one real figure is;
- ``real_rows(application, pred, real) -> rows``; ``state_rows(application, preds, split, real,
  place, variants) -> rows``; ``measured_apart(rows, pred) -> lines``; ``verdict(predicted, real, low, high)``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..errors import BadParameter
from ..report.fmt import format_measured
from ..stats import diff_ci, interval, median_ci
from .predict import BASELINE
from .wake_state import STATES, late_cut

__all__ = ["read_real", "grain", "real_rows", "state_rows", "measured_apart", "verdict", "TOLERANCE"]

TOLERANCE = 0.2   #: a prediction is good within 20 % of the real figure or inside its interval


def read_real(path) -> pd.DataFrame:
    """The real figures: a CSV of variant, ns per step, or the offload binaries' stdout ('#' lines are
    facts; stencil's and region --paired's ``transfer_ns`` become ``ns``), several runs' outputs
    joined with their header lines repeated. BadParameter in one sentence where it cannot be read."""
    try:
        real = pd.read_csv(path, comment="#")
    except (OSError, ValueError) as e:
        raise BadParameter(f"{path}: the real figures cannot be read ({str(e).splitlines()[0]})") from None
    if "variant" in real.columns:   # header lines repeated where several runs' outputs were joined
        real = real[real.variant != "variant"]
        real = real.assign(**{c: pd.to_numeric(real[c], errors="coerce") for c in ("ns", "transfer_ns")
                              if c in real.columns})
    if "transfer_ns" in real.columns:   # stencil.cpp's target updates, region.cpp --paired's copies
        real = real.assign(ns=real.transfer_ns)
    if not {"variant", "ns"} <= set(real.columns):
        raise BadParameter(f"{path}: the real figures need the columns variant and ns (one row per step)")
    return real


def verdict(predicted: float, real, low, high) -> str:
    if real is None or not np.isfinite(real):
        return ""
    if real != 0 and abs(predicted / real - 1) <= TOLERANCE:
        return "within 20 %"
    if np.isfinite(low) and np.isfinite(high) and low <= predicted <= high:
        return "inside the real interval"
    return "outside"


def grain(pred, real: pd.DataFrame | None) -> str:
    """What a real row is: a step, or a region where the trace has no steps or the real figures are
    per invocation (region.cpp's stdout)."""
    per_invocation = real is not None and "invocation" in real.columns
    return "region" if per_invocation or "step" not in set(pred.typical.by) else "step"


def _placements(real: pd.DataFrame | None) -> list[str]:
    return sorted(set(real.placement.astype(str))) if real is not None and "placement" in real.columns else [""]


def _of(real: pd.DataFrame | None, variant: str, place: str):
    """The real figures of ``variant`` at ``place`` and their processes (None without a column)."""
    if real is None:
        return np.array([]), None
    got = real[real.variant == variant]
    if place:
        got = got[got.placement.astype(str) == place]
    return got.ns.to_numpy(dtype=float), (got.process.to_numpy() if "process" in got.columns else None)


def _variant_row(application, variant, place, point, low, high, x, proc, **extra) -> dict:
    e = median_ci(x, proc) if len(x) else None
    return {"application": application, "kind": "variant", "variant": variant, "placement": place,
            "predicted_ns": point, "predicted_low": low, "predicted_high": high,
            "real_ns": e.value if e else None, "real_low": e.low if e else None, "real_high": e.high if e else None,
            "low": low / e.high if e and e.high > 0 else None, "high": high / e.low if e and e.low > 0 else None,
            "verdict": verdict(point, e.value, e.low, e.high) if e else "", **extra}


def _difference_row(application, variant, place, d, lo, hi, x, proc, xb, pb, **extra) -> dict:
    e = diff_ci(x, xb, proc, pb) if len(x) and len(xb) else None
    return {"application": application, "kind": "difference", "variant": f"{variant} - {BASELINE}",
            "placement": place, "predicted_ns": d, "predicted_low": lo, "predicted_high": hi,
            "real_ns": e.value if e else None, "real_low": e.low if e else None, "real_high": e.high if e else None,
            "low": None, "high": None, "verdict": verdict(d, e.value, e.low, e.high) if e else "", **extra}


def _draws_interval(pred, variant: str, by: str) -> tuple[float, float]:
    draws = (pred.typical_draws or {}).get((variant, by))
    base = (pred.typical_draws or {}).get((BASELINE, by))
    return interval(draws - base) if draws is not None and base is not None else (math.nan, math.nan)


def real_rows(application: str, pred, real: pd.DataFrame | None) -> list[dict]:
    """prediction.csv rows: per variant the predicted transfer time of the median step (region
    where the trace has no steps, or where the real figures are per invocation: region.cpp's
    stdout) beside the real median where ``real`` (variant, ns) has one; low and high bound the
    ratio (the predicted interval over the real median's interval), real_low and real_high the
    real median. Where ``real`` has a ``process`` column, the real figure is the median of the
    processes' medians and its interval is over processes (the independent repeats), not over the
    steps of one process. Then per variant other than plain the *difference* from plain, predicted
    (with its interval) against real (kind "difference"). Where ``real`` has a ``placement``
    column (where the timed processes ran relative to the GPU's interrupt CPU), one set of rows per
    placement; ``verdict`` says whether the prediction is within 20 % or inside the real interval."""
    typ = pred.typical
    if not len(typ):
        return []
    by = grain(pred, real)
    typ = typ[typ.by == by].set_index("variant")
    rows = []
    for place in _placements(real):
        for variant, r in typ.iterrows():
            rows.append(_variant_row(application, variant, place, r.predicted_ns, r.low, r.high, *_of(real, variant, place)))
        if BASELINE not in typ.index:
            continue
        xb, pb = _of(real, BASELINE, place)
        for variant, r in typ.drop(index=BASELINE).iterrows():
            lo, hi = _draws_interval(pred, variant, by)
            rows.append(_difference_row(application, variant, place, r.predicted_ns - typ.loc[BASELINE, "predicted_ns"],
                                        lo, hi, *_of(real, variant, place), xb, pb))
    return rows


def state_rows(application: str, preds: dict, split: pd.DataFrame, real: pd.DataFrame | None,
               place: str, variants: list[str]) -> list[dict]:
    """prediction.csv rows per wait state (column ``state``) for ``variants`` (``wake_state.single_wait``:
    their median step or region holds one wait of a split class): each state's prediction (``preds``:
    state -> Prediction) against the real steps in that state at ``place``, and each one's difference
    from plain in the same state. The real steps are split by the probe's rule (``wake_state.late_cut``
    on their own times, pooled over processes), never by the predictions, so a state's verdict cannot
    follow from how its steps were chosen; where they do not split, that variant has no real figure in
    either state (a variant the probe did not split keeps all its steps in both). A stencil's checkpoint
    steps are left out. ``probe_late_share``: the share of the variant's split classes (``split``) the
    probe saw late; ``real_late_share``: the median over processes of the real steps' late share."""
    by = grain(preds[STATES[0]], real)
    typ = {s: p.typical[p.typical.by == by].set_index("variant") for s, p in preds.items()}
    if any(not len(t) for t in typ.values()):
        return []
    if real is not None and "checkpoint" in real.columns:   # steps of another kind than the median step
        real = real[~real.checkpoint.astype(str).str.lower().eq("true")]

    def in_state(variant, s):
        x, proc = _of(real, variant, place)
        if variant not in variants or not len(x):
            return x, proc, math.nan
        cut = late_cut(x)
        if cut is None:   # the real steps show no two states: none of them can be placed in one
            return x[:0], (proc[:0] if proc is not None else None), math.nan
        is_late = x > cut
        share = pd.Series(is_late).groupby(proc if proc is not None else np.zeros(len(x))).mean().median()
        keep = is_late if s == "late" else ~is_late
        return x[keep], (proc[keep] if proc is not None else None), float(share)

    tot = preds[STATES[0]].totals
    same = tot.set_index("variant").same_as if "same_as" in tot.columns else pd.Series(dtype=object)
    rows = []
    for variant in variants:
        if variant not in typ[STATES[0]].index:
            continue
        mine = split[split.variant == same.get(variant, variant)]
        probe_share = float(np.average(mine.late_share, weights=mine.n)) if len(mine) else math.nan
        for s in STATES:
            t = typ[s]
            x, proc, share = in_state(variant, s)
            extra = {"state": s, "probe_late_share": probe_share, "real_late_share": share}
            r = t.loc[variant]
            rows.append(_variant_row(application, variant, place, r.predicted_ns, r.low, r.high, x, proc, **extra))
            if variant != BASELINE and BASELINE in t.index:
                xb, pb, _ = in_state(BASELINE, s)
                lo, hi = _draws_interval(preds[s], variant, by)
                rows.append(_difference_row(application, variant, place, r.predicted_ns - t.loc[BASELINE, "predicted_ns"],
                                            lo, hi, x, proc, xb, pb, **extra))
    return rows


def measured_apart(rows: list[dict], pred) -> list[str]:
    """A variant predicted as plain (its model is plain's here) that the real runtime measured apart
    from plain: the real difference's interval excludes zero. Said, not ranked: the ranking is the
    prediction's."""
    twins = {r.variant for r in pred.totals.itertuples() if r.same_as != r.variant}
    out = []
    for r in rows:
        v = r["variant"].removesuffix(f" - {BASELINE}")
        lo, hi = r.get("real_low"), r.get("real_high")
        if r.get("state"):   # a state's rows repeat the variant's own
            continue
        if r["kind"] == "difference" and v in twins and lo is not None and np.isfinite(lo) and (lo > 0 or hi < 0):
            where = f" ({r['placement']})" if r.get("placement") else ""
            out.append(f"`{v}` is predicted as plain (its model is plain's on this runtime), but the real runtime "
                       f"measured it apart{where}: {format_measured(r['real_ns'], lo, hi, 'ns')} per step against "
                       "plain. The prediction cannot tell them apart; the measurement can.")
    return out
