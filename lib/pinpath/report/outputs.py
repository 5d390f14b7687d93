"""What a notebook writes into its run folder: data sets, figures, and its harness's cost."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .. import layout
from ..atomic import replacing, write_text_atomic
from .rundata import RunData

__all__ = ["NotebookOutputs"]


class NotebookOutputs:
    """``data/<dataset>.parquet``, ``data/harness.<stem>.parquet`` (written by ``RunData``) and
    ``figures/<stem>-<name>.png`` under ``run_dir``, each written atomically; with an empty
    ``run_dir`` (interactive use) nothing is written. ``saved``, a ``RunData``, keeps what was
    saved, as the claims' rules read it (``claims.judge_notebook(stem, out.saved, platform)``)."""

    def __init__(self, run_dir: str, stem: str) -> None:
        self.run_dir = Path(run_dir) if run_dir else None
        self.stem = stem
        self.saved = RunData(run_dir=self.run_dir)
        self.figures: dict[str, dict] = {}

    def data(self, df: pd.DataFrame, dataset: str) -> None:
        """Save ``df`` as the run's data set ``dataset`` (``RunData.save``)."""
        self.saved.save(df, dataset, self.stem)

    def harness(self, rt, **kw) -> pd.DataFrame:
        """Measure the harness on ``rt`` now (clock, timer resolution, null call, recorder) and
        keep it with this notebook's data: the cost inside every Python figure of the notebook."""
        from ..experiments import harness
        h = harness(rt, **kw)
        self.saved.save_harness(h, self.stem)
        return h

    def figure(self, fig, name: str) -> None:
        """Save the figure (in a kernel, the saved PNG is shown as the cell's figure), and
        what it tells a reader (``figures.words``: titles, axis labels, legends) in
        ``status/<stem>.figures.json``, which the tests read."""
        from .figures import problems, words
        self.figures[name] = {**words(fig), "problems": problems(fig)}
        if self.run_dir is None:
            return
        png = layout.path(self.run_dir, "figures_dir") / f"{self.stem}-{name}.png"
        with replacing(png) as tmp:
            fig.savefig(tmp, dpi=110, bbox_inches="tight", format="png")
        write_text_atomic(layout.path(self.run_dir, "figure_record", self.stem),
                          json.dumps(self.figures, indent=1, ensure_ascii=False))
        _show_once(fig, png)


def _show_once(fig, png: Path) -> None:
    """In a kernel, show the saved PNG and close the figure: drawn once, where the inline backend
    would draw it a second time at the cell's end (a run's notebooks spent about 25 s so)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    if get_ipython() is None:
        return
    import matplotlib.pyplot as plt
    from IPython.display import Image, display
    display(Image(filename=str(png)))
    plt.close(fig)
