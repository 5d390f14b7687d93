"""The harness's own cost: clock, timer resolution, a null runtime call, the recorder (all claims)."""

from __future__ import annotations

import pandas as pd

from ..schema import HARNESS, frame
from ..trace import measure_harness

__all__ = ["harness"]


def harness(rt, *, loops: int = 2000, rounds: int = 15) -> pd.DataFrame:
    """One row per metric of ``trace.measure_harness`` on ``rt``'s cheapest native call."""
    metrics = measure_harness(rt.null_native, loops=loops, rounds=rounds)
    return frame(({"metric": k, "ns": v, "platform": rt.name} for k, v in metrics.items()), HARNESS)
