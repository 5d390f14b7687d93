"""The blocking wait's soon and late wakes, per invocation, on both sides of notebook 13 (issue 33 item 2).

A diagnostic over a finished run's data, no verdict. In the blocking wait the copies part of an
invocation (real: the --paired full region less its present-only region; replica: the blocking
processes' invocation less the same invocation without copies) is a mix of two groups, the wait after
the copies waking soon or late, and the share of late ones varies from process to process. A median per
process then says only whether its late share is above one half, which is why a median over three
processes can land in either group. This prints, per variant and nw: the cut between the groups (the
threshold that best separates the pooled invocations of both sides, Otsu's rule), how far apart the
groups are against their spread (one group where less than APART_IQRS), and per side the median of
each group and each process's late share. Last, notebook 13's model with the terms by trimmed means
(``real_means``, also for runs from before that table): against the real region of the same --paired
processes, with the replica's copies in the real processes' wake state and in the one its own processes
drew, and against the unpaired processes' region, which ran at another time of the run.

Usage: PYTHONPATH=lib python3 tools/wake_mix.py RUN_DIR [RUN_DIR ...]   (a run or a reference folder)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from pinpath.experiments.real_means import model_means
from pinpath.experiments.real_runtime import RealRun
from pinpath.stats import APART_IQRS, two_groups


def _after_warmup(df: pd.DataFrame) -> pd.DataFrame:
    """Without each process's first invocation (the warm-up notebook 13 leaves out too)."""
    return df[~((df.step == 0) & (df.invocation < 1))]


def composed(run: Path) -> pd.DataFrame:
    """Notebook 13's model with the terms by trimmed means (``real_means.model_means``) over the run's
    data: against the --paired processes' region and the unpaired ones'."""
    data = run / "data"
    read = lambda name: pd.read_parquet(data / f"{name}.parquet")  # noqa: E731
    ran = RealRun(read("real_runs"), read("real_invocations"), pd.DataFrame(), pd.DataFrame(),
                  present=read("real_present"), present_phases=read("real_present_phases"))
    return model_means(ran, read("real_wait_model"))


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
        cut, apart = two_groups(g.copies_ns.to_numpy(dtype=float))
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
    lines.append("model with the terms by trimmed means / real: the --paired processes' region with the replica's copies "
                 "in the real processes' wake state, in the one the replica drew, and the unpaired processes' region:")
    for r in composed(run).itertuples():
        lines.append(f"  {r.variant} nw={r.nw}: {r.ratio_state:.3f}, {r.ratio:.3f} and {r.ratio_unpaired:.3f} (model "
                     f"{r.model_state_ns / 1e3:.1f} and {r.model_ns / 1e3:.1f} us, real {r.real_ns / 1e3:.1f} and "
                     f"{r.real_unpaired_ns / 1e3:.1f} us){'; ' + r.note if r.note else ''}")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    print("\n".join(report(Path(a)) for a in sys.argv[1:]))
