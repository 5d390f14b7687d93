"""Row figures: each row a sequence of calls drawn as segments (a policy's native calls in order,
a probe's calls coloured by the runtime's answer)."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
import seaborn as sns

from ...units import fmt_ns
from .axes import _retitle_legend, _titled


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
