"""The replica, pinpath's model, against the real offload runtime (notebook 13).

The replica runs under the policy that models each real runtime's variant (``MODELS``, one call:
``replica_model``), and ``model_real_ratio`` says how far the model's per-invocation cost is from
the real one (``real_runtime``'s frames), with the real side's interval over processes; where
it is further than ``RATIO_TOLERANCE`` from 1, ``phase_compare`` and ``phase_explanation`` say
which of the real runtime's profiled phases hold the difference.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import NotAvailable
from ..kernels import out_nbytes, pos_nbytes
from ..schema import MODEL_INVOCATIONS, PHASE_COMPARE, RATIO, SUMMARY, frame
from ..stats import median_ci, ratio_ci
from ..units import fmt_ns
from .offload_build import find_build
from .real_runtime import RealRun
from .repeats import spreads

__all__ = ["MODELS", "steady", "plan_vendor", "model_plan", "replica_model", "summary", "model_real_ratio", "phase_compare",
           "phase_explanation", "copies_table", "beside", "RATIO_TOLERANCE"]

# -- the policies that model the variants (offload_build.VARIANTS) --------------------------------------------------
MODELS = {   # (vendor, variant) -> (policy, user_pinned, threshold_nbytes or None for the default)
    ("nvidia", "plain"): ("driver_pageable", False, None),       # the CUDA plugin never pins
    ("nvidia", "app_pinned"): ("prepinned", True, None),
    ("nvidia", "lock_mapped"): ("driver_pageable", False, None),  # its dataLockImpl returns the pointer
    ("amd", "plain"): ("nextgen", False, None),
    ("amd", "app_pinned"): ("nextgen", True, None),              # pinned before the map: an external entry
    ("amd", "lock_mapped"): ("nextgen_lock_mapped", False, None),
    ("amd", "async_threshold0"): ("nextgen", False, 0),
    ("host", "plain"): ("driver_pageable", False, None),         # the x86_64 plugin: memcpy
    ("host", "app_pinned"): ("prepinned", True, None),
    ("host", "lock_mapped"): ("driver_pageable", False, None),
}


def plan_vendor(vendor: str, ran: RealRun | None = None) -> str:
    """The vendor whose runtime the model plays: ``vendor`` unless "auto"; then the real run's,
    the build's, or nvidia (the project's H200) where there is neither."""
    if vendor != "auto":
        return vendor
    if ran is not None and ran.vendor:
        return ran.vendor
    try:
        return find_build().vendor
    except NotAvailable:
        return "nvidia"


def model_plan(vendor: str, variants) -> pd.DataFrame:
    """Which replica run models each variant on this vendor's runtime (MODELS); a variant the
    vendor's runtime does not have gets a ``note``."""
    rows = []
    for v in variants:
        key = (vendor, v)
        if key in MODELS:
            policy, pinned, thr = MODELS[key]
            rows.append({"variant": v, "policy": policy, "user_pinned": pinned, "threshold_nbytes": thr, "note": ""})
        else:
            rows.append({"variant": v, "policy": "", "user_pinned": None, "threshold_nbytes": None,
                         "note": f"no such switch in the {vendor} runtime"})
    return pd.DataFrame(rows).astype({"threshold_nbytes": "Int64", "user_pinned": "boolean"})


def replica_model(rt, plan: pd.DataFrame, *, nw_values, steps: int, invocations: int,
                  verify: str = "first", kernel_only: bool = True) -> pd.DataFrame:
    """Run pinpath's replica once per distinct (policy, user_pinned, threshold) of ``plan`` and
    return MODEL_INVOCATIONS: per invocation the host time of its H2D, kernel, D2H (and any other
    event of the invocation, e.g. the region's wait), each variant labelled. ``kernel_only``: each
    invocation also runs without its copies beside it (on the engine, timed in C), its time
    ``kernel_only_ns`` (NA where it did not run), so that ``ns - kernel_only_ns`` is the copies' part."""
    from .replica import replica
    rows = []
    plan = plan[plan.policy != ""]
    for (policy, pinned, thr), group in plan.groupby(["policy", "user_pinned", "threshold_nbytes"], dropna=False):
        kw = {} if pd.isna(thr) else {"threshold_nbytes": int(thr)}
        transfers, _ = replica(rt, policies=[policy], nw_values=list(nw_values), steps=steps,
                               invocations_per_step=invocations, user_pinned=[bool(pinned)], verify=verify,
                               kernel_only=kernel_only, **kw)
        t = transfers[(transfers.invocation >= 0) & (transfers.step >= 0) & transfers.event.isin(_MODEL_EVENTS)]
        alone = t.kernel_only.eq(True) if "kernel_only" in t.columns else pd.Series(False, index=t.index)
        key = ["nw", "step", "invocation"]
        only = t[alone].groupby(key).total_ns.sum()
        t = t[~alone]
        t = t.assign(phase=np.where(t.event == "transfer", t.direction, t.event))
        per = t.pivot_table(index=key, columns="phase", values="total_ns", aggfunc="sum",
                            fill_value=0).reset_index()
        per["kernel_only_ns"] = pd.Series(only.reindex(pd.MultiIndex.from_frame(per[key])).to_numpy(),
                                          index=per.index).astype("Int64") if len(only) else pd.NA
        for variant in group.variant:
            rows += [{"variant": variant, "policy": policy, "user_pinned": bool(pinned),
                      "threshold_nbytes": None if pd.isna(thr) else int(thr), "nw": int(r["nw"]), "step": int(r["step"]),
                      "invocation": int(r["invocation"]), "repeat": int(r["step"]),
                      **{f"{p}_ns": int(r.get(p, 0)) for p in ("h2d", "kernel", "d2h", "sync")},
                      "ns": int(sum(r.get(p, 0) for p in ("h2d", "kernel", "d2h", "sync"))),
                      "kernel_only_ns": r["kernel_only_ns"], "platform": rt.name}
                     for _, r in per.iterrows()]
    return frame(rows, MODEL_INVOCATIONS)


#: the events of one invocation of the replica (maps, unmaps and the application's own pins are outside)
_MODEL_EVENTS = ("transfer", "kernel", "sync")
#: the model's phase -> the LIBOMPTARGET_PROFILE events of an invocation that do the same work
_REAL_PHASES = {"h2d": ("HostToDev",), "kernel": ("Kernel Target",), "d2h": ("DevToHost",),
                "sync": ("Runtime: syncronize",), "region": ("Runtime: target exe",)}


def phase_compare(model: pd.DataFrame, phases: pd.DataFrame, *, skip_first: int = 1) -> pd.DataFrame:
    """Where the model and the real runtime differ, phase by phase: per variant and nw, the median
    per invocation of the model's H2D, kernel, D2H, wait and whole invocation beside the real
    runtime's LIBOMPTARGET_PROFILE events of the same work (the traced process; the profile counts
    whole microseconds). A phase the real runtime spends more in explains a ratio below 1."""
    if "not_applicable" in phases.columns or not len(phases) or not len(model):
        return frame([], PHASE_COMPARE)
    p = steady(phases[phases.segment == "invocation"], skip_first)
    m = steady(model, skip_first)
    rows = []
    for (variant, nw), g in p.groupby(["variant", "nw"]):
        mg = m[(m.variant == variant) & (m.nw == nw)]
        if not len(mg):
            continue
        for phase, names in _REAL_PHASES.items():
            per = g[g.phase.isin(names)].groupby(["step", "invocation"]).dur_ns.sum()
            model_ns = float(mg.ns.median() if phase == "region" else mg[f"{phase}_ns"].median())
            real_ns = float(per.median()) if len(per) else float("nan")
            rows.append({"variant": variant, "nw": int(nw), "phase": phase, "model_ns": model_ns, "real_ns": real_ns,
                         "difference_ns": real_ns - model_ns, "real_events": ", ".join(names)})
    return frame(rows, PHASE_COMPARE)


#: how far model / real may be from 1 before the difference is explained phase by phase (issue 16)
RATIO_TOLERANCE = 0.15


def phase_explanation(ratio: pd.DataFrame, compare: pd.DataFrame, *, tolerance: float = RATIO_TOLERANCE) -> str:
    """Markdown, one line per variant and nw: model / real with its interval, and where it is
    further than ``tolerance`` from 1, which phases of the real runtime's profile hold the
    difference (largest first) and what is left outside them (the runtime's bookkeeping of the
    region: finding the mappings, argument set-up, its events). From model_real_ratio's and
    phase_compare's frames; "" where there is no ratio (no real run here: the frame says why)."""
    if not len(ratio) or "ratio" not in ratio.columns:
        return ""
    lines = []
    for r in ratio.itertuples():
        head = (f"- **{r.variant}, nw={r.nw}**: model / real {r.ratio:.2f} (95 % CI {r.ratio_lo:.2f}-{r.ratio_hi:.2f}, "
                f"over {r.interval_over})")
        if abs(r.ratio - 1) <= tolerance:
            lines.append(head + f": within 1 ± {tolerance:g}.")
            continue
        c = compare[(compare.variant == r.variant) & (compare.nw == r.nw)].set_index("phase")
        if "region" not in c.index or not np.isfinite(c.loc["region", "real_ns"]):
            lines.append(head + ": outside; the traced run has no profile to say where.")
            continue
        parts = c.drop(index="region").dropna(subset=["difference_ns"]).sort_values("difference_ns", ascending=False)
        total = float(c.loc["region", "difference_ns"])
        named = ", ".join(f"{row.real_events} {'+' if row.difference_ns >= 0 else '-'}{fmt_ns(abs(row.difference_ns))}"
                          for row in parts.itertuples())
        rest = total - float(parts.difference_ns.sum())
        lines.append(head + f": outside. In the traced run the real invocation (`Runtime: target exe`) took "
                     f"{fmt_ns(c.loc['region', 'real_ns'])} against the model's {fmt_ns(c.loc['region', 'model_ns'])} "
                     f"({'+' if total >= 0 else '-'}{fmt_ns(abs(total))}); by phase: {named}; outside the profiled phases "
                     f"{'+' if rest >= 0 else '-'}{fmt_ns(abs(rest))} (the runtime's own bookkeeping of the region).")
    return "\n".join(lines)


def steady(df: pd.DataFrame, skip_first: int) -> pd.DataFrame:
    """Without the first ``skip_first`` invocations of step 0 (first-touch and warm-up)."""
    return df[~((df.step == 0) & (df.invocation < skip_first))]


def _repeat_samples(df: pd.DataFrame) -> tuple[np.ndarray, list[np.ndarray], str]:
    """What a figure's interval is taken over, the per-repeat samples, and the word for it: the
    per-process medians where the frame holds two or more processes (``process`` column), else
    the invocations of its one process."""
    unit = next((c for c in ("process", "repeat") if c in df.columns), None)
    per = [g.ns.to_numpy(dtype=float) for _, g in df.groupby(unit)] if unit else [df.ns.to_numpy(dtype=float)]
    per = [x for x in per if len(x)]
    if len(per) >= 2:
        return np.array([np.median(x) for x in per]), per, "processes" if unit == "process" else "repeats"
    return (per[0] if per else np.array([])), per, "invocations"


def summary(model: pd.DataFrame, real: RealRun | pd.DataFrame, *, skip_first: int = 1) -> pd.DataFrame:
    """Median per-invocation time per source (model, real, real_traced), variant and nw, with a
    bootstrap 95 % interval (``stats.median_ci``) over the repeats: the median of the per-process
    medians and its interval over the processes where two or more ran, else over the invocations
    of the one process (``interval_over`` says which); the spread within a process and between
    processes beside it."""
    parts = [("model", model)]
    inv = real.invocations if isinstance(real, RealRun) else real
    if "not_applicable" not in inv.columns and len(inv):
        parts += [("real", inv[~inv.traced.astype(bool)]), ("real_traced", inv[inv.traced.astype(bool)])]
    rows = []
    for source, df in parts:
        for (variant, nw), g in steady(df, skip_first).groupby(["variant", "nw"]):
            values, per, over = _repeat_samples(g)
            e = median_ci(values)
            if e.n:
                within, between = spreads(per)
                rows.append({"source": source, "variant": variant, "nw": nw, "n": int(sum(map(len, per))),
                             "median_ns": e.value, "lo_ns": e.low, "hi_ns": e.high, "repeats": len(per),
                             "interval_over": over, "within_spread": within, "between_spread": between})
    return frame(rows, SUMMARY)


def model_real_ratio(model: pd.DataFrame, real: RealRun | pd.DataFrame, *, skip_first: int = 1) -> pd.DataFrame:
    """Model / real per variant and nw, with a bootstrap 95 % interval (``stats.ratio_ci``, both
    sides resampled): on each side the samples are the per-process medians where two or more
    processes ran, else the invocations of the one process, so the ratio carries the real
    runtime's interval over processes. Only the untraced real runs count. Where the real runtime
    could not run, its one-row reason frame."""
    inv = real.invocations if isinstance(real, RealRun) else real
    if "not_applicable" in inv.columns:
        return inv
    inv = steady(inv[~inv.traced.astype(bool)], skip_first)
    model = steady(model, skip_first)
    rows = []
    for (variant, nw), r in inv.groupby(["variant", "nw"]):
        m = model[(model.variant == variant) & (model.nw == nw)]
        if not len(m) or not len(r):
            continue
        (mv, mper, _), (rv, rper, over) = _repeat_samples(m), _repeat_samples(r)
        e, er = ratio_ci(mv, rv), median_ci(rv)
        rows.append({"variant": variant, "nw": nw, "policy": m.policy.iloc[0], "user_pinned": bool(m.user_pinned.iloc[0]),
                     "model_median_ns": float(np.median(mv)), "real_median_ns": er.value,
                     "real_lo_ns": er.low, "real_hi_ns": er.high, "real_processes": len(rper),
                     "interval_over": over, "ratio": e.value, "ratio_lo": e.low, "ratio_hi": e.high,
                     "n_model": int(sum(map(len, mper))), "n_real": int(sum(map(len, rper)))})
    return frame(rows, RATIO)


def copies_table(copies: pd.DataFrame) -> pd.DataFrame:
    """Copies per region invocation by direction, beside what the replica moves (one H2D of
    24 nw bytes, one D2H of 15,360 nw bytes); ``as_replica`` says whether they agree."""
    if "not_applicable" in copies.columns:
        return copies
    c = copies[copies.segment == "invocation"]
    cols = ["variant", "nw", "h2d_per_invocation", "h2d_nbytes", "d2h_per_invocation", "d2h_nbytes",
            "replica_h2d_nbytes", "replica_d2h_nbytes", "as_replica", "names"]
    if not len(c):
        return pd.DataFrame(columns=cols)
    rows = []
    for (variant, nw), g in c.groupby(["variant", "nw"]):
        n_inv = g[["step", "invocation"]].drop_duplicates().shape[0]
        h, d = g[g.direction == "h2d"], g[g.direction == "d2h"]
        want_h, want_d = pos_nbytes(nw), out_nbytes(nw)
        per_h, per_d = len(h) / n_inv, len(d) / n_inv
        rows.append({"variant": variant, "nw": nw, "h2d_per_invocation": per_h, "h2d_nbytes": sorted(set(h.nbytes)),
                     "d2h_per_invocation": per_d, "d2h_nbytes": sorted(set(d.nbytes)),
                     "replica_h2d_nbytes": want_h, "replica_d2h_nbytes": want_d,
                     "as_replica": bool(per_h == 1 and per_d == 1 and set(h.nbytes) == {want_h}
                                        and set(d.nbytes) == {want_d}),
                     "names": " ".join(sorted(set(g.name)))})
    return pd.DataFrame(rows, columns=cols)



def beside(model: pd.DataFrame, real: RealRun | pd.DataFrame) -> pd.DataFrame:
    """Model and (untraced) real per-invocation rows in one frame for a figure: columns
    source, variant, nw, label ("variant, nw=N"), ns."""
    inv = real.invocations if isinstance(real, RealRun) else real
    parts = [model.assign(source="model")[["source", "variant", "nw", "ns"]]]
    if "not_applicable" not in inv.columns and len(inv):
        parts.append(inv[~inv.traced.astype(bool)].assign(source="real")[["source", "variant", "nw", "ns"]])
    df = pd.concat(parts, ignore_index=True)
    df["label"] = df.variant + ", nw=" + df.nw.astype(str)
    return df
