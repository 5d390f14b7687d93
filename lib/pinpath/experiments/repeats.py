"""The repeat as the unit (issue #17): a figure over independent repeats (processes, rounds) is
the median of the per-repeat medians with its bootstrap interval over them, reported with the
spread inside a repeat beside the spread between repeats."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..stats import Estimate, median_ci

__all__ = ["over_repeats", "spreads"]


def over_repeats(per: Sequence[np.ndarray]) -> Estimate:
    """The median of the per-repeat medians and its bootstrap 95 % interval over the repeats."""
    return median_ci([np.median(x) for x in per if len(x)])


def spreads(per: Sequence[np.ndarray]) -> tuple[float, float]:
    """(within, between): the median over repeats of IQR / median inside a repeat (repeats of one
    value have none of their own), and (largest - smallest repeat median) / their median; NaN
    where it cannot be said."""
    within = [float(np.subtract(*np.percentile(x, [75, 25])) / np.median(x)) for x in per
              if len(x) > 1 and np.median(x)]
    meds = np.array([np.median(x) for x in per if len(x)])
    between = float(np.ptp(meds) / np.median(meds)) if len(meds) > 1 and np.median(meds) else float("nan")
    return (float(np.median(within)) if within else float("nan")), between
