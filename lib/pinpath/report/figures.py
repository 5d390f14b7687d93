"""Seaborn figures with words and units on the axes; every function returns the figure.

Conventions: sizes in binary units only (KiB, MiB, GiB) on log-2 axes; times in human units
(ns, us, ms, s) on log axes wherever the values span decades; legends outside the axes; the
thread's figure can be drawn as a labelled reference line through ``reference=``, e.g.
``reference=[("thread: lock 35 us", 35_000)]`` (a time in nanoseconds).
"""

from __future__ import annotations

import math
import re
from typing import Iterable, Mapping, Sequence, Union

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import pandas as pd
import seaborn as sns

from ..units import fmt_ns
from ..units import binary_size

__all__ = ["theme", "words", "problems", "vs_size", "phase_bars", "case_bars", "timeline", "vs_threads", "overlap_bars",
           "answers_grid", "stats_bars", "limits_bars", "lock_cost_by_backing", "binary_size", "LABELS"]

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
    """Ticks at powers of two whose exponent is a multiple of 1, 2, 4, 10 or 20 (4 KiB, 64 KiB,
    1 MiB, 16 MiB ...), the finest spacing that keeps at most ``most`` ticks."""

    def __init__(self, most: int = 8) -> None:
        self.most = most

    def __call__(self):
        lo, hi = self.axis.get_view_interval()
        return self.tick_values(lo, hi)

    def tick_values(self, vmin, vmax):
        vmin, vmax = max(min(vmin, vmax), 1e-9), max(vmin, vmax, 2e-9)
        a, b = math.ceil(math.log2(vmin) - 1e-9), math.floor(math.log2(vmax) + 1e-9)
        for step in (1, 2, 4, 10, 20):
            ticks = [2.0 ** e for e in range(a, b + 1) if e % step == 0]
            if len(ticks) <= self.most:
                return ticks or [2.0 ** a]
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


def _legend_outside(ax, title: str | None = None) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if ax.get_legend() is not None:
        ax.get_legend().remove()
    if handles:
        uniq = dict(zip(labels, handles))
        ax.legend(uniq.values(), uniq.keys(), loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small",
                  title=title, title_fontsize="small")


def _retitle_legend(g, title: str) -> None:
    """A FacetGrid's legend drawn again with ``title``, the figure's right margin made to fit it."""
    if g.legend is not None:
        sns.move_legend(g, "upper left", bbox_to_anchor=(1.0, 0.92), title=title, frameon=False)


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
    if title:
        g.figure.suptitle(title, y=1.03)
    return g.figure


def phase_bars(df: pd.DataFrame, phases: list[str], *, row: str, col: str | None = None, title: str = "",
               reference: Reference = None, share: bool = False):
    """Stacked medians of each phase (``<phase>_ns`` columns), one bar per ``row`` value.
    ``share``: each bar as the shares of its total (per cent), so that every size reads alike
    where the times span decades."""
    keys = [k for k in (col, row) if k]
    med = df.groupby(keys)[[f"{p}_ns" for p in phases]].median()
    if share:
        med = med.div(med.sum(axis=1), axis=0) * 100
        reference = None
    cols = list(med.index.get_level_values(col).unique()) if col else [None]
    fig, axes = plt.subplots(1, len(cols), figsize=(5.5 * len(cols), 0.45 * len(med) / len(cols) + 1.8),
                             squeeze=False)
    refs = _references(reference)
    palette = sns.color_palette("tab10", len(phases))
    for ax, c in zip(axes[0], cols):
        part = med.xs(c, level=col) if col else med
        labels = [binary_size(v) if row == "nbytes" else str(v) for v in part.index]
        left = pd.Series(0.0, index=part.index)
        for color, p in zip(palette, phases):
            ax.barh(labels, part[f"{p}_ns"], left=left, color=color, label=p.replace("_", " "))
            left = left + part[f"{p}_ns"]
        if share:
            ax.set_xlim(0, 100)
            ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:.0f} %"))
            ax.set_xlabel("share of the median transfer time")
        else:
            _ns_axis(ax, log=False, axis="x")
            ax.set_xlabel("median time")
        ax.set_ylabel("transfer size" if row == "nbytes" else _label(row))
        ax.set_title(str(c) if c is not None else "")
        _draw_references(ax, refs, axis="x")
        ax.invert_yaxis()
    for ax in axes[0][1:]:
        ax.set_ylabel("")
    _legend_outside(axes[0][-1], "phase")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def case_bars(df: pd.DataFrame, x: str, y: str, *, hue: str | None = None, col: str | None = None,
              title: str = "", logy: bool | None = True, ylabel: str = "", xlabel: str = "",
              reference: Reference = None):
    """Median of ``y`` (a time in ns) per ``x`` (and ``hue``, one panel per ``col``) with a 5-95 %
    interval: seaborn's catplot, the legend titled in words beside the panels."""
    words = _label(hue) if hue else None
    d = df.rename(columns={hue: words}) if hue else df
    g = sns.catplot(data=d, x=x, y=y, hue=words, col=col, kind="bar", estimator="median", errorbar=("pi", 90),
                    height=4, aspect=1.6 if col is None else 1.1, sharey=True, legend="auto" if hue else False)
    log = _want_log(logy, df[y])
    refs = _references(reference)
    for i, ax in enumerate(g.axes.flat):
        _ns_axis(ax, log)
        ax.set_ylabel((ylabel or _label(y)) if i == 0 else "")
        ax.set_xlabel(xlabel or _label(x))
        if max((len(t.get_text()) for t in ax.get_xticklabels()), default=0) > 6:
            for label in ax.get_xticklabels():
                label.set_rotation(30)
                label.set_horizontalalignment("right")
        _draw_references(ax, refs)
    return _titled(g, col, title)


def _titled(g, col, title: str):
    """A facet grid's panels titled by their column value, the figure by ``title``; its figure."""
    if col:
        g.set_titles(col_template="{col_name}")
    if title:
        g.figure.suptitle(title, y=1.03)
    return g.figure


def timeline(transfers: pd.DataFrame, calls: pd.DataFrame, *, invocations: int = 1, title: str = ""):
    """The native calls of the first ``invocations`` region invocations of each policy as a
    timeline: one row per policy, one bar per call, coloured by category."""
    t = transfers[(transfers.event.isin(["transfer", "kernel"])) & (transfers.step == 0)
                  & (transfers.invocation < invocations)]
    c = calls.merge(t[["transfer_id", "policy"]], on="transfer_id")
    policies = list(dict.fromkeys(t.policy))
    cats = sorted(set(c.category))
    colors = dict(zip(cats, sns.color_palette("tab10", len(cats))))
    fig, ax = plt.subplots(figsize=(10, 0.5 * len(policies) + 1.5))
    for y, pol in enumerate(policies):
        pc = c[c.policy == pol]
        t0 = pc.start_ns.min()
        for cat, g in pc.groupby("category"):
            ax.broken_barh(list(zip((g.start_ns - t0) / 1e3, np.maximum(g.duration_ns / 1e3, 0.3))), (y - 0.35, 0.7),
                           color=colors[cat], label=cat)
    _legend_outside(ax, "call")
    ax.set_yticks(range(len(policies)), policies)
    ax.set_ylabel("policy")
    ax.invert_yaxis()
    ax.set_xlabel("time since the invocation's first call (us)")
    ax.set_title(title)
    fig.tight_layout()
    return fig


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


def answers_grid(probes: pd.DataFrame, title: str = ""):
    """Each probe's steps as coloured cells: granted, refused, or what a query answered."""
    def word(r):
        if r.action.startswith("query"):
            return "locked" if r.locked else "not locked"
        return "ok" if not r.error else "refused"
    d = probes.assign(answer=[word(r) for r in probes.itertuples()])
    codes = {"ok": 0, "locked": 1, "refused": 2, "not locked": 3}
    grid = d.pivot(index="probe", columns="step", values="answer")
    fig, ax = plt.subplots(figsize=(2.2 * grid.shape[1] + 2, 0.6 * grid.shape[0] + 1.2))
    sns.heatmap(grid.apply(lambda col: col.map(codes)), annot=grid.fillna(""), fmt="", cbar=False, ax=ax,
                cmap=sns.color_palette(["#8fd18f", "#b5dcf2", "#f2a3a3", "#f2d7a3"], as_cmap=True),
                vmin=-0.5, vmax=3.5, linewidths=1, linecolor="white")
    ax.grid(False)
    actions = d.groupby("step").action.unique()
    if all(len(a) == 1 for a in actions):      # the same call at each step of every probe: name it
        ax.set_xticks(np.arange(len(grid.columns)) + 0.5, [actions[c][0] for c in grid.columns])
        ax.set_xlabel("call made at each step, in order")
    else:
        ax.set_xlabel("step of the probe, in order (the table above names each call)")
    ax.set_ylabel("probe (a sequence of calls on one buffer)")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def stats_bars(ours: pd.DataFrame, thread: pd.DataFrame, *, names=None, title: str = "",
               reference: Reference = None):
    """AverageNs per call name: our trace (by ``user_pinned``) beside the thread's rocprof tables."""
    parts = [ours.assign(source=ours.user_pinned.map({False: "ours, no user pinning", True: "ours, user pinning"}))]
    parts.append(thread.assign(source=thread.get("source", "thread")))
    d = pd.concat(parts, ignore_index=True)
    if names is not None:
        d = d[d.Name.isin(list(names))]
    fig, ax = plt.subplots(figsize=(8, 0.45 * d.Name.nunique() * max(d.source.nunique(), 1) / 2 + 2))
    sns.barplot(data=d, y="Name", x="AverageNs", hue="source", ax=ax)
    _ns_axis(ax, log=True, axis="x")
    ax.set_xlabel("average time per call")
    ax.set_ylabel("call")
    ax.set_title(title)
    _draw_references(ax, _references(reference), axis="x")
    _legend_outside(ax, "source")
    fig.tight_layout()
    return fig


def limits_bars(limits: pd.DataFrame, title: str = ""):
    """Each request of the lock-limit probe: its size against the limit, granted or refused."""
    d = limits.assign(request=limits.op + " " + limits.nbytes.map(binary_size),
                      answer=limits.granted.map({True: "granted", False: "refused"}))
    fig, ax = plt.subplots(figsize=(7.5, 0.4 * len(d) + 1.4))
    sns.barplot(data=d, y="request", x="nbytes", hue="answer", dodge=False, ax=ax,
                palette={"granted": "#5aa55a", "refused": "#c94c4c"})
    limit = float(limits.limit_nbytes.iloc[0])
    ax.axvline(limit, color="k", ls="--", lw=1)
    ax.annotate(f"RLIMIT_MEMLOCK {binary_size(limit)}", xy=(limit, 1.0), xycoords=("data", "axes fraction"),
                ha="left", va="bottom", fontsize="small")
    _size_axis(ax, "x", log=False)
    ax.set_xlabel("bytes asked for (dashed: RLIMIT_MEMLOCK of the probe)")
    ax.set_ylabel("request (call and size)")
    past = limits[limits.granted.astype(bool) & (limits.nbytes > limit)]
    if len(past):        # the limit did not bind: say so where the bars are
        ax.annotate(f"{len(past)} request(s) above the limit granted: this runtime's locks are not held to "
                    "RLIMIT_MEMLOCK here", xy=(0.0, -0.32), xycoords="axes fraction", fontsize="small", color="0.25",
                    annotation_clip=False)
    ax.set_title(title, pad=14)
    _legend_outside(ax, "answer")
    fig.tight_layout()
    return fig


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
    if title:
        g.figure.suptitle(title, y=1.03)
    return g.figure
