"""Each verdict's figure: the measured value and its 95 % interval against the claim's threshold."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import pandas as pd

from ...units import fmt_ns
from .axes import error_bars


_UNIT_TICKS = {"x": lambda v: f"{v:.3g}x", "fraction": lambda v: f"{100 * v:.0f} %", "count": lambda v: f"{v:g}",
               "ns": lambda v: fmt_ns(v) if v > 0 else "0"}


def verdicts(judged: pd.DataFrame, title: str = ""):
    """One panel per judged claim of ``judged`` (claims.csv's rows): the quantity its verdict
    judges (``measured``, dot) with its 95 % interval (bar) on an axis in the verdict's unit,
    the threshold (dashed) and, in green, the side where the claim holds: the figure says what
    the verdict says. Each panel's gid is the claim's id. None where no row has a figure."""
    from .. import strip
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
        ax.errorbar([sc.value], [0], xerr=error_bars([sc.value], [sc.low], [sc.high]), fmt="o", color="#0b57b0",
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
