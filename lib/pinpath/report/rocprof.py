"""Read rocprof statistics files (``--stats``) into STATS frames and set them beside ours.

Two layouts are read:

* rocprof v1 (``results.stats.csv``, ``results.hsa_stats.csv``, ``results.hip_stats.csv``):
  ``Name,Calls,TotalDurationNs,AverageNs,Percentage`` with integer AverageNs.
* rocprofv3 (``<pid>_kernel_stats.csv``, ``<pid>_hsa_api_stats.csv``, ``<pid>_hip_api_stats.csv``,
  ...): the same five columns then ``MinNs,MaxNs,StdDev``; AverageNs has decimals there.

Header and names may be quoted or not, and the header may be missing altogether (rows pasted
from ``grep``, as in the aomp thread). MinNs, MaxNs and StdDev are checked, then dropped.

``layout`` sets our own calls in rocprof's columns for the report, with the calls the runtime
refused counted (``Refused``) and the application's own pinning calls as rows of their own, as the
thread's table has them (``hsa_amd_memory_lock_to_pool``); ``refused_note`` is its footnote.
"""

from __future__ import annotations

import csv
import math
from importlib import resources
from os import PathLike
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

from .. import schema
from ..errors import BadParameter
from ..units import INT64_MAX

__all__ = ["read_stats", "side_by_side", "thread_stats", "layout", "refused_note", "APPLICATION", "V1_HEADER",
           "V3_HEADER"]

# rocprofiler v1, tblextr.py (research/offload-paths.md 4.3); the same names as schema.STATS
V1_HEADER = ("Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage")
# rocprofv3 column names as in ROCm/rocprofiler-sdk, source/docs/data/hip_api_stats.csv
# (commit ad31aebb5eb882f23601aedee99ef395eef5e72a, shown by source/docs/how-to/using-rocprofv3.rst).
V3_HEADER = V1_HEADER + ("MinNs", "MaxNs", "StdDev")
_FORMATS = {len(V1_HEADER): ("rocprof-v1", V1_HEADER), len(V3_HEADER): ("rocprofv3", V3_HEADER)}
_EXPECTED = (f"expected {','.join(V1_HEADER)} (rocprof v1) or those plus "
             f"{','.join(V3_HEADER[len(V1_HEADER):])} (rocprofv3)")
_WHOLE = ("Calls", "TotalDurationNs", "MinNs", "MaxNs")   # must be whole numbers
_NULLABLE = {"int": "Int64", "float": "float64"}        # side_by_side: a side may lack a name
_THREAD_FILES = {False: "thread_hsa_stats_without_user_pinning.csv",
                 True: "thread_hsa_stats_with_user_pinning.csv"}


def _number(text: str) -> float | int:
    """An int if the text is one, else a finite float; ValueError otherwise."""
    try:
        return int(text)
    except ValueError:
        x = float(text)
    if not math.isfinite(x):
        raise ValueError(text)
    return x


def _is_data_row(fields: Sequence[str]) -> bool:
    """A headerless row: 5 or 8 fields, all but the first numeric."""
    if len(fields) not in _FORMATS:
        return False
    try:
        [_number(f) for f in fields[1:]]
    except ValueError:
        return False
    return True


def _shown(fields: Sequence[str]) -> list[str]:
    """The first line's fields, shortened for an error message."""
    cut = [f if len(f) <= 40 else f[:37] + "..." for f in fields[:10]]
    return cut + (["..."] if len(fields) > 10 else [])


def _row(fields: list[str], header: tuple[str, ...], where: str) -> dict:
    """One STATS row from a data line; extra leading fields are an unquoted name with commas."""
    n = len(header)
    if len(fields) > n:
        fields = [",".join(fields[: len(fields) - n + 1])] + fields[len(fields) - n + 1:]
    if len(fields) < n:
        raise BadParameter(f"{where}: has {len(fields)} columns where the header has {n}")
    out = {"Name": fields[0]}
    for col, text in zip(header[1:], fields[1:]):
        try:
            x = _number(text)
        except ValueError:
            raise BadParameter(f"{where}: {col} is {text!r}, not a number") from None
        if col in _WHOLE and (x < 0 or x != int(x)):
            raise BadParameter(f"{where}: {col} is {text!r}, not a non-negative whole number")
        if abs(x) > INT64_MAX:              # an int64 column holds no more
            raise BadParameter(f"{where}: {col} is {text[:24]!r}, more than {INT64_MAX}")
        out[col] = x
    out["AverageNs"] = int(out["AverageNs"])   # v3 prints decimals; truncate as v1's SQLite does
    return out


def read_stats(path: str | PathLike) -> pd.DataFrame:
    """Read a rocprof v1 or rocprofv3 statistics CSV file.

    Parameters
    ----------
    path : str or path-like
        A ``results.hsa_stats.csv``-like file (v1), a ``*_stats.csv`` file of rocprofv3, or
        their rows without the header line.

    Returns
    -------
    pandas.DataFrame
        The STATS columns (Name, Calls, TotalDurationNs, AverageNs, Percentage), typed by
        ``schema.frame``, in file order, plus ``source_format`` ("rocprof-v1" or "rocprofv3").
        AverageNs is truncated to a whole number; rocprofv3's MinNs, MaxNs and StdDev are dropped.

    Raises
    ------
    BadParameter
        If the file is missing, empty, not laid out as a rocprof stats file, or has a row
        whose column count or numbers do not fit its header.
    """
    p = Path(path)
    if not p.exists():
        raise BadParameter(f"{path}: no such file; expected a rocprof stats file such as "
                           f"results.hsa_stats.csv")
    if not p.is_file():
        raise BadParameter(f"{path}: not a regular file; expected a rocprof stats file such as "
                           f"results.hsa_stats.csv")
    with open(p, newline="", encoding="utf-8-sig", errors="replace") as f:
        lines = [(i, r) for i, r in enumerate(csv.reader(f, skipinitialspace=True), 1) if any(c.strip() for c in r)]
    if not lines:
        raise BadParameter(f"{path}: the file is empty; {_EXPECTED}, then one row per name")
    first = [c.strip() for c in lines[0][1]]
    if tuple(first) in (V1_HEADER, V3_HEADER):
        body = lines[1:]
    elif _is_data_row(first):
        body = lines                              # pasted rows, no header
    else:
        raise BadParameter(f"{path}: not a rocprof stats file: its first line has columns "
                           f"{_shown(first)}; {_EXPECTED}")
    fmt, header = _FORMATS[len(first)]
    rows = [{**_row([c.strip() for c in r], header, f"{path}, line {i}"), "source_format": fmt}
            for i, r in body]
    df = schema.frame(rows, schema.STATS)
    if "source_format" not in df:                 # header only: no rows
        df["source_format"] = pd.Series(dtype=str)
    return df[list(schema.STATS) + ["source_format"]]


def side_by_side(ours: pd.DataFrame, theirs: pd.DataFrame, names: Iterable[str] | None = None,
                 labels: tuple[str, str] = ("ours", "thread")) -> pd.DataFrame:
    """Two STATS frames joined on Name, one row per name found in either.

    Parameters
    ----------
    ours, theirs : pandas.DataFrame
        STATS frames (e.g. ``schema.stats_frame(trace.hsa_stats(calls))`` and
        ``read_stats(...)``), at most one row per Name each.
    names : iterable of str, optional
        Keep only these names (those present in neither frame give no row).
    labels : (str, str)
        Column suffixes of the two sides, ``("ours", "thread")`` by default.

    Returns
    -------
    pandas.DataFrame
        ``Name`` then ``<metric>_<label>`` for metric in Calls, TotalDurationNs, AverageNs,
        Percentage and each label in turn; a side without the name has nulls there (nullable
        Int64 for the counts and durations). Sorted by our TotalDurationNs, largest first;
        names only the other side has come last, by its TotalDurationNs.

    Raises
    ------
    BadParameter
        If the labels are not two different non-empty strings, or a frame repeats a Name.
    SchemaMismatch
        If a frame lacks a STATS column.
    """
    if (len(labels) != 2 or not all(isinstance(s, str) and s for s in labels)
            or labels[0] == labels[1]):
        raise BadParameter(f"labels {labels!r}: need two different non-empty strings")
    metrics = [c for c in schema.STATS if c != "Name"]
    sides = []
    for label, df in zip(labels, (ours, theirs)):
        schema.check_frame(df, schema.STATS)
        dup = df["Name"][df["Name"].duplicated()]
        if len(dup):
            raise BadParameter(f"{label} frame: Name {dup.iloc[0]!r} appears more than once; "
                               f"side_by_side needs one row per name")
        side = df[["Name"] + metrics].astype({m: _NULLABLE[schema.STATS[m]] for m in metrics})
        sides.append(side.rename(columns={m: f"{m}_{label}" for m in metrics}))
    out = sides[0].merge(sides[1], on="Name", how="outer", sort=False)
    if names is not None:
        out = out[out["Name"].isin(list(names))]
    a, b = (f"TotalDurationNs_{s}" for s in labels)
    out = out.sort_values([a, b, "Name"], ascending=[False, False, True], na_position="last",
                          kind="stable")
    cols = ["Name"] + [f"{m}_{s}" for m in metrics for s in labels]
    return out[cols].reset_index(drop=True)


def thread_stats(with_user_pinning: bool) -> pd.DataFrame:
    """ye-luo's two rocprof excerpts from the aomp thread, as shipped in ``report/data``.

    Parameters
    ----------
    with_user_pinning : bool
        False: the two ``grep lock`` rows without user pinning (headerless);
        True: the header and three rows measured with memory pinned by the user through HIP.

    Returns
    -------
    pandas.DataFrame
        ``read_stats`` of the file, source_format "rocprof-v1".
    """
    if not isinstance(with_user_pinning, bool):
        raise BadParameter(f"with_user_pinning {with_user_pinning!r}: must be True or False")
    ref = resources.files(__package__) / "data" / _THREAD_FILES[with_user_pinning]
    with resources.as_file(ref) as p:
        return read_stats(p)


APPLICATION = " (application)"   #: suffix of the application's own calls' names in ``layout``


def layout(stats: pd.DataFrame, calls: pd.DataFrame | None = None, *, by: str = "user_pinned") -> pd.DataFrame:
    """Our calls in rocprof's columns, with the refused calls counted and the application's own.

    Parameters
    ----------
    stats : pandas.DataFrame
        ``api_stats`` rows (``schema.API_STATS``: the runtime's calls per ``by`` value, with
        ``refused``).
    calls : pandas.DataFrame, optional
        ``api_calls`` rows; those with ``caller == "application"`` (the application pinning its
        own arrays) become rows named ``<call> (application)``.
    by : str
        The column that splits the tables (``user_pinned``).

    Returns
    -------
    pandas.DataFrame
        ``by``, ``counted``, Name, Calls, TotalDurationNs, AverageNs, Percentage (of that table's
        total, the application's calls included), Refused, category; one table per ``by`` value
        and arm (``counted``: the arm whose re-locks pinpath counted), largest total first.
    """
    schema.check_frame(stats, schema.API_STATS)
    keys = [by, "counted"]   # one table per arm: the arm whose re-locks pinpath counted is apart (C10)
    parts = [stats.rename(columns={"refused": "Refused"})[[*keys, *schema.STATS, "Refused", "category"]]]
    if calls is not None and len(calls) and "caller" in calls:
        app = calls[calls["caller"].astype(str) == "application"]
        app = app if "counted" in app else app.assign(counted=False)
        if len(app):
            g = app.groupby([*keys, "call"])
            own = pd.DataFrame({"Calls": g.size(), "TotalDurationNs": g.duration_ns.sum(),
                                "Refused": g.rc.apply(lambda rc: int((rc > 0).sum())),
                                "category": g.category.first()}).reset_index().rename(columns={"call": "Name"})
            own["Name"] = own.Name + APPLICATION
            own["AverageNs"] = (own.TotalDurationNs // own.Calls).astype("int64")
            parts.append(own)
    out = pd.concat(parts, ignore_index=True)
    out["Percentage"] = 100 * out.TotalDurationNs / out.groupby(keys).TotalDurationNs.transform("sum")
    out = out.sort_values([*keys, "TotalDurationNs"], ascending=[True, True, False], kind="stable")
    return out[[*keys, *schema.STATS, "Refused", "category"]].astype({"Calls": "int64", "Refused": "int64"}) \
        .reset_index(drop=True)


def refused_note(table: pd.DataFrame, *, by: str = "user_pinned") -> str:
    """The footnote of a ``layout`` table: which calls the runtime refused, and what their time is
    ("" where it refused none)."""
    refused = table[table.Refused > 0]
    if not len(refused):
        return ""
    parts = []
    for r in refused.itertuples():
        where = {True: "with user pinning", False: "without user pinning"}.get(bool(getattr(r, by)), "")
        share = "all" if r.Refused == r.Calls else f"{r.Refused} of"
        parts.append(f"{share} {r.Calls} {r.Name} calls {where}".replace("  ", " ").strip())
    return ("Refused: " + "; ".join(parts) + " were answered with an error (CUDA's 712, already registered), not "
            "granted; their average is what a runtime that always tries to lock pays, not the cost of a lock")
