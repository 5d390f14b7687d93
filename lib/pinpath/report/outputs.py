"""What a notebook writes into its run folder: data sets, figures, and its harness's cost."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..atomic import replacing, write_text_atomic
from ..errors import UnknownName
from ..schema import DATASETS, check_frame

__all__ = ["NotebookOutputs"]


class NotebookOutputs:
    """``data/<dataset>.parquet``, ``data/harness.<stem>.parquet`` and
    ``figures/<stem>-<name>.png`` under ``run_dir``, each written atomically; with an empty
    ``run_dir`` (interactive use) nothing is written. ``saved`` keeps what was written, as the
    claims' rules look it up (``claims.judge(ids, out.saved, platform)``)."""

    def __init__(self, run_dir: str, stem: str) -> None:
        self.run_dir = Path(run_dir) if run_dir else None
        self.stem = stem
        self.saved: dict = {"_notebook": {}, "_harness": {}}
        self.figures: dict[str, dict] = {}

    def data(self, df: pd.DataFrame, dataset: str) -> None:
        """Save ``df`` as the run's data set ``dataset`` (a name of ``schema.DATASETS``; a frame
        that says why its experiment could not run, with a ``not_available`` column, is saved
        as it is)."""
        if dataset not in DATASETS:
            raise UnknownName("data set", dataset, DATASETS)
        if "not_applicable" not in df.columns and len(df) and not df.get("not_available", pd.Series([""])).all():
            check_frame(df, DATASETS[dataset])
        self.saved[dataset] = df
        self.saved["_notebook"][dataset] = self.stem
        self._write(df, f"{dataset}.parquet")

    def harness(self, rt, **kw) -> pd.DataFrame:
        """Measure the harness on ``rt`` now (clock, timer resolution, null call, recorder) and
        keep it with this notebook's data: the cost inside every Python figure of the notebook."""
        from ..experiments import harness
        h = harness(rt, **kw)
        self.saved["_harness"][self.stem] = h
        self._write(h, f"harness.{self.stem}.parquet")
        return h

    def _write(self, df: pd.DataFrame, name: str) -> None:
        if self.run_dir is None:
            return
        import pyarrow as pa
        import pyarrow.parquet as pq
        table = pa.Table.from_pandas(df, preserve_index=False)
        meta = {**(table.schema.metadata or {}), b"pinpath.notebook": self.stem.encode(),
                b"pinpath.dataset": name.removesuffix(".parquet").encode()}
        with replacing(self.run_dir / "data" / name) as tmp:
            pq.write_table(table.replace_schema_metadata(meta), tmp, compression="zstd", compression_level=9)

    def figure(self, fig, name: str) -> None:
        """Save the figure (it is shown by the notebook as the cell's figure, not returned), and
        what it tells a reader (``figures.words``: titles, axis labels, legends) in
        ``status/<stem>.figures.json``, which the tests read."""
        from .figures import problems, words
        self.figures[name] = {**words(fig), "problems": problems(fig)}
        if self.run_dir is None:
            return
        with replacing(self.run_dir / "figures" / f"{self.stem}-{name}.png") as tmp:
            fig.savefig(tmp, dpi=110, bbox_inches="tight", format="png")
        write_text_atomic(self.run_dir / "status" / f"{self.stem}.figures.json",
                          json.dumps(self.figures, indent=1, ensure_ascii=False))
