"""What a notebook writes into its run folder: parquet data and figures."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

__all__ = ["NotebookOutputs"]


class NotebookOutputs:
    """``data/<stem>[-<table>].parquet`` and ``figures/<stem>-<name>.png`` under ``run_dir``;
    with an empty ``run_dir`` (interactive use) nothing is written."""

    def __init__(self, run_dir: str, stem: str) -> None:
        self.run_dir = Path(run_dir) if run_dir else None
        self.stem = stem
        self.saved: dict[str, pd.DataFrame] = {}   #: name -> frame, as the claims' rules look them up

    def data(self, df: pd.DataFrame, table: str = "") -> None:
        name = f"{self.stem}{'-' + table if table else ''}"
        self.saved[name] = df
        if self.run_dir is None:
            return None
        path = self.run_dir / "data" / f"{name}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        df.to_parquet(path, index=False)

    def figure(self, fig, name: str) -> None:
        """Save the figure (it is shown by the notebook as the cell's figure, not returned)."""
        if self.run_dir is None:
            return None
        path = self.run_dir / "figures" / f"{self.stem}-{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110, bbox_inches="tight")
