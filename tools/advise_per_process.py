"""An experiment on a stored advise folder (issue 33 item 3): each variant's predicted step (region
where the real figures are per invocation) from each runtime-probe process alone, beside advise's
prediction from all processes' copies pooled and the real median of the processes' medians. It asks
whether predicting the median probe process, the statistic the real side uses, would meet the real
figures where the processes' wait states differ. advise itself pools; nothing here changes it.
Then, where the real steps of a variant split into a soon and a late group on their own times
(``wake_state.late_cut``, no prediction involved), each real process's late share per step: whether
the wait state is a process's, a stretch of time's, or the node's.

Usage: PYTHONPATH=lib python3 tools/advise_per_process.py ADVISE_DIR [APP ...] [--placement other_cpu]
  ADVISE_DIR as tools/advise_states.py takes it; prints per application the variants (us), their
  differences from plain and the real steps' late shares
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from advise_states import inputs  # noqa: E402  (a sibling tool)

from pinpath.advise.predict import predict  # noqa: E402
from pinpath.advise.runtime_term import runtime_rows  # noqa: E402
from pinpath.advise.validate import grain, real_rows  # noqa: E402
from pinpath.advise.wake_state import late_cut  # noqa: E402


def table(folder: Path, app: str, place: str = "other_cpu") -> pd.DataFrame:
    """Per variant (ns): ``pooled`` (advise's prediction), ``per_process`` (the median over the probe's
    processes of each one's prediction), ``processes`` (each one's), ``real`` with its interval."""
    p, base, probe, real, pols = inputs(folder, app)
    pooled = predict(p, pd.concat([base, runtime_rows(probe, base)], ignore_index=True), pols)
    by = grain(pooled, real)
    each = {}
    for proc, rows in probe.groupby("process"):
        pr = predict(p, pd.concat([base, runtime_rows(rows, base)], ignore_index=True), pols)
        each[proc] = pr.typical[pr.typical.by == by].set_index("variant").predicted_ns
    each = pd.DataFrame(each)
    got = pd.DataFrame(real_rows(app, pooled, real))
    if "placement" in real.columns:
        got = got[got.placement == place]
    got = got[got.kind == "variant"].set_index("variant")
    return pd.DataFrame({"pooled": got.predicted_ns, "per_process": each.median(axis=1),
                         "processes": each.apply(lambda r: " ".join(f"{x / 1e3:.1f}" for x in r), axis=1),
                         "real": got.real_ns, "real_low": got.real_low, "real_high": got.real_high})


def late_shares(folder: Path, app: str, place: str = "other_cpu") -> pd.DataFrame:
    """Per variant whose real steps at ``place`` split on their own times: the share of late steps per
    process (rows) and step (columns), with the cut; empty where none splits or the steps have no process."""
    real = inputs(folder, app)[3]
    if "placement" in real.columns:
        real = real[real.placement.astype(str) == place]
    if not {"process", "step"} <= set(real.columns):
        return pd.DataFrame()
    frames = []
    for variant, rows in real.groupby("variant"):
        cut = late_cut(rows.ns.to_numpy(dtype=float))
        if cut is None:
            continue
        share = rows.assign(late=rows.ns > cut).groupby(["process", "step"]).late.mean().unstack()
        frames.append(share.assign(variant=variant, cut_us=round(cut / 1e3, 1)).reset_index()
                      .set_index(["variant", "cut_us", "process"]))
    return pd.concat(frames) if frames else pd.DataFrame()


def main(argv: list[str]) -> int:
    place = "other_cpu"
    if "--placement" in argv:
        i = argv.index("--placement")
        place, argv = argv[i + 1], argv[:i] + argv[i + 2:]
    if not argv:
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    folder = Path(argv[0])
    for app in argv[1:] or ["region", "stencil", "species"]:
        t = table(folder, app, place)
        num = ["pooled", "per_process", "real", "real_low", "real_high"]
        t[num] /= 1e3
        diff = t.loc[t.index != "plain", ["pooled", "per_process", "real"]] - t.loc["plain", ["pooled", "per_process", "real"]]
        print(f"== {app} ({place}), us")
        print(t.round(1).to_string())
        print(diff.add_suffix(" - plain").round(1).to_string())
        shares = late_shares(folder, app, place)
        print("real steps' late share per process and step:" if len(shares) else
              "real steps: no variant splits into two wait states on its own times")
        if len(shares):
            print(shares.round(2).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
