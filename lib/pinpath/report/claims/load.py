"""Reading a run for the claims: its data, the rows a claim is judged on, their repeats."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...trace import null_call_ns
from ..rundata import RunData
from .model import Missing


def load_run(run_dir: Path) -> tuple[RunData, list[str]]:
    """The run's data (``RunData.read``) and the files that could not be read."""
    data = RunData.read(run_dir)
    return data, data.unreadable


def judged_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The rows a claim is judged on: where a data set has rows the C engine executed and timed
    (``engine == "native"``), those only; otherwise every row (the Python policies')."""
    if "engine" in df and (df.engine == "native").any():
        return df[df.engine == "native"]
    return df


def _get(data: RunData, name: str) -> pd.DataFrame:
    df = data.get(name)
    if df is None or not len(df):
        raise Missing(f"no {name} data in this run")
    return judged_rows(df)


def _rep(df: pd.DataFrame):
    """The repeat labels of ``df``'s rows, or None (the calls are the unit: one repeat)."""
    return df["repeat"].to_numpy() if "repeat" in df else None


def repeat_unit(df: pd.DataFrame | None) -> str:
    """What a data set's repeat was: its ``repeat_unit`` column ("process" where the experiment ran
    each repeat in a fresh process, "round" inside one); "process" where rows carry a ``process``
    (the real runtime's runs), "round" where they carry only a ``repeat``; "" without either (the
    calls are the unit)."""
    if df is None or not len(df):
        return ""
    if "repeat_unit" in df:
        return " and ".join(sorted(set(df.repeat_unit.dropna().astype(str)) - {""}))
    return "process" if "process" in df else "round" if "repeat" in df else ""


def _null_ns(data: RunData, dataset: str) -> float:
    return null_call_ns(data.harness_for(dataset))
