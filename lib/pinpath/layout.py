"""The layout of a run folder: every path in it is spelled here, once.

A bottom helper (it imports only ``errors``), so that ``report`` as well as ``runfolder`` and
``run/`` can name a run's parts; ``runfolder`` re-exports it.
"""

from __future__ import annotations

import re
from pathlib import Path

from .errors import BadParameter

__all__ = ["LAYOUT", "SUBDIRS", "MANIFEST", "LOCK_NAME", "SHARE", "rel", "path", "check_name"]

MANIFEST = "manifest.json"    #: the run's provenance
LOCK_NAME = "runner.lock"     #: which process runs it
SHARE = "share"               #: what ``pinpath share`` writes: summary.md, figures/, <run-id>.zip
SUBDIRS = ("notebooks", "data", "figures", "report", "status")   #: the folders a new run gets

#: what names a path of a run folder, ``/``-separated; ``{stem}`` a notebook, ``{name}`` a file
LAYOUT = {
    "manifest": MANIFEST, "lock": LOCK_NAME,
    "status_dir": "status", "part": "status/{stem}.json", "kernel": "status/{stem}.kernel.json",
    "figure_record": "status/{stem}.figures.json",
    "notebooks_dir": "notebooks", "notebook": "notebooks/{stem}.ipynb", "partial": "notebooks/.{stem}.partial.ipynb",
    "report_dir": "report", "page": "report/{stem}.html", "report": "report/{name}", "index": "report/index.html",
    "claims": "report/claims.csv",
    "data_dir": "data", "harness": "data/harness.{stem}.parquet", "data": "data/{name}",
    "figures_dir": "figures", "figure": "figures/{name}",
    "share_dir": SHARE, "share_figures": f"{SHARE}/figures", "summary": f"{SHARE}/summary.md", "share": f"{SHARE}/{{name}}",
    "aside": ".aside-{stem}", "redirect": "index.html",   # a zip's way in, at the top: it leads to "index"
}

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,199}")


def check_name(name, what: str) -> str:
    """``name`` if it is a plain file name (a notebook stem, a run id, a data file): letters,
    digits, ``_.+-``, no leading dot, no ``..``; BadParameter in one sentence otherwise."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise BadParameter(f"{what} {name!r} is not a plain name (letters, digits, '_.+-'; no path)")
    return name


def rel(what: str, stem: str = "", name: str = "", *, check: bool = True) -> str:
    """The path of ``what`` (a key of ``LAYOUT``) inside a run folder, ``/``-separated; ``stem``
    and ``name`` are checked plain names (``check=False``: a name a glob of the folder found,
    one component already, which a page must still list however it is spelled)."""
    if check:
        stem, name = check_name(stem, "notebook") if stem else "", check_name(name, "file name") if name else ""
    return LAYOUT[what].format(stem=stem, name=name)


def path(run_dir: Path, what: str, stem: str = "", name: str = "", *, check: bool = True) -> Path:
    """``run_dir / rel(what, stem, name)``."""
    return Path(run_dir) / rel(what, stem, name, check=check)
