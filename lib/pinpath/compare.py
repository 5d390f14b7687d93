"""``pinpath compare``: the claims of several runs side by side, with the regression check."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from . import atomic
from . import runfolder as rf
from .errors import BadParameter

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["compare", "agreement"]


def compare(run_dirs: list[Path], out_path: Path) -> tuple[Path, "pd.DataFrame"]:
    """Render the claims of several runs side by side into ``out_path`` (an HTML file); also
    the regression check of every run against the first (``report.regress.check``)."""
    from .report import claims, regress
    from .report.html import render_compare
    if len(run_dirs) < 2:
        raise BadParameter("compare needs at least two runs")
    out_path = Path(out_path)
    if out_path.is_dir():
        raise BadParameter(f"--out {out_path}: is a folder; name an HTML file")
    for folder in out_path.resolve().parents:
        if (folder / rf.MANIFEST).is_file():
            raise BadParameter(f"--out {out_path}: is inside the run folder {folder}; name a file outside every run")
    from .report.share import render_compare_markdown
    runs = []
    for d in run_dirs:
        man = rf.read_manifest(Path(d))
        runs.append((man, claims.evaluate(Path(d), man["platform"], man.get("notebooks"))[0], Path(d)))
    try:
        path = render_compare(out_path, runs)
        atomic.write_text_atomic(out_path.with_suffix(".md"), render_compare_markdown(runs))
    except OSError as e:
        raise BadParameter(f"--out {out_path}: cannot be written ({e.strerror or e})") from None
    return path, regress.check(runs)


def _judged(d: Path):
    """A run folder's claims judged by this code (as ``compare`` judges them)."""
    from .report import claims
    man = rf.read_manifest(Path(d))
    return man, claims.evaluate(Path(d), man["platform"], man.get("notebooks"))[0]


def agreement(run_a: Path, run_b: Path, out_csv: Path | None = None) -> "pd.DataFrame":
    """Two run folders (two references, e.g. on two machine starts) claim by claim: both verdicts,
    both figures with intervals, the repeats behind them with the spread between them, the
    mechanism each measured, and whether they agree (``report.regress.check_frames``); written to
    ``out_csv`` where given."""
    from .report import regress
    (ma, a), (mb, b) = _judged(run_a), _judged(run_b)
    checked = regress.check_frames(a, b, base_run=str(ma.get("run_id") or Path(run_a).name),
                                   run=str(mb.get("run_id") or Path(run_b).name))
    if out_csv is not None:
        try:
            atomic.write_text_atomic(Path(out_csv), checked.to_csv(index=False))
        except OSError as e:
            raise BadParameter(f"--out {out_csv}: cannot be written ({e.strerror or e})") from None
    return checked
