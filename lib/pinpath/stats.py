"""Intervals for measured figures: percentile bootstrap of medians, of ratios and differences of
medians, and Wilson's interval for a proportion. Seeded, so a run's report is reproducible.

The unit is the repeat. Where rows carry a ``repeat`` label (an independent repeat: fresh buffers
and policy state, shuffled order) a figure is the median of the repeat medians and its interval
is bootstrapped over those medians, never over the individual calls; correlated rows (threads,
steps) thus move together. Each such estimate also says how many repeats stand behind it and two
spreads, both relative (the interquartile range over the median):

* ``within_spread``: the median over the repeats of each repeat's IQR / median of its calls
  (NaN where every repeat holds one call);
* ``between_spread``: the IQR / median of the repeat medians.

Without repeat labels the calls are the unit (the old behaviour), the estimate counts as one
repeat and its between-repeat spread is unknown (NaN). ``MIN_REPEATS`` is the fewest repeats a
verdict better than inconclusive needs.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import numpy as np

__all__ = ["Estimate", "median_ci", "ratio_ci", "paired_ratio_ci", "share_ci", "diff_ci", "proportion_ci", "relative_iqr",
           "median_draws", "interval", "trimmed_mean", "pooled_draws", "two_groups", "LEVEL", "N_BOOT", "MIN_REPEATS",
           "TRIM", "APART_IQRS"]

LEVEL = 0.95     #: every interval in the reports is a 95 % interval
N_BOOT = 2000
MIN_REPEATS = 5  #: independent repeats a verdict better than inconclusive needs
TRIM = (1, 99)   #: the percentiles a trimmed mean keeps between (a stalled call left out)
APART_IQRS = 2.0  #: two groups where their medians are at least this many interquartile ranges apart
_SEED = 160      #: aomp issue #160


class Estimate(NamedTuple):
    value: float
    low: float
    high: float
    n: int = 0                          #: calls (or items) behind the figure
    n_repeats: int = 0                  #: independent repeats behind it; 0: not a timed figure (a count)
    within_spread: float = math.nan     #: median IQR / median inside a repeat
    between_spread: float = math.nan    #: IQR / median of the repeat medians

    def scaled(self, factor: float) -> "Estimate":
        return self._replace(value=self.value * factor, low=self.low * factor, high=self.high * factor)


_NAN = Estimate(math.nan, math.nan, math.nan, 0)


def _clean(x: Sequence[float]) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    return a[np.isfinite(a)]


def relative_iqr(x: Sequence[float]) -> float:
    """IQR / median of ``x`` (NaN where empty or the median is 0)."""
    a = _clean(x)
    if not len(a) or np.median(a) == 0:
        return math.nan
    q1, q3 = np.percentile(a, [25, 75])
    return float((q3 - q1) / abs(np.median(a)))


class _Arm(NamedTuple):
    """One side of a comparison: what is resampled (repeat medians, or calls), and its spreads."""
    units: np.ndarray
    n: int
    n_repeats: int
    within: float
    between: float


def _arm(x: Sequence[float], repeat: Sequence | None) -> _Arm:
    a = np.asarray(x, dtype=float)
    if repeat is None:
        a = a[np.isfinite(a)]
        return _Arm(a, len(a), 1 if len(a) else 0, relative_iqr(a) if len(a) > 1 else math.nan, math.nan)
    groups = list(_by_repeat(a, repeat).values())
    meds = np.array([np.median(g) for g in groups])
    spreads = [relative_iqr(g) for g in groups if len(g) > 1]   # a repeat of one call has no spread
    within = float(np.nanmedian(spreads)) if spreads and not np.isnan(spreads).all() else math.nan
    return _Arm(meds, sum(len(g) for g in groups), len(meds), within, relative_iqr(meds) if len(meds) > 1 else math.nan)


def _by_repeat(x: Sequence[float], repeat: Sequence) -> dict:
    """The finite values of ``x`` by repeat label, in the order the labels first appear."""
    a, r = np.asarray(x, dtype=float), np.asarray(repeat)
    keep = np.isfinite(a)
    a, r = a[keep], r[keep]
    return {k: a[r == k] for k in dict.fromkeys(r.tolist())}


def _boot_medians(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    idx = rng.integers(0, len(a), size=(N_BOOT, len(a)))
    return np.median(a[idx], axis=1)


def _bounds(samples: np.ndarray) -> tuple[float, float]:
    lo, hi = np.percentile(samples, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
    return float(lo), float(hi)


def median_draws(x: Sequence[float], seed: int = 0) -> np.ndarray:
    """N_BOOT bootstrap medians of ``x`` (NaN where ``x`` is empty), for sums and ratios of
    medians of several samples; ``seed`` keeps samples drawn apart from each other."""
    a = _clean(x)
    if not len(a):
        return np.full(N_BOOT, np.nan)
    return _boot_medians(a, np.random.default_rng(_SEED + seed))


def interval(draws: np.ndarray) -> tuple[float, float]:
    """The LEVEL percentile interval of bootstrap draws (NaN draws left out)."""
    d = np.asarray(draws, dtype=float)
    d = d[np.isfinite(d)]
    return _bounds(d) if len(d) else (math.nan, math.nan)


def _both(a: _Arm, b: _Arm) -> dict:
    """The repeat fields of a figure made of two arms: the fewer repeats, the larger spreads."""
    return {"n_repeats": min(a.n_repeats, b.n_repeats), "within_spread": float(np.nanmax([a.within, b.within, -1])),
            "between_spread": float(np.nanmax([a.between, b.between, -1]))}


def _nan_spreads(d: dict) -> dict:
    return {k: (math.nan if k.endswith("spread") and v == -1 else v) for k, v in d.items()}


def median_ci(x: Sequence[float], repeat: Sequence | None = None) -> Estimate:
    """The median of ``x`` (of its repeat medians, given ``repeat``) and its bootstrap interval
    (NaN where ``x`` is empty)."""
    a = _arm(x, repeat)
    if not len(a.units):
        return _NAN
    lo, hi = _bounds(_boot_medians(a.units, np.random.default_rng(_SEED)))
    return Estimate(float(np.median(a.units)), lo, hi, a.n, a.n_repeats, a.within, a.between)


def _two(num, den, num_repeat, den_repeat, op) -> Estimate:
    a, b = _arm(num, num_repeat), _arm(den, den_repeat)
    if not len(a.units) or not len(b.units):
        return _NAN
    rng = np.random.default_rng(_SEED)
    ma, mb = _boot_medians(a.units, rng), _boot_medians(b.units, rng)
    value, samples = op(np.median(a.units), np.median(b.units)), op(ma, mb)
    samples = samples[np.isfinite(samples)]
    if not np.isfinite(value) or not len(samples):
        return _NAN
    lo, hi = _bounds(samples)
    return Estimate(float(value), lo, hi, min(a.n, b.n), **_nan_spreads(_both(a, b)))


def _divide(p, q):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.asarray(q) != 0, np.asarray(p, dtype=float) / np.where(np.asarray(q) != 0, q, 1), np.nan)


def ratio_ci(num: Sequence[float], den: Sequence[float], num_repeat: Sequence | None = None,
             den_repeat: Sequence | None = None) -> Estimate:
    """median(num) / median(den), each side resampled apart (independent samples); with repeat
    labels, the medians are those of the repeat medians and the repeats are resampled."""
    return _two(num, den, num_repeat, den_repeat, _divide)


def paired_ratio_ci(num: Sequence[float], den: Sequence[float], num_repeat: Sequence, den_repeat: Sequence) -> Estimate:
    """The median over repeats of (num's repeat median / den's repeat median), both arms measured
    in every repeat, with its bootstrap interval over the repeats: a drift of the machine that
    moves both arms of one repeat (a slow spell) cancels in the pair, where ``ratio_ci``'s
    medians of each arm apart may take them from different spells. Repeats one arm lacks are
    left out; the spreads are those of the per-repeat ratios."""
    a, b = _by_repeat(num, num_repeat), _by_repeat(den, den_repeat)
    keys = [k for k in a if k in b and np.median(b[k]) != 0]
    if not keys:
        return _NAN
    ratios = np.array([np.median(a[k]) / np.median(b[k]) for k in keys])
    lo, hi = _bounds(_boot_medians(ratios, np.random.default_rng(_SEED)))
    return Estimate(float(np.median(ratios)), lo, hi, min(sum(len(a[k]) for k in keys), sum(len(b[k]) for k in keys)),
                    len(keys), math.nan, relative_iqr(ratios) if len(ratios) > 1 else math.nan)


def diff_ci(num: Sequence[float], den: Sequence[float], num_repeat: Sequence | None = None,
            den_repeat: Sequence | None = None) -> Estimate:
    """median(num) - median(den), resampled as ``ratio_ci`` resamples: the absolute difference
    beside a ratio."""
    return _two(num, den, num_repeat, den_repeat, lambda p, q: np.asarray(p, dtype=float) - q)


def share_ci(part: Sequence[float], whole: Sequence[float], repeat: Sequence | None = None) -> Estimate:
    """median(part) / median(whole) over paired rows (resampled together); with repeat labels,
    over the paired repeat medians, the repeats resampled."""
    p, w = np.asarray(part, dtype=float), np.asarray(whole, dtype=float)
    keep = np.isfinite(p) & np.isfinite(w)
    p, w = p[keep], w[keep]
    r = None if repeat is None else np.asarray(repeat)[keep]
    ap, aw = _arm(p, r), _arm(w, r)
    if not len(ap.units) or np.median(aw.units) == 0:
        return _NAN
    rng = np.random.default_rng(_SEED)
    idx = rng.integers(0, len(ap.units), size=(N_BOOT, len(ap.units)))
    mw = np.median(aw.units[idx], axis=1)
    ok = mw != 0
    lo, hi = _bounds(np.median(ap.units[idx], axis=1)[ok] / mw[ok])
    share = _arm(_divide(p, w), r)
    return Estimate(float(np.median(ap.units) / np.median(aw.units)), lo, hi, ap.n, ap.n_repeats,
                    share.within, share.between)


def proportion_ci(k: int, n: int) -> Estimate:
    """k of n, with Wilson's score interval."""
    if n <= 0:
        return _NAN
    z = 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # the bounds are exact at k = 0 and k = n (0 and 1); rounding alone could put them past p
    low = 0.0 if k == 0 else min(p, max(0.0, centre - half))
    high = 1.0 if k == n else max(p, min(1.0, centre + half))
    return Estimate(p, low, high, n)


def trimmed_mean(x: Sequence[float]) -> float:
    """The mean of ``x`` between its TRIM percentiles (NaN where empty). Unlike a median, a mean adds
    over a mix of groups: a figure made of a sum of parts keeps each part's mix."""
    a = _clean(x)
    if not len(a):
        return math.nan
    lo, hi = np.percentile(a, TRIM)
    kept = a[(a >= lo) & (a <= hi)]
    return float(kept.mean()) if len(kept) else float(np.median(a))   # two values: the percentiles lie between them


def pooled_draws(units: Sequence[np.ndarray], seed: int = 0, *, trim: bool = True) -> np.ndarray:
    """N_BOOT bootstrap draws of the trimmed mean (``trimmed_mean``; the plain mean without ``trim``,
    e.g. for a share of 0/1 values) of the pooled values of ``units`` (one array per independent
    repeat, e.g. a process's calls), the repeats resampled whole (NaN where there are none). Two
    lists of as many arrays drawn with one seed resample the same repeats, so a repeat's two
    measurements stay together."""
    units = [_clean(u) for u in units]
    if not len(units) or not sum(map(len, units)):
        return np.full(N_BOOT, np.nan)
    picks = np.random.default_rng(_SEED + seed).integers(0, len(units), size=(N_BOOT, len(units)))
    if all(len(u) == 1 for u in units):   # one value a repeat: every resample at once
        a = np.concatenate(units)[picks]
        lo, hi = np.percentile(a, TRIM, axis=1, keepdims=True) if trim else (-np.inf, np.inf)
        keep = (a >= lo) & (a <= hi)
        n = keep.sum(axis=1)
        return np.where(n > 0, (a * keep).sum(axis=1) / np.maximum(n, 1), np.median(a, axis=1))
    # a resample is a multiset of repeats: each distinct one computed once
    mean = trimmed_mean if trim else (lambda a: float(a.mean()) if len(a) else math.nan)
    rows, inverse = np.unique(np.sort(picks, axis=1), axis=0, return_inverse=True)
    means = np.array([mean(np.concatenate([units[i] for i in row])) for row in rows])
    return means[inverse.ravel()]


def two_groups(x: Sequence[float]) -> tuple[float, float]:
    """(the threshold that best splits ``x`` into two groups, between-group variance at its
    largest (Otsu's rule) over the values inside their TRIM percentiles, so that a few calls far out
    do not make a group of their own; how far apart the two groups' medians are, in the larger of
    their interquartile ranges). NaN, NaN for fewer than 4 values; one group where apart < APART_IQRS."""
    v = np.sort(_clean(x))
    if len(v) >= 4:
        lo_p, hi_p = np.percentile(v, TRIM)
        v = v[(v >= lo_p) & (v <= hi_p)]
    if len(v) < 4:
        return math.nan, math.nan
    n, total = len(v), v.sum()
    left = np.cumsum(v)[:-1]
    k = np.arange(1, n)
    i = int(np.argmax((left / k - (total - left) / (n - k)) ** 2 * k * (n - k)))
    lo, hi = v[:i + 1], v[i + 1:]
    iqr = max(np.subtract(*np.percentile(lo, [75, 25])), np.subtract(*np.percentile(hi, [75, 25])), 1.0)
    return float((v[i] + v[i + 1]) / 2), float((np.median(hi) - np.median(lo)) / iqr)
