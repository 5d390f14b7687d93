"""The advice's pages: ``advice.html`` and ``summary.md`` (to paste into an issue) with the
pattern, the ranking with intervals, a figure of cost per policy by size class and the advice;
``prediction.csv`` where real figures are given."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from ..report.figures.axes import error_bars
from ..report.fmt import binary_size, format_measured
from ..units import fmt_ns
from ..report.share import _table, md_cell
from .pattern import Pattern
from .predict import Prediction

__all__ = ["figure", "write_pages", "write_prediction", "PREDICTION_COLUMNS"]

PREDICTION_COLUMNS = ["application", "kind", "variant", "placement", "predicted_placement", "predicted_ns",
                      "predicted_low", "predicted_high", "real_ns", "real_low", "real_high", "ratio", "low", "high",
                      "verdict", "state", "probe_late_share", "real_late_share"]
KINDS = {"variant": "a setting the user can make", "difference": "a variant less plain",
         "runtime design": "a design a runtime could adopt, not a setting a user can set"}


def figure(pred: Prediction, path: Path) -> Path | None:
    """Median replayed time per transfer by size class, one line per variant and direction
    (later uses of a buffer where replayed, else first uses), with the intervals as bars."""
    c = pred.by_class
    if not len(c):
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter
    later = c[c.use == c.groupby(["variant", "nbytes", "direction"]).use.transform("max")]
    g = later.groupby(["variant", "direction", "nbytes"]).agg(median_ns=("median_ns", "median"), low=("low", "min"),
                                                             high=("high", "max")).reset_index()
    fig, axes = plt.subplots(1, g.direction.nunique(), figsize=(5.5 * g.direction.nunique(), 3.6), squeeze=False)
    for ax, (d, gd) in zip(axes[0], g.groupby("direction")):
        for v, gv in gd.groupby("variant"):
            gv = gv.sort_values("nbytes")
            ax.errorbar(gv.nbytes, gv.median_ns, yerr=error_bars(gv.median_ns, gv.low, gv.high),
                        marker="o", capsize=3, label=v)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: binary_size(v) if v >= 1 else ""))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: fmt_ns(v)))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _p: ""))
        ax.set_title(d.upper())
        ax.set_xlabel("size class")
        ax.set_ylabel("time per transfer (median, 95 % CI)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _ranking_rows(pred: Prediction) -> list[list[str]]:
    shared = pred.totals["rank"].value_counts()   # "2=": intervals that overlap, no order between them
    return [[f"{r.rank}=" if pd.notna(r.rank) and shared.get(r.rank, 0) > 1 else str(r.rank),
             md_cell(r.variant, code=True), md_cell(r.policy),
             format_measured(r.predicted_ns, r.low, r.high, "ns") or f"not replayed: {r.not_replayed}",
             format_measured(r.per_transfer_ns, unit="ns"),
             f"{format_measured(r.region_median_ns, unit='ns')} ({format_measured(r.region_min_ns, unit='ns')} .. "
             f"{format_measured(r.region_max_ns, unit='ns')}, {r.n_regions} regions)"] for r in pred.totals.itertuples()]


def _region_rows(pred: Prediction, by: str) -> list[list[str]]:
    df = pred.regions if by == "region" else pred.steps
    if not len(df):
        return []
    top = df[df.signature < 3]
    return [[md_cell(r.variant, code=True), str(getattr(r, f"n_{by}s")), str(r.transfers),
             format_measured(r.predicted_ns, r.low, r.high, "ns")] for r in top.itertuples()]


def _pattern_lines(p: Pattern) -> list[str]:
    t, tr = p.trace, p.transfers
    lines = [f"Trace `{Path(t.path).name}` ({t.format}): {len(tr)} copies"]
    if len(p.buffers):
        lines[0] += (f" of {len(p.buffers)} host buffers in {len(p.arrays)} arrays, "
                     f"{binary_size(int(tr.nbytes.sum()))} moved; "
                     f"{int((tr.direction == 'h2d').sum())} H2D, {int((tr.direction == 'd2h').sum())} D2H; "
                     f"{p.regions.region.nunique()} region(s); {len(p.classes)} (size, direction, reuse) classes"
                     + (" (sizes binned by powers of two)" if p.size_binned else "") + ".")
    elif t.stats is not None:
        lines[0] = f"Trace `{Path(t.path).name}` ({t.format}): {len(t.stats)} HSA functions."
    lines += [f"- can tell: {k}" for k in t.knows] + [f"- cannot tell: {k}" for k in t.lacks]
    return lines


def _design_lines(designs: pd.DataFrame | None) -> list[str]:
    """The runtime designs' section (``advise --designs``): for runtime developers, never advice."""
    if designs is None or not len(designs):
        return []
    by = designs.by.iat[0]
    return ["### Runtime designs (for runtime developers: what this application would pay if the runtime moved its "
            "bytes this way; designs a runtime could adopt, not settings a user can set)", "",
            *_table(["rank", "runtime design", "what the runtime would do", "whole trace", f"median {by}",
                     "against today's plain"],
                    [[str(r.rank), md_cell(r.design, code=True), md_cell(r.what),
                      format_measured(r.predicted_ns, r.low, r.high, "ns") or f"not replayed: {r.not_replayed}",
                      format_measured(r.typical_ns, r.typical_low, r.typical_high, "ns"),
                      f"{r.against_plain:.2f}x" if pd.notna(r.against_plain) else ""] for r in designs.itertuples()],
                    right=(3, 4, 5)), ""]


def write_pages(out: Path, p: Pattern, pred: Prediction | None, advice: list[str], meta: dict,
                designs: pd.DataFrame | None = None) -> dict:
    """advice.html, summary.md and cost_by_size.png in ``out``; the paths. ``designs``: the
    runtime designs' table (``advise.designs.design_table``), a section of its own."""
    out.mkdir(parents=True, exist_ok=True)
    fig = figure(pred, out / "cost_by_size.png") if pred is not None else None
    md = [f"## pinpath advise: {md_cell(Path(p.trace.path).name)}", "",
          " · ".join(f"{k} {v}" for k, v in meta.items()), "", "### Pattern", "", *_pattern_lines(p), ""]
    if len(p.arrays):
        top = p.arrays.sort_values("moved_nbytes", ascending=False).head(10)
        maps = p.trace.has_maps and "maps" in top.columns   # bit 8's lines: how often each was mapped
        md += _table(["array", "name", "owner", "size", "buffers", "transfers", "H2D", "D2H"] +
                     (["maps", "mapped every step"] if maps else []),
                     [[md_cell(r.array, code=True), md_cell(r.name, code=True), md_cell(r.owner),
                       binary_size(int(r.nbytes)), str(r.buffers), str(r.transfers), str(r.h2d), str(r.d2h)] +
                      ([str(r.maps), "yes" if r.remapped else "no"] if maps else [])
                      for r in top.itertuples()],
                     right=(3, 4, 5, 6, 7, 8)) + [""]
    if pred is not None:
        md += ["### Ranking (predicted transfer time of the whole trace, 95 % CI; `2=`: overlapping intervals, no order)", "",
               *_table(["rank", "variant", "policy", "predicted", "per transfer", "per region: median (min .. max)"],
                      _ranking_rows(pred), right=(3, 4)), ""]
        inv = p.regions[p.regions.region >= 0]
        one_per_step = bool(len(inv)) and (inv.step >= 0).all() and inv.step.nunique() == len(inv)
        shown = ("step",) if one_per_step else ("region", "step")   # a region per step: one table says it
        for by, typ in pred.typical.groupby("by", sort=False) if len(pred.typical) else ():
            if by not in shown:
                continue
            md += [f"The median {by} (of {typ.n_groups.iat[0]}), predicted transfer time:", "",
                   *_table(["variant", by, "predicted"],
                           [[md_cell(r.variant, code=True), str(r.group), format_measured(r.predicted_ns, r.low, r.high, "ns")]
                            for r in typ.itertuples()], right=(1, 2)), ""]
        for by in shown:
            rows = _region_rows(pred, by)
            if rows:
                md += [f"Per {by} (the most common {by}s' pattern first):", "",
                       *_table(["variant", f"{by}s", "transfers", f"predicted per {by}"], rows, right=(1, 2, 3)), ""]
        be = pred.break_even
        if len(be):
            md += ["### Break-evens (transfers of one buffer after which a variant's one-off cost is paid back)", "",
                   *_table(["variant", "size", "direction", "one-off", "saving per transfer", "break-even"],
                           [[md_cell(r.variant, code=True), binary_size(int(r.nbytes)), r.direction,
                             format_measured(r.one_off_ns, unit="ns"), format_measured(r.saving_ns, unit="ns"),
                             md_cell(r.verdict)] for r in be.itertuples()], right=(3, 4)), ""]
        if fig:
            md += ["![cost per policy by size class](cost_by_size.png)", ""]
    advice_md = ["### Advice", "", *[f"- {a}" for a in advice], ""]
    if pred is not None and len(pred.break_even) and (pred.break_even.one_off_ns < 0).any():
        advice_md += ["*A negative one-off cost: the variant's once-per-buffer events (map, unmap, and its "
                      "register and unregister where it pins) cost less than the baseline's, so it has nothing "
                      "to pay back: it saves from the first transfer.*", ""]
    advice_md += _design_lines(designs)
    head, rest = md[:3], md[3:]
    text = "\n".join(md + advice_md)
    (out / "summary.md").write_text(text)
    import mistune   # nbconvert's Markdown renderer, a dependency already; escapes raw HTML
    render = mistune.create_markdown(escape=True, plugins=["table"])
    body = render("\n".join(head + advice_md + rest))          # the advice first: what a reader came for
    (out / "advice.html").write_text(_page(body, pred, designs))
    return {"summary": out / "summary.md", "html": out / "advice.html", "figure": fig}


#: the page's style: tables wrap their words and, where still too wide, scroll inside the page
_STYLE = ("body{font-family:system-ui,sans-serif;font-size:15px;line-height:1.45;max-width:70em;margin:1.2em auto;"
          "padding:0 1em}table{border-collapse:collapse;font-size:90%;margin:.5em 0}td,th{border:1px solid #ccc;"
          "padding:2px 6px;vertical-align:top}.wide{overflow-x:auto;max-width:100%}"
          "img{max-width:100%;height:auto}code{overflow-wrap:normal}")


def _narrow(df: pd.DataFrame, most_columns: int = 8, most_rows: int = 6) -> pd.DataFrame:
    """A wide table of a few rows turned on its side (a row per column, a column per row, the
    first column's values as headers), each cell already in words: it fits a window's width."""
    if df.shape[1] <= most_columns or len(df) > most_rows:
        return df
    from ..report.tables import cell_words
    key = df.columns[0]
    side = pd.DataFrame({str(r[key]): [cell_words(c, r[c]) for c in df.columns[1:]] for _, r in df.iterrows()},
                        index=[str(c) for c in df.columns[1:]])
    return side.rename_axis(f"{key}:").reset_index()


def _page(body: str, pred: Prediction | None, designs: pd.DataFrame | None = None) -> str:
    """advice.html: the advice's Markdown as HTML, then every figure of the prediction as tables
    whose cells read as words (``tables.cell_words``: units, no NaN / inf / e-notation, yes / no)."""
    from ..report.tables import table_html
    tables = []
    if pred is not None:
        for name, df in (("ranking", pred.totals), ("per region", pred.regions), ("per step", pred.steps),
                         ("break-evens", pred.break_even), ("arrays", pred.arrays), ("by class", pred.by_class),
                         ("runtime designs", designs if designs is not None else pd.DataFrame())):
            if len(df):
                if "predicted_ns" in df.columns:      # its interval is of that time: in its unit too
                    df = df.rename(columns={"low": "low_ns", "high": "high_ns"})
                tables.append(f"<h3>{html.escape(name)}</h3><div class='wide'>{table_html(_narrow(df))}</div>")
    body = body.replace("<table>", "<div class='wide'><table>").replace("</table>", "</table></div>")
    return ("<!doctype html><meta charset='utf-8'><meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>pinpath advise</title><style>{_STYLE}</style>"
            f"{body}<h2>All figures</h2>{''.join(tables)}")


    return {"summary": out / "summary.md", "html": out / "advice.html", "figure": fig}


def write_prediction(path: Path, rows: list[dict]) -> Path:
    """``prediction.csv``: per application and ``kind`` (KINDS) the predicted and the real time
    per step (or invocation) with the ratio's interval; the real columns, ``ratio``, ``low`` and
    ``high`` stay empty where no real figure was given. ``placement``: where the real figures were
    taken; ``predicted_placement``: where the prediction was measured (``advise.placement.WHERE``);
    ``state``: empty, or the wait state (``wake_state.STATES``) of a row predicted and checked in one
    state, with the share of late copies the probe saw and the real steps' late share."""
    df = pd.DataFrame([{"kind": "variant", "placement": "", "predicted_placement": "", "verdict": "", "state": "", **r}
                       for r in rows],
                      columns=PREDICTION_COLUMNS)
    real = pd.to_numeric(df.real_ns, errors="coerce")
    df["ratio"] = pd.to_numeric(df.predicted_ns, errors="coerce") / real.where(real != 0)
    for c in ("low", "high", "predicted_low", "predicted_high", "real_low", "real_high", "probe_late_share", "real_late_share"):
        df[c] = pd.to_numeric(df[c], errors="coerce")
    df.to_csv(path, index=False, float_format="%.6g", na_rep="")
    return path
