"""Tables that set a measured figure beside the thread's, for the notebooks. Numbers of
the thread are quoted from it; measured ones come from the frames given, never typed here."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..units import fmt_nbytes, fmt_ns

__all__ = ["spread", "median_of", "call_counts", "paths_by", "beside", "contention", "c12_table", "c2_table", "lock_table", "bandwidth_table",
           "harness_table"]


def spread(values) -> str:
    """'median (p5-p95, n)' in human time units."""
    v = np.asarray(pd.Series(values).dropna(), dtype=float)
    if not len(v):
        return "n/a"
    p5, p50, p95 = np.percentile(v, [5, 50, 95])
    return f"{fmt_ns(p50)} ({fmt_ns(p5)}-{fmt_ns(p95)}, n={len(v)})"


def median_of(df: pd.DataFrame, col: str, **where) -> float:
    """Median of ``col`` over the rows matching ``where`` (NaN if none)."""
    for k, v in where.items():
        df = df[df[k] == v]
    return float(df[col].median()) if len(df) else float("nan")


def c12_table(df: pd.DataFrame) -> pd.DataFrame:
    """Carlo's three cases: measured medians beside the thread's statements."""
    t2 = median_of(df, "inside_ns", case="2_prelocked_copy")
    rows = []
    thread = {"1_lock_copy": "slowest 'by several orders of magnitude' than 2 and 3",
              "2_prelocked_copy": "the reference", "3_relock_copy": "'2 and 3 perform similarly'",
              "pageable_copy": "(not in the thread: the pageable copy for reference)"}
    for case, text in thread.items():
        part = df[df.case == case]
        if not len(part):
            continue
        rows.append({"case": case, "thread": text, "inside braces": spread(part.inside_ns),
                     "lock inside": spread(part.lock_ns) if part.lock_ns.any() else "-",
                     "unlock (apart)": spread(part.unlock_ns) if part.unlock_ns.any() else "-",
                     "x case 2": f"{part.inside_ns.median() / t2:.2f}",
                     "lock answer": ", ".join(sorted(set(part.lock_error) - {""})) or "granted"})
    return pd.DataFrame(rows)


def c2_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per size and direction: per-copy staging against pooled, and the share of allocate + grant + free."""
    t = df[df.event == "transfer"]
    rows = []
    for (n, d), g in t.groupby(["nbytes", "direction"]):
        fresh, pooled = g[g.policy == "stage_per_copy"], g[g.policy == "stage_pooled"]
        alloc = (fresh.alloc_ns + fresh.grant_ns + fresh.free_ns).median()
        rows.append({"size": fmt_nbytes(n), "direction": d, "per copy": spread(fresh.total_ns),
                     "pooled": spread(pooled.total_ns), "alloc+grant+free": fmt_ns(alloc),
                     "share of per-copy time": f"{100 * alloc / fresh.total_ns.median():.0f} %",
                     "pooled speed-up": f"{fresh.total_ns.median() / pooled.total_ns.median():.2f}x"})
    return pd.DataFrame(rows)


_LOCK_THREAD = {("lock", "pageable"): "35 us (tracer), 84.9 us avg (rocprof, 803 calls)",
                ("unlock", "locked"): "7 us (tracer), 24.1 us avg (rocprof)",
                ("lock", "pinned"): "0.9 us when pinned by HIP beforehand",
                ("unlock", "pinned"): "0.7 us when pinned by HIP beforehand",
                ("relock", "locked"): "'about the same check' as a query (C7); 0.9 us (C13)",
                ("query", "pageable"): "'cheap' on NVIDIA (C6)",
                ("query", "locked"): "'cheap' on NVIDIA (C6)"}


def lock_table(df: pd.DataFrame) -> pd.DataFrame:
    """Median duration of each native call per op, state and size, beside the thread's figure."""
    rows = []
    for (op, state, n), g in df.groupby(["op", "state", "nbytes"], sort=False):
        rows.append({"op": op, "state": state, "size": fmt_nbytes(n), "call": g.call.iloc[0],
                     "measured": spread(g.ns), "answer": ", ".join(sorted(set(g.error) - {""})) or "success",
                     "thread (AMD, sizes not given)": _LOCK_THREAD.get((op, state), "")})
    return pd.DataFrame(rows)


def bandwidth_table(df: pd.DataFrame) -> pd.DataFrame:
    """Median GB/s per case, direction and size; pinpath's pinned copy against the bare loop."""
    med = df.groupby(["direction", "nbytes", "case"]).gb_per_s.median().unstack("case")
    out = med.reset_index()
    out.columns.name = None
    out["size"] = out.nbytes.map(fmt_nbytes)
    if {"pinned", "plain_loop"} <= set(med.columns):
        out["pinned / plain loop"] = (med["pinned"] / med["plain_loop"]).round(3).values
    return out.drop(columns="nbytes")


def harness_table(df: pd.DataFrame) -> pd.DataFrame:
    out = df[["metric", "ns"]].copy()
    out["value"] = out.ns.map(fmt_ns)
    return out


def call_counts(transfers: pd.DataFrame, calls: pd.DataFrame, by=("policy",),
                categories=("alloc", "grant", "free", "lock", "unlock", "query", "copy", "wait")) -> pd.DataFrame:
    """Mean number of native calls of each category per transfer (C1's counts)."""
    t = transfers[transfers.event == "transfer"]
    c = calls.merge(t[["transfer_id", *by]], on="transfer_id")
    counts = c.groupby([*by, "category"]).size().unstack("category", fill_value=0)
    n = t.groupby(list(by)).size()
    out = counts.reindex(columns=list(categories), fill_value=0).div(n, axis=0).round(2)
    out.insert(0, "transfers", n)
    out["median per transfer"] = t.groupby(list(by)).total_ns.median().map(fmt_ns)
    return out.reset_index()


def paths_by(transfers: pd.DataFrame, by) -> pd.DataFrame:
    """How many transfers took each path, per ``by`` (map and unmap events left out)."""
    t = transfers[transfers.event == "transfer"]
    return t.groupby([*by, "path"]).size().unstack("path", fill_value=0).reset_index()


def beside(judged: pd.DataFrame) -> pd.DataFrame:
    """The claims judged in a notebook: the thread's figure beside the measured one, and the verdict."""
    return judged[["id", "who", "thread", "measured", "verdict", "why"]]


def contention(conc: pd.DataFrame) -> pd.DataFrame:
    """Per policy: median overhead per transfer with the fewest and the most threads, the
    contention slope (least-squares ns per added thread over the per-thread medians) and the
    aggregate throughput at both ends."""
    rows = []
    for policy, g in conc.groupby("policy", sort=False):
        med = g.groupby("threads").overhead_ns.median()
        agg = g.groupby("threads").aggregate_gb_per_s.first()
        lo, hi = med.index.min(), med.index.max()
        slope = np.polyfit(g.threads.astype(float), g.overhead_ns.astype(float), 1)[0] if g.threads.nunique() > 1 else 0.0
        rows.append({"policy": policy, f"overhead, {lo} thread(s)": fmt_ns(med[lo]), f"overhead, {hi} threads": fmt_ns(med[hi]),
                     "slope per added thread": fmt_ns(slope), f"GB/s, {lo}": round(float(agg[lo]), 3),
                     f"GB/s, {hi}": round(float(agg[hi]), 3)})
    return pd.DataFrame(rows)
