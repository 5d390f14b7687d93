"""One notebook of a run: execute it with papermill into the run folder, check what its kernel
left behind, render it; its status is its own part of the manifest."""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path
from typing import Callable

from .. import atomic
from .. import manifest as mf
from .. import paths
from .. import progress as prog
from .. import runfolder as rf
from ..errors import BadParameter, UnknownName, printable
from ..safeio import check_fields, read_json
from .job import job_facts
from .kernel import KERNEL_NAME, kernel_env, kernel_manager, relay_log, with_session_cells
from .signals import Interrupted

__all__ = ["run_notebook", "source_of", "missing_data", "say_stderr"]


def say_stderr(line: str) -> None:
    """The runner's progress lines, on stderr."""
    print(printable(line, keep="\n"), file=sys.stderr, flush=True)


def _error_of(exc: BaseException) -> str:
    ename, evalue = getattr(exc, "ename", type(exc).__name__), getattr(exc, "evalue", str(exc))
    text = f"{ename}: {evalue}".strip().splitlines()[0] if f"{ename}: {evalue}".strip() else ename
    cell = getattr(exc, "exec_count", None)
    return text + (f" (cell In [{cell}])" if cell is not None else "")


def _leak(run_dir: Path, stem: str) -> str:
    """What the kernel left behind, in one sentence; "" if nothing."""
    try:
        k = read_json(rf.path(run_dir, "kernel", stem), what="kernel report")
        check_fields(k, {"unreleased": dict, "vmlck_after_nbytes": int, "vmlck_before_nbytes": int}, "kernel report")
    except (OSError, BadParameter):
        return "the kernel did not report its lock balance"
    left = {n: c for n, c in k.get("unreleased", {}).items() if isinstance(c, int) and c > 0}   # an unlock of memory never locked
    # (C8's probe does that on purpose) is no leak; the kernel's report keeps it
    grew = k.get("vmlck_after_nbytes", 0) - k.get("vmlck_before_nbytes", 0)
    if not left and grew <= 0:
        return ""
    parts = [f"{c:+d} {n}" for n, c in sorted(left.items())[:4]] + (["..."] if len(left) > 4 else [])
    return ("left behind: " + ", ".join(parts) if left else "") + \
        (f"{'; ' if left else ''}VmLck grew by {grew} bytes" if grew > 0 else "")


def _note_in_notebook(nb_path: Path, text: str) -> None:
    """Append a markdown cell saying what happened (a dead kernel leaves no error cell)."""
    import nbformat
    nb = nbformat.read(nb_path, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell(f"**pinpath runner:** {text}"))
    with atomic.replacing(nb_path) as tmp:
        nbformat.write(nb, tmp)


def _relative_paths(out_nb: Path, source: str, output: str) -> None:
    """papermill writes absolute input and output paths into the notebook's metadata: the
    notebook's place in the checkout and in the run folder instead."""
    import nbformat
    nb = nbformat.read(out_nb, as_version=4)
    meta = nb.metadata.get("papermill", {})
    meta["input_path"], meta["output_path"] = source, output
    with atomic.replacing(out_nb) as tmp:
        nbformat.write(nb, tmp)


def run_notebook(run_dir: Path, stem: str, *, cell_timeout_s: int | None = None,
                 say: Callable[[str], None] | None = None) -> dict:
    """Execute notebook ``stem`` of the run in ``run_dir`` and render it; return its final part
    (``cell_timeout_s``: as ``plan.cell_timeout_s`` returns it).

    Statuses: ``ok``; ``failed`` (a cell raised); ``leaked`` (ran through but left locks or
    allocations behind, or more locked memory than it found); ``dead_kernel``; ``interrupted``.
    """
    import papermill
    from nbclient.exceptions import DeadKernelError
    from ..report.html import render_notebook

    say = say or say_stderr
    run_dir = Path(run_dir)
    man = rf.read_manifest(run_dir)
    if stem not in man.get("parameters", {}):
        raise UnknownName("notebook", stem, man.get("parameters", {}))
    src = source_of(man, stem)
    out_nb = rf.path(run_dir, "notebook", stem)
    for stale in rf.outputs_of(run_dir, stem, rf.read_part(run_dir, stem)):
        stale.unlink(missing_ok=True)      # a resumed notebook starts clean
    part = {"status": "running", "pid": os.getpid(), "host": socket.gethostname(), "start": mf.utc_now(),
            **job_facts()}
    rf.write_part(run_dir, stem, part)
    # the kernel runs in the run folder's notebooks/: RUN_DIR is ".." wherever the folder is
    params = {**man["parameters"][stem], "PLATFORM": man["platform"], "RUN_DIR": "..", "NOTEBOOK": stem}
    t0 = time.monotonic()
    interrupted: BaseException | None = None
    with kernel_env() as (kdir, progress_file):
        src_with_cells = Path(kdir) / f"{stem}.ipynb"
        with_session_cells(src, src_with_cells)
        partial = rf.path(run_dir, "partial", stem)
        try:
            with prog.Watcher(progress_file, say, prefix=f"      {stem}: "):
                papermill.execute_notebook(
                    str(src_with_cells), str(partial), parameters=params, kernel_name=KERNEL_NAME,
                    language="python", progress_bar=False, cwd=str(out_nb.parent),
                    execution_timeout=cell_timeout_s,
                    kernel_manager_class=kernel_manager(kdir))
            leak = _leak(run_dir, stem)
            part.update(status="leaked", error=leak) if leak else part.update(status="ok")
        except DeadKernelError as e:
            part.update(status="dead_kernel", error=f"the kernel died ({_error_of(e)})")
        except (KeyboardInterrupt, Interrupted) as e:
            part.update(status="interrupted", error="the runner was interrupted while this notebook ran")
            interrupted = e
        except Exception as e:   # papermill's execution error, a time-out: record, go on
            part.update(status="failed", error=_error_of(e))
        finally:
            if partial.exists():
                partial.replace(out_nb)
            relay_log(kdir, say, interrupted is not None)
    part["duration_s"] = round(time.monotonic() - t0, 2)
    part["end"] = mf.utc_now()
    part["data"] = _data_of(run_dir, stem)
    if out_nb.exists():
        try:
            _relative_paths(out_nb, man["sources"][stem], rf.rel("notebook", stem))
            if part["status"] in ("dead_kernel", "interrupted"):
                _note_in_notebook(out_nb, part["error"])
            render_notebook(out_nb, rf.path(run_dir, "page", stem))
        except (KeyboardInterrupt, Interrupted) as e:      # a signal while the page was made
            part.update(status="interrupted", error="the runner was interrupted while this notebook's page was made")
            interrupted = e
        except Exception as e:   # the executed notebook is kept; say why its HTML is missing
            part["error"] = (part.get("error", "") + f"; HTML not rendered: {type(e).__name__}").lstrip("; ")
            if part["status"] == "ok":
                part["status"] = "failed"
    rf.write_part(run_dir, stem, part)
    if interrupted is not None:
        raise Interrupted(f"interrupted while {stem} ran") from None
    return part


def source_of(man: dict, stem: str) -> Path:
    """The notebook ``stem`` of a run's manifest ran from: a notebook file inside the project,
    else BadParameter in one sentence."""
    src = man.get("sources", {}).get(stem)
    path = paths.PROJECT_ROOT / str(src)
    if not src or not path.resolve().is_relative_to(Path(paths.PROJECT_ROOT).resolve()):
        raise BadParameter(f"{man['run_id']}: the manifest names no notebook source inside the project for {stem}")
    if not path.is_file():
        raise BadParameter(f"{man['run_id']}: the source of {stem}, {src}, is missing, so it cannot run again")
    return path


def _data_of(run_dir: Path, stem: str) -> list[str]:
    """The data files of the run that notebook ``stem`` wrote (their ``pinpath.notebook``)."""
    import pyarrow.parquet as pq
    mine = []
    for p in sorted(rf.path(run_dir, "data_dir").glob("*.parquet")):
        if p.is_symlink() or not p.is_file():     # a FIFO would block
            continue
        try:
            meta = pq.read_schema(p).metadata or {}
        except Exception:    # unreadable: nobody's; the report names it
            continue
        if meta.get(b"pinpath.notebook") == stem.encode():
            mine.append(p.name)
    return mine


def missing_data(run_dir: Path, part: dict) -> list[str]:
    """The data files ``part`` lists that are gone or cannot be read."""
    import pyarrow.parquet as pq
    bad = []
    for name in part.get("data") or []:
        try:
            path = rf.inside(run_dir, rf.rel("data", name=rf.check_name(name, "data file")))
            if not path.is_file():      # a FIFO would block
                raise ValueError(name)
            pq.read_metadata(path)
        except BadParameter:
            raise
        except Exception:
            bad.append(name)
    return bad

