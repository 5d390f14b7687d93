"""Notebook 13's model with the terms, composed of trimmed means and set against the real region of
the same ``--paired`` processes (issue 33 item 2).

In the blocking wait LLVM's CUDA plugin runs in, the copies part of an invocation is a mix of two
groups on both sides (the wait after the copies wakes soon or late, some 25 us apart), and the
share of late ones is state: it moves from process to process and over the time of a run. A median
says only whether that share is above one half, so a sum of medians (``real_terms``) and a median
of the real invocations can fall in different groups. A mean adds over the mix, so here every part
is a trimmed mean over invocations (``stats.trimmed_mean``: a stalled invocation left out):

    model = present-only region + bookkeeping + the replica's copies in the blocking processes

against the full region of the same ``--paired`` processes the present-only region comes from (the
same processes, so the same state; ``real_unpaired_ns`` is the unpaired processes' figure, which
``real_terms`` divides by). Even so the replica's few blocking processes can draw another late share
than the real ones (0.21 against 0.47 on one H100): ``ratio_state`` puts the replica's copies in the
real processes' wake state (its soon and late groups, weighted by the late share observed on the real
side), so both arms of the comparison are in one state; ``ratio``, in the share the replica drew, stays
beside it. The interval resamples processes whole (``stats.pooled_draws``): a
--paired process's present-only and full regions stay together, the blocking processes and the
traced invocations are drawn apart. Each side's late share is reported (the cut from both sides'
copies pooled, ``stats.two_groups``), so a reader sees the state a figure was taken in.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..schema import REAL_MEANS, frame
from ..stats import APART_IQRS, N_BOOT, interval, pooled_draws, trimmed_mean, two_groups
from ..units import fmt_ns
from .real_terms import TOLERANCE, region_work, wait_steady
from .replica_compare import steady

__all__ = ["model_means", "means_explanation", "as_terms", "AS_DRAWN", "IN_REAL_STATE"]


def _units(df: pd.DataFrame, column: str, unit: str) -> list[np.ndarray]:
    """One array of ``column`` per ``unit`` (process or repeat), in the unit's order."""
    return [g[column].to_numpy(dtype=float) for _, g in df.groupby(unit, sort=True)]


def _bookkeeping(regions: pd.DataFrame) -> tuple[float, np.ndarray, int]:
    """The full region's bookkeeping less the present-only one's (trimmed means over the traced
    invocations, resampled as pairs of one invocation's two regions), its draws, the pairs."""
    full = regions[regions.region == "full"].set_index(["step", "invocation"]).bookkeeping_ns
    pres = regions[regions.region == "present_only"].set_index(["step", "invocation"]).bookkeeping_ns
    pairs = pd.concat([full.rename("full"), pres.rename("present")], axis=1, join="inner").to_numpy(dtype=float)
    if not len(pairs):
        return np.nan, np.full(N_BOOT, np.nan), 0
    draws = pooled_draws(list(pairs[:, :1]), seed=31) - pooled_draws(list(pairs[:, 1:]), seed=31)   # one seed: pairs
    return trimmed_mean(pairs[:, 0]) - trimmed_mean(pairs[:, 1]), draws, len(pairs)


def _late(real: list[np.ndarray], replica: list[np.ndarray]) -> dict:
    """The cut between soon and late copies over both sides pooled, and each side's late share
    (pooled, and the range of its processes' own); NaN shares where the copies make one group."""
    cut, apart = two_groups(np.concatenate(real + replica))
    out = {"cut_ns": cut if apart >= APART_IQRS else np.nan, "apart_iqrs": apart}
    for side, units in (("real", real), ("replica", replica)):
        shares = [float(np.mean(u >= cut)) for u in units if len(u)] if apart >= APART_IQRS else []
        pooled = float(np.mean(np.concatenate(units) >= cut)) if shares else np.nan
        out.update({f"late_{side}": pooled, f"late_{side}_min": min(shares, default=np.nan),
                    f"late_{side}_max": max(shares, default=np.nan)})
    return out


#: the least a replica group must hold to give a group time: copies, and processes they come from
MIN_GROUP, MIN_GROUP_PROCESSES = 20, 2
#: the sides' own cuts may differ by this share of the gap between the replica's groups
CUTS_AGREE = 0.25
#: the most bootstrap draws that may lack a group before the interval is not given
MAX_LOST_DRAWS = 0.025


def _in_real_state(real: list[np.ndarray], replica: list[np.ndarray], cut: float, drawn: tuple) -> dict:
    """The replica's copies in the real --paired processes' wake state: its soon and its late group
    (trimmed means over the blocking processes' invocations either side of ``cut``) weighted by the
    real processes' late share, and draws of it (the real processes resampled with the seed of their
    regions, so a process's share and its region stay together; the blocking processes with theirs);
    ``drawn``: the replica's copies as its processes drew them and their draws (``model_means``'s).
    Conditional on the share the real processes were observed in, it tests the groups' times only;
    whether the replica draws that share is ``ratio``'s and the shares' matter. ``matched`` False, the
    replica's copies as its processes drew them and ``note`` why, where the groups do not pair up: a
    side whose own copies make one group (pooled, the cut may split the sides rather than the wakes),
    both sides split but at cuts apart by more than CUTS_AGREE of the gap, or a replica group the real
    share weighs with fewer than MIN_GROUP copies from MIN_GROUP_PROCESSES processes. Where the copies
    make one group (``cut`` NaN) there is no wake state to match: the copies as drawn, ``matched`` None."""
    real = [u[np.isfinite(u)] for u in real]
    replica = [u[np.isfinite(u)] for u in replica]
    drawn = {"copies": drawn[0], "draws": drawn[1], "note": ""}       # the replica's copies as drawn, and their draws
    if not np.isfinite(cut):
        return {**drawn, "matched": None}
    none = lambda why, **kw: {**drawn, "matched": False, "note": f"as the replica drew them: {why}", **kw}  # noqa: E731
    (real_cut, real_apart), (rep_cut, rep_apart) = two_groups(np.concatenate(real)), two_groups(np.concatenate(replica))
    parts = {"soon": [u[u < cut] for u in replica], "late": [u[u >= cut] for u in replica]}
    soon, late = (trimmed_mean(np.concatenate(parts[g])) for g in ("soon", "late"))
    split = [side for side, apart in (("real", real_apart), ("replica", rep_apart)) if apart >= APART_IQRS]
    if len(split) < 2:
        return none(f"{' and '.join(s for s in ('real', 'replica') if s not in split)} copies make one group on their "
                    f"own side ({real_apart:.1f} and {rep_apart:.1f} IQRs apart at the best cuts), two pooled: the "
                    f"cut may split the sides, not the wakes", soon=soon, late=late)
    own = np.concatenate(replica)
    gap = trimmed_mean(own[own >= rep_cut]) - trimmed_mean(own[own < rep_cut])    # the replica's own groups
    if abs(real_cut - rep_cut) > CUTS_AGREE * gap:
        return none(f"the sides' own cuts differ (real {fmt_ns(real_cut)}, replica {fmt_ns(rep_cut)}, its groups "
                    f"{fmt_ns(gap)} apart): their groups are not at the same places", soon=soon, late=late)
    share = float(np.mean(np.concatenate(real) >= cut))
    for group, weight in (("soon", 1 - share), ("late", share)):
        n, k = sum(len(u) for u in parts[group]), sum(len(u) > 0 for u in parts[group])
        if weight > 0 and (n < MIN_GROUP or k < MIN_GROUP_PROCESSES):
            return none(f"the replica has {n} {group} copies (cut {fmt_ns(cut)}) from {k} process(es), where {weight:.0%} "
                        f"of the real ones' are {group}: too few to time its {group} group (at least {MIN_GROUP} "
                        f"from {MIN_GROUP_PROCESSES} processes)", soon=soon, late=late)
    share_d = pooled_draws([(u >= cut).astype(float) for u in real], seed=41, trim=False)
    soon_d, late_d = (pooled_draws(parts[g], seed=42) for g in ("soon", "late"))
    weigh = lambda w, x: np.where(w > 0, w * np.nan_to_num(x, nan=np.inf), 0.0)  # noqa: E731 - 0 x a missing group
    return {"copies": float(weigh(share, late) + weigh(1 - share, soon)), "soon": soon, "late": late, "note": "",
            "draws": weigh(share_d, late_d) + weigh(1 - share_d, soon_d), "matched": True}


def model_means(real, wait: pd.DataFrame | None, regions: pd.DataFrame | None = None, *, skip_first: int = 1,
                tolerance: float = TOLERANCE) -> pd.DataFrame:
    """REAL_MEANS per variant and nw: present-only region + bookkeeping + the replica's blocking
    copies, each a trimmed mean over invocations, over the full region of the same --paired
    processes, with its interval (processes resampled whole), the unpaired processes' ratio beside
    it and each side's late share. ``real``: a RealRun; ``wait``: WAIT_MODEL or its reason frame;
    ``regions``: REAL_REGIONS (default: from ``real.present_phases``). A point without --paired
    processes or blocking processes has NaN figures and says why in ``note``; without a traced
    --paired run the bookkeeping is left out (0) and ``note`` says so. The reason frame where the
    real runtime could not run."""
    inv = real.invocations
    if "not_applicable" in inv.columns:
        return inv
    present = real.present if "not_applicable" not in real.present.columns else real.present.iloc[:0]
    if regions is None:
        regions = region_work(real.present_phases)
    inv = steady(inv[~inv.traced.astype(bool)], skip_first)
    present = steady(present[~present.traced.astype(bool)], skip_first) if len(present) else present
    regions = steady(regions, skip_first)
    w, wait_why = wait_steady(wait, skip_first)
    blocking = w[w.wait == "blocking"] if w is not None else None
    rows = []
    for (variant, nw), r in inv.groupby(["variant", "nw"]):
        at = lambda df: df[(df.variant == variant) & (df.nw == nw)] if df is not None and len(df) else df  # noqa: E731
        p, b = at(present), at(blocking)
        row = {**{k: np.nan for k, t in REAL_MEANS.items() if t == "float"}, "within": None, "within_state": None,
               "in_real_state": None,
               "variant": variant, "nw": int(nw), "paired_processes": int(p.process.nunique()) if len(p) else 0,
               "wait_processes": int(b.repeat.nunique()) if b is not None and len(b) else 0,
               "unpaired_processes": int(r.process.nunique()), "traced_invocations": 0, "note": ""}
        unpaired = _units(r, "ns", "process")
        row["real_unpaired_ns"] = trimmed_mean(np.concatenate(unpaired))
        if not row["paired_processes"] or not row["wait_processes"]:
            row["note"] = ("no --paired process ran at this point" if not row["paired_processes"] else
                           wait_why or "no blocking-wait process at this point")
            rows.append(row)
            continue
        p = p.assign(copies_ns=p.ns.astype(float) - p.kernel_ns.astype(float))
        pres_u, full_u, copies_u = _units(p, "kernel_ns", "process"), _units(p, "ns", "process"), _units(p, "copies_ns", "process")
        blk_u = _units(b.assign(t=b.transfer_ns.astype(float)), "t", "repeat")
        bk, bk_draws, n_pairs = _bookkeeping(at(regions))
        if not n_pairs:
            bk, bk_draws = 0.0, np.zeros(N_BOOT)
            row["note"] = "no traced --paired run: the bookkeeping is left out"
        pres_d, full_d = pooled_draws(pres_u, seed=41), pooled_draws(full_u, seed=41)   # one seed: the same processes
        blk_d = pooled_draws(blk_u, seed=42)
        model_d = pres_d + bk_draws + blk_d
        unpaired_d = pooled_draws(unpaired, seed=43)
        pres_ns, copies_ns, real_ns = (trimmed_mean(np.concatenate(u)) for u in (pres_u, blk_u, full_u))
        model_ns = pres_ns + bk + copies_ns
        row.update(present_ns=pres_ns, bookkeeping_ns=bk, copies_ns=copies_ns, model_ns=model_ns,
                   traced_invocations=n_pairs, real_ns=real_ns, ratio=model_ns / real_ns,
                   ratio_unpaired=model_ns / row["real_unpaired_ns"], **_late(copies_u, blk_u))
        row["model_lo_ns"], row["model_hi_ns"] = interval(model_d)
        row["real_lo_ns"], row["real_hi_ns"] = interval(full_d)
        row["ratio_lo"], row["ratio_hi"] = interval(model_d / full_d)
        row["ratio_unpaired_lo"], row["ratio_unpaired_hi"] = interval(model_d / unpaired_d)
        row["within"] = bool(abs(row["ratio"] - 1) <= tolerance)
        state = _in_real_state(copies_u, blk_u, row["cut_ns"], (copies_ns, blk_d))
        row.update(soon_replica_ns=state.get("soon", np.nan), late_replica_ns=state.get("late", np.nan),
                   copies_state_ns=state["copies"], model_state_ns=pres_ns + bk + state["copies"])
        row["ratio_state"] = row["model_state_ns"] / real_ns
        state_d = (pres_d + bk_draws + state["draws"]) / full_d
        lost = float(np.mean(~np.isfinite(state_d)))
        if np.isfinite(row["ratio_state"]) and lost > MAX_LOST_DRAWS:     # resamples without a group the share weighs
            state_d = np.full(N_BOOT, np.nan)
            state["note"] = (f"no interval in the real state: {lost:.0%} of the resamples of the blocking processes "
                             f"lack a group the real share weighs")
        row["ratio_state_lo"], row["ratio_state_hi"] = interval(state_d)
        row["within_state"] = bool(abs(row["ratio_state"] - 1) <= tolerance) if np.isfinite(row["ratio_state"]) else None
        row["in_real_state"] = state["matched"]
        row["note"] = "; ".join(n for n in (row["note"], state["note"]) if n)
        rows.append(row)
    return frame(rows, REAL_MEANS)


AS_DRAWN = "in the wake state the replica's processes drew"
IN_REAL_STATE = "in the real processes' wake state (where the groups pair up; else as drawn)"


def as_terms(means: pd.DataFrame) -> pd.DataFrame:
    """REAL_MEANS as the closing figure draws terms (``replica_figures.terms_ratio``): per variant and
    nw, the ratio as the replica drew its wake state, then in the real processes' (where the groups
    pair up; else as drawn, the same figure). The reason frame as it is."""
    if "not_applicable" in means.columns or not len(means):
        return means
    if "ratio_state" not in means.columns:          # a table written before the column: as drawn only
        means = means.assign(ratio_state=np.nan, ratio_state_lo=np.nan, ratio_state_hi=np.nan)
    cols = {AS_DRAWN: ("ratio", "ratio_lo", "ratio_hi"), IN_REAL_STATE: ("ratio_state", "ratio_state_lo", "ratio_state_hi")}
    return pd.DataFrame([{"variant": r["variant"], "nw": r["nw"], "term": term, "ratio": r[a], "ratio_lo": r[lo],
                          "ratio_hi": r[hi]} for term, (a, lo, hi) in cols.items() for r in means.to_dict("records")])


def _share(row, side: str) -> str:
    pooled, lo, hi = (getattr(row, f"late_{side}{k}") for k in ("", "_min", "_max"))
    return f"{pooled:.2f} (its processes {lo:.2f}-{hi:.2f})"


def means_explanation(means: pd.DataFrame, *, tolerance: float = TOLERANCE) -> str:
    """Markdown: how many points are within 1 ± tolerance against the --paired processes' region and
    against the unpaired ones', then one line per variant and nw with the parts, both ratios and
    each side's late share. "" where there is no figure (the frame says why)."""
    if not len(means) or "ratio" not in means.columns:
        return ""
    done = means[np.isfinite(means.ratio.to_numpy(dtype=float))]
    unpaired_in = int((abs(done.ratio_unpaired - 1) <= tolerance).sum())
    if "ratio_state" in done:
        state_in = int((abs(done.ratio_state.to_numpy(dtype=float) - 1) <= tolerance).sum())
        put, drawn = (int((done.in_real_state == v).sum()) for v in (True, False))   # nullable: None, one group
        state = (f"{state_in} of {len(done)} points with the replica's copies in the real processes' wake state "
                 f"(put there at {put}, where both sides split into soon and late wakes that pair up"
                 + (f"; at {drawn} as the replica drew them, the line says why" if drawn else "")
                 + (f"; at {len(done) - put - drawn} the copies make one group" if len(done) - put - drawn else "")
                 + "), ")
    else:
        state = ""
    lines = [f"**Within 1 ± {tolerance:g} by trimmed means, against the region of the same --paired processes: "
             f"{state}{int(done.within.sum())} of {len(done)} in the wake state the replica's own processes drew; "
             f"{unpaired_in} of {len(done)} against the unpaired processes' (another time of the run).**"
             if len(done) else "**No point has both --paired and blocking processes.**"]
    for r in means.itertuples():
        if not np.isfinite(r.ratio):
            lines.append(f"- **{r.variant}, nw={r.nw}**: no figure ({r.note}).")
            continue
        mix = (f"the copies split at {fmt_ns(r.cut_ns)} into soon and late wakes ({r.apart_iqrs:.1f} IQRs apart); "
               f"late share real {_share(r, 'real')}, replica {_share(r, 'replica')}" if np.isfinite(r.cut_ns) else
               f"the copies make one group on both sides ({r.apart_iqrs:.1f} IQRs apart at the best cut)")
        matched = getattr(r, "in_real_state", None)
        state_words = ("" if not np.isfinite(r.cut_ns) or matched is None or pd.isna(matched) else
                       f"; in the real processes' wake state (the replica's soon {fmt_ns(r.soon_replica_ns)} and late "
                       f"{fmt_ns(r.late_replica_ns)} copies, weighted by the real late share): model "
                       f"{fmt_ns(r.model_state_ns)}, {r.ratio_state:.2f} ("
                       + (f"95 % CI {r.ratio_state_lo:.2f}-{r.ratio_state_hi:.2f}" if np.isfinite(r.ratio_state_lo)
                          else "no interval") + f"), {'within' if r.within_state else 'outside'}" if matched else
                       "; not put in the real processes' wake state")
        lines.append(
            f"- **{r.variant}, nw={r.nw}**: model {fmt_ns(r.model_ns)} (present-only region {fmt_ns(r.present_ns)} "
            f"over {r.paired_processes} processes + bookkeeping {fmt_ns(r.bookkeeping_ns)} + the replica's copies in "
            f"the blocking wait {fmt_ns(r.copies_ns)} over {r.wait_processes} processes) against the real region "
            f"{fmt_ns(r.real_ns)} in the same processes: {r.ratio:.2f} (95 % CI {r.ratio_lo:.2f}-{r.ratio_hi:.2f}), "
            f"{'within' if r.within else 'outside'}; against the unpaired processes ({fmt_ns(r.real_unpaired_ns)}, "
            f"{r.unpaired_processes}) {r.ratio_unpaired:.2f} ({r.ratio_unpaired_lo:.2f}-{r.ratio_unpaired_hi:.2f}); "
            f"{mix}{state_words}{'; ' + r.note if r.note else ''}.")
    return "\n".join(lines)
