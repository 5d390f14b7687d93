#!/usr/bin/env python3
"""The benchmark figures of issues 16, 17 and 22, read from one or two run folders (a reference,
or a full run unpacked from tools/h200-run.sh): the engine against the plain yardstick, the
pinned copy against the bare loop, the replica against the real runtime, the preset's duration,
and advise's predictions; given two runs, the claims table of both (issue 34: verdict, reading
with its interval, the repeats behind it with the spread between them, the mechanism measured, and
whether the two agree). It reads what the runs measured; it measures nothing.

Usage: tools/reference-benchmarks.py RUN [RUN_B]

It spells the run folder's paths (data/, manifest.json) that lib/pinpath/layout.py names; change
both together. Only the claims table imports pinpath (lib/ beside this folder): its agreement rule
is report.regress's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

FIDELITY_MARGIN, FIDELITY_FLOOR_NS = 0.10, 1000.0


def fidelity(run: Path) -> str:
    f = pd.read_parquet(run / "data" / "engine_fidelity.parquet")
    within = (abs(f.ratio - 1) <= FIDELITY_MARGIN) | (abs(f.engine_ns - f.plain_ns) <= FIDELITY_FLOOR_NS)
    out = [f"engine against plain C: {int(within.sum())} of {len(f)} points within max(10 %, 1 us)"]
    for r in f[~within].itertuples():
        out.append(f"  outside: {r.policy} {r.direction} {r.nbytes} B: {r.engine_ns / 1e3:.1f} against "
                   f"{r.plain_ns / 1e3:.1f} us ({r.ratio:.3f}x, 95 % CI {r.low:.3f}-{r.high:.3f})")
    return "\n".join(out)


def pinned_against_loop(run: Path) -> str:
    b = pd.read_parquet(run / "data" / "bandwidth.parquet")
    per = b.groupby(["case", "direction", "nbytes", "repeat"]).total_ns.median().unstack("case")
    if "pinned" not in per or "plain_loop" not in per:
        return "pinned against the bare loop: not in this run"
    # paired by repeat: both cases of a repeat ran back to back, in one state of the machine
    speed = (per["plain_loop"] / per["pinned"]).groupby(["direction", "nbytes"]).agg(["median", "min", "max"])
    rows = [f"  {d} {n} B: {v['median']:.3f} (repeats {v['min']:.3f}-{v['max']:.3f})"
            for (d, n), v in speed.iterrows() if n >= 64 << 10]
    return ("pinned direct copy against the bare loop (speed ratio, the median of the repeats' own; >= 0.95 at "
            "64 KiB, >= 0.98 from 1 MiB):\n" + "\n".join(rows))


def replica(run: Path) -> str:
    r = pd.read_parquet(run / "data" / "real_ratio.parquet")
    terms_path = run / "data" / "real_terms.parquet"
    terms = pd.read_parquet(terms_path) if terms_path.is_file() else None
    means_path = run / "data" / "real_means.parquet"
    means = pd.read_parquet(means_path) if means_path.is_file() else None
    rows = []
    for x in r.itertuples():
        rows.append(f"  {x.variant} nw={x.nw} ({x.policy}): model {x.model_median_ns / 1e3:.1f} us, real "
                    f"{x.real_median_ns / 1e3:.1f} us (95 % CI {x.real_lo_ns / 1e3:.1f}-{x.real_hi_ns / 1e3:.1f} over "
                    f"{x.real_processes} processes), model/real {x.ratio:.3f} ({x.ratio_lo:.3f}-{x.ratio_hi:.3f})")
        if terms is None or "term" not in terms:
            rows.append("    with measured terms: not in this run (no real_terms)")
            continue
        t = terms[(terms.variant == x.variant) & (terms.nw == x.nw) & (terms.step > 0)].sort_values("step")
        steps = [f"+ {y.term} {y.ratio:.3f} ({y.ratio_lo:.3f}-{y.ratio_hi:.3f})" if pd.notna(y.ratio)
                 else f"+ {y.term} not measured" for y in t.itertuples()]
        rows.append("    with measured terms: " + ("; ".join(steps) or "none"))
        if means is not None and "ratio" in means:
            m = means[(means.variant == x.variant) & (means.nw == x.nw)]
            rows += [f"    by trimmed means, against the same --paired processes: {_in_state(y)}in the wake state the "
                     f"replica drew {y.ratio:.3f} ({y.ratio_lo:.3f}-{y.ratio_hi:.3f}); the unpaired: "
                     f"{y.ratio_unpaired:.3f}; " + (f"late share real {y.late_real:.2f}, replica {y.late_replica:.2f}"
                                                    if pd.notna(y.late_real) else "the copies make one group")
                     for y in m.itertuples()]
    return "replica against the real libomptarget (the model alone, then with each measured term):\n" + "\n".join(rows)


def _in_state(y) -> str:
    """real_means' figure in the real processes' wake state ('' for a table from before it)."""
    if not hasattr(y, "ratio_state"):
        return ""
    if pd.isna(y.ratio_state):
        return f"in the real processes' wake state no figure ({y.note}); "
    matched = getattr(y, "in_real_state", None)      # None: a table from before the column, or no figure
    drawn = (" (the replica's copies as drawn: its groups do not pair with the real ones')"
             if matched is not None and not pd.isna(matched) and not bool(matched) else "")
    return (f"in the real processes' wake state {y.ratio_state:.3f} ({y.ratio_state_lo:.3f}-{y.ratio_state_hi:.3f})"
            f"{drawn}, ")


def duration(run: Path) -> str:
    m = json.loads((run / "manifest.json").read_text())
    nbs = m.get("notebooks", {})
    slow = sorted(((v.get("duration_s") or 0, k) for k, v in nbs.items()), reverse=True)[:4]
    return (f"preset {m.get('preset')}: {m.get('duration_s')} s of notebooks ({len(nbs)}); slowest: "
            + ", ".join(f"{k} {s:.1f} s" for s, k in slow))


def advise(run: Path) -> str:
    p = run / "advise" / "prediction.csv"
    if not p.is_file():
        return "advise: no advise/prediction.csv in this run"
    d = pd.read_csv(p, keep_default_na=False, na_values=[""])
    if "kind" not in d:                                   # before the difference rows: every row a variant
        d["kind"] = "variant"
    d = d[d.kind.isin(["variant", "difference"])]         # runtime designs have no real figure to meet
    rows = []
    for x in d.itertuples():
        place = f" [{x.placement}]" if isinstance(getattr(x, "placement", None), str) and x.placement else ""
        state = getattr(x, "state", None)   # a row of one wait state (advise.wake_state, since 1f6e869)
        if isinstance(state, str) and state:
            share = f"{x.real_late_share:.0%} of the real late" if pd.notna(x.real_late_share) else "no real share"
            place += f" (waits {state}: {share}, {x.probe_late_share:.0%} of the probe's)"
        predicted_at = getattr(x, "predicted_placement", None)   # where the prediction was measured (since 2b81848)
        if place and isinstance(predicted_at, str) and predicted_at and predicted_at != x.placement:
            place += f" (predicted at {predicted_at})"
        if pd.isna(x.real_ns):
            rows.append(f"  {x.application} {x.variant}{place}: predicted {x.predicted_ns / 1e3:.1f} us, no real figure")
        elif x.kind == "difference":
            rows.append(f"  {x.application} {x.variant}{place}: predicted {x.predicted_ns / 1e3:+.1f} us, real "
                        f"{x.real_ns / 1e3:+.1f} us ({x.real_low / 1e3:+.1f} to {x.real_high / 1e3:+.1f}): {x.verdict}")
        else:
            verdict = getattr(x, "verdict", "") or ("within 20 %" if abs(x.ratio - 1) <= 0.2 else "outside 20 %")
            ratio = x.predicted_ns / x.real_ns
            rows.append(f"  {x.application} {x.variant}{place}: predicted {x.predicted_ns / 1e3:.1f} us, real "
                        f"{x.real_ns / 1e3:.1f} us, ratio {ratio:.3f} ({x.low:.3f}-{x.high:.3f}): {verdict}")
    return "advise, predicted against real per region or step (and each variant's difference from plain):\n" + "\n".join(rows)


def claims_table(run_a: Path, run_b: Path) -> str:
    """Both runs' report/claims.csv claim by claim (report.regress.check_frames), as text."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
    from pinpath.report import regress
    a, b = (regress.read_claims(r / "report" / "claims.csv") for r in (run_a, run_b))
    checked = regress.check_frames(a, b, base_run=run_a.name, run=run_b.name)
    return "the claims of both runs:\n" + "\n".join(regress.agreement_lines(checked))


def main(argv) -> int:
    if not argv or len(argv) > 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    for arg in argv:
        run = Path(arg)
        if not (run / "manifest.json").is_file():
            print(f"{run}: not a run folder (no manifest.json)", file=sys.stderr)
            return 2
        print(f"== {run}")
        for part in (duration, fidelity, pinned_against_loop, replica, advise):
            try:
                print(part(run))
            except FileNotFoundError as e:   # pyarrow's carries no filename, only its message
                print(f"{part.__name__}: not in this run ({Path(e.filename).name if e.filename else e})")
    if len(argv) == 2:
        print("== both")
        try:
            print(claims_table(Path(argv[0]), Path(argv[1])))
        except FileNotFoundError as e:
            print(f"claims table: not in both runs ({Path(e.filename).name if e.filename else e})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
