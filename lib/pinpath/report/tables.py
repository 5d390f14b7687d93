"""Tables that set a measured figure beside the thread's, for the notebooks. Numbers of
the thread are quoted from it; measured ones come from the frames given, never typed here."""

from __future__ import annotations

import math

import re
from html import escape

import numpy as np
import pandas as pd

from ..trace import null_call_ns
from ..units import _decimals, binary_size, fmt_ns
from .fmt import READINGS, format_measured, format_repeats
from .regress import row_key

__all__ = ["about", "value_words", "cell_words", "table_html", "times", "MAX_ROWS", "spread", "call_counts", "paths_by", "beside", "contention", "c12_table", "c2_table",
           "lock_table", "bandwidth_table", "harness_table", "fidelity", "conclusion", "CONCLUSION_OPEN", "CONCLUSION_CLOSE", "setup_display", "hazard_table",
           "bandwidth_conclusion", "THREAD_LOCK_MARKS"]

#: the thread's lock and unlock times (ye-luo's tracer, AMD), drawn as reference lines
THREAD_LOCK_MARKS = [("thread: lock 35 us", 35_000), ("thread: unlock 7 us", 7_000),
                     ("thread: lock of memory pinned beforehand 0.9 us", 900),
                     ("thread: its unlock 0.7 us", 700)]


#: the most rows a notebook shows of one table; longer tables are shown in part and saved whole to a CSV
MAX_ROWS = 20
_CSV_TO: dict = {"run_dir": None, "stem": ""}


def setup_display(run_dir=None, stem: str = "") -> None:
    """Tables in notebooks as a reader wants them: whole columns, numbers in their units
    (``cell_words``), no ``NaN`` / ``<NA>`` / scientific notation, at most ``MAX_ROWS`` rows. A
    longer table shows its first rows and links its whole self, saved as
    ``data/<stem>.table-<n>.csv`` in the run folder (``run_dir``; nothing is saved without one)."""
    for key, value in (("display.max_columns", None), ("display.max_colwidth", None), ("display.max_rows", 500),
                       ("display.width", 250), ("display.float_format", lambda v: cell_words("", v))):
        pd.set_option(key, value)
    _CSV_TO.update(run_dir=run_dir or None, stem=stem, n=0)
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is not None:
        ip.display_formatter.formatters["text/html"].for_type(pd.DataFrame, table_html)


#: columns whose infinite value means "never" (uses before a one-off cost is paid back, its interval)
_NEVER_COLUMNS = ("uses", "low", "high", "break_even")


def cell_words(column: str, value) -> str:
    """One cell as a reader reads it, its unit taken from the column's name: ``*_ns`` / ``ns``
    a time, ``*nbytes`` a binary size, floats with about three significant digits and never in
    scientific notation, a dash for a missing value, yes / no, "never" (or ∞) for an infinity."""
    try:
        if value is None or value is pd.NA or (np.ndim(value) == 0 and pd.isna(value)):
            return "\u2014"
    except (TypeError, ValueError):
        pass
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    col = str(column)
    if isinstance(value, (int, float, np.integer, np.floating)):
        v = float(value)
        if math.isinf(v):      # a break-even that is never reached, a ratio over nothing
            return ("never" if col in _NEVER_COLUMNS else "\u221e") if v > 0 else "\u2212\u221e"
        if col == "ns" or col.endswith("_ns"):
            return fmt_ns(v)
        if col.endswith("nbytes") and v >= 0:
            return binary_size(v)
        if isinstance(value, (int, np.integer)) or v.is_integer() and abs(v) < 1e15:
            return f"{int(v):d}"
        return f"{v:.{_decimals(v)}f}"
    return value_words(col, value) if isinstance(value, (dict, list, tuple)) else str(value)


def times(df: pd.DataFrame) -> pd.DataFrame:
    """Every cell of ``df``, a time in nanoseconds, in its unit (a pivot whose columns are not
    named ``*_ns``)."""
    return df.apply(lambda col: col.map(lambda v: cell_words("ns", v)))


def _breakable(text: str) -> str:
    """``text`` escaped for HTML, with a line-break opportunity after each underscore (a narrow
    page wraps ``AverageNs_thread`` there, not mid-word)."""
    return escape(str(text)).replace("_", "_<wbr>")


def table_html(df: pd.DataFrame) -> str:
    """``df`` as HTML through pandas' Styler: cells by ``cell_words``, at most ``MAX_ROWS`` rows,
    a longer table saved whole and linked (``setup_display``)."""
    note = ""
    shown = df
    if len(df) > MAX_ROWS:
        shown = df.head(MAX_ROWS)
        note = f"The first {MAX_ROWS} of {len(df)} rows"
        run_dir = _CSV_TO.get("run_dir")
        if run_dir:
            from .. import layout
            from ..atomic import write_text_atomic
            _CSV_TO["n"] = _CSV_TO.get("n", 0) + 1
            name = f"{_CSV_TO['stem']}.table-{_CSV_TO['n']}.csv"
            write_text_atomic(layout.path(run_dir, "data_dir") / name, df.to_csv(index=not isinstance(df.index, pd.RangeIndex)))
            note += f"; all of them: <a href='../data/{escape(name)}'>{escape(name)}</a> (CSV)"
        note += "."
    styler = shown.style.format({c: (lambda v, c=c: _breakable(cell_words(c, v))) for c in shown.columns})
    styler = styler.format_index(lambda v: _breakable(cell_words("", v)), axis=0)
    styler = styler.format_index(lambda v: _breakable(str(v)), axis=1)
    if isinstance(shown.index, pd.RangeIndex):
        styler = styler.hide(axis="index")
    html = styler.to_html()
    return html + (f"<p><small>{note}</small></p>" if note else "")


def value_words(key: str, value) -> str:
    """One value of a mapping as a reader reads it: sizes in binary units, times in their unit,
    yes / no, a dash for nothing, lists joined; never a raw dict, None or NaN."""
    if value is None or (isinstance(value, float) and value != value):
        return "\u2014"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)) and key.endswith("nbytes"):
        return binary_size(value)
    if isinstance(value, (int, float)) and key.endswith("_ns"):
        return fmt_ns(value)
    if isinstance(value, dict):
        return "; ".join(f"{k.replace('_', ' ')}: {value_words(str(k), v)}" for k, v in value.items()) or "\u2014"
    if isinstance(value, (list, tuple)):
        return ", ".join(value_words(key, v) for v in value) or "\u2014"
    return str(value)


def about(info: dict) -> pd.DataFrame:
    """A mapping (``rt.describe()``) as a two-column table in words, e.g. ``memlock soft`` ->
    ``8 MiB``."""
    return pd.DataFrame([{"what": str(k).replace("_nbytes", "").replace("_ns", "").replace("_", " "),
                          "value": value_words(str(k), v)} for k, v in info.items()])


def spread(values) -> str:
    """'median (p5–p95, n)' in human time units."""
    v = np.asarray(pd.Series(values).dropna(), dtype=float)
    if not len(v):
        return "n/a"
    p5, p50, p95 = (fmt_ns(x).replace(" ", "\u00a0") for x in np.percentile(v, [5, 50, 95]))
    return f"{p50} ({p5}\u2013{p95}, n={len(v)})"      # no break inside a time


def _times(a: float, b: float) -> str:
    """``a / b`` as ``12.3x`` (never in scientific notation); a dash where it is not a number."""
    return format_measured(a / b, unit="x") if b and a == a and b == b else "\u2014"


def c12_table(df: pd.DataFrame) -> pd.DataFrame:
    """Carlo's three cases, both readings of his braces, from each source, beside the thread."""
    rows = []
    thread = {"1_lock_copy": "slowest 'by several orders of magnitude' than 2 and 3",
              "2_prelocked_copy": "the reference", "3_relock_copy": "'2 and 3 perform similarly'",
              "3_relock_counted_copy": "case 3 with the re-lock counted by pinpath (ROCT's count's analogue)",
              "pageable_copy": "(not in the thread: the pageable copy for reference)"}
    for src, s in df.groupby("source", sort=False):
        ref = s[s.case == "2_prelocked_copy"]
        for case, text in thread.items():
            part = s[s.case == case]
            if not len(part):
                continue
            rows.append({"source": src, "case": case, "thread": text,
                         "braces: lock + enqueue (his code)": spread(part.braces_ns),
                         "x case 2": _times(part.braces_ns.median(), ref.braces_ns.median()),
                         "with the wait": spread(part.braces_wait_ns),
                         "x case 2 (with wait)": _times(part.braces_wait_ns.median(), ref.braces_wait_ns.median()),
                         "lock inside": spread(part.lock_ns) if part.lock_ns.any() else "-",
                         "unlock (apart)": spread(part.unlock_ns) if part.unlock_ns.any() else "-",
                         "lock answer": ", ".join(sorted(set(part.lock_error) - {""})) or "granted"})
    return pd.DataFrame(rows)


def c2_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per size and direction: per-copy staging against pooled, and the share of allocate + grant + free."""
    t = df[df.event == "transfer"]
    rows = []
    for (n, d), g in t.groupby(["nbytes", "direction"]):
        fresh, pooled = g[g.policy == "stage_per_copy"], g[g.policy == "stage_pooled"]
        alloc = (fresh.alloc_ns + fresh.grant_ns + fresh.free_ns).median()
        rows.append({"size": binary_size(n), "direction": d, "per copy": spread(fresh.total_ns),
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


_OP_ORDER = {op: i for i, op in enumerate(("lock", "query", "relock", "unlock_after_relock", "unlock"))}


def lock_table(df: pd.DataFrame, harness: pd.DataFrame | None = None) -> pd.DataFrame:
    """Median duration of each call per op, state, backing and size, from C and from Python
    side by side (and the Python figure net of the null call and the recorder's cost, where the
    harness is given), beside the thread's figure; ordered by backing, size and op."""
    cost = null_call_ns(harness)
    keys = sorted(df.groupby(["op", "state", "backing", "nbytes"]).groups,
                  key=lambda k: (k[2], k[3], _OP_ORDER.get(k[0], 9), k[1]))
    groups = df.groupby(["op", "state", "backing", "nbytes"])
    rows = []
    for op, state, backing, n in keys:
        g = groups.get_group((op, state, backing, n))
        by = {s: gg for s, gg in g.groupby("source")}
        nat, py = by.get("native"), by.get("python")
        rows.append({"op": op, "state": state, "backing": backing, "size": binary_size(n),
                     "call": (py if py is not None else g).call.iloc[0],
                     "C (same buffer)": spread(nat.ns) if nat is not None else "-",
                     "Python": spread(py.ns) if py is not None else "-",
                     **({"Python net of harness": fmt_ns(py.ns.median() - cost) if py is not None else "-"}
                        if cost else {}),
                     "answer": ", ".join(sorted(set(g.error) - {""})) or "success",
                     "thread (AMD, sizes not given)": _LOCK_THREAD.get((op, state), "")})
    return pd.DataFrame(rows)


def fidelity(lock_cost: pd.DataFrame, harness: pd.DataFrame | None, platform: str) -> pd.DataFrame:
    """Per quantity, kind, backing and size: pinpath's Python figure beside the C library's on
    the same buffers, their ratio, and the null call that each Python figure carries."""
    null = null_call_ns(harness)
    rows = []
    keys = ["op", "state", "kind", "backing", "nbytes"]
    for key, g in lock_cost.groupby(keys):
        py, nat = g[g.source == "python"].ns, g[g.source == "native"].ns
        if not len(py) or not len(nat):
            continue
        q = dict(zip(keys, key))
        rows.append({"quantity": f"{q['op']} ({q['state']})", "platform": platform, "kind": q["kind"],
                     "backing": q["backing"], "nbytes": int(q["nbytes"]), "python_ns": float(py.median()),
                     "native_ns": float(nat.median()), "ratio": float(py.median() / nat.median()) if nat.median() else float("nan"),
                     "null_call_ns": null})
    return pd.DataFrame(rows, columns=["quantity", "platform", "kind", "backing", "nbytes", "python_ns", "native_ns",
                                       "ratio", "null_call_ns"])


def hazard_table(h: pd.DataFrame) -> pd.DataFrame:
    """C11 per policy: copies, how many put the other thread's unlock inside the copy, how many saw
    the page unlocked mid-copy, and by what."""
    rows = []
    for pol, g in h.groupby("policy", sort=False):
        rows.append({"policy": pol, "copies": len(g), "unlock inside the copy": int(g.unlock_inside_copy.astype(bool).sum()),
                     "page locked before the unlock": int(g.page_locked_before.astype(bool).sum()),
                     "page unlocked mid-copy (hazard)": int(g.hazard.astype(bool).sum()),
                     "read from": g.observed_by.iloc[0], "paths": ", ".join(sorted(set(g.a_path))),
                     "bytes verified": int(g.copy_verified.fillna(False).astype(bool).sum())})
    return pd.DataFrame(rows)


#: the comments around a conclusion: the run's final verdicts replace what they enclose (``html.restate_conclusions``)
CONCLUSION_OPEN, CONCLUSION_CLOSE = "<!-- pinpath:conclusion {ids} -->", "<!-- /pinpath:conclusion -->"


def conclusion(judged: pd.DataFrame, *, final: bool = False) -> str:
    """A short Markdown conclusion written from the judged claims (nothing typed in). In a
    notebook (``final`` False) it says that it reads this notebook's data alone; when the run
    is finalized, the verdicts judged on every data set of the run replace it."""
    lines = []
    for r in judged.to_dict("records"):
        text = lambda k: escape(r[k].strip(), quote=False) if isinstance(r.get(k), str) else ""   # noqa: E731 - run data: no raw HTML
        figure = ""
        if r.get("measured") == r.get("measured") and r.get("measured") is not None:
            figure = f": {text('metric')} = {format_measured(r['measured'], r.get('low'), r.get('high'), text('unit'))}"
        verdict = text("verdict") or "not measured"
        reading = READINGS.get(text("reading"), text("reading"))
        reading = f" ({reading})" if reading and not reading.startswith(verdict) else ""   # no "not applicable" twice
        why = text("why").rstrip(".")
        name = escape(row_key(r))           # "C4 (cold)": a claim judged apart in each cache state
        if why.startswith(verdict):        # the why says the verdict itself: one sentence, the word once
            lines.append(f"- **{name}** {why}{figure}.")
        else:
            lines.append(f"- **{name} {verdict}**{reading} on {text('platform')}{figure}." + (f" {why}." if why else ""))
    threads = {str(r["id"]): r.get("thread") for r in judged.to_dict("records")}      # a claim once
    claims = "; ".join(f"{escape(i)}: {escape(str(t), quote=False)}" for i, t in threads.items())
    head = ("**What the run found**, judged at the end on every data set of the run (the same verdicts as the "
            "report's claims table)" if final else
            "**What this notebook's data show** (the run's verdicts, judged at the end on every data set, "
            "replace this paragraph when the run is finalized)")
    ids = " ".join(re.sub(r"[^A-Za-z0-9]", "", i) for i in threads)
    return (CONCLUSION_OPEN.format(ids=ids) + "\n\n" + f"{head}. The thread's claim: {claims}.\n\n"
            + "\n".join(lines) + "\n\n" + CONCLUSION_CLOSE)


def bandwidth_table(df: pd.DataFrame) -> pd.DataFrame:
    """Median GB/s per case, direction and size; pinpath's pinned copy against the bare loop."""
    med = df.groupby(["direction", "nbytes", "case"]).gb_per_s.median().unstack("case")
    out = med.reset_index()
    out.columns.name = None
    out["size"] = out.nbytes.map(binary_size)
    if {"pinned", "plain_loop"} <= set(med.columns):
        out["pinned / plain loop"] = (med["pinned"] / med["plain_loop"]).round(3).values
    return out.drop(columns="nbytes")


def bandwidth_conclusion(bw: pd.DataFrame, link: pd.DataFrame) -> str:
    """A short Markdown conclusion of the bandwidth table, written from the data."""
    big = bw[bw.nbytes == bw.nbytes.max()]
    med = big.groupby(["case", "direction"]).gb_per_s.median()
    peak = float(link.peak_gb_per_s.iloc[0]) if len(link) else float("nan")
    parts = [f"{case} {d} {format_measured(v)} GB/s" for (case, d), v in med.items()]
    text = f"**At {binary_size(int(big.nbytes.iloc[0]))}**: " + ", ".join(parts) + "."
    if peak == peak:
        best = med.get(("pinned", "h2d"), float("nan"))
        text += f" The pinned H2D copy reaches {100 * best / peak:.0f} % of the {link.link.iloc[0]} raw peak ({peak:.1f} GB/s)."
    if {"pinned", "plain_loop"} <= set(big.case):
        small = bw[bw.nbytes == bw.nbytes.min()].groupby("case").gb_per_s.median()
        text += (f" pinpath's pinned copy against the runtime's bare loop: {_times(med.get(('pinned', 'h2d'), float('nan')), med.get(('plain_loop', 'h2d'), float('nan')))} "
                 f"at {binary_size(int(big.nbytes.iloc[0]))}, {_times(small.get('pinned', float('nan')), small.get('plain_loop', float('nan')))} "
                 f"at {binary_size(int(bw.nbytes.min()))} (the per-copy cost of the Python path shows at small sizes).")
    return text


def harness_table(df: pd.DataFrame) -> pd.DataFrame:
    """The harness's costs, each a time in its unit."""
    return pd.DataFrame({"what the harness costs": df.metric.str.replace("_ns", "").str.replace("_", " "),
                         "time": df.ns.map(fmt_ns)})


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
    """The claims judged in a notebook: the thread's figure beside the measured one (with what
    it measures, its unit and interval, and the repeats behind it with the spread between them);
    the verdicts are in ``conclusion``."""
    out = judged[["id", "who", "thread", "metric"]].copy()
    out["measured"] = [format_measured(r.measured, r.low, r.high, r.unit) or "\u2014" for r in judged.itertuples()]   # a verdict word only where the verdict is
    out["repeats"] = [format_repeats(r.get("n_repeats"), r.get("repeat_unit"), r.get("between_spread"))
                      for r in judged.to_dict("records")]
    return out      # the verdicts are the conclusion's, which the run's final judgement replaces


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
