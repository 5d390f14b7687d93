"""A code change for an application that maps its arrays every step (``pattern``'s ``remapped``):
map each once, before the steps (`target enter data`), move it with `target update` inside them,
unmap it after (`target exit data`). Predicted from the same replay with the copies charged as
updates (their runtime term probed with every array mapped once: ``layout_of(per_step=False)``)
and each array's map and unmap charged once, against the trace as it is; said in the advice only
where both predictions carry the runtime's term.

- ``mapped_once(p) -> Pattern``: the pattern as if every array were mapped once.
- ``map_once_lines(p, pred, once) -> [sentence]``: the typical step both ways, per variant.
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from ..report.fmt import format_measured
from .pattern import Pattern
from .predict import Prediction

__all__ = ["mapped_once", "map_once_lines", "remapped_arrays"]


def remapped_arrays(p: Pattern) -> pd.DataFrame:
    """The arrays the trace maps every step (empty where it maps none so, or says nothing of maps)."""
    return p.arrays[p.arrays.remapped] if len(p.arrays) and "remapped" in p.arrays.columns else p.arrays.iloc[:0]


def mapped_once(p: Pattern) -> Pattern:
    """``p`` with every array mapped once: no map lines (each array charged one map and one unmap,
    in its first and last region), every copy an update's."""
    arrays = p.arrays.assign(remapped=False) if len(p.arrays) else p.arrays
    return dataclasses.replace(p, transfers=p.transfers.assign(at=""), arrays=arrays, maps=None)


def map_once_lines(p: Pattern, pred: Prediction, once: Prediction) -> list[str]:
    """The advice's sentence: the typical step (region where the trace has no steps) as traced and
    with the arrays mapped once, per variant; "pays" only where the intervals are apart."""
    arrays = remapped_arrays(p)
    if not len(arrays) or not len(pred.typical) or not len(once.typical):
        return []
    by = "step" if "step" in set(pred.typical.by) else "region"
    now = pred.typical[pred.typical.by == by].set_index("variant")
    then = once.typical[once.typical.by == by].set_index("variant")
    twins = set(pred.totals[pred.totals.same_as != pred.totals.variant].variant) if "same_as" in pred.totals else set()
    parts, pays = [], False
    for v in [v for v in now.index.intersection(then.index) if v not in twins]:   # a twin of plain is plain
        a, b = now.loc[v], then.loc[v]
        apart = b.high < a.low
        pays = pays or (apart and v == "plain")
        parts.append(f"`{v}` {format_measured(b.predicted_ns, b.low, b.high, 'ns')} against "
                     f"{format_measured(a.predicted_ns, a.low, a.high, 'ns')} as traced"
                     + ("" if apart else " (not apart beyond the intervals)"))
    head = "**Map the arrays once.**" if pays else "Mapping the arrays once would not pay beyond the intervals."
    local = int((arrays.owner != "application").sum()) if "owner" in arrays.columns else 0
    what = f"{len(arrays)} array(s)" + (f" ({local} of them local variables or the runtime's)" if local else "")
    return [f"{head} The trace maps and unmaps {what} every {by} (`target enter data` / "
            f"`exit data` inside the {by}s). Mapped once before the {by}s and moved with `target update` inside "
            f"them, the median {by} is predicted at: " + "; ".join(parts) + "."]
