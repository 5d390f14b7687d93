"""The command line the diagnostics' analyses share: `TOOL analyse DIR`, DIR holding one CSV."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def analyse_rows(argv: list[str], doc: str, tool: str, csv_name: str) -> pd.DataFrame | int:
    """DIR/``csv_name``'s rows for ``argv`` = ["analyse", DIR], or the exit status to return: 2 (other
    arguments: ``doc`` printed), 1 (no such file, or no rows: said in one line)."""
    if len(argv) != 2 or argv[0] != "analyse":
        print(doc)
        return 2
    path = Path(argv[1]) / csv_name
    rows = pd.read_csv(path) if path.exists() else pd.DataFrame()
    if rows.empty:
        print(f"{tool}: no rows in {path}")
        return 1
    return rows


def print_table(cuts_line: str, cuts: dict, frame: pd.DataFrame, *, index: bool = True) -> None:
    """``cuts_line`` and the soon/late ``cuts``, then ``frame`` whole (rounded to 2 places), wide."""
    print(cuts_line, cuts)
    with pd.option_context("display.width", 200, "display.max_rows", 500, "display.max_columns", 30,
                           "display.max_colwidth", 60):
        print(frame.round(2).to_string(index=index))
