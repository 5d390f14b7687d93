"""Bar figures: medians with 5-95 % intervals per case, stacked phases, calls by name, the lock
limit's requests (seaborn's catplot and objects interface)."""

from __future__ import annotations

import warnings

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import pandas as pd
import seaborn as sns
import seaborn.objects as so

from ...units import binary_size
from .axes import (Reference, _draw_references, _note, _ns_axis, _references, _retitle_legend, _size_axis,
                   _spans_decades, _titled, _want_log)
from .labels import _label


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
