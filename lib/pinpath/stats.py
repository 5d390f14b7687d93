"""Intervals for measured figures: percentile bootstrap of medians and of ratios of medians,
and Wilson's interval for a proportion. Seeded, so a run's report is reproducible."""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import numpy as np

__all__ = ["Estimate", "median_draws", "interval", "median_ci", "ratio_ci", "share_ci", "proportion_ci", "LEVEL", "N_BOOT"]

LEVEL = 0.95     #: every interval in the reports is a 95 % interval
N_BOOT = 2000
_SEED = 160      #: aomp issue #160


class Estimate(NamedTuple):
    value: float
    low: float
    high: float
    n: int = 0

    def scaled(self, factor: float) -> "Estimate":
        return Estimate(self.value * factor, self.low * factor, self.high * factor, self.n)


_NAN = Estimate(math.nan, math.nan, math.nan, 0)


def _clean(x: Sequence[float]) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    return a[np.isfinite(a)]


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


def median_ci(x: Sequence[float]) -> Estimate:
    """The median of ``x`` and its bootstrap interval (NaN where ``x`` is empty)."""
    a = _clean(x)
    if not len(a):
        return _NAN
    lo, hi = _bounds(_boot_medians(a, np.random.default_rng(_SEED)))
    return Estimate(float(np.median(a)), lo, hi, len(a))


def ratio_ci(num: Sequence[float], den: Sequence[float]) -> Estimate:
    """median(num) / median(den), each side resampled apart (independent samples)."""
    a, b = _clean(num), _clean(den)
    if not len(a) or not len(b) or np.median(b) == 0:
        return _NAN
    rng = np.random.default_rng(_SEED)
    ma, mb = _boot_medians(a, rng), _boot_medians(b, rng)
    ok = mb != 0
    lo, hi = _bounds(ma[ok] / mb[ok])
    return Estimate(float(np.median(a) / np.median(b)), lo, hi, min(len(a), len(b)))


def share_ci(part: Sequence[float], whole: Sequence[float]) -> Estimate:
    """median(part) / median(whole) over paired rows (resampled together)."""
    p, w = np.asarray(part, dtype=float), np.asarray(whole, dtype=float)
    keep = np.isfinite(p) & np.isfinite(w)
    p, w = p[keep], w[keep]
    if not len(p) or np.median(w) == 0:
        return _NAN
    rng = np.random.default_rng(_SEED)
    idx = rng.integers(0, len(p), size=(N_BOOT, len(p)))
    mw = np.median(w[idx], axis=1)
    ok = mw != 0
    lo, hi = _bounds(np.median(p[idx], axis=1)[ok] / mw[ok])
    return Estimate(float(np.median(p) / np.median(w)), lo, hi, len(p))


def proportion_ci(k: int, n: int) -> Estimate:
    """k of n, with Wilson's score interval."""
    if n <= 0:
        return _NAN
    z = 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return Estimate(p, max(0.0, centre - half) if k else 0.0, min(1.0, centre + half), n)
