"""Analysis of tools/idle-diag.sh (issue 33 item 3): the region's invocations per condition (which
CPUs were kept from halting), placement and variant, each process's median region and its copies'
late share (copies: the invocation's transfer part with --paired, else the whole invocation), the cut between soon and late copies taken per variant over all conditions together
(``wake_state.late_cut``: two well-apart groups, or none).

Usage: PYTHONPATH=lib python3 tools/idle_diag.py analyse DIR   (DIR holds real.csv and facts.txt)
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from diag_cli import analyse_rows, print_table  # noqa: E402  (a sibling tool)

from pinpath.advise.wake_state import late_cut  # noqa: E402


def per_process(real: pd.DataFrame) -> pd.DataFrame:
    """One row per process: condition, placement, variant, process, region_us (median invocation),
    copies_us (median transfer part), late (share of copies past the variant's cut)."""
    real = real.copy()
    if "transfer_ns" not in real:   # a run without --paired: the whole invocation (its kernel is steady)
        real["transfer_ns"] = real.ns
    real[["condition", "place"]] = real.placement.str.split(":", n=1, expand=True)
    cuts = {v: late_cut(g.transfer_ns) for v, g in real.groupby("variant")}
    rows = []
    for (c, pl, v, p), g in real.groupby(["condition", "place", "variant", "process"]):
        cut = cuts[v]
        rows.append({"condition": c, "placement": pl, "variant": v, "process": p,
                     "region_us": g.ns.median() / 1e3, "copies_us": g.transfer_ns.median() / 1e3,
                     "late": float((g.transfer_ns > cut).mean()) if cut is not None else float("nan")})
    out = pd.DataFrame(rows)
    out.attrs["cuts_us"] = {v: (None if c is None else round(c / 1e3, 1)) for v, c in cuts.items()}
    return out


def summary(pp: pd.DataFrame) -> pd.DataFrame:
    """Per condition, placement and variant: the median of the processes' medians and their range,
    and the processes' late shares."""
    def one(g: pd.DataFrame) -> pd.Series:
        return pd.Series({"n": len(g), "region_us": g.region_us.median(), "region_min": g.region_us.min(),
                          "region_max": g.region_us.max(), "copies_us": g.copies_us.median(),
                          "late_shares": " ".join(f"{x:.2f}" for x in g.sort_values("process").late)})
    return pp.groupby(["placement", "variant", "condition"]).apply(one, include_groups=False)


def main(argv: list[str]) -> int:
    real = analyse_rows(argv, __doc__, "idle_diag", "real.csv")
    if isinstance(real, int):
        return real
    pp = per_process(real)
    print_table("cut between soon and late copies per variant (us):", pp.attrs["cuts_us"], summary(pp))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
