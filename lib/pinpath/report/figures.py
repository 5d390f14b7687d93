"""Seaborn figures with human units on the axes; every function returns the figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import pandas as pd
import seaborn as sns

from ..units import fmt_nbytes, fmt_ns

__all__ = ["theme", "vs_size", "phase_bars", "case_bars", "timeline", "vs_threads", "overlap_bars",
           "answers_grid", "stats_bars", "limits_bars"]


def theme() -> None:
    sns.set_theme(style="whitegrid", context="notebook")


def _size_axis(ax) -> None:
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: fmt_nbytes(int(v)) if v >= 1 else ""))
    ax.set_xlabel("transfer size")
    for label in ax.get_xticklabels():
        label.set_rotation(30)


def _ns_axis(ax, log: bool = True, axis: str = "y") -> None:
    if log:
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    fmt = mticker.FuncFormatter(lambda v, _: fmt_ns(v))
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(fmt)


def vs_size(df: pd.DataFrame, y: str, *, hue: str, style: str | None = None, col: str | None = None,
            title: str = "", ylabel: str = "", ns: bool = True, logy: bool = True):
    """Median of ``y`` against ``nbytes`` with a 5-95 % band, one line per ``hue``."""
    g = sns.relplot(data=df, x="nbytes", y=y, hue=hue, style=style, col=col, kind="line", marker="o",
                    estimator="median", errorbar=("pi", 90), height=4, aspect=1.3,
                    facet_kws={"sharey": False})
    for ax in g.axes.flat:
        _size_axis(ax)
        if ns:
            _ns_axis(ax, logy)
        elif logy:
            ax.set_yscale("log")
        ax.set_ylabel(ylabel or y)
    if title:
        g.figure.suptitle(title, y=1.03)
    return g.figure


def phase_bars(df: pd.DataFrame, phases: list[str], *, row: str, col: str | None = None, title: str = ""):
    """Stacked medians of each phase (``<phase>_ns`` columns), one bar per ``row`` value."""
    keys = [k for k in (col, row) if k]
    med = df.groupby(keys)[[f"{p}_ns" for p in phases]].median()
    cols = list(med.index.get_level_values(col).unique()) if col else [None]
    fig, axes = plt.subplots(1, len(cols), figsize=(5.5 * len(cols), 0.45 * len(med) / len(cols) + 1.8),
                             squeeze=False)
    for ax, c in zip(axes[0], cols):
        part = med.xs(c, level=col) if col else med
        labels = [fmt_nbytes(v) if row == "nbytes" else str(v) for v in part.index]
        left = pd.Series(0.0, index=part.index)
        palette = sns.color_palette("tab10", len(phases))
        for color, p in zip(palette, phases):
            ax.barh(labels, part[f"{p}_ns"], left=left, color=color, label=p)
            left = left + part[f"{p}_ns"]
        _ns_axis(ax, log=False, axis="x")
        ax.set_title(str(c) if c is not None else "")
        ax.invert_yaxis()
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def case_bars(df: pd.DataFrame, x: str, y: str, *, hue: str | None = None, title: str = "", logy: bool = True):
    """Median of ``y`` per ``x`` (and ``hue``) with a 5-95 % interval."""
    fig, ax = plt.subplots(figsize=(7, 3.8))
    sns.barplot(data=df, x=x, y=y, hue=hue, estimator="median", errorbar=("pi", 90), ax=ax)
    _ns_axis(ax, logy)
    ax.set_title(title)
    for label in ax.get_xticklabels():
        label.set_rotation(30)
        label.set_horizontalalignment("right")
    fig.tight_layout()
    return fig


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
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles))
    ax.legend(uniq.values(), uniq.keys(), loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    ax.set_yticks(range(len(policies)), policies)
    ax.invert_yaxis()
    ax.set_xlabel("time since the invocation's first call (us)")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def vs_threads(df: pd.DataFrame, y: str, *, hue: str = "policy", title: str = "", ns: bool = True):
    """Per-thread values against the thread count, one line per ``hue`` with a 5-95 % band."""
    fig, ax = plt.subplots(figsize=(7, 4))
    sns.lineplot(data=df, x="threads", y=y, hue=hue, marker="o", estimator="median", errorbar=("pi", 90), ax=ax)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{int(v)}"))
    if ns:
        _ns_axis(ax, True)
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    fig.tight_layout()
    return fig


def overlap_bars(ov: pd.DataFrame):
    """Wall time of all chains per queue count; a frame that says why the test could not run
    becomes a figure that says so."""
    if "not_applicable" in ov.columns:
        fig, ax = plt.subplots(figsize=(7, 1.2))
        ax.axis("off")
        ax.text(0, 0.5, "not applicable here: " + str(ov.not_applicable.iloc[0]), va="center", wrap=True)
        return fig
    return case_bars(ov, "queues", "wall_ns", title="wall time of all chains, by number of queues", logy=False)


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
    ax.set_xlabel("step")
    ax.set_ylabel("")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def stats_bars(ours: pd.DataFrame, thread: pd.DataFrame, *, names=None, title: str = ""):
    """AverageNs per call name: our trace (by ``user_pinned``) beside the thread's rocprof tables."""
    parts = [ours.assign(source=ours.user_pinned.map({False: "ours, no user pinning", True: "ours, user pinning"}))]
    parts.append(thread.assign(source=thread.get("source", "thread")))
    d = pd.concat(parts, ignore_index=True)
    if names is not None:
        d = d[d.Name.isin(list(names))]
    fig, ax = plt.subplots(figsize=(8, 0.45 * d.Name.nunique() * max(d.source.nunique(), 1) / 2 + 2))
    sns.barplot(data=d, y="Name", x="AverageNs", hue="source", ax=ax)
    _ns_axis(ax, log=True, axis="x")
    ax.set_xlabel("average per call")
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    fig.tight_layout()
    return fig


def limits_bars(limits: pd.DataFrame, title: str = ""):
    """Each request of the lock-limit probe: its size against the limit, granted or refused."""
    d = limits.assign(request=limits.op + " " + limits.nbytes.map(fmt_nbytes),
                      answer=limits.granted.map({True: "granted", False: "refused"}))
    fig, ax = plt.subplots(figsize=(7, 0.4 * len(d) + 1.2))
    sns.barplot(data=d, y="request", x="nbytes", hue="answer", dodge=False, ax=ax,
                palette={"granted": "#5aa55a", "refused": "#c94c4c"})
    ax.axvline(float(limits.limit_nbytes.iloc[0]), color="k", ls="--", lw=1)
    ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: fmt_nbytes(int(v)) if v >= 1 else "0"))
    ax.set_xlabel("bytes asked for (dashed: RLIMIT_MEMLOCK of the probe)")
    ax.set_ylabel("")
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    fig.tight_layout()
    return fig
