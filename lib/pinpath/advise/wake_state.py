"""The runtime probe's waits in two states (issue 33 item 3). A blocking wait through the offload
runtime either returns soon or sleeps and is woken late by the GPU's interrupt: on the H100s of
2026-12-07, a 240 KiB pinned D2H made by a region's map took about 8 us when its wait woke soon and
about 37-41 us when it woke late, and which share of copies woke late differed between machine starts
(in the probe 20-27 %; in the region application 17-33 % on one start, 35-65 % on the other). A
median over a mixture falls on whichever state holds more than half, so advise predicts each state
apart where the probe's copies of a class split, and says the share it saw; ``validate.state_rows``
compares each with the application's copies in the same state.

- ``late_cut(ns) -> float | None``: the time that parts a class's probed copies into soon and late,
  or None where they are one group (``stats.two_groups`` with the rules below).
- ``split_probe(probe) -> (frames by state, split table) | None``: the probe's rows per state (a
  class that does not split keeps all its rows in both), and per split class its cut, medians and
  late share; None where no class splits.
- ``one_late(preds, p, split) -> preds``: the late state's median step and region as one late wait
  in the group, the group's other copies of split classes soon (a step of four halos rarely has two
  late: in the probe 8-14 % of them were).
- ``state_lines(preds, split) -> lines``: the advice's paragraph; ``write_states(out, preds, split)``:
  states.csv (each state's median step and region) and wake_split.csv (the split classes).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ..report.fmt import format_measured
from ..stats import APART_IQRS, two_groups

__all__ = ["late_cut", "split_probe", "one_late", "state_lines", "write_states", "STATES", "SPLIT_COLUMNS", "MIN_ROWS", "MIN_SHARE", "MIN_RATIO"]

STATES = ("soon", "late")
MIN_ROWS = 20      #: a class probed fewer times is not split (a one-off copy probed a few times)
MIN_SHARE = 0.05   #: each state holds at least this share of the class's copies
MIN_RATIO = 1.5    #: the late state's median is at least this multiple of the soon state's (a late wake added
                   #: about 29 us to both a 47 us pageable and an 8 us pinned D2H: 1.6x and 4.8x)
SPLIT_COLUMNS = ["variant", "direction", "nbytes", "at", "n", "cut_ns", "soon_ns", "late_ns", "late_share"]
_CLASS = ["variant", "direction", "nbytes", "at"]


def late_cut(ns) -> float | None:
    """The cut between the soon and the late copies of one class, or None: fewer than MIN_ROWS copies,
    groups closer than APART_IQRS interquartile ranges, a state under MIN_SHARE of the copies, or a
    late median under MIN_RATIO times the soon one (a wider spread, not a second state)."""
    x = np.asarray(ns, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) < MIN_ROWS:
        return None
    cut, apart = two_groups(x)
    if not np.isfinite(cut) or apart < APART_IQRS:
        return None
    soon, late = x[x <= cut], x[x > cut]
    share = len(late) / len(x)
    if not MIN_SHARE <= share <= 1 - MIN_SHARE:
        return None
    lo = float(np.median(soon))
    return float(cut) if lo > 0 and float(np.median(late)) >= MIN_RATIO * lo else None


def split_probe(probe: pd.DataFrame) -> tuple[dict[str, pd.DataFrame], pd.DataFrame] | None:
    """The probe's rows per state of STATES and the table of the classes that split (SPLIT_COLUMNS),
    or None where none does."""
    if not len(probe):
        return None
    at = probe["at"] if "at" in probe.columns else pd.Series("update", index=probe.index)
    p = probe.assign(at=at)
    state = pd.Series("", index=p.index)   # "" for the rows of a class that does not split
    split = []
    for key, g in p.groupby(_CLASS, sort=True):
        cut = late_cut(g.ns)
        if cut is None:
            continue
        late = g.ns > cut
        state[g.index] = np.where(late, "late", "soon")
        split.append(dict(zip(_CLASS, key), n=len(g), cut_ns=cut, soon_ns=float(g.ns[~late].median()),
                          late_ns=float(g.ns[late].median()), late_share=float(late.mean())))
    if not split:
        return None
    frames = {s: probe[(state == s) | (state == "")] for s in STATES}
    return frames, pd.DataFrame(split, columns=SPLIT_COLUMNS)


def one_late(preds: dict, p, split: pd.DataFrame) -> dict:
    """``preds`` (state -> Prediction) with the late state's ``typical`` (and its draws) made one late
    wait per group: where the median step or region holds k > 1 copies of the variant's split
    classes, soon + (late - soon) / k (the classes' late increments taken alike)."""
    t = p.transfers
    t = t.assign(at=t["at"].replace("", "update") if "at" in t.columns else "update")
    soon, late = preds["soon"], preds["late"]
    typ, draws = late.typical.copy(), dict(late.typical_draws or {})
    via = late.totals.set_index("variant").same_as if "same_as" in late.totals.columns else pd.Series(dtype=object)
    for i, r in typ.iterrows():   # a variant charged as another (``predict.same_as``) splits as that one
        mine = split[split.variant == via.get(r.variant, r.variant)][["nbytes", "direction", "at"]]
        group = t[t[r.by] == r.group].rename(columns={"nbytes": "copy_nbytes", "class_nbytes": "nbytes"})
        k = len(group.merge(mine, on=["nbytes", "direction", "at"]))
        base = soon.typical[(soon.typical.variant == r.variant) & (soon.typical.by == r.by)]
        if k <= 1 or not len(base):
            continue
        for c in ("predicted_ns", "low", "high"):
            typ.at[i, c] = base[c].iat[0] + (r[c] - base[c].iat[0]) / k
        key = (r.variant, r.by)
        if key in draws and key in (soon.typical_draws or {}):
            draws[key] = soon.typical_draws[key] + (draws[key] - soon.typical_draws[key]) / k
    return {**preds, "late": dataclasses.replace(late, typical=typ, typical_draws=draws)}


def _typical(preds: dict) -> pd.DataFrame:
    """Each state's median step and region (``Prediction.typical``) with a column ``state``."""
    return pd.concat([p.typical.assign(state=s) for s, p in preds.items()], ignore_index=True)


def write_states(out, preds: dict, split: pd.DataFrame) -> None:
    _typical(preds).to_csv(out / "states.csv", index=False)
    split.to_csv(out / "wake_split.csv", index=False)


def state_lines(preds: dict, split: pd.DataFrame) -> list[str]:
    """The advice's paragraph on the two states: the split classes, and each variant's median step
    (region where the trace has no steps) in either state where the two differ."""
    classes = "; ".join(f"`{r.variant}` {r.direction.upper()} of {int(r.nbytes)} B ({r.at}): "
                        f"{format_measured(r.soon_ns, unit='ns')} soon, {format_measured(r.late_ns, unit='ns')} late, "
                        f"{100 * r.late_share:.0f} % late" for r in split.itertuples())
    t = _typical(preds)
    by = "step" if "step" in set(t.by) else "region"
    t = t[t.by == by].pivot_table(index="variant", columns="state", values="predicted_ns")
    differ = [f"`{v}` {format_measured(r['soon'], unit='ns')} soon, {format_measured(r['late'], unit='ns')} late"
              for v, r in t.iterrows() if r["soon"] != r["late"]]
    return [f"**Two wait states.** The runtime probe's copies of {len(split)} class(es) fall in two groups: a "
            f"blocking wait that returned soon, or one that slept and was woken late by the GPU's interrupt ({classes}). "
            f"The median {by} predicted with every wait soon, and with one of them late: "
            f"{'; '.join(differ) or 'the same in both'}. How many of an "
            "application's copies wake late changes from node to node and run to run (its kernels' lengths, where its "
            "threads run): the ranking is the probe's mix; prediction.csv has a row per state, each against the real "
            "steps in that state where real figures were given."]
