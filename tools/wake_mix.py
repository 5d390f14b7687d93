"""The blocking wait's soon and late wakes, per invocation, on both sides of notebook 13 (issue 33 item 2).

A diagnostic over a finished run's data, no verdict. In the blocking wait the copies part of an
invocation (real: the --paired full region less its present-only region; replica: the blocking
processes' invocation less the same invocation without copies) is a mix of two groups, the wait after
the copies waking soon or late, and the share of late ones varies from process to process. A median per
process then says only whether its late share is above one half, which is why a median over three
processes can land in either group. This prints, per variant and nw: the cut between the groups (the
threshold that best separates the pooled invocations of both sides, Otsu's rule), how far apart the
groups are against their spread (one group where less than APART_IQRS), and per side the median of
each group and each process's late share. Last, the model with notebook 13's terms composed of
trimmed means over invocations instead of medians (a mean adds over a mix of groups, a median does
not): the present-only region + the bookkeeping + the replica's blocking copies, against the real
region of the same --paired processes the present-only region comes from, and of the unpaired ones
(the denominator notebook 13 uses), which ran at another time of the run.

Usage: PYTHONPATH=lib python3 tools/wake_mix.py RUN_DIR [RUN_DIR ...]   (a run or a reference folder)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd



def _after_warmup(df: pd.DataFrame) -> pd.DataFrame:
    """Without each process's first invocation (the warm-up notebook 13 leaves out too)."""
    return df[~((df.step == 0) & (df.invocation < 1))]


APART_IQRS = 2.0   #: two groups where their medians are at least this many interquartile ranges apart


def otsu_cut(values: np.ndarray) -> tuple[float, float]:
    """(the threshold that maximises the between-group variance of ``values`` inside their 1st-99th
    percentiles, so that a few invocations far out do not make a group of their own; the distance
    between the two groups' medians over the larger of their interquartile ranges)."""
    v = np.sort(values[np.isfinite(values)])
    if len(v) >= 4:
        lo_p, hi_p = np.percentile(v, [1, 99])
        v = v[(v >= lo_p) & (v <= hi_p)]
    if len(v) < 4:
        return np.nan, np.nan
    n, total = len(v), v.sum()
    left = np.cumsum(v)[:-1]
    k = np.arange(1, n)
    between = (left / k - (total - left) / (n - k)) ** 2 * k * (n - k)
    i = int(np.argmax(between))
    lo, hi = v[:i + 1], v[i + 1:]
    iqr = max(np.subtract(*np.percentile(lo, [75, 25])), np.subtract(*np.percentile(hi, [75, 25])), 1.0)
    return float((v[i] + v[i + 1]) / 2), float((np.median(hi) - np.median(lo)) / iqr)


def trimmed_mean(values) -> float:
    """The mean of ``values`` inside their 1st-99th percentiles (a stalled invocation left out)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not len(v):
        return np.nan
    lo, hi = np.percentile(v, [1, 99])
    return float(v[(v >= lo) & (v <= hi)].mean())


def composed(run: Path) -> pd.DataFrame:
    """Per variant and nw: the model with the terms by trimmed means, and the real region by trimmed
    means in the --paired processes and in the unpaired ones."""
    data = run / "data"
    inv = _after_warmup(pd.read_parquet(data / "real_invocations.parquet"))
    inv = inv[~inv.traced.astype(bool)]
    present = _after_warmup(pd.read_parquet(data / "real_present.parquet"))
    present = present[~present.traced.astype(bool)]
    terms = pd.read_parquet(data / "real_terms.parquet")
    df = sides(run)
    rows = []
    for (variant, nw), r in inv.groupby(["variant", "nw"]):
        p = present[(present.variant == variant) & (present.nw == nw)]
        rep = df[(df.variant == variant) & (df.nw == nw) & (df.side == "replica")]
        bk = terms[(terms.variant == variant) & (terms.nw == nw) & (terms.step == 2)].measured_ns
        bk_ns = float(bk.iloc[0]) if len(bk) and np.isfinite(bk.iloc[0]) else 0.0
        model = trimmed_mean(p.kernel_ns) + bk_ns + trimmed_mean(rep.copies_ns)
        rows.append({"variant": variant, "nw": int(nw), "model_ns": model, "paired_ns": trimmed_mean(p.ns),
                     "unpaired_ns": trimmed_mean(r.ns)})
    return pd.DataFrame(rows)


def sides(run: Path) -> pd.DataFrame:
    """Per invocation: variant, nw, side (real, replica), unit (process), copies_ns."""
    data = run / "data"
    present = _after_warmup(pd.read_parquet(data / "real_present.parquet"))
    present = present[~present.traced.astype(bool)]
    real = present.assign(side="real", unit=present.process,
                          copies_ns=present.ns.astype(float) - present.kernel_ns.astype(float))
    w = pd.read_parquet(data / "real_wait_model.parquet")
    if "not_applicable" in w.columns:
        sys.exit(f"wake_mix: {run}: the wait mode was not measured ({w.not_applicable.iloc[0]})")
    w = _after_warmup(w[w.wait == "blocking"])
    replica = w.assign(side="replica", unit=w.repeat, copies_ns=w.ns.astype(float) - w.kernel_only_ns.astype(float))
    cols = ["variant", "nw", "side", "unit", "copies_ns"]
    return pd.concat([real[cols], replica[cols]], ignore_index=True)


def report(run: Path) -> str:
    df = sides(run)
    lines = [f"== {run}"]
    for (variant, nw), g in df.groupby(["variant", "nw"]):
        cut, apart = otsu_cut(g.copies_ns.to_numpy(dtype=float))
        if not apart >= APART_IQRS:
            med = g.groupby("side", sort=False).copies_ns.median()
            lines.append(f"{variant} nw={nw}: one group (the best cut leaves groups {apart:.1f} IQRs apart); copies "
                         + ", ".join(f"{side} {ns / 1e3:.1f} us" for side, ns in med.items()))
            continue
        lines.append(f"{variant} nw={nw}: cut {cut / 1e3:.1f} us, groups {apart:.1f} IQRs apart")
        for side, s in g.groupby("side", sort=False):
            late = s.copies_ns >= cut
            soon_us = s.copies_ns[~late].median() / 1e3 if (~late).any() else np.nan
            late_us = s.copies_ns[late].median() / 1e3 if late.any() else np.nan
            shares = s.assign(late=late).groupby("unit").late.mean()
            lines.append(f"  {side:7s} soon {soon_us:6.1f} us, late {late_us:6.1f} us; late share {late.mean():.2f} "
                         f"(per process {', '.join(f'{x:.2f}' for x in shares)})")
    lines.append("model with the terms by trimmed means / real, the --paired processes' region and the unpaired ones':")
    for r in composed(run).itertuples():
        lines.append(f"  {r.variant} nw={r.nw}: {r.model_ns / r.paired_ns:.3f} and {r.model_ns / r.unpaired_ns:.3f} "
                     f"(model {r.model_ns / 1e3:.1f} us, real {r.paired_ns / 1e3:.1f} and {r.unpaired_ns / 1e3:.1f} us)")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    print("\n".join(report(Path(a)) for a in sys.argv[1:]))
