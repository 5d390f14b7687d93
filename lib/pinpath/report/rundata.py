"""``RunData``: the one owner of a run's data. It writes each data set
(``data/<dataset>.parquet``, its notebook and name in the file's metadata) and each notebook's
harness (``data/harness.<stem>.parquet``), reads them back, says which notebook wrote a data set
and what its harness cost, and keeps measures that several claims share (``memo``) so that each is
computed once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator, Mapping

import pandas as pd

from ..atomic import replacing
from ..errors import UnknownName
from ..registry import DATASETS
from ..schema import check_frame

__all__ = ["RunData"]

_NOTEBOOK, _DATASET = b"pinpath.notebook", b"pinpath.dataset"
_HARNESS = "harness."       #: file-name prefix of a notebook's harness frame


class RunData:
    """Data sets by name, the notebook that wrote each, each notebook's harness frame, and the
    files that could not be read. ``run_dir`` (may be None: interactive use) is where ``save``
    writes."""

    def __init__(self, frames: Mapping[str, pd.DataFrame] | None = None, *, notebooks: Mapping[str, str] | None = None,
                 harness: Mapping[str, pd.DataFrame] | None = None, unreadable: list[str] | None = None,
                 run_dir: Path | str | None = None) -> None:
        self._frames: dict[str, pd.DataFrame] = dict(frames or {})
        odd = [k for k, v in self._frames.items() if not isinstance(v, pd.DataFrame)]
        if odd:
            raise TypeError(f"RunData: {odd[0]!r} is not a data frame (the notebook and harness facts are "
                            "the notebooks= and harness= arguments)")
        self._notebooks: dict[str, str] = dict(notebooks or {})
        self._harness: dict[str, pd.DataFrame] = dict(harness or {})
        self.unreadable: list[str] = list(unreadable or [])
        self.run_dir = Path(run_dir) if run_dir else None
        self._memo: dict = {}

    @classmethod
    def of(cls, data: RunData | Mapping[str, pd.DataFrame]) -> RunData:
        """``data`` itself, or data sets by name (a test's frames) as a RunData."""
        return data if isinstance(data, RunData) else cls(data)

    # -- reading ---------------------------------------------------------------------------------
    @classmethod
    def read(cls, run_dir: Path, names: tuple[str, ...] | None = None) -> RunData:
        """Every data set and harness frame of the run folder ``run_dir`` (or only the data sets
        ``names``); a file that does not read (truncated, not parquet) is named in ``unreadable``."""
        import pyarrow.parquet as pq
        out = cls()
        files = sorted(Path(run_dir, "data").glob("*.parquet"))
        for p in files if names is None else [p for p in files if p.stem in names]:
            try:
                if p.is_symlink() or not p.is_file():    # a FIFO would block, a link leads elsewhere
                    raise ValueError(p.name)
                _check_expanded(pq.read_metadata(p), p)
                table = pq.read_table(p)
            except Exception:   # truncated, not parquet at all, or a bomb: the report names it
                out.unreadable.append(p.name)
                continue
            meta = table.schema.metadata or {}
            df = table.to_pandas()
            if p.stem.startswith(_HARNESS):
                out._harness[p.stem.removeprefix(_HARNESS)] = df
                continue
            out._frames[p.stem] = df
            out._notebooks[p.stem] = meta.get(_NOTEBOOK, b"").decode()
        return out

    def get(self, name: str, default=None) -> pd.DataFrame | None:
        return self._frames.get(name, default)

    def __getitem__(self, name: str) -> pd.DataFrame:
        return self._frames[name]

    def __contains__(self, name: object) -> bool:
        return name in self._frames

    def __iter__(self) -> Iterator[str]:
        return iter(self._frames)

    def __len__(self) -> int:
        return len(self._frames)

    def notebook_of(self, dataset: str) -> str:
        """The stem of the notebook that wrote ``dataset`` ("" where unknown or absent)."""
        return self._notebooks.get(dataset, "")

    def notebooks(self) -> set[str]:
        """The notebooks that wrote the data sets here."""
        return set(self._notebooks.values())

    def harness_of(self, stem: str) -> pd.DataFrame | None:
        """Notebook ``stem``'s harness frame (its clock, timer and null-call cost), or None."""
        return self._harness.get(stem)

    def harness_for(self, dataset: str) -> pd.DataFrame | None:
        """The harness frame of the notebook that wrote ``dataset``, or None."""
        return self._harness.get(self.notebook_of(dataset))

    def memo(self, key: tuple, compute: Callable[[], object]):
        """``compute()``, once per ``key`` for this data (a measure several claims share); an
        exception is not kept, so each caller sees it."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    # -- writing ---------------------------------------------------------------------------------
    def save(self, df: pd.DataFrame, dataset: str, stem: str) -> None:
        """Keep ``df`` as data set ``dataset`` of notebook ``stem`` and write it (a name of
        ``registry.DATASETS``; a frame that says why its experiment could not run, with a
        ``not_applicable`` or ``not_available`` column, is saved as it is)."""
        if dataset not in DATASETS:
            raise UnknownName("data set", dataset, DATASETS)
        if "not_applicable" not in df.columns and len(df) and not df.get("not_available", pd.Series([""])).all():
            check_frame(df, DATASETS[dataset])
        self._frames[dataset], self._notebooks[dataset] = df, stem
        self._memo.clear()
        self._write(df, dataset, stem)

    def save_harness(self, df: pd.DataFrame, stem: str) -> None:
        """Keep and write notebook ``stem``'s harness frame."""
        self._harness[stem] = df
        self._memo.clear()
        self._write(df, _HARNESS + stem, stem)

    def _write(self, df: pd.DataFrame, name: str, stem: str) -> None:
        if self.run_dir is None:
            return
        import pyarrow as pa
        import pyarrow.parquet as pq
        table = pa.Table.from_pandas(df, preserve_index=False)
        meta = {**(table.schema.metadata or {}), _NOTEBOOK: stem.encode(), _DATASET: name.encode()}
        with replacing(self.run_dir / "data" / f"{name}.parquet") as tmp:
            pq.write_table(table.replace_schema_metadata(meta), tmp, compression="zstd", compression_level=9)


MAX_EXPANDED_NBYTES = 4 << 30     #: a data set of a run is megabytes; one that expands past this is not read


def _check_expanded(meta, path: Path) -> None:
    """ValueError where the parquet file says it expands past ``MAX_EXPANDED_NBYTES`` (its row
    groups' and column chunks' uncompressed sizes): a small file must not become a huge frame."""
    groups = [meta.row_group(i) for i in range(meta.num_row_groups)]
    claimed = max(sum(g.total_byte_size for g in groups),
                  sum(g.column(j).total_uncompressed_size for g in groups for j in range(g.num_columns)))
    if claimed > MAX_EXPANDED_NBYTES:
        raise ValueError(f"{path.name}: expands to {claimed} bytes")
