"""Seaborn figures with words and units on the axes; every function returns the figure, drawn
by a figure-level interface (relplot, catplot, or the objects interface) and titled by ``_titled``.

Conventions: sizes in binary units only (KiB, MiB, GiB) on log-2 axes; times in human units
(ns, us, ms, s) on log axes wherever the values span decades; legends outside the axes; the
thread's figure can be drawn as a labelled reference line through ``reference=``, e.g.
``reference=[("thread: lock 35 us", 35_000)]`` (a time in nanoseconds).
"""

from __future__ import annotations

import math
import re
import textwrap
import warnings
from typing import Iterable, Mapping, Sequence, Union

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import pandas as pd
import seaborn as sns
import seaborn.objects as so

from ..units import fmt_ns
from ..units import binary_size

__all__ = ["theme", "words", "problems", "vs_size", "phase_bars", "case_bars", "timeline", "vs_threads", "overlap_bars",
           "answers_grid", "stats_bars", "limits_bars", "lock_cost_by_backing", "verdicts", "binary_size", "LABELS"]

Reference = Union[tuple[str, float], Sequence[tuple[str, float]], Mapping[str, float], None]

#: axis words for the columns the notebooks plot
LABELS = {
    "ns": "time per call", "total_ns": "time per transfer", "overhead_ns": "runtime overhead per transfer",
    "wall_ns": "wall time of all chains", "inside_ns": "time inside the braces", "AverageNs": "average time per call",
    "gb_per_s": "bandwidth (GB/s, decimal)", "nbytes": "transfer size", "threads": "host threads offloading at once",
    "queues": "number of queues", "nw": "walkers (nw, miniqmc's unit of work)",
    "label": "runtime variant, walkers (nw)", "op_state": "call (memory state)", "array": "array (direction)",
    "policy": "policy", "source": "timed by", "case": "case",
}
#: column names that are no words for a reader
_RAW_NAMES = {"nbytes", "ns", "total_ns", "overhead_ns", "wall_ns", "AverageNs", "label", "step", "nw", "op_state"}
_DECADES_FOR_LOG = math.log10(20)      # a span of 20x or more gets a log axis


def theme() -> None:
    sns.set_theme(style="whitegrid", context="notebook")
    plt.rcParams.update({"legend.frameon": False, "axes.titlesize": "medium", "figure.titlesize": "large"})


def words(fig) -> dict:
    """What a reader of ``fig`` is told, read through matplotlib's Axes API: the figure's title
    and, per axes that draws data, its title, axis labels and legend title."""
    axes = []
    for ax in fig.axes:
        drawn = ax.lines or ax.patches or ax.collections or ax.images
        if not drawn or not ax.get_visible() or not ax.axison:
            continue
        legend = ax.get_legend() or next((lg for lg in fig.legends), None)
        axes.append({"title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
                     "legend": legend.get_title().get_text() if legend is not None else None,
                     "entries": [t.get_text() for t in legend.get_texts()] if legend is not None else []})
    sup = fig.get_suptitle()
    return {"title": sup or next((a["title"] for a in axes if a["title"]), ""), "axes": axes}


def problems(fig) -> list[str]:
    """What ``words(fig)`` lacks: a title, an axis label on any axes that draws data (panels
    side by side may share the first one's y label), a legend title, a raw column name."""
    w = words(fig)
    if not w["axes"]:          # a notice (why nothing could be drawn): its words are the figure
        return [] if any(t.get_text().strip() for ax in fig.axes for t in ax.texts) or fig.texts else ["no words"]
    out = [] if w["title"] else ["no title"]
    for i, a in enumerate(w["axes"]):
        if not a["xlabel"]:
            out.append(f"axes {i}: no x label")
        if not a["ylabel"] and not (i and w["axes"][0]["ylabel"]):
            out.append(f"axes {i}: no y label")
        if a["legend"] == "":
            out.append(f"axes {i}: a legend without a title")
        if a["legend"] is not None and not a["entries"]:
            out.append(f"axes {i}: a legend without entries")
        for k in ("xlabel", "ylabel", "legend"):
            if a[k] in _RAW_NAMES:
                out.append(f"axes {i}: {k} is the column name {a[k]!r}")
    return out


def _label(col: str) -> str:
    return LABELS.get(col, col.replace("_", " "))


# -- axes ------------------------------------------------------------------------------------
class _Pow2Locator(mticker.Locator):
    """Ticks at powers of two whose exponent is a multiple of 1, 2, 3, 4, 5, 6, 8, 10 or 20 (4 KiB, 64 KiB,
    1 MiB, 16 MiB ...), the finest spacing that keeps at most ``most`` ticks, and no more than
    one per ``TICK_PX`` of the axis' length (labels such as "256 KiB" never touch)."""

    TICK_PX = 64

    def __init__(self, most: int = 8) -> None:
        self.most = most

    def __call__(self):
        lo, hi = self.axis.get_view_interval()
        return self.tick_values(lo, hi)

    def _room(self) -> int:
        axes = getattr(self.axis, "axes", None)
        if axes is None:
            return self.most
        box = axes.get_window_extent()
        length = box.width if self.axis is axes.xaxis else box.height
        return max(2, min(self.most, int(length // self.TICK_PX)))

    def tick_values(self, vmin, vmax):
        vmin, vmax = max(min(vmin, vmax), 1e-9), max(vmin, vmax, 2e-9)
        a, b = math.ceil(math.log2(vmin) - 1e-9), math.floor(math.log2(vmax) + 1e-9)
        most = self._room() if getattr(self, "axis", None) is not None else self.most
        previous: list[float] = []
        for step in (1, 2, 3, 4, 5, 6, 8, 10, 20):
            ticks = [2.0 ** e for e in range(a, b + 1) if e % step == 0]
            if len(ticks) < 2 and len(previous) >= 2 and len(previous) <= most + 1:
                return previous            # two ticks a little crowded read better than one
            if len(ticks) <= most:
                return ticks or [2.0 ** a]
            previous = ticks
        return ticks


class _BinaryLinearLocator(mticker.Locator):
    """Linear ticks every power-of-two number of bytes (0, 32 MiB, 64 MiB ...)."""

    def __call__(self):
        lo, hi = self.axis.get_view_interval()
        return self.tick_values(lo, hi)

    def tick_values(self, vmin, vmax):
        lo, hi = min(vmin, vmax), max(vmin, vmax)
        if hi <= lo:
            return [lo]
        step = 2.0 ** math.ceil(math.log2((hi - lo) / 6))
        return list(np.arange(math.ceil(lo / step) * step, hi + step / 2, step))


def _size_label(v, _pos=None) -> str:
    return binary_size(v) if v >= 1 else ("0" if v == 0 else "")


def _size_axis(ax, axis: str = "x", log: bool = True) -> None:
    """A byte axis in binary units; log 2 unless ``log`` is False."""
    a = ax.xaxis if axis == "x" else ax.yaxis
    if log:
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log", base=2)
        a.set_major_locator(_Pow2Locator())
    else:
        a.set_major_locator(_BinaryLinearLocator())
    a.set_major_formatter(mticker.FuncFormatter(_size_label))
    a.set_minor_formatter(mticker.NullFormatter())
    a.set_minor_locator(mticker.NullLocator())
    a.set_label_text("transfer size")


def _spans_decades(values) -> bool:
    v = np.asarray(pd.Series(values).dropna(), dtype=float)
    v = v[v > 0]
    return len(v) > 1 and math.log10(v.max() / v.min()) >= _DECADES_FOR_LOG


def _ns_axis(ax, log: bool = True, axis: str = "y") -> None:
    """A time axis (values in ns) with human units on the ticks; log if ``log``."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    if log:
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
        lo, hi = sorted(ax.get_ylim() if axis == "y" else ax.get_xlim())
        few = lo > 0 and math.log10(hi / lo) < 1.5
        a.set_major_locator(mticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0) if few else (1.0,)))
        a.set_minor_locator(mticker.LogLocator(base=10, subs=np.arange(2, 10) * 1.0))
        a.set_minor_formatter(mticker.NullFormatter())
    else:
        a.set_major_locator(mticker.MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10]))
    a.set_major_formatter(mticker.FuncFormatter(lambda v, _: fmt_ns(v) if v > 0 else "0"))


def _want_log(flag, values) -> bool:
    return _spans_decades(values) if flag is None else bool(flag)


def _references(reference: Reference) -> list[tuple[str, float]]:
    """``reference`` as a list of (label, value), checked."""
    if reference is None:
        return []
    if isinstance(reference, Mapping):
        items = list(reference.items())
    elif isinstance(reference, tuple) and len(reference) == 2 and isinstance(reference[0], str):
        items = [reference]
    else:
        items = list(reference)
    out = []
    for item in items:
        label, value = item
        value = float(value)
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"reference {label!r}: {value!r} is not a positive time in ns")
        out.append((str(label), value))
    return out


def _draw_references(ax, refs: list[tuple[str, float]], axis: str = "y") -> None:
    """Dashed lines at the thread's figures, each labelled; the axis is widened to show them.
    On a time y axis the label sits on the line at the right (or left) end; on a time x axis
    it sits above the axes, so it covers no bar."""
    if not refs:
        return
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    log = (ax.get_yscale() if axis == "y" else ax.get_xscale()) == "log"
    kw = {"color": "0.2", "ls": (0, (5, 3)), "lw": 1.1, "zorder": 1.8}
    box = {"boxstyle": "square,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.75}
    span = (math.log10(hi / lo) if log and lo > 0 else (hi - lo)) or 1.0
    placed: list[tuple[float, bool, str]] = []      # (position, right side, va) of the labels so far
    for label, value in sorted(refs, key=lambda r: -r[1]):
        if axis == "y":
            ax.axhline(value, **kw)
            pos = math.log10(value) if log else value
            near = [(r, va) for q, r, va in placed if abs(q - pos) < 0.09 * span]
            right, va = True, "bottom"
            if near:      # a label close above: this one goes to the other end, under its line
                right, va = not near[-1][0], "top"
            placed.append((pos, right, va))
            ax.annotate(label, xy=(0.99 if right else 0.01, value), xycoords=("axes fraction", "data"),
                        ha="right" if right else "left", va=va, fontsize="small", color="0.1", bbox=box,
                        zorder=5)
        else:
            i = len(placed)
            placed.append((value, True, "bottom"))
            ax.axvline(value, **kw)
            ax.annotate(label, xy=(value, 1.0), xycoords=("data", "axes fraction"), xytext=(0, 3 + 13 * i),
                        textcoords="offset points", ha="center", va="bottom", fontsize="small", color="0.1",
                        arrowprops={"arrowstyle": "-", "color": "0.5", "lw": 0.6} if i else None,
                        annotation_clip=False)
        lo, hi = (min(lo, value / 1.6), max(hi, value * 1.6)) if log else (min(lo, value), max(hi, value * 1.05))
    (ax.set_ylim if axis == "y" else ax.set_xlim)(lo, hi)
    if axis == "x":
        ax.set_title(ax.get_title(), pad=8 + 13 * len(refs))


def _retitle_legend(g, title: str, handle_lw: float | None = None) -> None:
    """A FacetGrid's legend (or an objects-interface figure's) drawn again with ``title`` just
    right of the panels; ``handle_lw``: its lines that wide (the legend of bars drawn as lines)."""
    fig = getattr(g, "figure", g)
    legend = (fig.legends[0] if fig.legends else None) if isinstance(g, plt.Figure) else g.legend
    if legend is None:
        return
    box = [ax.get_position() for ax in fig.axes]
    anchor = (max(b.x1 for b in box) + 0.01, max(b.y1 for b in box))
    if isinstance(g, plt.Figure):       # moved in place: the objects interface's legend cannot be removed
        legend.set_loc("upper left")
        legend.set_bbox_to_anchor(anchor, transform=fig.transFigure)
        legend.set_title(title)
        legend.set_frame_on(False)
        legend.set_in_layout(True)
    else:
        sns.move_legend(g, "upper left", bbox_to_anchor=anchor, title=title, frameon=False)
        legend = g.legend
    for h in legend.legend_handles if handle_lw else ():
        h.set_linewidth(handle_lw)


# -- figures ---------------------------------------------------------------------------------
def vs_size(df: pd.DataFrame, y: str, *, hue: str, style: str | None = None, col: str | None = None,
            title: str = "", ylabel: str = "", ns: bool = True, logy: bool | None = None,
            reference: Reference = None):
    """Median of ``y`` against ``nbytes`` with a 5-95 % band, one line per ``hue``.

    ``logy``: None picks a log axis where the values span 20x or more; ``ns``: ``y`` is a time
    in nanoseconds; ``reference``: the thread's times (ns) as labelled lines."""
    g = sns.relplot(data=df, x="nbytes", y=y, hue=hue, style=style, col=col, kind="line", marker="o",
                    estimator="median", errorbar=("pi", 90), height=4, aspect=1.3,
                    facet_kws={"sharey": False})
    log = _want_log(logy, df[y])
    refs = _references(reference)
    for i, ax in enumerate(g.axes.flat):
        _size_axis(ax)
        if ns:
            _ns_axis(ax, log)
        elif log:
            ax.set_yscale("log")
        ax.set_ylabel(ylabel or _label(y) if i == 0 else "")   # one label: the panels stand side by side
        _draw_references(ax, refs)
    if col:
        g.set_titles(col_template="{col_name}")
        g.figure.subplots_adjust(wspace=0.18)
    _retitle_legend(g, _label(hue) if not style else f"{_label(hue)}; {_label(style)}")
    return _titled(g, None, title)


def phase_bars(df: pd.DataFrame, phases: list[str], *, row: str, col: str | None = None, title: str = "",
               reference: Reference = None, share: bool = False):
    """Stacked medians of each phase (``<phase>_ns`` columns), one bar per ``row`` value, one
    panel per ``col``: seaborn's objects interface (Bar + Stack), the legend beside the panels.
    ``share``: each bar as the shares of its total (per cent), so that every size reads alike
    where the times span decades."""
    keys = [k for k in (col, row) if k]
    med = df.groupby(keys)[[f"{p}_ns" for p in phases]].median()
    if share:
        med = med.div(med.sum(axis=1), axis=0) * 100
        reference = None
    names = [p.replace("_", " ") for p in phases]
    ylabel = "transfer size" if row == "nbytes" else _label(row)
    order = sorted(med.index.get_level_values(row).unique())
    shown = {v: binary_size(v) if row == "nbytes" else str(v) for v in order}
    long = (med.set_axis(names, axis=1).reset_index().melt(id_vars=keys, var_name="phase", value_name="median")
            .assign(**{ylabel: lambda d: d[row].map(shown)}))
    panels = long[col].nunique() if col else 1
    fig = plt.figure(figsize=(5.2 * panels + 1.6, 0.42 * len(order) + 1.6))
    p = (so.Plot(long, x="median", y=ylabel, color="phase")
         .add(so.Bar(alpha=1, edgewidth=0, width=0.72), so.Stack())
         .scale(y=so.Nominal(order=[shown[v] for v in order]), color=so.Nominal("tab10", order=names))
         .label(x="share of the median transfer time" if share else "median time", y=ylabel, color="phase")
         .theme({**plt.rcParams}))
    with warnings.catch_warnings():     # seaborn 0.13's objects interface passes pandas 3 a deprecated keyword
        warnings.filterwarnings("ignore", message="The copy keyword is deprecated")
        (p.facet(col=col) if col else p).on(fig).plot()
    _retitle_legend(fig, "phase")
    refs = _references(reference)
    for ax in fig.axes:
        if share:
            ax.set_xlim(0, 100)
            ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:.0f} %"))
        else:
            _ns_axis(ax, log=False, axis="x")
        _draw_references(ax, refs, axis="x")
    return _titled(fig, None, title)


def case_bars(df: pd.DataFrame, x: str, y: str, *, hue: str | None = None, col: str | None = None,
              title: str = "", logy: bool | None = None, ylabel: str = "", xlabel: str = "",
              reference: Reference = None):
    """Median of ``y`` (a time in ns) per ``x`` (and ``hue``, one panel per ``col``) with a 5-95 %
    interval: seaborn's catplot, the legend titled in words beside the panels. The bars start at
    zero (a bar's length is its value) unless the values span 20x or more, or ``logy``."""
    words = _label(hue) if hue else None
    d = df.rename(columns={hue: words}) if hue else df
    g = sns.catplot(data=d, x=x, y=y, hue=words, col=col, kind="bar", estimator="median", errorbar=("pi", 90),
                    height=4, aspect=1.6 if col is None else 1.1, sharey=True, legend="auto" if hue else False)
    log = _want_log(logy, df[y])
    refs = _references(reference)
    for i, ax in enumerate(g.axes.flat):
        _ns_axis(ax, log)
        if not log:
            ax.set_ylim(bottom=0)
        ax.set_ylabel((ylabel or _label(y)) if i == 0 else "")
        ax.set_xlabel(xlabel or _label(x))
        if max((len(t.get_text()) for t in ax.get_xticklabels()), default=0) > 6:
            for label in ax.get_xticklabels():
                label.set_rotation(30)
                label.set_horizontalalignment("right")
        _draw_references(ax, refs)
    return _titled(g, col, title)


def _titled(g, col, title: str):
    """A facet grid's panels titled by their column value, the figure (or ``g``, a figure) by
    ``title``; its figure."""
    if col:
        g.set_titles(col_template="{col_name}")
    fig = getattr(g, "figure", g)
    if title:         # above everything drawn, the panels' titles and reference labels included
        fig.canvas.draw()
        tops = [a.get_window_extent().y1 for ax in fig.axes for a in (ax, ax.title, *ax.texts)
                if a.get_visible() and (a is ax or a.get_text())]
        fig.suptitle(title, y=(max(tops) + fig.dpi / 12) / fig.bbox.height, va="bottom")
    return fig


#: relplot's line kind drawing each ``unit`` as one flat bar from its first to its last ``x``
_SEGMENTS = {"units": "unit", "estimator": None, "sort": False, "solid_capstyle": "butt"}


def _segments(d: pd.DataFrame) -> pd.DataFrame:
    """Rows with ``start``, ``end`` and ``y`` as two points each (x = start, then end) of one unit."""
    d = d.reset_index(drop=True).rename_axis("unit").reset_index()
    return pd.concat([d.assign(x=d.start), d.assign(x=d.end)]).sort_values(["unit", "x"], kind="stable")


def _fill_rows(ax, rows: int, fill: float) -> None:
    """The segments of ``ax`` as thick as ``fill`` of one of its ``rows`` (y = 0 .. rows - 1)."""
    ax.set_ylim(rows - 0.5, -0.5)
    height_pt = ax.get_window_extent().height * 72 / ax.figure.dpi
    for line in ax.lines:
        line.set_linewidth(fill * height_pt / rows)


def _note(fig, text: str) -> None:
    """A sentence under the panels (what the data say that the bars cannot)."""
    ax = min(fig.axes, key=lambda a: (a.get_position().y0, a.get_position().x0))
    ax.annotate(textwrap.fill(text, 110), xy=(0, 0), xycoords="axes fraction", xytext=(-40, -46),
                textcoords="offset points", ha="left", va="top", fontsize="small", color="0.25", annotation_clip=False)


def _stretched(c: pd.DataFrame, floor: float) -> pd.DataFrame:
    """One row's calls (``start_ns``, ``duration_ns``, in order) laid end to end on 0..100: each
    as wide as its share of the row's time but at least ``floor`` per cent, the idle time
    between them kept; adds ``start`` and ``end``."""
    c = c.sort_values("start_ns", kind="stable")
    if c.empty:
        return c.assign(start=0.0, end=0.0)
    ends = c.start_ns + c.duration_ns
    idle = (c.start_ns - ends.cummax().shift(fill_value=c.start_ns.iloc[0])).clip(lower=0)
    whole = max(float(ends.max() - c.start_ns.min()), 1.0)
    width = np.maximum(c.duration_ns / whole * 100, floor)
    stop = (idle / whole * 100 + width).cumsum()
    scale = 100 / stop.iloc[-1]
    return c.assign(start=(stop - width) * scale, end=stop * scale)


def timeline(transfers: pd.DataFrame, calls: pd.DataFrame, *, invocations: int = 1, title: str = "",
             floor: float = 2.0):
    """The native calls of the first ``invocations`` region invocations of each policy, in
    order, one row per policy, one bar per call coloured by category: seaborn's relplot, each
    call a segment. Each row spans the policy's own time from its first call to its last (named
    beside it), each call as wide as its share of that time but at least ``floor`` per cent, so
    that every call shows however long the others take."""
    t = transfers[(transfers.event.isin(["transfer", "kernel"])) & (transfers.step == 0)
                  & (transfers.invocation < invocations)]
    c = calls.merge(t[["transfer_id", "policy"]], on="transfer_id")
    policies = list(dict.fromkeys(t.policy))
    c = pd.concat([_stretched(c[c.policy == p], floor).assign(y=i) for i, p in enumerate(policies)])
    whole = (c.start_ns + c.duration_ns).groupby(c.policy).max() - c.start_ns.groupby(c.policy).min()
    cats = sorted(set(c.category))
    height = 0.5 * len(policies) + 1.2
    g = sns.relplot(data=_segments(c.rename(columns={"category": "native call"})), x="x", y="y",
                    hue="native call", hue_order=cats, palette="tab10", kind="line", height=height,
                    aspect=max(9 / height, 1.2), **_SEGMENTS)
    ax = g.ax
    ax.set_yticks(range(len(policies)), [f"{p} ({fmt_ns(whole[p])})" if p in whole else f"{p} (no native calls)"
                                         for p in policies])
    _fill_rows(ax, len(policies), 0.55)
    ax.set_xlim(0, 100)
    ax.set_xticks([0, 100], ["first call", "last call"])
    ax.set_xlabel(f"the policy's calls in order, each as wide as its share of the time (at least {floor:g} %)")
    ax.set_ylabel("policy (its time from first to last call)")
    _retitle_legend(g, "native call", handle_lw=6)
    return _titled(g, None, title)


def vs_threads(df: pd.DataFrame, y: str, *, hue: str = "policy", col: str | None = None, title: str = "",
               ns: bool = True, logy: bool | None = True, ylabel: str = "", reference: Reference = None):
    """Per-thread values against the thread count (a log-2 axis), one line per ``hue`` with a
    5-95 % band, one panel per ``col``: seaborn's relplot, the legend titled in words."""
    words = _label(hue)
    g = sns.relplot(data=df.rename(columns={hue: words}), x="threads", y=y, hue=words, col=col, kind="line",
                    marker="o", estimator="median", errorbar=("pi", 90), height=4, aspect=1.5 if col is None else 1.1)
    log = _want_log(logy, df[y])
    refs = _references(reference)
    for i, ax in enumerate(g.axes.flat):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(mticker.FixedLocator(sorted(df.threads.unique())))
        ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{int(v)}"))
        ax.xaxis.set_minor_locator(mticker.NullLocator())
        ax.set_xlabel(_label("threads"))
        if ns:
            _ns_axis(ax, log)
        ax.set_ylabel((ylabel or _label(y)) if i == 0 else "")
        _draw_references(ax, refs)
    return _titled(g, col, title)


def overlap_bars(ov: pd.DataFrame, *, reference: Reference = None):
    """Wall time of all chains per queue count; a frame that says why the test could not run
    becomes a figure that says so."""
    if "not_applicable" in ov.columns:
        fig, ax = plt.subplots(figsize=(7, 1.2))
        ax.axis("off")
        ax.text(0, 0.5, "not applicable here: " + str(ov.not_applicable.iloc[0]), va="center", wrap=True)
        return fig
    return case_bars(ov, "queues", "wall_ns", title="wall time of all chains, by number of queues", logy=False,
                     reference=reference)


_ANSWER_COLORS = {"granted": "#8fd18f", "refused": "#f2a3a3", "query: locked": "#b5dcf2",
                  "query: not locked": "#f2d7a3"}


def answers_grid(probes: pd.DataFrame, title: str = "", judged: dict[str, str] | None = None):
    """Each probe as a row of cells, one per call in order, each cell naming the call and
    coloured by the runtime's answer (granted, refused, or what a query answered): seaborn's
    relplot, each cell a segment. ``judged`` maps a probe to the claim judged on it (its row
    label says so, in bold)."""
    def word(r):
        if str(r.action).startswith("query"):
            return "query: locked" if r.locked else "query: not locked"
        return "granted" if not r.error else "refused"
    names = list(dict.fromkeys(probes.probe))
    d = probes.assign(answer=[word(r) for r in probes.itertuples()], y=probes.probe.map(
        {p: i for i, p in enumerate(names)}), start=probes.step + 0.03, end=probes.step + 0.97)
    steps = int(d.step.max()) + 1
    answers = [a for a in _ANSWER_COLORS if a in set(d.answer)]
    height = 0.62 * len(names) + 1.0
    g = sns.relplot(data=_segments(d.rename(columns={"answer": "the runtime's answer"})), x="x", y="y",
                    hue="the runtime's answer", hue_order=answers, palette=_ANSWER_COLORS, kind="line", height=height,
                    aspect=(1.6 * steps + 1) / height, **_SEGMENTS)
    ax = g.ax
    for r in d.itertuples():
        ax.text(r.step + 0.5, r.y, textwrap.fill(str(r.action), 18), ha="center", va="center", fontsize="small")
    judged = judged or {}
    ax.set_yticks(range(len(names)), [p.replace("_", " ") + (f"\n({judged[p]} is judged on it)" if p in judged else "")
                                      for p in names])
    for label, p in zip(ax.get_yticklabels(), names):
        label.set_fontweight("bold" if p in judged else "normal")
    _fill_rows(ax, len(names), 0.8)
    ax.set_xlim(0, steps)
    ax.set_xticks(np.arange(steps) + 0.5, [f"call {i + 1}" for i in range(steps)])
    ax.grid(False)
    ax.set_xlabel("the calls made on one buffer, in order")
    ax.set_ylabel("probe")
    _retitle_legend(g, "the runtime's answer", handle_lw=6)
    return _titled(g, None, title)


def stats_bars(calls: pd.DataFrame, thread: pd.DataFrame, *, names=None, title: str = "",
                reference: Reference = None):
    """Average time per call by call name, without and with the application pinning its arrays
    first (``user_pinned``): our calls (``api_calls``: one row per call, with ``duration_ns``,
    ``rc`` and ``caller``; the application's own calls named apart, as the thread's table has
    its lock_to_pool) and the thread's rocprof tables (``Name``, ``AverageNs``) in two panels on
    one time axis, seaborn's catplot. Refused calls are counted in a note under the panels."""
    pinning = {False: "does not pin its arrays", True: "pins its arrays first"}
    own = calls.caller.astype(str).eq("application") if "caller" in calls else pd.Series(False, index=calls.index)
    ours = calls.assign(Name=calls.call.astype(str).where(~own, calls.call.astype(str) + " (the application's own)"),
                        AverageNs=calls.duration_ns, source="measured here")
    d = pd.concat([ours, thread.assign(source="the thread's rocprof tables")], ignore_index=True)
    if names is not None:
        d = d[d.Name.isin(list(names))]
    d = d.assign(**{"the application": d.user_pinned.astype(bool).map(pinning)})
    rows = d.groupby("source").Name.nunique().max()
    g = sns.catplot(data=d, y="Name", x="AverageNs", hue="the application", hue_order=list(pinning.values()),
                    col="source", kind="bar", estimator="mean", errorbar=None, sharey=False,
                    height=0.9 * rows + 1.2, aspect=5.6 / (0.9 * rows + 1.2))
    g.set_titles(col_template="{col_name}")
    log = _want_log(None, d.groupby(["source", "Name", "the application"]).AverageNs.mean())
    refs = _references(reference)
    for i, ax in enumerate(g.axes.flat):
        _ns_axis(ax, log, axis="x")
        ax.set_xlabel("average time per call")
        ax.set_ylabel("call" if i == 0 else "")
        _draw_references(ax, refs, axis="x")
    _retitle_legend(g, "the application")
    refused = ours[ours.rc.fillna(0) > 0] if "rc" in ours else ours.iloc[:0]
    if len(refused):     # a refusal is a path with a cost: say which bars hold refusals
        _note(g.figure, "; ".join(
            f"{len(r)} of {int((ours.Name == name).sum())} {name} calls refused (rc {', '.join(map(str, sorted(set(r.rc.astype(int)))))})"
            for name, r in refused.groupby("Name")) + ": their averages are what a refusal costs")
    return _titled(g, None, title)


def limits_bars(limits: pd.DataFrame, title: str = ""):
    """Each request of the lock-limit probe, one panel per call: its size against the limit
    (a dashed line), granted or refused, seaborn's catplot. Requests above the limit that were
    granted get a note under the panels, with what the kernel counted as locked (VmLck)."""
    limit = float(limits.limit_nbytes.iloc[0])
    d = limits.assign(size=limits.nbytes.map(binary_size), answer=limits.granted.astype(bool).map(
        {True: "granted", False: "refused"}), call=limits.op.map(_LIMIT_CALLS).fillna(limits.op))
    order = [binary_size(v) for v in sorted(limits.nbytes.unique())]
    g = sns.catplot(data=d, y="size", x="nbytes", hue="answer", col="call", kind="bar", order=order, dodge=False,
                    hue_order=["granted", "refused"], palette={"granted": "#5aa55a", "refused": "#c94c4c"},
                    height=0.45 * len(order) + 1.4, aspect=2.6 / (0.45 * len(order) + 1.4) * 1.6, errorbar=None)
    g.set_titles(col_template="{col_name}")
    for i, ax in enumerate(g.axes.flat):
        _size_axis(ax, "x", log=_spans_decades([*limits.nbytes, limit]))
        ax.set_xlabel("bytes asked for")
        ax.set_ylabel("request size" if i == 0 else "")
        _draw_references(ax, [(f"RLIMIT_MEMLOCK {binary_size(limit)}", limit)], axis="x")
    _retitle_legend(g, "answer")
    past = limits[limits.granted.astype(bool) & (limits.nbytes > limit)]
    if len(past):        # the limit did not bind: say so, with what the kernel counted
        counted = past.vmlck_nbytes.max() if "vmlck_nbytes" in past else float("nan")
        why = (f"; the kernel counted at most {binary_size(counted)} locked (VmLck) after them, so these pins are "
               "not charged to RLIMIT_MEMLOCK" if counted == counted and counted < past.nbytes.min() else "")
        _note(g.figure, f"{len(past)} request{'s' if len(past) > 1 else ''} above the limit granted{why}")
    return _titled(g, None, title)


_LIMIT_CALLS = {"lock": "lock of heap memory", "alloc_pinned": "pinned allocation"}


_BACKING_WORDS = ((re.compile(r"^(4\s*k|4\s*kib|small|base|4096)", re.I), "4 KiB pages"),
                  (re.compile(r"thp|huge|2\s*m", re.I), "transparent huge pages (THP)"))


def _backing_order(values: Iterable[str]) -> list[str]:
    def rank(v: str) -> tuple[int, str]:
        for i, (pat, _) in enumerate(_BACKING_WORDS):
            if pat.search(str(v)):
                return i, str(v)
        return len(_BACKING_WORDS), str(v)
    return sorted(dict.fromkeys(values), key=rank)


def _backing_title(v: str) -> str:
    return next((words for pat, words in _BACKING_WORDS if pat.search(str(v))), str(v))


def lock_cost_by_backing(df: pd.DataFrame, *, ops: Sequence[str] | None = ("lock", "unlock"),
                         title: str = "", logy: bool | None = True, reference: Reference = None):
    """The lock-cost sweep with 4 KiB-backed and THP-backed memory side by side (one panel per
    ``backing``, same time axis): median time per call against the size, one line per op and
    state (and a line style per memory kind where there are several), 5-95 % bands.

    ``df``: columns op, state, kind, backing, nbytes, ns."""
    d = df if ops is None else df[df.op.isin(list(ops))]
    d = d.assign(call=d.op.astype(str) + " (" + d.state.astype(str) + ")")
    order = _backing_order(d.backing)
    style = "kind" if d.kind.nunique() > 1 else None
    g = sns.relplot(data=d, x="nbytes", y="ns", hue="call", style=style, col="backing", col_order=order,
                    kind="line", marker="o", estimator="median", errorbar=("pi", 90), height=4, aspect=1.15,
                    facet_kws={"sharey": True, "sharex": True})
    log = _want_log(logy, d.ns)
    refs = _references(reference)
    for i, (ax, backing) in enumerate(zip(g.axes.flat, order)):
        _size_axis(ax)
        _ns_axis(ax, log)
        ax.set_ylabel("time per call" if i == 0 else "")
        ax.set_title(_backing_title(backing))
        _draw_references(ax, refs)
    _retitle_legend(g, "call (memory state)" + ("; memory kind" if style else ""))
    return _titled(g, None, title)


_UNIT_TICKS = {"x": lambda v: f"{v:.3g}x", "fraction": lambda v: f"{100 * v:.0f} %", "count": lambda v: f"{v:g}",
               "ns": lambda v: fmt_ns(v) if v > 0 else "0"}


def verdicts(judged: pd.DataFrame, title: str = ""):
    """One panel per judged claim of ``judged`` (claims.csv's rows): the quantity its verdict
    judges (``measured``, dot) with its 95 % interval (bar) on an axis in the verdict's unit,
    the threshold (dashed) and, in green, the side where the claim holds: the figure says what
    the verdict says. Each panel's gid is the claim's id. None where no row has a figure."""
    from . import strip
    rows = [(r, strip.scale(r)) for r in judged.to_dict("records")]
    rows = [(r, sc) for r, sc in rows if sc is not None]
    if not rows:
        return None
    fig, axes = plt.subplots(len(rows), 1, figsize=(9, 1.05 * len(rows) + 0.6), squeeze=False)
    for ax, (r, sc) in zip(axes[:, 0], rows):
        ax.set_gid(str(r.get("id", "")))
        ax.axvspan(*sc.holds, color="#dcf2dc", zorder=0, label="the claim holds here")
        for m in sc.marks:
            ax.axvline(m, color="0.2", ls=(0, (4, 2)), lw=1.1, zorder=1)
        ax.errorbar([sc.value], [0], xerr=[[sc.value - sc.low], [sc.high - sc.value]], fmt="o", color="#0b57b0",
                    ecolor="#1f2328", elinewidth=3, capsize=0, zorder=3)
        if sc.log:
            ax.set_xscale("log")
        ax.set_xlim(sc.lo, sc.hi)
        ax.set_ylim(-1, 1)
        ax.set_yticks([])
        ax.grid(False, axis="y")
        fmt = _UNIT_TICKS.get(sc.unit, lambda v: f"{v:g}")
        ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _p, f=fmt: f(v)))
        ax.xaxis.set_minor_formatter(mticker.NullFormatter())
        if sc.log:
            ax.xaxis.set_major_locator(mticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        else:
            ax.xaxis.set_major_locator(mticker.MaxNLocator(nbins=5))
        ax.set_ylabel(f"{r.get('id', '')}\n{r.get('verdict') or ''}", rotation=0, ha="right", va="center",
                      fontsize="small")
        ax.set_xlabel(textwrap.shorten(str(r.get("metric") or r.get("short") or ""), 100), fontsize="small")
    fig.suptitle(textwrap.fill(title or "each verdict's figure: the measured value and its 95 % interval against "
                                        "the claim's threshold (dashed; green: where the claim holds)", 110),
                 fontsize="small")
    fig.tight_layout()
    return fig
