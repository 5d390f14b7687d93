"""The model with the real runtime's measured per-region work put in (issue 33 item 2).

The replica (the model) times each invocation and, beside it, the same invocation without its
copies (``kernel_only_ns``: launch, kernel, wait); ``ns - kernel_only_ns`` is the model's transfer
part. The real region runs ``--paired`` in processes of its own: beside each invocation the same
region over present arrays (``kernel_ns``: the runtime's lookup, argument set-up, launch, the
clang-built kernel and synchronize). Its traced profile holds both regions, so the time of each
outside its profiled events (lookup, argument set-up, the runtime's own events) is measured too.

The terms, each a measurement, added in turn to the model's figure per invocation:

0. the model as it is (``model``);
1. ``present-only region``: the real present-only region in place of the replica's kernel alone
   (the model's transfer part + the real present-only region);
2. ``bookkeeping``: what the copies add to a region's time outside its profiled events (the full
   region's less the present-only region's, medians over the traced run's invocations);
3. ``blocking wait``: the replica's copies in the state the real runtime runs them in, fresh
   processes whose context waits as LLVM's CUDA plugin makes it (CU_CTX_SCHED_BLOCKING_SYNC), in place
   of the notebook process's copies in CUDA's default mode: the transfer part of the blocking
   processes of ``experiments.wait_mode`` (median of the process medians) replaces the model's
   transfer part. ``wait_phases`` splits off the wait mode's own share (blocking less auto, both
   fresh); the rest is the process's state (a fresh process against the notebook's).

A term that was not measured adds nothing: the next one is added to the last figure measured.
What is left after them is the transfers themselves: the real runtime's copies (real - present-only
region - bookkeeping) against the replica's (in the blocking processes where they ran, else the model
less its kernel alone).
Each figure is a sum of medians; its interval is bootstrapped over the model's repeats, the real
processes, the traced invocations and the wait-mode processes, each resampled apart
(``stats.median_draws``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..runtimes import WAIT_MODES
from ..schema import REAL_REGIONS, REAL_TERMS, WAIT_PHASES, frame
from ..stats import interval, median_draws
from ..units import fmt_ns
from .replica_compare import steady

__all__ = ["region_work", "model_terms", "wait_steady", "terms_explanation", "wait_phases", "wait_explanation", "context_said", "TERMS",
           "TOLERANCE"]

#: the terms in the order they are added (step 0 is the model alone)
TERMS = ("model", "present-only region", "bookkeeping", "blocking wait")
TOLERANCE = 0.15   #: model / real within 1 ± this is "within" (issue 33)
_EXE = "Runtime: target exe"
_REGION = {"invocation": "full", "present": "present_only"}


_KEYS = ["variant", "nw", "segment", "step", "invocation"]


def region_work(phases: pd.DataFrame) -> pd.DataFrame:
    """REAL_REGIONS: per region of a traced run's invocations (REAL_PHASES rows, segments
    "invocation": the full region, and "present": the present-only one of a ``--paired`` run), its
    time (``Runtime: target exe``), the time its profiled events cover (the union of their
    intervals, clipped to the region) and the rest, ``bookkeeping_ns``. The profile counts whole
    microseconds. A region with other than one ``Runtime: target exe`` is left out."""
    if "not_applicable" in phases.columns:
        return frame([], REAL_REGIONS)
    p = phases[phases.segment.isin(list(_REGION))]
    is_exe = p.phase == _EXE
    exe = p[is_exe].assign(t0=lambda d: d.start_us.astype(np.int64) * 1000)
    exe = exe.assign(t1=exe.t0 + exe.dur_ns.astype(np.int64))
    exe = exe[~exe.duplicated(_KEYS, keep=False)][_KEYS + ["t0", "t1"]]
    kids = p[~is_exe].merge(exe, on=_KEYS)
    start = np.clip(kids.start_us.to_numpy(dtype=np.int64) * 1000, kids.t0, kids.t1)
    kids = kids.assign(s=start, e=np.clip(start + kids.dur_ns.to_numpy(dtype=np.int64), kids.t0, kids.t1))
    kids = kids.sort_values(_KEYS + ["s"], kind="stable")
    # the union's length: each interval adds what reaches past every earlier one's end (sorted by start)
    reach = kids.groupby(_KEYS, sort=False).e.cummax().groupby([kids[k] for k in _KEYS], sort=False).shift(1)
    kids = kids.assign(add=(kids.e - np.maximum(kids.s, reach.fillna(kids.s))).clip(lower=0))
    covered = kids.groupby(_KEYS).add.sum()
    out = exe.set_index(_KEYS).join(covered.rename("events_ns")).fillna({"events_ns": 0}).reset_index()
    out = out.assign(region=out.segment.map(_REGION), region_ns=out.t1 - out.t0, events_ns=out.events_ns.astype(np.int64))
    out = out.assign(bookkeeping_ns=out.region_ns - out.events_ns)
    return frame(out.sort_values(_KEYS)[list(REAL_REGIONS)].to_dict("records"), REAL_REGIONS)


def _unit_medians(df: pd.DataFrame, column: str, unit: str) -> np.ndarray:
    """The medians of ``column`` per ``unit`` (process or repeat), NaN left out."""
    x = df[[unit, column]].dropna()
    return x.groupby(unit)[column].median().to_numpy(dtype=float)


def _estimate(draws: np.ndarray, value: float) -> tuple[float, float, float]:
    lo, hi = interval(draws)
    return float(value), lo, hi


def wait_steady(wait: pd.DataFrame | None, skip_first: int) -> tuple[pd.DataFrame | None, str]:
    """The wait-mode processes' steady invocations with their transfer part, or None and why not."""
    if wait is None:
        return None, "the wait mode was not measured"
    if "not_applicable" in wait.columns:
        return None, str(wait.not_applicable.iloc[0])
    w = steady(wait, skip_first)
    return w.assign(transfer_ns=w.ns - w.kernel_only_ns.astype("Float64")), ""


def _wait_units(w: pd.DataFrame, variant, nw, column: str) -> tuple[np.ndarray, np.ndarray]:
    """The process medians of ``column`` at one point in each wait mode (WAIT_MODES' order)."""
    g = w[(w.variant == variant) & (w.nw == nw)]
    return tuple(_unit_medians(g[g.wait == m], column, "repeat") for m in WAIT_MODES)


def _wait_difference(w: pd.DataFrame, variant, nw, column: str, seed: int):
    """Blocking less auto of ``column`` at one point: (value, draws, processes per mode, the two
    medians), medians of the process medians; NaN where a mode has no process there."""
    auto_u, blocking_u = _wait_units(w, variant, nw, column)
    n = (len(auto_u), len(blocking_u))
    medians = tuple(float(np.median(u)) if len(u) else np.nan for u in (auto_u, blocking_u))
    if not all(n):
        return np.nan, np.full(1, np.nan), n, medians
    return (medians[1] - medians[0], median_draws(blocking_u, seed=seed) - median_draws(auto_u, seed=seed + 1),
            n, medians)


def model_terms(model: pd.DataFrame, real, regions: pd.DataFrame | None = None, *,
                wait: pd.DataFrame | None = None, skip_first: int = 1, tolerance: float = TOLERANCE) -> pd.DataFrame:
    """REAL_TERMS: per variant and nw, model / real with each measured term added in turn
    (``TERMS``), each with its interval. ``model``: MODEL_INVOCATIONS (with ``kernel_only_ns``);
    ``real``: a RealRun (its untimed ``invocations`` the denominator, ``present`` the present-only
    region); ``regions``: REAL_REGIONS of the traced paired run (default: from
    ``real.present_phases``); ``wait``: WAIT_MODEL (``wait_mode.wait_model``) or its reason frame.
    A term that was not measured (no paired process, no trace, no wait mode) has NaN figures and
    says so in ``note``. The first ``skip_first`` invocations of each process (warm-up)
    are left out on every side; a reason frame where the real runtime could not run."""
    inv = real.invocations
    if "not_applicable" in inv.columns:
        return inv
    present = real.present if "not_applicable" not in real.present.columns else real.present.iloc[:0]
    if regions is None:
        regions = region_work(real.present_phases)
    inv = steady(inv[~inv.traced.astype(bool)], skip_first)
    present = steady(present[~present.traced.astype(bool)], skip_first) if len(present) else present
    model, regions = steady(model, skip_first), steady(regions, skip_first)
    w, wait_why = wait_steady(wait, skip_first)
    rows = []
    for (variant, nw), r in inv.groupby(["variant", "nw"]):
        m = model[(model.variant == variant) & (model.nw == nw)]
        if not len(m) or not len(r):
            continue
        real_u = _unit_medians(r, "ns", "process")
        real_draws = median_draws(real_u, seed=1)
        real_ns = float(np.median(real_u))
        m = m.assign(transfer_ns=m.ns - m.kernel_only_ns.astype("Float64"))
        model_u, transfer_u = _unit_medians(m, "ns", "repeat"), _unit_medians(m, "transfer_ns", "repeat")
        kernel_u = _unit_medians(m, "kernel_only_ns", "repeat")
        p = present[(present.variant == variant) & (present.nw == nw)] if len(present) else present
        present_u = _unit_medians(p, "kernel_ns", "process") if len(p) else np.array([])
        paired_u = _unit_medians(p, "ns", "process") if len(p) else np.array([])
        g = regions[(regions.variant == variant) & (regions.nw == nw)]
        full_bk, pres_bk = (g[g.region == k].bookkeeping_ns.to_numpy(dtype=float) for k in ("full", "present_only"))
        # the numerator of each step: (value, draws, the measured figure, what it replaces, note)
        steps = [(np.median(model_u), median_draws(model_u, seed=2), np.median(model_u), 0.0, "")]
        ok1 = len(present_u) and len(transfer_u)
        base = (np.median(transfer_u) + np.median(present_u)) if ok1 else np.nan
        base_draws = median_draws(transfer_u, seed=3) + median_draws(present_u, seed=4) if ok1 else np.full(1, np.nan)
        steps.append((base, base_draws, np.median(present_u) if len(present_u) else np.nan,
                      np.median(kernel_u) if len(kernel_u) else np.nan,
                      "" if ok1 else "no present-only region or no kernel-alone invocation measured"))
        ok2 = ok1 and len(full_bk) and len(pres_bk)
        bk = (np.median(full_bk) - np.median(pres_bk)) if ok2 else np.nan
        bk_draws = median_draws(full_bk, seed=5) - median_draws(pres_bk, seed=6) if ok2 else np.full(1, np.nan)
        steps.append((base + bk, base_draws + bk_draws, bk, 0.0, "" if ok2 else "no traced --paired run"))
        auto_w, blocking_w = _wait_units(w, variant, nw, "transfer_ns") if w is not None else ([], [])
        wait_n = (len(auto_w), len(blocking_w))
        on = next(st for st in reversed(steps) if np.isfinite(st[0]))   # the last step measured
        if all(wait_n) and len(transfer_u):   # the blocking processes' copies in place of the notebook's
            blk, own = np.median(blocking_w), np.median(transfer_u)
            steps.append((on[0] + blk - own, on[1] + median_draws(blocking_w, seed=7) - median_draws(transfer_u, seed=3),
                          blk, own, ""))
        else:
            steps.append((np.nan, np.full(1, np.nan), np.nan, np.nan,
                          wait_why or "no process of one of the wait modes at this point"))
        prev = np.nan
        for k, (value, draws, measured, replaced, note) in enumerate(steps):
            ratio, lo, hi = _estimate(draws / real_draws, value / real_ns)
            num, num_lo, num_hi = _estimate(draws, value)
            rows.append({"variant": variant, "nw": int(nw), "step": k, "term": TERMS[k], "measured_ns": float(measured),
                         "replaced_ns": float(replaced), "term_ns": float(value - prev) if k else np.nan,
                         "model_ns": num, "model_lo_ns": num_lo, "model_hi_ns": num_hi, "real_ns": real_ns,
                         "real_paired_ns": float(np.median(paired_u)) if len(paired_u) else np.nan,
                         "ratio": ratio, "ratio_lo": lo, "ratio_hi": hi,
                         "within": bool(np.isfinite(ratio) and abs(ratio - 1) <= tolerance),
                         "model_repeats": len(model_u), "real_processes": len(real_u),
                         "present_processes": len(present_u), "traced_invocations": min(len(full_bk), len(pres_bk)),
                         "wait_processes": min(wait_n), "note": note})
            prev = value if np.isfinite(value) else prev
    return frame(rows, REAL_TERMS)


def _r(row) -> str:
    return f"{row.ratio:.2f} (95 % CI {row.ratio_lo:.2f}-{row.ratio_hi:.2f})"


def _signed(ns: float) -> str:
    return f"{'+' if ns >= 0 else '-'}{fmt_ns(abs(ns))}"


def _headline(terms: pd.DataFrame, tolerance: float) -> str:
    """How many points the model alone and the model with every measured term have within 1 ± tolerance."""
    points = terms.groupby(["variant", "nw"], sort=False)
    alone = sum(bool(g[g.step == 0].within.any()) for _, g in points)
    last = [g[np.isfinite(g.ratio.to_numpy(dtype=float))].sort_values("step").iloc[-1] for _, g in points]
    with_terms = sum(bool(r.within) for r in last)
    if not any(r.step for r in last):
        return f"**Within 1 ± {tolerance:g}: the model alone {alone} of {len(last)} points; no measured term here.**"
    return (f"**Within 1 ± {tolerance:g}: {with_terms} of {len(last)} points with the measured terms "
            f"(the model alone: {alone} of {len(last)}).**")


def _term_words(k: int, row) -> str:
    """What step ``k`` put into the model, in words with its measured figure."""
    if k == 1:
        return (f"with the real present-only region ({fmt_ns(row.measured_ns)}: lookup, launch, kernel, synchronize; "
                f"over {row.present_processes} processes) in place of the replica's kernel alone "
                f"({fmt_ns(row.replaced_ns)}: launch, kernel, wait)")
    if k == 2:
        return (f"with the bookkeeping the copies add to a region (its time outside the profiled events, full region "
                f"less present-only: {_signed(row.measured_ns)}; {row.traced_invocations} traced invocations)")
    return (f"with the replica's copies as the real runtime runs them, in fresh processes in the blocking wait "
            f"({fmt_ns(row.measured_ns)}; {row.wait_processes} processes), in place of the notebook process's copies "
            f"in CUDA's default mode ({fmt_ns(row.replaced_ns)})")


def terms_explanation(terms: pd.DataFrame, *, tolerance: float = TOLERANCE) -> str:
    """Markdown, one line per variant and nw: model / real bare, then with each measured term, how
    much of the gap each term closed, and where the composed model is still outside 1 ± tolerance,
    what is left (the transfers themselves). "" where there are no terms (the frame says why)."""
    if not len(terms) or "term" not in terms.columns:
        return ""
    lines = [_headline(terms, tolerance)]
    for (variant, nw), g in terms.groupby(["variant", "nw"], sort=False):
        s = g.set_index("step")
        bare, real_ns = s.loc[0], float(s.loc[0, "real_ns"])
        gap = real_ns - bare.model_ns
        text = [f"- **{variant}, nw={nw}**: model / real {_r(bare)} (model {fmt_ns(bare.model_ns)}, real "
                f"{fmt_ns(real_ns)} over {bare.real_processes} processes)"]
        measured = [k for k in s.index if k and np.isfinite(s.loc[k, "ratio"])]
        for k in range(1, len(TERMS)):
            row = s.loc[k] if k in s.index else None
            if k not in measured:
                text.append(f"{TERMS[k]}: not measured ({row.note if row is not None else 'no row'})")
                continue
            share = f" ({100 * row.term_ns / gap:.0f} % of the gap)" if gap else ""
            text.append(f"{_term_words(k, row)}: {_signed(row.term_ns)}{share}, {_r(row)}")
        last = max(measured, default=0)   # the last step with a figure
        end = s.loc[last]
        inside = abs(end.ratio - 1) <= tolerance
        if not last:
            verdict = f"within 1 ± {tolerance:g}" if inside else f"outside 1 ± {tolerance:g}, and no measured term to add"
        else:
            left = real_ns - end.model_ns
            verdict = (f"within 1 ± {tolerance:g} with the measured terms" if inside else
                       f"still outside 1 ± {tolerance:g}: the model with the terms is {fmt_ns(abs(left))} "
                       f"{'short of' if left > 0 else 'over'} the real invocation, in the transfers themselves")
            if 1 in measured:
                bookkeeping = s.loc[2, "measured_ns"] if 2 in measured else 0.0
                copies_real = real_ns - s.loc[1, "measured_ns"] - bookkeeping
                copies_model = s.loc[3, "measured_ns"] if 3 in measured else s.loc[1, "model_ns"] - s.loc[1, "measured_ns"]
                verdict += (f" (the real runtime's copies, the real invocation less the present-only region and the "
                            f"bookkeeping: {_signed(copies_real)}, against the replica's {fmt_ns(copies_model)}"
                            f"{' in the blocking wait mode' if 3 in measured else ''})")
        lines.append("; ".join(text) + f". {verdict[0].upper()}{verdict[1:]}.")
    return "\n".join(lines)


def wait_phases(wait: pd.DataFrame, *, skip_first: int = 1) -> pd.DataFrame:
    """WAIT_PHASES: per variant, nw and phase of an invocation (h2d, kernel, d2h, sync, the transfer
    part, the whole invocation) the medians of the process medians in each wait mode and blocking
    less auto with its bootstrap 95 % interval; the reason frame where the wait mode was not measured."""
    w, why = wait_steady(wait, skip_first)
    if w is None:
        return pd.DataFrame([{"not_applicable": why}])
    rows = []
    for (variant, nw), g in w.groupby(["variant", "nw"]):
        for k, (phase, column) in enumerate(_WAIT_PHASES.items()):
            value, draws, n, (auto, blocking) = _wait_difference(g, variant, nw, column, seed=20 + 2 * k)
            lo, hi = interval(draws)
            rows.append({"variant": variant, "nw": int(nw), "phase": phase, "auto_ns": auto,
                         "blocking_ns": blocking, "difference_ns": value, "difference_lo_ns": lo,
                         "difference_hi_ns": hi, "auto_processes": n[0], "blocking_processes": n[1]})
    return frame(rows, WAIT_PHASES)


#: WAIT_PHASES' phases -> the column of WAIT_MODEL (after ``_wait_steady``)
_WAIT_PHASES = {"h2d": "h2d_ns", "kernel": "kernel_ns", "d2h": "d2h_ns", "sync": "sync_ns", "transfer": "transfer_ns",
                "invocation": "ns"}


def wait_explanation(phases: pd.DataFrame) -> str:
    """Markdown, one line per variant and nw: which phases the blocking wait moved (blocking less
    auto, its interval clear of 0) and which it did not; "" where it was not measured."""
    if not len(phases) or "phase" not in phases.columns:
        return ""
    lines = []
    for (variant, nw), g in phases.groupby(["variant", "nw"], sort=False):
        moved, still = [], []
        for r in g.itertuples():
            figure = f"{r.phase} {_signed(r.difference_ns)} ({_signed(r.difference_lo_ns)} to {_signed(r.difference_hi_ns)})"
            (moved if r.difference_lo_ns > 0 or r.difference_hi_ns < 0 else still).append(figure)
        lines.append(f"- **{variant}, nw={nw}** (blocking less auto, {int(g.auto_processes.min())} and "
                     f"{int(g.blocking_processes.min())} processes): moved: {', '.join(moved) or 'none'}; "
                     f"not clear of 0: {', '.join(still) or 'none'}")
    return "\n".join(lines)


def context_said(runs: pd.DataFrame) -> str:
    """Markdown: how the real runtime's CUDA plugin left the context's wait mode in each traced run
    (REAL_RUNS ``context_wait``, from its LIBOMPTARGET_INFO bit-16 lines), the state the blocking-wait
    term puts the model in; "" where no traced run said (another plugin, no trace)."""
    if "context_wait" not in runs.columns:
        return ""
    said = runs[runs.traced.astype(bool) & (runs.context_wait != "")]
    if not len(said):
        return ""
    by = said.groupby("context_wait", sort=False).variant.agg(lambda v: ", ".join(dict.fromkeys(v)))
    return "The real runtime's context, as its CUDA plugin said in the traced runs: " + "; ".join(
        f"{words} ({variants})" for words, variants in by.items()) + "."
