"""prediction.csv's rows, with the wait states' (advise.wake_state, advise.validate.state_rows), made
again from an advise folder's files at this code: the trace, the replay (its runtime-term rows set
aside), the runtime probe and the real figures, as `tools/h200-run.sh advise` leaves them. For the
advise runs measured before the wait states were in advise (the references' of 2026-12-07): the
same data, judged by today's rules; no GPU needed, nothing measured again.

Usage: PYTHONPATH=lib python3 tools/advise_states.py ADVISE_DIR [APP ...] [--placement other_cpu]
  ADVISE_DIR holds APP.info, APP-real.csv and APP/{replay,runtime_probe}.csv (APP: region stencil species)
  prints, per application, the rows at the placement (the prediction's: other_cpu by default)
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from pinpath.advise.main import policies_for
from pinpath.advise.validate import read_real
from pinpath.advise.parse import read_trace
from pinpath.advise.pattern import pattern
from pinpath.advise.predict import predict
from pinpath.advise.runtime_term import RUNTIME_EVENTS, runtime_rows
from pinpath.advise.validate import grain, real_rows, state_rows
from pinpath.advise.wake_state import single_wait, split_probe

COLUMNS = ["application", "kind", "variant", "state", "predicted_ns", "real_ns", "real_low", "real_high", "verdict",
           "probe_late_share", "real_late_share"]


def inputs(folder: Path, app: str):
    """An advise folder's pattern, replay without its runtime-term rows, runtime probe, real figures
    and NVIDIA's variants (the stored files a prediction is made from)."""
    p = pattern(read_trace(folder / f"{app}.info"))
    rep = pd.read_csv(folder / app / "replay.csv")
    base = rep[~rep.event.isin(list(RUNTIME_EVENTS.values()))]
    probe = pd.read_csv(folder / app / "runtime_probe.csv")
    return p, base, probe, read_real(folder / f"{app}-real.csv"), policies_for("nvidia")


def rows_of(folder: Path, app: str, place: str) -> pd.DataFrame:
    p, base, probe, real, pols = inputs(folder, app)
    pred = predict(p, pd.concat([base, runtime_rows(probe, base)], ignore_index=True), pols)
    rows = real_rows(app, pred, real)
    place = place if "placement" in real.columns else ""
    split = split_probe(probe)
    if split is not None:
        preds = {s: predict(p, pd.concat([base, runtime_rows(f, base)], ignore_index=True), pols)
                 for s, f in split[0].items()}
        single = single_wait(preds, p, pols, split[1], grain(pred, real))
        rows += state_rows(app, preds, split[1], real, place, single)
    got = pd.DataFrame(rows).reindex(columns=COLUMNS + ["placement"])
    return got[got.placement.fillna("") == place][COLUMNS]


def main(argv: list[str]) -> int:
    place = "other_cpu"
    if "--placement" in argv:
        i = argv.index("--placement")
        place = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if not argv:
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    folder, apps = Path(argv[0]), argv[1:] or ["region", "stencil", "species"]
    for app in apps:
        missing = [f for f in (f"{app}.info", f"{app}-real.csv", f"{app}/replay.csv", f"{app}/runtime_probe.csv")
                   if not (folder / f).is_file()]
        if missing:
            print(f"advise_states: {folder} lacks {', '.join(missing)}", file=sys.stderr)
            return 1
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            t = rows_of(folder, app, place)
            t[["predicted_ns", "real_ns", "real_low", "real_high"]] /= 1e3
            print(t.round(2).astype(object).where(t.notna(), "").to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
