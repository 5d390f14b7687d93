"""Axes in words and units: byte axes in binary units on log-2 scales, time axes in human units,
the thread's figures as labelled reference lines, legends beside the panels, titles above
everything drawn, a note under the panels."""

from __future__ import annotations

import math
import textwrap
from typing import Mapping, Sequence, Union

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import pandas as pd
import seaborn as sns

from ...units import binary_size, fmt_ns

#: the thread's figure(s) as labelled lines: (label, ns), a list of them, or {label: ns}
Reference = Union[tuple[str, float], Sequence[tuple[str, float]], Mapping[str, float], None]
_DECADES_FOR_LOG = math.log10(20)      # a span of 20x or more gets a log axis


def error_bars(value, low, high) -> list:
    """matplotlib's ``xerr``/``yerr`` for points ``value`` with intervals (``low``, ``high``): the
    distances to either bound, none below 0 (a bootstrap interval of a ratio of medians can leave
    its own point estimate outside; rounding can put a bound a hair past it): no bar on that side."""
    value, low, high = (np.asarray(a, dtype=float) for a in (value, low, high))
    return [np.clip(value - low, 0.0, None), np.clip(high - value, 0.0, None)]


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


def _note(fig, text: str) -> None:
    """A sentence under the panels (what the data say that the bars cannot)."""
    ax = min(fig.axes, key=lambda a: (a.get_position().y0, a.get_position().x0))
    ax.annotate(textwrap.fill(text, 110), xy=(0, 0), xycoords="axes fraction", xytext=(-40, -46),
                textcoords="offset points", ha="left", va="top", fontsize="small", color="0.25", annotation_clip=False)
