"""``advise --designs``: for runtime developers, the trace replayed under each of the engine's nine
policies, read as designs a runtime could adopt (stage, pool, lock per copy, query first, lock at
map time, track an allocator's memory ...), not as settings a user can set. Each design is charged
the offload runtime's own term as measured under plain (the runtime's lookup and queue do not change
with how it moves the bytes)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..vocab import Policy
from .advice import DESIGN_WORDS
from .predict import Prediction
from .runtime_term import runtime_rows

__all__ = ["DESIGNS", "LABEL", "DESIGN_COLUMNS", "design_runtime_rows", "design_table", "design_rows"]

LABEL = "runtime design"
#: design -> (policy, memory pinned beforehand, threshold): prepinned's memory is pinned from its allocation
DESIGNS = {p.value: (p.value, p is Policy.PREPINNED, None) for p in Policy}
DESIGN_COLUMNS = ["label", "design", "what", "predicted_ns", "low", "high", "rank", "per_transfer_ns", "by",
                  "typical_ns", "typical_low", "typical_high", "against_plain", "not_replayed"]


def design_runtime_rows(probe: pd.DataFrame, rep: pd.DataFrame, rep_designs: pd.DataFrame) -> pd.DataFrame:
    """The runtime term of plain (its probe less plain's replayed copy) as rows of every design."""
    if not len(probe) or "plain" not in set(probe.variant):
        return pd.DataFrame(columns=rep_designs.columns)
    plain = runtime_rows(probe[probe.variant == "plain"], rep)
    return pd.concat([plain.assign(variant=d, policy=d) for d in sorted(set(rep_designs.variant))], ignore_index=True)


def design_table(pred: Prediction, user: Prediction | None) -> pd.DataFrame:
    """DESIGN_COLUMNS per design, best first: the whole trace and the median step (region where
    the trace has no steps), and the ratio to what the application pays now (its plain)."""
    tot = pred.totals.set_index("variant")
    typ = pred.typical
    by = "step" if len(typ) and "step" in set(typ.by) else "region"
    typ = typ[typ.by == by].set_index("variant") if len(typ) else pd.DataFrame()
    now = np.nan
    if user is not None and "plain" in set(user.totals.variant):
        now = float(user.totals.set_index("variant").predicted_ns["plain"])
    rows = []
    for d, r in tot.iterrows():
        t = typ.loc[d] if d in typ.index else None
        rows.append({"label": LABEL, "design": d, "what": DESIGN_WORDS.get(d, d), "predicted_ns": r.predicted_ns,
                     "low": r.low, "high": r.high, "rank": r["rank"], "per_transfer_ns": r.per_transfer_ns, "by": by,
                     "typical_ns": t.predicted_ns if t is not None else np.nan,
                     "typical_low": t.low if t is not None else np.nan,
                     "typical_high": t.high if t is not None else np.nan,
                     "against_plain": r.predicted_ns / now if now and np.isfinite(now) else np.nan,
                     "not_replayed": r.not_replayed})
    return pd.DataFrame(rows, columns=DESIGN_COLUMNS).sort_values("predicted_ns", ignore_index=True)


def design_rows(application: str, table: pd.DataFrame) -> list[dict]:
    """prediction.csv rows of kind "runtime design": the median step's prediction, no real figure
    (no runtime of that design exists to time)."""
    return [{"application": application, "kind": LABEL, "variant": r.design, "predicted_ns": r.typical_ns,
             "predicted_low": r.typical_low, "predicted_high": r.typical_high} for r in table.itertuples()]


