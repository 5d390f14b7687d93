"""Line figures: a median with its 5-95 % band against the size or the thread count, one line per
variant (seaborn's relplot)."""

from __future__ import annotations

import re
from typing import Iterable, Sequence

import matplotlib.ticker as mticker
import pandas as pd
import seaborn as sns

from .axes import (Reference, _draw_references, _ns_axis, _references, _retitle_legend, _size_axis, _titled,
                   _want_log)
from .labels import _label


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
