"""Run the notebooks of a preset on a platform into ``outputs/<run-id>/``.

Four steps, each usable on its own (a cluster runs one notebook per job):

* ``plan``: validate everything - platform, preset file, every notebook's parameters, what
  may be locked - before anything is written;
* ``init_run``: make the run folder and its manifest;
* ``run_notebook``: execute one notebook with papermill into the folder, then render it;
  its status is its own part of the manifest;
* ``finalize``: fold the parts into the manifest, judge the claims, build the report.

``run`` does all four in one process, ``resume`` runs what is not ``ok`` into the same folder.
SIGINT and SIGTERM mark the run ``interrupted`` and still render what finished.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from . import atomic
from . import manifest as mf
from . import progress as prog
from . import runfolder as rf
from . import session
from .errors import BadParameter, PinpathError, RunFailed, UnknownName, printable
from . import budget
from .params import OPS_BUDGET, RESERVED, defaults, estimated_ops, load_preset, notebook_parameters, parse_override, resolve
from . import paths
from .runtimes import open_runtime
from .trace import measure_harness
from .vocab import Platform, Relock, choose

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Plan", "plan", "init_run", "run_notebook", "finalize", "run", "resume", "compare",
           "available_notebooks", "Interrupted", "KERNEL_NAME"]

KERNEL_NAME = "pinpath"
_JOB_ENV = ("SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_ARRAY_TASK_ID", "CUDA_VISIBLE_DEVICES",
            "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")


class Interrupted(PinpathError):
    """The runner was asked to stop (SIGINT, SIGTERM)."""


class Plan:
    """A validated run: which notebooks with which parameters on which runtime."""

    def __init__(self, preset, platform, notebooks, parameters, runtime_info, selection, harness, notices=()):
        self.preset, self.platform = preset, platform
        self.notebooks: list[Path] = notebooks
        self.parameters: dict[str, dict] = parameters
        self.runtime_info, self.selection = runtime_info, selection
        self.harness: dict[str, float] = harness   #: the recorder's own cost, clock, null call
        self.notices: list[str] = list(notices)     #: what validation changed, e.g. sizes left out


def available_notebooks(nb_dir: Path | None = None) -> list[Path]:
    return sorted(p for p in Path(nb_dir or paths.NOTEBOOKS_DIR).glob("[0-9][0-9]_*.ipynb"))


def plan(preset: str, platform: str, *, only: list[str] | None = None, overrides: list[str] = (),
         nb_dir: Path | None = None, params_dir: Path | None = None) -> Plan:
    """Validate everything; raise a PinpathError naming the first thing that is wrong.

    ``overrides``: ``NOTEBOOK.NAME=VALUE`` texts from the command line; a size given there that
    does not fit the machine is refused, where a preset's size is left out with a notice."""
    choose(Platform, platform, "platform")
    params_dir = Path(params_dir or paths.PARAMS_DIR)
    sections = load_preset(params_dir, preset)
    file = Path(params_dir) / f"{preset}.yaml"
    found = {rf.check_name(p.stem, "notebook file"): p for p in available_notebooks(nb_dir)}
    if only is not None:
        if any(not s for s in only) or len(set(only)) != len(only):
            raise BadParameter(f"notebooks {','.join(only)!r}: names a notebook twice or an empty name "
                               "(write distinct stems separated by commas, or nothing for all)")
    for stem in sections:
        if stem not in found:
            raise BadParameter(f"{file.name}: section {stem!r} names a missing notebook (no {stem}.ipynb in notebooks)")
    for stem in only or ():
        if stem not in found:
            raise UnknownName("notebook", stem, found)
    explicit: dict[str, dict] = {}
    for text in overrides:
        stem, name, value = parse_override(text)
        if stem not in found:
            raise UnknownName("notebook", stem, found)
        explicit.setdefault(stem, {})[name] = value
    rt = open_runtime(platform)       # raises RuntimeUnavailable in one sentence
    try:
        info, selection = rt.describe(), getattr(rt, "selection", [(rt.name, "started")])
        harness = measure_harness(rt.null_native, loops=1000, rounds=10)
        lock_checked = rt.relock == Relock.UNCOUNTED    # mlock: RLIMIT_MEMLOCK applies
        rt_name = rt.name
    finally:
        rt.close()
    parameters, notices = {}, []
    for stem, path in found.items():          # every section is checked, whatever ``only`` selects
        declared = notebook_parameters(path)
        for name in RESERVED:
            if name not in declared:
                raise BadParameter(f"{path.name}: the parameters cell does not declare {name}")
        values = resolve(sections.get(stem, {}), declared, where=f"{file.name} [{stem}]")   # a preset only overrides
        values.update(resolve(explicit.get(stem, {}), declared, where=f"--set {stem}"))
        merged = {**defaults(declared, stem), **values}      # what the notebook will run with
        ops = estimated_ops(merged)
        if ops > OPS_BUDGET:
            raise BadParameter(f"{file.name} [{stem}]: asks for about {ops:,} timed operations; the budget of one "
                               f"notebook is {OPS_BUDGET:,} (fewer repeats, sizes, invocations or steps)")
        if only and stem not in only:          # not run: its sizes need not fit this machine
            parameters[stem] = values
            continue
        fitted, told = budget.fit(stem, merged, lock_checked=lock_checked, explicit=set(explicit.get(stem, {})),
                                  where=f"{file.name} [{stem}]", set_where=f"--set {stem}")
        parameters[stem] = {k: v for k, v in fitted.items() if k in values or v != merged[k]}
        notices += told
    stems = only or list(found)
    return Plan(preset, rt_name, [found[s] for s in stems], {s: parameters[s] for s in stems},
                info, selection, harness, notices)


def init_run(p: Plan, out_dir: Path | None = None, run_id: str | None = None) -> Path:
    """Make the run folder of a validated plan; every notebook is ``pending``."""
    out_dir = Path(out_dir or paths.OUTPUTS_DIR)
    if out_dir.exists() and not out_dir.is_dir():
        raise BadParameter(f"{out_dir}: the folder of runs is not a folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    rid = run_id or rf.new_run_id(p.platform)
    man = {
        "run_id": rid, "preset": p.preset, "platform": p.platform, "status": "running",
        "start": mf.utc_now(), "end": None, "git": mf.git_state(paths.PROJECT_ROOT),
        "runner": {"pid": os.getpid(), "host": socket.gethostname()},
        "runtime": p.runtime_info, "runtime_selection": p.selection, "harness_ns": p.harness,
        "machine": mf.machine(), "packages": mf.packages(), "parameters": p.parameters, "notices": p.notices,
        "sources": {nb.stem: os.path.relpath(nb, paths.PROJECT_ROOT) for nb in p.notebooks},
        "notebooks": {nb.stem: {"status": "pending"} for nb in p.notebooks},
    }
    return rf.create(out_dir, man, exact=run_id is not None)


def _stderr(line: str) -> None:
    print(printable(line, keep="\n"), file=sys.stderr, flush=True)


# -- one notebook ----------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _gpu_uuid() -> str | None:
    """The UUID of the GPU this job sees (the first of CUDA_VISIBLE_DEVICES, which nvidia-smi
    itself ignores), where nvidia-smi answers; asked once per process."""
    if not shutil.which("nvidia-smi"):
        return None
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader", *(["-i", first] if first else [])],
                           capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = r.stdout.split()
    return lines[0] if r.returncode == 0 and lines else None


def _job() -> dict:
    job = {k: os.environ[k] for k in _JOB_ENV if k in os.environ}
    uuid = _gpu_uuid()
    if uuid:
        job["gpu_uuid"] = uuid
    return job


@contextmanager
def _kernel_env():
    """A private Jupyter data dir whose ``pinpath`` kernel is this very interpreter (so papermill
    runs the notebook where pinpath is installed) and the kernel's progress file."""
    d = tempfile.mkdtemp(prefix="pinpath-kernel-")
    spec = Path(d) / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python (pinpath)", "language": "python"}))
    saved = {k: os.environ.get(k) for k in ("JUPYTER_PATH", prog.ENV)}
    progress_file = Path(d) / "progress"
    os.environ["JUPYTER_PATH"] = d + (os.pathsep + saved["JUPYTER_PATH"] if saved["JUPYTER_PATH"] else "")
    os.environ[prog.ENV] = str(progress_file)
    try:
        yield d, progress_file
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(d, ignore_errors=True)


def _kernel_manager(socket_dir: str):
    """A kernel manager whose kernel talks over IPC sockets in ``socket_dir`` (no TCP ports, so
    no plain-text TCP warning from the kernel) and is shut down by request alone: jupyter_client
    sends SIGINT before every shutdown, which a kernel still finishing a message reports as
    "KeyboardInterrupt caught in kernel" although nothing was interrupted."""
    from jupyter_client.manager import AsyncKernelManager

    class _IpcKernelManager(AsyncKernelManager):
        def __init__(self, **kw):
            kw.setdefault("transport", "ipc")
            kw.setdefault("ip", os.path.join(socket_dir, "kernel"))
            super().__init__(**kw)

        async def _async_interrupt_kernel(self) -> None:
            if not self.shutting_down:
                await super()._async_interrupt_kernel()
    return _IpcKernelManager


def _with_session_cells(src: Path, dst: Path) -> None:
    """``src`` with the runner's two cells: session.start() after the parameters cell,
    session.finish() at the end (see pinpath.session)."""
    import nbformat
    nb = nbformat.read(src, as_version=4)
    at = next((i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])), -1) + 1
    meta = {"tags": [session.INJECTED_TAG]}
    nb.cells.insert(at, nbformat.v4.new_code_cell(session.START_SOURCE, metadata=meta))
    nb.cells.append(nbformat.v4.new_code_cell(session.FINISH_SOURCE, metadata=dict(meta)))
    nbformat.write(nb, dst)


def _error_of(exc: BaseException) -> str:
    ename, evalue = getattr(exc, "ename", type(exc).__name__), getattr(exc, "evalue", str(exc))
    text = f"{ename}: {evalue}".strip().splitlines()[0] if f"{ename}: {evalue}".strip() else ename
    cell = getattr(exc, "exec_count", None)
    return text + (f" (cell In [{cell}])" if cell is not None else "")


def _leak(run_dir: Path, stem: str) -> str:
    """What the kernel left behind, in one sentence; "" if nothing."""
    try:
        k = json.loads((run_dir / "status" / f"{stem}.kernel.json").read_text())
    except (OSError, ValueError):
        return "the kernel did not report its lock balance"
    left = {n: c for n, c in k.get("unreleased", {}).items() if c > 0}   # an unlock of memory never locked
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
    nbformat.write(nb, nb_path)


def _relative_paths(out_nb: Path, source: str, output: str) -> None:
    """papermill writes absolute input and output paths into the notebook's metadata: the
    notebook's place in the checkout and in the run folder instead."""
    import nbformat
    nb = nbformat.read(out_nb, as_version=4)
    meta = nb.metadata.get("papermill", {})
    meta["input_path"], meta["output_path"] = source, output
    nbformat.write(nb, out_nb)


def run_notebook(run_dir: Path, stem: str, *, cell_timeout_s: int | None = None,
                 say: Callable[[str], None] | None = None) -> dict:
    """Execute notebook ``stem`` of the run in ``run_dir`` and render it; return its final part.

    Statuses: ``ok``; ``failed`` (a cell raised); ``leaked`` (ran through but left locks or
    allocations behind, or more locked memory than it found); ``dead_kernel``; ``interrupted``.
    """
    import papermill
    from nbclient.exceptions import DeadKernelError
    from .report.html import render_notebook

    say = say or _stderr
    run_dir = Path(run_dir)
    man = rf.read_manifest(run_dir)
    if stem not in man.get("parameters", {}):
        raise UnknownName("notebook", stem, man.get("parameters", {}))
    if cell_timeout_s is not None and cell_timeout_s <= 0:
        raise BadParameter(f"cell timeout: must be a positive number of seconds, got {cell_timeout_s}")
    src = _source(man, stem)
    out_nb = run_dir / "notebooks" / f"{stem}.ipynb"
    for stale in rf.outputs_of(run_dir, stem, rf.read_part(run_dir, stem)):
        stale.unlink(missing_ok=True)      # a resumed notebook starts clean
    part = {"status": "running", "pid": os.getpid(), "host": socket.gethostname(), "start": mf.utc_now(),
            **_job()}
    rf.write_part(run_dir, stem, part)
    # the kernel runs in the run folder's notebooks/: RUN_DIR is ".." wherever the folder is
    params = {**man["parameters"][stem], "PLATFORM": man["platform"], "RUN_DIR": "..", "NOTEBOOK": stem}
    t0 = time.monotonic()
    interrupted: BaseException | None = None
    with _kernel_env() as (kdir, progress_file):
        src_with_cells = Path(kdir) / f"{stem}.ipynb"
        _with_session_cells(src, src_with_cells)
        partial = run_dir / "notebooks" / f".{stem}.partial.ipynb"
        try:
            with prog.Watcher(progress_file, say, prefix=f"      {stem}: "):
                papermill.execute_notebook(
                    str(src_with_cells), str(partial), parameters=params, kernel_name=KERNEL_NAME,
                    language="python", progress_bar=False, cwd=str(run_dir / "notebooks"),
                    execution_timeout=cell_timeout_s,
                    kernel_manager_class=_kernel_manager(kdir))
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
    part["duration_s"] = round(time.monotonic() - t0, 2)
    part["end"] = mf.utc_now()
    part["data"] = _data_of(run_dir, stem)
    if out_nb.exists():
        try:
            _relative_paths(out_nb, man["sources"][stem], f"notebooks/{stem}.ipynb")
            if part["status"] in ("dead_kernel", "interrupted"):
                _note_in_notebook(out_nb, part["error"])
            render_notebook(out_nb, run_dir / "report" / f"{stem}.html")
        except Exception as e:   # the executed notebook is kept; say why its HTML is missing
            part["error"] = (part.get("error", "") + f"; HTML not rendered: {type(e).__name__}").lstrip("; ")
            if part["status"] == "ok":
                part["status"] = "failed"
    rf.write_part(run_dir, stem, part)
    if interrupted is not None:
        raise Interrupted(f"interrupted while {stem} ran") from None
    return part


def _source(man: dict, stem: str) -> Path:
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
    for p in sorted(Path(run_dir, "data").glob("*.parquet")):
        try:
            meta = pq.read_schema(p).metadata or {}
        except Exception:    # unreadable: nobody's; the report names it
            continue
        if meta.get(b"pinpath.notebook") == stem.encode():
            mine.append(p.name)
    return mine


def _missing_data(run_dir: Path, part: dict) -> list[str]:
    """The data files ``part`` lists that are gone or cannot be read."""
    import pyarrow.parquet as pq
    bad = []
    for name in part.get("data") or []:
        try:
            pq.read_metadata(rf.inside(run_dir, f"data/{rf.check_name(name, 'data file')}"))
        except BadParameter:
            raise
        except Exception:
            bad.append(name)
    return bad


# -- the whole run ---------------------------------------------------------------------------
def _resolver():
    """pinpath.cluster's resolve_part, where that module exists (a cluster knows why a job ended)."""
    try:
        from .cluster import resolve_part
    except ImportError:
        return None
    return resolve_part


def finalize(run_dir: Path, *, interrupted_at: str | None = None, out_dir: Path | None = None) -> dict:
    """Fold the notebooks' parts into the manifest, judge the claims, build the report; point
    ``latest`` of ``out_dir`` (default: outputs/) at the run where the run is one of its folders."""
    from .report import claims
    from .report.html import render_index

    run_dir = Path(run_dir)
    man = rf.merge(run_dir, rf.read_manifest(run_dir), _resolver())
    statuses = [v.get("status") for v in man["notebooks"].values()]
    if interrupted_at is not None:
        man["status"], man["interrupted_at"] = "interrupted", interrupted_at
    elif all(s == "ok" for s in statuses):
        man["status"] = "ok"
    elif all(s in ("ok", "pending", "running") for s in statuses):
        man["status"] = "incomplete"       # nothing failed; some notebooks have not run (yet)
    else:
        man["status"] = "failed"
    now = mf.git_state(paths.PROJECT_ROOT)
    rejudged = bool(man.get("end")) and man.get("git", {}).get("commit") != now.get("commit")
    if rejudged:
        man["judged_by"] = now          # a run finalized again by newer code says so
    else:
        man["end"] = mf.utc_now()
    man["duration_s"] = round(sum(float(v.get("duration_s", 0) or 0) for v in man["notebooks"].values()), 1)
    rf.write_manifest(run_dir, man)
    data, unreadable = claims.load_run(run_dir)          # every data set read once, for both uses
    judged = claims.judge(list(claims.CLAIMS), data, man["platform"], man["notebooks"])
    atomic.write_text_atomic(run_dir / "report" / "claims.csv", judged.to_csv(index=False))
    fid = _fidelity(data, man["platform"])
    if fid is not None:
        atomic.write_text_atomic(run_dir / "report" / "fidelity.csv", fid.to_csv(index=False))
    engine_fid = data.get("engine_fidelity")   # the native engine against plain C (notebook 00)
    if engine_fid is not None and len(engine_fid):
        cols = ["policy", "direction", "nbytes", "engine_ns", "plain_ns", "ratio", "low", "high"]
        atomic.write_text_atomic(run_dir / "report" / "engine_fidelity.csv", engine_fid[cols].to_csv(index=False))
    if unreadable:
        man["unreadable_data"] = unreadable
        rf.write_manifest(run_dir, man)
    render_index(run_dir, man, claims=judged)
    out_dir = Path(out_dir or paths.OUTPUTS_DIR)
    if not rejudged and run_dir.resolve().parent == out_dir.resolve():   # never latest elsewhere,
        rf.point_latest(out_dir, run_dir.name)        # nor for an old run judged again
    return man


def _fidelity(data: dict, platform: str):
    """``report/fidelity.csv``'s rows: the Python figures beside the C ones, from the lock-cost
    data sets of the run (``claims.load_run``'s; None where the run has no C figures)."""
    from .report import tables
    frames = []
    for name in ("lock_cost", "query_cost"):
        lc = data.get(name)
        if lc is not None and "source" in lc and (lc.source == "native").any():
            frames.append(tables.fidelity(lc, data.harness_for(name), platform))
    if not frames:
        return None
    import pandas as pd
    return pd.concat(frames, ignore_index=True).drop_duplicates(["quantity", "kind", "backing", "nbytes"])


def _raise_interrupted(signum, frame):
    raise Interrupted(f"stopped by signal {signal.Signals(signum).name}")


@contextmanager
def _on_signals(handler=_raise_interrupted, signums=(signal.SIGINT, signal.SIGTERM)):
    """``signums`` go to ``handler`` in the main thread (by default: raise Interrupted)."""
    if threading_main():
        old = {s: signal.signal(s, handler) for s in signums}
        try:
            yield
        finally:
            for s, h in old.items():
                signal.signal(s, h)
    else:
        yield


def threading_main() -> bool:
    import threading
    return threading.current_thread() is threading.main_thread()


def _eta(done_s: list[float], left: int) -> str:
    if not done_s or not left:
        return ""
    return f", about {sum(done_s) / len(done_s) * left:.0f} s left"


def _mark(run_dir: Path, status: str, **extra) -> None:
    """Record ``status`` in the manifest at once, signals ignored meanwhile; where even that
    cannot be written (a full or read-only disk), ``pinpath runs`` shows the run stale."""
    with _on_signals(signal.SIG_IGN):
        try:
            man = rf.merge(run_dir, rf.read_manifest(run_dir), _resolver())
            man.update(status=status, end=man.get("end") or mf.utc_now(), **extra)
            rf.write_manifest(run_dir, man)
        except (OSError, PinpathError):
            pass


def _unwritable(run_dir: Path, e: OSError, status: str = "failed") -> RunFailed:
    """Mark the run ``status``; the sentence that says which file could not be written."""
    _mark(run_dir, status, error=f"{e.filename or run_dir}: {e.strerror or e}")
    return RunFailed(f"{e.filename or run_dir}: cannot be written ({e.strerror or e}); the run {run_dir.name} "
                     f"is marked {status}")


def _aside(run_dir: Path, stem: str) -> Path | None:
    """Move the outputs of ``stem`` (and its part) into ``<run>/.aside-<stem>/``; None if it had
    none. An aside folder left by a resume that died holds the older outputs: they come back first."""
    aside = rf.inside(run_dir, f".aside-{stem}")
    if aside.is_dir():
        _restore(run_dir, stem, aside)
    part = rf.read_part(run_dir, stem)
    files = rf.outputs_of(run_dir, stem, part) + [p for p in [run_dir / "status" / f"{stem}.json"] if p.is_file()]
    if not files:
        return None
    for f in files:
        dst = aside / f.relative_to(run_dir)
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.replace(f, dst)
    return aside


def _restore(run_dir: Path, stem: str, aside: Path) -> None:
    """Put the outputs moved aside back in place of whatever the redo wrote."""
    for f in rf.outputs_of(run_dir, stem, rf.read_part(run_dir, stem)) + [run_dir / "status" / f"{stem}.json"]:
        f.unlink(missing_ok=True)
    for f in sorted(p for p in aside.rglob("*") if p.is_file()):
        os.replace(f, rf.inside(run_dir, str(f.relative_to(aside))))
    shutil.rmtree(aside, ignore_errors=True)


def _redo(run_dir: Path, stem: str, why: str, *, say, cell_timeout_s=None) -> dict:
    """Run ``stem`` again with its old outputs aside: dropped when it ends ok, put back otherwise
    (a notebook redone for its missing data then says so in its status)."""
    aside = _aside(run_dir, stem)
    try:
        part = run_notebook(run_dir, stem, cell_timeout_s=cell_timeout_s, say=say)
    except BaseException:
        if aside:
            _restore(run_dir, stem, aside)
        raise
    if aside and part["status"] != "ok":
        _restore(run_dir, stem, aside)
        old = rf.read_part(run_dir, stem) or {"status": "pending"}
        if old.get("status") == "ok":
            rf.write_part(run_dir, stem, {**old, "status": "failed", "error": f"{why}; the redo ended {part['status']}"})
        say(f"      {stem}: the redo ended {part['status']}; its earlier outputs are back in place")
    elif aside:
        shutil.rmtree(aside, ignore_errors=True)
    return part


def _execute(run_dir: Path, stems: list[str], *, say, cell_timeout_s=None, out_dir=None,
             redo: dict[str, str] | None = None) -> tuple[Path, dict]:
    """Run ``stems`` into ``run_dir`` one after the other, then finalize; a signal stops the run
    after recording the notebook that was running. ``redo``: stems run again by a resume (their
    old outputs are kept until they end ok) and why."""
    man = rf.read_manifest(run_dir)
    t_run, durations = time.monotonic(), []
    current = None
    try:
        with _on_signals(signums=(signal.SIGTERM,)):     # SIGINT stays Python's KeyboardInterrupt here
            for i, stem in enumerate(stems, 1):
                current = stem
                say(f"[{i}/{len(stems)}] {stem}: running ({man['preset']}, {man['platform']}; "
                    f"{time.monotonic() - t_run:.0f} s elapsed{_eta(durations, len(stems) - i + 1)})")
                if redo is not None:
                    part = _redo(run_dir, stem, redo.get(stem, ""), say=say, cell_timeout_s=cell_timeout_s)
                else:
                    part = run_notebook(run_dir, stem, cell_timeout_s=cell_timeout_s, say=say)
                durations.append(part["duration_s"])
                say(f"[{i}/{len(stems)}] {stem}: {part['status']} in {part['duration_s']:.1f} s"
                    + (f" - {part['error']}" if part.get("error") else ""))
            current = None
    except (Interrupted, KeyboardInterrupt):
        say(f"interrupted while {current} ran: rendering what finished")
        _mark(run_dir, "interrupted", interrupted_at=current or "")
        return run_dir, _finish(run_dir, current or "", out_dir)
    except OSError as e:
        raise _unwritable(run_dir, e) from None
    except PinpathError as e:       # e.g. a folder of the run that leads out of it
        _mark(run_dir, "failed", error=str(e))
        raise
    return run_dir, _finish(run_dir, None, out_dir)


def _finish(run_dir: Path, interrupted_at: str | None, out_dir) -> dict:
    """finalize; a signal while it works (a second one, after an interruption) leaves the run
    marked interrupted, a full or read-only disk leaves it marked failed - each in one sentence."""
    try:
        with _on_signals():
            return finalize(run_dir, interrupted_at=interrupted_at, out_dir=out_dir)
    except (Interrupted, KeyboardInterrupt):
        _mark(run_dir, "interrupted", interrupted_at=interrupted_at or "finalize")
        again = " again" if interrupted_at is not None else ""
        raise Interrupted(f"{run_dir.name}: stopped{again} while its report was written; the run is marked "
                          f"interrupted (`pinpath finalize {run_dir}` writes the report)") from None
    except OSError as e:
        raise _unwritable(run_dir, e, "interrupted" if interrupted_at is not None else "failed") from None


def run(preset: str, platform: str, *, only: list[str] | None = None, out_dir: Path | None = None,
        nb_dir: Path | None = None, params_dir: Path | None = None, progress=None,
        cell_timeout_s: int | None = None, overrides: list[str] = ()) -> tuple[Path, dict]:
    """Validate, make the run folder, run every notebook, finalize."""
    say = progress or _stderr
    if cell_timeout_s is not None and cell_timeout_s <= 0:
        raise BadParameter(f"--cell-timeout: must be a positive number of seconds, got {cell_timeout_s}")
    p = plan(preset, platform, only=only, overrides=overrides, nb_dir=nb_dir, params_dir=params_dir)
    for notice in p.notices:
        say(f"notice: {notice}")
    try:
        run_dir = init_run(p, out_dir)
    except OSError as e:
        raise RunFailed(f"{e.filename or out_dir}: the run folder cannot be made ({e.strerror or e})") from None
    lock = rf.RunLock(run_dir)
    try:
        lock.acquire()
    except OSError as e:
        raise _unwritable(run_dir, e) from None
    try:
        return _execute(run_dir, [nb.stem for nb in p.notebooks], say=say, cell_timeout_s=cell_timeout_s,
                        out_dir=out_dir)
    finally:
        lock.release()


def check_resume(run: str | Path, *, out_dir: Path | None = None, preset: str | None = None,
                 platform: str | None = None, only: list[str] | None = None,
                 overrides: list[str] = (), check_platform: bool = True) -> tuple[Path, dict, dict[str, str]]:
    """Everything a resume needs, checked before anything is touched: the run folder is a run
    directly under ``out_dir`` (not a committed reference), its preset, platform, notebooks and
    parameters agree with what was asked, no live runner holds it, its platform starts here
    (unless ``check_platform`` is off: a Slurm job starts it on its node) and the sources of the
    notebooks to redo exist. Returns the folder, its manifest and the notebooks to redo with the
    reason of each."""
    out_dir = Path(out_dir or paths.OUTPUTS_DIR)
    run_dir = rf.find_run(run, out_dir)
    if run_dir.parent != out_dir.resolve():
        raise BadParameter(f"{run}: only a run directly under {out_dir} can be resumed, not {run_dir} "
                           "(a committed reference under outputs/reference/ is read-only)")
    man = rf.merge(run_dir, rf.read_manifest(run_dir), _resolver())
    name = man["run_id"]
    for what, asked, has in (("PRESET", preset, man["preset"]), ("PLATFORM", platform, man["platform"])):
        if asked not in (None, "", "auto" if what == "PLATFORM" else None) and asked != has:
            raise BadParameter(f"{what}={asked} disagrees with run {name}, which ran {has}; "
                               f"leave {what} out to resume it")
    if only is not None and sorted(only) != sorted(man["notebooks"]):
        raise BadParameter(f"NOTEBOOKS={','.join(only)} disagrees with run {name}, which runs "
                           f"{','.join(man['notebooks'])}; leave NOTEBOOKS out to resume it")
    for text in overrides:
        stem, pname, value = parse_override(text)
        if stem not in man.get("parameters", {}):
            raise BadParameter(f"--set {rf.check_name(stem, 'notebook')}: run {name} has no notebook of that name")
        declared = notebook_parameters(_source(man, stem))
        asked = resolve({pname: value}, declared, where=f"--set {stem}")[pname]
        has = man["parameters"][stem].get(pname, defaults(declared).get(pname))
        if asked != has:
            raise BadParameter(f"--set {stem}.{pname}={value!r} disagrees with run {name}, which ran {has!r}; "
                               "leave SET out to resume it")
    holder = man.get("runner") or {}
    if man.get("status") == "running" and rf.pid_alive(holder.get("pid"), holder.get("host")):
        raise BadParameter(f"{name}: its runner, pid {holder.get('pid')}, still runs it")
    todo = {}
    for stem, part in man["notebooks"].items():
        if part.get("status") != "ok":
            todo[stem] = str(part.get("status"))
        elif missing := _missing_data(run_dir, part):
            todo[stem] = f"ok, but its data {', '.join(missing)} is missing or unreadable"
    for stem in todo:
        _source(man, stem)
    if check_platform:
        open_runtime(man["platform"]).close()      # RuntimeUnavailable in one sentence
    return run_dir, man, todo


def resume(run: str | Path, *, out_dir: Path | None = None, progress=None, cell_timeout_s: int | None = None,
           preset: str | None = None, platform: str | None = None, only: list[str] | None = None,
           overrides: list[str] = ()) -> tuple[Path, dict]:
    """Run every notebook of an earlier run that is not ``ok`` (or whose data is missing) into
    the same run folder, after ``check_resume``; a notebook's old outputs stay until its redo
    ends ok."""
    say = progress or _stderr
    run_dir, man, todo = check_resume(run, out_dir=out_dir, preset=preset, platform=platform, only=only,
                                      overrides=overrides)
    lock = rf.RunLock(run_dir)
    try:
        notice = lock.acquire()
    except OSError as e:
        raise RunFailed(f"{e.filename or run_dir}: cannot be written ({e.strerror or e}); nothing was changed") from None
    try:
        if notice:
            say(f"notice: {notice}")
        say(f"resuming {run_dir.name}: {len(todo)} of {len(man['notebooks'])} notebook(s) to run"
            + "".join(f"\n  {s}: {why}" for s, why in todo.items()))
        try:
            rf.reopen(run_dir, _resolver())
        except OSError as e:
            raise RunFailed(f"{e.filename or run_dir}: cannot be written ({e.strerror or e}); nothing was changed") from None
        return _execute(run_dir, list(todo), say=say, cell_timeout_s=cell_timeout_s, out_dir=out_dir, redo=todo)
    finally:
        lock.release()


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
        if (folder / "manifest.json").is_file():
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
