"""Model / real like with like: the blocking wait's two wake modes (issue 33 item 2).

In the blocking wait (the state LLVM's CUDA plugin puts the context in) a process's copies part, its
invocation less the same invocation without copies, can fall into two groups about 20-25 us apart:
the wait after the copies wakes soon or late, and each process keeps mostly one of the two. On the
H100 of ``outputs/reference/cuda-b`` both sides show it at nw=16: the real runtime's ``--paired``
processes (the full region less the present-only region: 10-12 us in three processes, 34-36 us in
two, app_pinned) and the replica's blocking-wait processes (the transfer part: 6.3 us in one, 28.5-33.1
us in two). ``tools/wait_diag.py`` found that the mode follows where the process may run (pinned to one
CPU other than the GPU's interrupt CPU: the late mode in every process), not a CPU the guest can see
as different (all 16 alike, no idle states). A median over three processes lands in either mode by
chance, and a model whose copies come from one mode, compared with a real side in the other, is off
by the gap: that is the pooled comparison of ``real_terms.model_terms``, kept as it is.

Here the two sides are compared in the same mode. ``split``: the copies parts of both sides'
processes (each process's median), pooled and sorted, are two modes where the largest gap between
neighbours is at least ``GAP_SPREAD`` times the larger spread (largest less smallest) of the two
groups it leaves, and at least ``GAP_MIN_NS``; else one. Per mode (``mode_terms``), the model is
the mode's real processes' present-only region + the bookkeeping (``real_terms``' step 2) + the
mode's blocking processes' transfer part, against the mode's real processes' full region; medians of
process medians, the interval bootstrapped over the processes of the mode on each side (none where
a side has one process). A mode with processes of one side only is named, not compared.

The split reads the copies parts it then compares: inside a mode the two sides' copies differ by at
most the mode's spread. What the per-mode ratio tests fully is the rest of the model (the present-
only region, the bookkeeping); the finding about the copies is that both sides have the same modes,
at the places ``real_copies_ns`` and ``model_copies_ns`` give.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..schema import REAL_MODES, frame
from ..stats import interval, median_draws
from ..units import fmt_ns
from .real_terms import TOLERANCE, steady, unit_medians, wait_steady

__all__ = ["split", "mode_terms", "modes_explanation", "GAP_SPREAD", "GAP_MIN_NS"]

GAP_SPREAD = 2.0      #: the gap between two modes is at least this many times the larger spread inside one
GAP_MIN_NS = 5_000    #: and at least this long (a wake late by less is not told from the spread)
_BOOKKEEPING = 2      #: real_terms' step whose measured_ns is the bookkeeping the copies add


def split(copies_ns) -> tuple[float, float, float]:
    """(the cut between two modes, NaN where there is one; the largest gap between neighbours; the
    larger spread of the two groups it leaves) of the per-process copies parts ``copies_ns``."""
    v = np.sort(np.asarray(copies_ns, dtype=float))
    v = v[np.isfinite(v)]
    if len(v) < 3:
        return np.nan, np.nan, np.nan
    gaps = np.diff(v)
    k = int(np.argmax(gaps))
    gap, spread = float(gaps[k]), float(max(np.ptp(v[:k + 1]), np.ptp(v[k + 1:])))
    two = gap >= GAP_SPREAD * spread and gap >= GAP_MIN_NS
    return (float(v[k] + gap / 2) if two else np.nan), gap, spread


def _per_process(present: pd.DataFrame) -> pd.DataFrame:
    """The real --paired processes at one point: each one's copies part, full and present-only region."""
    p = present.assign(copies_ns=present.ns.astype(float) - present.kernel_ns.astype(float))
    return pd.DataFrame({"copies_ns": p.groupby("process").copies_ns.median(),
                         "full_ns": p.groupby("process").ns.median().astype(float),
                         "present_ns": p.groupby("process").kernel_ns.median().astype(float)})


def _compare(real: pd.DataFrame, model: pd.Series, bookkeeping_ns: float, seed: int) -> dict:
    """The figures of one mode: its real processes (``_per_process`` rows) against its blocking processes."""
    if not len(real) or not len(model):
        return {"model_ns": np.nan, "real_ns": np.nan, "ratio": np.nan, "ratio_lo": np.nan, "ratio_hi": np.nan,
                "compared": False}
    model_ns = float(real.present_ns.median() + bookkeeping_ns + model.median())
    real_ns = float(real.full_ns.median())
    lo = hi = np.nan
    if len(real) > 1 and len(model) > 1:
        draws = (median_draws(real.present_ns, seed=seed) + bookkeeping_ns + median_draws(model, seed=seed + 1)) \
            / median_draws(real.full_ns, seed=seed + 2)
        lo, hi = interval(draws)
    return {"model_ns": model_ns, "real_ns": real_ns, "ratio": model_ns / real_ns, "ratio_lo": lo, "ratio_hi": hi,
            "compared": True}


def mode_terms(terms: pd.DataFrame, real, wait: pd.DataFrame | None, *, skip_first: int = 1,
               tolerance: float = TOLERANCE) -> pd.DataFrame:
    """REAL_MODES: per variant and nw, the wake modes ``split`` finds in both sides' copies parts and
    per mode the model with the measured terms against the real region (module docstring).
    ``terms``: REAL_TERMS (its bookkeeping step); ``real``: a RealRun (its ``present``, the --paired
    processes); ``wait``: WAIT_MODEL. The reason frame where a side was not measured."""
    w, why = wait_steady(wait, skip_first)
    present = real.present
    if w is None or "not_applicable" in present.columns or not len(present):
        return pd.DataFrame([{"not_applicable": why or "no --paired process of the real runtime"}])
    present = steady(present[~present.traced.astype(bool)], skip_first)
    blocking = w[w.wait == "blocking"]
    rows = []
    for seed, ((variant, nw), p) in enumerate(present.groupby(["variant", "nw"])):
        procs = _per_process(p)
        model = pd.Series(unit_medians(blocking[(blocking.variant == variant) & (blocking.nw == nw)],
                                       "transfer_ns", "repeat"))
        if not len(model):
            continue
        bk = terms[(terms.variant == variant) & (terms.nw == nw) & (terms.step == _BOOKKEEPING)].measured_ns
        bookkeeping_ns = float(bk.iloc[0]) if len(bk) and np.isfinite(bk.iloc[0]) else 0.0
        cut, gap, spread = split(np.r_[procs.copies_ns.to_numpy(dtype=float), model.to_numpy(dtype=float)])
        modes = {"one": (procs, model)} if np.isnan(cut) else {
            "soon": (procs[procs.copies_ns < cut], model[model < cut]),
            "late": (procs[procs.copies_ns >= cut], model[model >= cut])}
        for mode, (r, m) in modes.items():
            got = _compare(r, m, bookkeeping_ns, seed=40 + 3 * seed)
            rows.append({"variant": variant, "nw": int(nw), "modes": len(modes), "mode": mode, "cut_ns": cut,
                         "gap_ns": gap, "spread_ns": spread, "real_processes": len(r), "model_processes": len(m),
                         "real_copies_ns": float(r.copies_ns.median()) if len(r) else np.nan,
                         "model_copies_ns": float(m.median()) if len(m) else np.nan,
                         "present_ns": float(r.present_ns.median()) if len(r) else np.nan,
                         "bookkeeping_ns": bookkeeping_ns, **got,
                         "within": bool(got["compared"] and abs(got["ratio"] - 1) <= tolerance)})
    return frame(rows, REAL_MODES)


def _mode_words(r) -> str:
    if not r.compared:
        side = "the real runtime's" if r.real_processes else "the replica's"
        n = r.real_processes or r.model_processes
        return f"{r.mode}: {n} of {side} processes only, not compared"
    ci = f" (95 % CI {r.ratio_lo:.2f}-{r.ratio_hi:.2f})" if np.isfinite(r.ratio_lo) else " (one process on a side: no interval)"
    return (f"{r.mode}: copies {fmt_ns(r.real_copies_ns)} real ({r.real_processes} processes) against "
            f"{fmt_ns(r.model_copies_ns)} replica ({r.model_processes}); model {fmt_ns(r.model_ns)} / real "
            f"{fmt_ns(r.real_ns)} = {r.ratio:.2f}{ci}")


def modes_explanation(modes: pd.DataFrame, *, tolerance: float = TOLERANCE) -> str:
    """Markdown: how many points are within 1 ± tolerance in every mode both sides have processes
    in, then per point its modes and each one's figures; "" where the frame says why not."""
    if not len(modes) or "mode" not in modes.columns:
        return ""
    points = list(modes.groupby(["variant", "nw"], sort=False))
    ok = sum(bool(g.compared.any() and g[g.compared].within.all()) for _, g in points)
    lines = [f"**Like with like, by wake mode: {ok} of {len(points)} points within 1 ± {tolerance:g} in every mode "
             f"both sides have processes in.**"]
    for (variant, nw), g in points:
        first = g.iloc[0]
        how = (f"two wake modes, cut at {fmt_ns(first.cut_ns)} of copies (the gap, {fmt_ns(first.gap_ns)}, is at least "
               f"{GAP_SPREAD:g} times the spread inside a mode, {fmt_ns(first.spread_ns)})" if first.modes == 2 else
               "one wake mode")
        lines.append(f"- **{variant}, nw={nw}**: {how}; " + "; ".join(_mode_words(r) for r in g.itertuples()) + ".")
    return "\n".join(lines)
