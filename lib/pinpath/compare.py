"""``pinpath compare``: the claims of several runs side by side, with the regression check."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from . import atomic
from . import runfolder as rf
from .errors import BadParameter

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["compare"]


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
