"""The words a figure gives its reader: axis words for the notebooks' columns, the theme, and
``words``/``problems``, what a figure says and lacks."""

from __future__ import annotations

import matplotlib.pyplot as plt
import seaborn as sns


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
