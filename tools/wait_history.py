"""Analysis of tools/wait-history.sh (issue 33 item 3): does a blocking wait's soon or late wake follow
what the process waited on just before (tools/wait_history.cu)? No verdict.

Per wait mode and op, the cut between soon and late waits is taken over all the mode's rows of that op
(``wake_state.late_cut``: two well-apart groups, or none). Then per placement, op and history: the
median op, and the late share of the ops in their block's steady part (index >= CARRY: the history
has acted) and of each block's first op (index 0: the previous block's history still acts), and each
process's steady late share and median (then, per op, the medians over processes by history and
mode/placement in one table), so that a state drawn per process shows as a spread across a
row and a state made by the history as a difference between rows (the medians show it where the ops
of a mode do not fall into two groups: a wait that grows with its history instead of switching).

Usage: PYTHONPATH=lib python3 tools/wait_history.py analyse DIR   (DIR holds history.csv)
       python3 tools/wait_history.py build   tools/wait_history_omp.cpp -> build/wait-history-omp/ (the offload
       bundle's compiler and flags, tools/offload_tool.py; make offload-bundle first), carried with build/offload
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from diag_cli import analyse_rows, print_table  # noqa: E402  (a sibling tool)
import offload_tool  # noqa: E402

from pinpath.advise.wake_state import late_cut  # noqa: E402

CARRY = 2   #: a block's first CARRY ops may still carry the previous block's history


def cuts(rows: pd.DataFrame) -> dict[tuple[str, str], float | None]:
    """The soon/late cut (ns) per (mode, op), over every placement, history and process."""
    return {key: late_cut(g.ns) for key, g in rows.groupby(["mode", "op"])}


def table(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (mode, placement, op, history): n, median_us, steady_late, first_late,
    process_late (each process's steady late share, in process order), process_median_us (each
    process's steady median) and, where the rows name the CPUs (cpu_before, cpu_after), process_moved: each
    process's steady share of waits that returned on another CPU than the op began on. Late shares are
    NaN where the mode and op have no two states."""
    cut = cuts(rows)
    out = []
    for (mode, place, op, hist), g in rows.groupby(["mode", "placement", "op", "history"]):
        c = cut[(mode, op)]
        steady, first = g[g["index"] >= CARRY], g[g["index"] == 0]
        late = (lambda x: float((x.ns > c).mean()) if c is not None and len(x) else float("nan"))
        per = (steady.groupby("process").apply(late, include_groups=False) if c is not None and len(steady)
               else pd.Series(dtype=float))
        medians = steady.groupby("process").ns.median() / 1e3
        row = {"mode": mode, "placement": place, "op": op, "history": hist, "n": len(g),
               "median_us": g.ns.median() / 1e3, "steady_late": late(steady), "first_late": late(first),
               "process_late": " ".join(f"{x:.2f}" for x in per),
               "process_median_us": " ".join(f"{x:.1f}" for x in medians)}
        if {"cpu_before", "cpu_after"} <= set(steady.columns):
            moved = (steady.cpu_before != steady.cpu_after).groupby(steady.process).mean()
            row["process_moved"] = " ".join(f"{x:.2f}" for x in moved)
        out.append(row)
    t = pd.DataFrame(out)
    t.attrs["cuts_us"] = {f"{m}/{o}": (None if c is None else round(c / 1e3, 1)) for (m, o), c in cut.items()}
    return t


def build() -> Path:
    tools = offload_tool.ROOT / "tools"
    return offload_tool.build(tools / "wait_history_omp.cpp", offload_tool.ROOT / "build/wait-history-omp",
                              also=(tools / "wait_history.h",))


KINDS = ("none", "kern", "busy", "sleep")


def history_key(name: str) -> tuple[int, float]:
    """(kind, length in us) of a history's name (kern200us, busy2ms, none); unknown kinds last."""
    kind = next((i for i, k in enumerate(KINDS) if name.startswith(k)), len(KINDS))
    rest = name[len(KINDS[kind]):] if kind < len(KINDS) else name
    number = "".join(ch for ch in rest if ch.isdigit())
    scale = 1000 if rest.endswith("ms") else 1
    return kind, float(number) * scale if number else 0.0


def overview(rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per op: a history by (mode, placement) table of the median over processes of each process's
    steady median, with the range of those medians ("21.5 (21.0-23.1)", us); histories by kind (none,
    kern, busy, sleep) and length."""
    steady = rows[rows["index"] >= CARRY]
    per = steady.groupby(["op", "mode", "placement", "history", "process"]).ns.median() / 1e3
    agg = per.groupby(["op", "mode", "placement", "history"]).agg(["median", "min", "max"]).reset_index()
    agg["cell"] = [f"{m:.1f} ({lo:.1f}-{hi:.1f})" for m, lo, hi in zip(agg["median"], agg["min"], agg["max"])]
    order = sorted(set(rows.history), key=history_key)
    return {op: g.pivot(index="history", columns=["mode", "placement"], values="cell").reindex(order)
            for op, g in agg.groupby("op")}


def main(argv: list[str]) -> int:
    if argv == ["build"]:
        build()
        return 0
    rows = analyse_rows(argv, __doc__, "wait_history", "history.csv")
    if isinstance(rows, int):
        return rows
    t = table(rows)
    print_table("cut between soon and late waits per mode/op (us; None: one group):", t.attrs["cuts_us"], t, index=False)
    for op, wide in overview(rows).items():
        print(f"\n{op}: median over processes of each one's median, us (their range)")
        print(wide.to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
