"""The figures of notebook 14 ("what changes a transfer's cost"): one per state, drawn from the
per-round medians (so each bar's interval spans the rounds, not the calls), and the GPU's clocks
as read. A section that could not run gets a figure saying why."""

from __future__ import annotations

import textwrap
from typing import Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ..experiments.state import AGES, repeat_medians
from ..units import fmt_nbytes
from .figures import case_bars
from .figures.axes import _retitle_legend, _titled, error_bars

__all__ = ["state_bars", "cache_ratio", "gpu_clocks", "said"]


def said(text: str, title: str = ""):
    """A figure that only says ``text`` (why its section has no data here)."""
    fig, ax = plt.subplots(figsize=(7.5, 1.6))
    ax.axis("off")
    ax.text(0.0, 0.5, text, wrap=True, va="center", ha="left", fontsize="small")
    ax.set_title(title)
    return fig


def state_bars(df: pd.DataFrame, x: Sequence[str], hue: str, *, title: str):
    """Median over rounds of each round's median ns per ``x`` (columns joined into one label; a
    column ``nbytes`` shown in binary units) and ``hue``, with the 5-95 % of the round medians."""
    if "not_available" in df.columns or not len(df):
        return said(str(df.not_available.iloc[0]) if "not_available" in df.columns else "no data", title)
    by = list(dict.fromkeys(["section", "state", "op", "nbytes", *x, hue]))
    med = repeat_medians(df, by)
    shown = [med[c].map(fmt_nbytes) if c == "nbytes" else med[c].astype(str) for c in x]
    med["case"] = shown[0].str.cat(shown[1:], sep=", ") if len(shown) > 1 else shown[0]
    if hue == "state":   # ages in their order: first, fresh, held (cases keep their order)
        med = med.sort_values(hue, key=lambda s: s.map({a: i for i, a in enumerate(AGES)}).fillna(len(AGES)),
                              kind="stable")
    return case_bars(med, "case", "ns", hue=hue, title=title, ylabel="median per round (time per call)")


def cache_ratio(ratios: pd.DataFrame, *, title: str = "cold / hot, paired by round"):
    """``experiments.state.cache_ratios``: cold / hot per size (x, binary units), one marker per
    policy, with its 95 % interval over the rounds; 1 (no effect) drawn across."""
    if "not_available" in ratios.columns or not len(ratios):
        return said(str(ratios.not_available.iloc[0]) if "not_available" in ratios.columns else "no data", title)
    sizes = sorted(set(ratios.nbytes))
    policies = list(dict.fromkeys(ratios.policy))
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    width = 0.8 / len(policies)
    for k, (policy, g) in enumerate(ratios.groupby("policy", sort=False)):
        x = [sizes.index(n) + (k - (len(policies) - 1) / 2) * width for n in g.nbytes]
        ax.errorbar(x, g.cold_over_hot, yerr=error_bars(g.cold_over_hot, g.low, g.high), fmt="o",
                    capsize=3, label=policy)
    ax.axhline(1.0, color="0.5", lw=0.8, ls="--")
    ax.set_xticks(range(len(sizes)), [fmt_nbytes(n) for n in sizes])
    ax.set_yscale("log")
    ax.set_xlabel("copy size")
    ax.set_ylabel("cold / hot (median over rounds)")
    evict = sorted(set(ratios.evict_nbytes))
    ax.legend(title=f"policy\n(cold: {', '.join(fmt_nbytes(n) for n in evict)}\nwritten between)", fontsize="small",
              loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    ax.set_title(title)
    return fig


def gpu_clocks(gpu: pd.DataFrame, *, title: str = "GPU clocks when each section began"):
    """The SM and memory clocks (MHz) read at each point, beside their maxima; where none could be
    read, a figure saying what was unavailable."""
    clocks = gpu[gpu.field.isin(["sm_clock_mhz", "mem_clock_mhz", "sm_clock_max_mhz", "mem_clock_max_mhz"])
                 & gpu.available.fillna(False).astype(bool)] if "field" in gpu.columns else gpu.iloc[:0]
    if not len(clocks):
        why = gpu.unavailable[gpu.unavailable != ""].iloc[0] if "unavailable" in gpu.columns and \
            (gpu.unavailable != "").any() else "no readings"
        return said(f"GPU clocks and persistence unavailable here: {why}", title)
    order = list(dict.fromkeys(clocks.when))
    df = clocks.assign(mhz=pd.to_numeric(clocks.value, errors="coerce"),
                       clock=clocks.field.str.startswith("sm").map({True: "SM", False: "memory"}),
                       reading=clocks.field.str.contains("_max_").map({True: "its maximum", False: "as read"}),
                       at=clocks.when.map({w: i for i, w in enumerate(order)}))
    g = sns.relplot(data=df, x="at", y="mhz", hue="clock", style="reading", style_order=["as read", "its maximum"],
                    kind="line", markers=True, height=3.5, aspect=2.2)
    g.ax.set_xticks(range(len(order)), [textwrap.fill(str(w), 14) for w in order], fontsize="small")
    g.set_axis_labels("when it was read", "clock (MHz)")
    _retitle_legend(g, "the GPU's clocks")
    return _titled(g, None, title)
