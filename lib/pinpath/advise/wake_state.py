"""The runtime probe's waits in two states (issue 33 item 3). A blocking wait through the offload
runtime either returns soon or sleeps and is woken late: on three H100 starts of 2026-12-07 the probe's
240 KiB pinned D2H took 7.7-9.5 us when its wait ended soon and 33.8-40.7 us when late, and the share
of late ones differed between starts (the probe's 14-27 %, the region application's 13-60 %). A median over a mixture falls on whichever state holds more than half, so advise predicts
each state apart where the probe's copies of a class split, and says the share it saw;
``validate.state_rows`` compares each with the application's steps in the same state.

- ``late_cut(ns) -> float | None``: the time that parts a class's probed copies into soon and late,
  or None where they are one group (``stats.two_groups`` with the rules below).
- ``split_probe(probe) -> (frames by state, split table) | None``: the probe's rows per state (a
  class that does not split keeps all its rows in both), and per split class its cut, medians and
  late share; None where no class splits.
- ``single_wait(preds, p, policies, split, by) -> variants``: those whose median step (or region) holds
  one wait of a split class, the only groups whose state is one wait's.
- ``state_lines(preds, split, by, variants) -> lines``: the advice's paragraph; ``write_states(out, preds, split)``:
  states.csv (each state's median step and region) and wake_split.csv (the split classes).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..report.fmt import format_measured
from ..stats import APART_IQRS, two_groups
from .predict import charged_as

__all__ = ["late_cut", "split_probe", "single_wait", "state_lines", "write_states", "STATES", "SPLIT_COLUMNS", "MIN_ROWS", "MIN_SHARE", "MIN_RATIO"]

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


def _in_processes(late: pd.Series, process: pd.Series | None) -> bool:
    """Whether the late state is a state of the node and not one process's episode: at least
    MIN_SHARE / 2 of the copies late in two of the probe's processes (in its only one, where it has one)."""
    if process is None or process.nunique() < 2:
        return True
    return int((late.groupby(process).mean() >= MIN_SHARE / 2).sum()) >= 2


def split_probe(probe: pd.DataFrame) -> tuple[dict[str, pd.DataFrame], pd.DataFrame] | None:
    """The probe's rows per state of STATES and the table of the classes that split (SPLIT_COLUMNS),
    or None where none does. A class splits where ``late_cut`` parts it and the late copies come from
    at least two of the probe's processes (``_in_processes``)."""
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
        if not _in_processes(late, g["process"] if "process" in g.columns else None):
            continue
        state[g.index] = np.where(late, "late", "soon")
        split.append(dict(zip(_CLASS, key), n=len(g), cut_ns=cut, soon_ns=float(g.ns[~late].median()),
                          late_ns=float(g.ns[late].median()), late_share=float(late.mean())))
    if not split:
        return None
    frames = {s: probe[(state == s) | (state == "")] for s in STATES}
    return frames, pd.DataFrame(split, columns=SPLIT_COLUMNS)


def single_wait(preds: dict, p, policies: dict, split: pd.DataFrame, by: str) -> list[str]:
    """The variants whose median ``by`` (step or region) holds exactly one copy charged as a split
    class (``predict.charged_as``: a stack variable under app_pinned is plain's), in both states'
    predictions: only there is a group's state one wait's. A step of several such copies mixes the
    states in proportions the probe cannot know (the stencil's four halos, the region's 384 copies per
    step); its prediction stays the probe's mix."""
    t = p.transfers
    t = t.assign(at=t["at"].replace("", "update") if "at" in t.columns else "update")
    keys = set(zip(split.variant, split.nbytes, split.direction, split["at"]))
    out = []
    for variant in sorted(set(preds[STATES[0]].typical.variant)):
        via = charged_as(policies, variant, t)
        hit = np.array([k in keys for k in zip(via, t.class_nbytes, t.direction, t["at"])], dtype=bool)
        groups = [pr.typical[(pr.typical.variant == variant) & (pr.typical.by == by)].group for pr in preds.values()]
        if all(len(g) and hit[(t[by] == g.iat[0]).to_numpy()].sum() == 1 for g in groups):
            out.append(variant)
    return out


def _typical(preds: dict) -> pd.DataFrame:
    """Each state's median step and region (``Prediction.typical``) with a column ``state``."""
    return pd.concat([p.typical.assign(state=s) for s, p in preds.items()], ignore_index=True)


def write_states(out, preds: dict, split: pd.DataFrame) -> None:
    _typical(preds).to_csv(out / "states.csv", index=False)
    split.to_csv(out / "wake_split.csv", index=False)


def state_lines(preds: dict, split: pd.DataFrame, by: str, variants: list[str]) -> list[str]:
    """The advice's paragraph on the two states: the split classes, and the median ``by`` of each of
    ``variants`` (``single_wait``) in either state."""
    classes = "; ".join(f"`{r.variant}` {r.direction.upper()} of {int(r.nbytes)} B ({r.at}): "
                        f"{format_measured(r.soon_ns, unit='ns')} soon, {format_measured(r.late_ns, unit='ns')} late, "
                        f"{100 * r.late_share:.0f} % late" for r in split.itertuples())
    t = _typical(preds)
    t = t[(t.by == by) & t.variant.isin(variants)].pivot_table(index="variant", columns="state", values="predicted_ns")
    each = [f"`{v}` {format_measured(r['soon'], unit='ns')} soon, {format_measured(r['late'], unit='ns')} late"
            for v, r in t.iterrows()]
    said = (f"The median {by} with its wait soon and late: {'; '.join(each)}; prediction.csv has a row per state, "
            "each against the real ones in that state where real figures were given (the real ones split by the "
            "same rule, not by the prediction)." if each else
            f"No median {by} holds just one such wait, so no {by} is in one state: the prediction is the probe's mix.")
    return [f"**Two wait states.** The runtime probe's copies of {len(split)} class(es) fall in two groups: a "
            f"blocking wait that returned soon, or one that slept and was woken late ({classes}). {said} How many of "
            "an application's waits end late changes from node to node and run to run (its kernels' lengths, where "
            "its threads run): the ranking is the probe's mix."]
