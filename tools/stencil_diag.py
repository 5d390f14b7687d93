"""The stencil's halo updates in the application against the runtime probe's (issue 33 item 3): a
diagnostic, no verdict. advise predicts the stencil's plain steps 1.05-1.14x too slow and its
app_pinned steps right (NEXT.md), so the probe's pageable 32 KiB updates are slower than the
application's. tools/stencil-diag.sh (`h200-run.sh stencil`) times both, interleaved; this makes the
probe's layouts from the application's trace and prints the comparison.

  layouts TRACE DIR   DIR/layout-A.txt: advise's own (``layout_of`` of the trace's pattern);
                      -B: without the copies made once in the application (the one-off map copies,
                      each probed MIN_SAMPLES times in A); -C: the halo updates alone
  analyse DIR         per process: the application's four halo updates per step (median transfer_ns of
                      the steps without a checkpoint) and the probe's per round (the sum of the copies
                      made every round, the halos, median over rounds), per layout and variant, and each copy's median

Usage: PYTHONPATH=lib python3 tools/stencil_diag.py layouts TRACE DIR | analyse DIR
"""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pandas as pd

from pinpath.advise.parse import read_trace
from pinpath.advise.pattern import pattern
from pinpath.advise.runtime_term import layout_of

ROUNDS = 200


def layouts(trace: Path, out: Path) -> None:
    """The three layouts: A as advise writes it, B without the copies whose period is not 1 but the
    checkpoint's, C with the halo copies (period 1) alone."""
    a = layout_of(pattern(read_trace(trace)), ROUNDS).splitlines()
    copies = [l for l in a if l.startswith("copy ")]
    halos = [l for l in copies if l.split()[5] == "1"]
    largest = max(int(l.split()[3]) for l in copies)
    checkpoint = [l for l in copies if int(l.split()[3]) == largest and l.split()[4] == "d2h"]
    arrays = [l for l in a if l.startswith("array ")]
    out.mkdir(parents=True, exist_ok=True)
    for name, lines in (("A", a), ("B", arrays + halos + checkpoint), ("C", arrays + halos)):
        (out / f"layout-{name}.txt").write_text("\n".join(lines) + "\n")
    print(f"layouts: {len(copies)} copies in A, {len(halos)} halo copies")


def _csv(path: Path) -> pd.DataFrame:
    return pd.read_csv(io.StringIO("".join(l for l in path.open() if not l.startswith("#"))))


def table(d: Path) -> pd.DataFrame:
    """One row per process and what it timed: what (app-ck50, app-nock, upd-A/B/C, upd-L-copyK-DIR),
    variant, rep, us."""
    rows = []
    for p in sorted(d.glob("app-*-*-*.csv")):
        kind, v, r = re.fullmatch(r"app-(\w+?)-(\w+)-(\d+)\.csv", p.name).groups()
        t = _csv(p)
        t = t[(t.step > 0) & ~t.checkpoint.astype(str).str.lower().eq("true")]
        rows.append({"what": f"app-{kind}", "variant": v, "rep": int(r), "us": t.transfer_ns.median() / 1e3})
    for p in sorted(d.glob("upd-*-*-*.csv")):
        lay, v, r = re.fullmatch(r"upd-(\w)-(\w+)-(\d+)\.csv", p.name).groups()
        t = _csv(p)
        t = t[t["at"] == "update"]
        every = t.groupby("copy")["round"].nunique()    # the halos: the copies made in every round
        t = t[t["copy"].isin(every.index[every == t["round"].nunique()])]
        rows.append({"what": f"upd-{lay}", "variant": v, "rep": int(r), "us": t.groupby("round").ns.sum().median() / 1e3})
        for (c, di), g in t.groupby(["copy", "direction"]):
            rows.append({"what": f"upd-{lay}-copy{c}-{di}", "variant": v, "rep": int(r), "us": g.ns.median() / 1e3})
    return pd.DataFrame(rows, columns=["what", "variant", "rep", "us"])


def analyse(d: Path) -> None:
    x = table(d)
    if x.empty:
        sys.exit(f"stencil_diag: no app-*.csv or upd-*.csv under {d}")
    per = x.pivot_table(index=["what", "variant"], columns="rep", values="us")
    per["median"] = per.median(axis=1)
    print(per.round(1).to_string())
    m = x.groupby(["what", "variant"]).us.median().unstack("variant")
    if {"plain", "app_pinned"} <= set(m.columns):
        m["app_pinned - plain"] = m.app_pinned - m.plain
    print(m.round(1).to_string())


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "layouts":
        layouts(Path(sys.argv[2]), Path(sys.argv[3]))
    elif len(sys.argv) == 3 and sys.argv[1] == "analyse":
        analyse(Path(sys.argv[2]))
    else:
        sys.exit(__doc__)
