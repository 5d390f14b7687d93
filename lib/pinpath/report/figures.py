"""Seaborn figures with human units on the axes; every function returns the figure."""

from __future__ import annotations

import matplotlib

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import pandas as pd
import seaborn as sns

from ..units import fmt_nbytes, fmt_ns

__all__ = ["theme", "vs_size", "phase_bars", "case_bars"]


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
    axes[0][-1].legend(loc="lower right", fontsize="small")
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
        label.set_rotation(15)
    fig.tight_layout()
    return fig
