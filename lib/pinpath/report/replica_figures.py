"""Notebook 13's closing figure: model / real per variant and nw, the bare model beside the model
with the real runtime's measured terms (``experiments.real_terms``), each with its 95 % interval."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .figures.axes import error_bars
from .state_figures import said

__all__ = ["terms_ratio"]


def terms_ratio(terms: pd.DataFrame, *, tolerance: float = 0.15,
                title: str = "model / real per variant and nw: the model alone and with measured terms",
                legend_title: str = "the model with", bare_first: bool = True):
    """One marker per step of ``real_terms.model_terms`` (the model alone first, never hidden) and
    per variant and nw, with its bootstrap 95 % interval; 1 and the band 1 ± ``tolerance`` drawn
    across. A step without a figure (not measured) is left out of the markers and named in the legend.
    Where the real runtime could not run, a figure saying why. Other figures of the same shape (a
    ``term`` per marker, e.g. ``real_means.as_terms``): ``bare_first`` False names each term as it is,
    under their own ``legend_title``."""
    if "not_applicable" in terms.columns or not len(terms):
        return said(str(terms.not_applicable.iloc[0]) if "not_applicable" in terms.columns else "no data", title)
    labels = list(dict.fromkeys(f"{v}, nw={n}" for v, n in zip(terms.variant, terms.nw)))
    steps = list(dict.fromkeys(terms.term))
    fig, ax = plt.subplots(figsize=(8.0, 0.45 * len(labels) + 1.6))
    ax.axvspan(1 - tolerance, 1 + tolerance, color="0.92", zorder=0)
    ax.axvline(1.0, color="0.5", lw=0.8, ls="--", zorder=1)
    height = 0.7 / len(steps)
    for k, (term, g) in enumerate(terms.groupby("term", sort=False)):
        y = np.array([labels.index(f"{v}, nw={n}") for v, n in zip(g.variant, g.nw)]) + (k - (len(steps) - 1) / 2) * height
        ok = np.isfinite(g.ratio.to_numpy(dtype=float))
        name = term if not bare_first else "nothing (the model alone)" if k == 0 else f"+ {term}"
        name += "" if ok.all() else f" ({'not measured' if not ok.any() else 'partly measured'})"
        ax.errorbar(g.ratio[ok], y[ok], xerr=error_bars(g.ratio[ok], g.ratio_lo[ok], g.ratio_hi[ok]), fmt="o",
                    capsize=3, label=name)
    ax.set_yticks(range(len(labels)), labels)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_xlabel(f"model / real per region invocation (95 % CI; shaded: 1 ± {tolerance:g})")
    ax.set_ylabel("runtime variant, walkers (nw)")
    ax.legend(title=legend_title, fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0),
              borderaxespad=0.0)
    ax.set_title(title)
    return fig
