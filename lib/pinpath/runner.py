"""Run the notebooks of a preset on a platform into ``outputs/<run-id>/``.

Everything is validated before anything is written: platform, preset file, every
notebook's parameters, the notebooks themselves. Then each notebook is executed by
papermill in the project's interpreter, rendered to HTML, and the manifest updated.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from . import manifest as mf
from .errors import BadParameter, UnknownName
from .params import RESERVED, load_preset, notebook_parameters, resolve
from .paths import NOTEBOOKS_DIR, OUTPUTS_DIR, PARAMS_DIR, PROJECT_ROOT
from .report import claims
from .report.html import claims_section, figures_section, render_compare, render_index, render_notebook
from .runtimes import open_runtime
from .trace import measure_harness
from .vocab import Platform, choose

__all__ = ["Plan", "plan", "execute", "run", "compare", "list_runs", "available_notebooks", "KERNEL_NAME"]

KERNEL_NAME = "pinpath"


class Plan:
    """A validated run: which notebooks with which parameters on which runtime."""

    def __init__(self, preset, platform, notebooks, parameters, runtime_info, selection, harness):
        self.preset, self.platform = preset, platform
        self.notebooks: list[Path] = notebooks
        self.parameters: dict[str, dict] = parameters
        self.runtime_info, self.selection = runtime_info, selection
        self.harness: dict[str, float] = harness   #: the recorder's own cost, clock, null call


def available_notebooks(nb_dir: Path = NOTEBOOKS_DIR) -> list[Path]:
    return sorted(p for p in nb_dir.glob("[0-9][0-9]_*.ipynb"))


def plan(preset: str, platform: str, *, only: list[str] | None = None,
         nb_dir: Path = NOTEBOOKS_DIR, params_dir: Path = PARAMS_DIR) -> Plan:
    """Validate everything; raise a PinpathError naming the first thing that is wrong."""
    choose(Platform, platform, "platform")
    sections = load_preset(params_dir, preset)
    file = Path(params_dir) / f"{preset}.yaml"
    found = {p.stem: p for p in available_notebooks(nb_dir)}
    for stem in sections:
        if stem not in found:
            raise BadParameter(f"{file}: section {stem!r} names a missing notebook (no {nb_dir / (stem + '.ipynb')})")
    if only:
        for stem in only:
            if stem not in found:
                raise UnknownName("notebook", stem, found)
    stems = only or list(found)
    parameters = {}
    for stem in stems:
        declared = notebook_parameters(found[stem])
        for name in RESERVED:
            if name not in declared:
                raise BadParameter(f"{found[stem]}: the parameters cell does not declare {name}")
        if stem not in sections:
            raise BadParameter(f"{file}: no section for notebook {stem!r}")
        parameters[stem] = resolve(sections[stem] or {}, declared, where=f"{file} [{stem}]")
    rt = open_runtime(platform)       # raises RuntimeUnavailable in one sentence
    try:
        info, selection = rt.describe(), getattr(rt, "selection", [(rt.name, "started")])
        harness = measure_harness(rt.null_native, loops=1000, rounds=10)
    finally:
        rt.close()
    return Plan(preset, rt.name, [found[s] for s in stems], parameters, info, selection, harness)


def _run_id(platform: str, out_dir: Path) -> str:
    host = re.sub(r"[^A-Za-z0-9.-]+", "-", socket.gethostname())[:40] or "host"
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    rid = f"{stamp}-{host}-{platform}"
    n = 2
    while (out_dir / rid).exists():
        rid, n = f"{stamp}-{host}-{platform}-{n}", n + 1
    return rid


def _kernel_dir() -> str:
    """A private Jupyter data dir whose ``pinpath`` kernel is this very interpreter, so
    papermill runs the notebooks where pinpath is installed, whatever is registered elsewhere."""
    d = tempfile.mkdtemp(prefix="pinpath-kernel-")
    spec = Path(d) / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python (pinpath)", "language": "python"}))
    return d


def _error_of(exc: BaseException) -> str:
    ename, evalue = getattr(exc, "ename", type(exc).__name__), getattr(exc, "evalue", str(exc))
    cell = getattr(exc, "exec_count", None)
    return f"{ename}: {evalue}".strip() + (f" (cell In [{cell}])" if cell is not None else "")


def execute(p: Plan, *, out_dir: Path = OUTPUTS_DIR, progress: Callable[[str], None] | None = None,
            cell_timeout_s: int | None = None) -> tuple[Path, dict]:
    """Execute a validated plan; return (run folder, manifest)."""
    import papermill

    say = progress or (lambda s: print(s, file=sys.stderr, flush=True))
    out_dir.mkdir(parents=True, exist_ok=True)
    rid = _run_id(p.platform, out_dir)
    run_dir = out_dir / rid
    for sub in ("notebooks", "data", "figures", "report"):
        (run_dir / sub).mkdir(parents=True)
    man = {
        "run_id": rid, "preset": p.preset, "platform": p.platform, "status": "running",
        "start": mf.utc_now(), "end": None, "git": mf.git_state(PROJECT_ROOT),
        "runtime": p.runtime_info, "runtime_selection": p.selection, "harness_ns": p.harness,
        "machine": mf.machine(),
        "packages": mf.packages(), "parameters": p.parameters,
        "notebooks": {nb.stem: {"status": "pending"} for nb in p.notebooks},
    }
    mf.write(run_dir / "manifest.json", man)
    kernel_dir = _kernel_dir()
    old_jp = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = kernel_dir + (os.pathsep + old_jp if old_jp else "")
    t_run = time.monotonic()
    try:
        for i, nb in enumerate(p.notebooks, 1):
            stem = nb.stem
            say(f"[{i}/{len(p.notebooks)}] {stem}: running ({p.preset}, {p.platform})")
            entry = man["notebooks"][stem] = {"status": "running", "start": mf.utc_now()}
            mf.write(run_dir / "manifest.json", man)
            t0 = time.monotonic()
            out_nb = run_dir / "notebooks" / nb.name
            # relative to the notebook's folder (the kernel's cwd): no path of this machine in the outputs
            params = {**p.parameters[stem], "PLATFORM": p.platform, "RUN_DIR": os.path.relpath(run_dir, nb.parent),
                      "NOTEBOOK": stem}
            try:
                papermill.execute_notebook(str(nb), str(out_nb), parameters=params, kernel_name=KERNEL_NAME,
                                           language="python", progress_bar=False, cwd=str(nb.parent),
                                           execution_timeout=cell_timeout_s)
                entry["status"] = "ok"
            except Exception as e:   # papermill's execution error or a dead kernel: record, go on
                entry["status"], entry["error"] = "failed", _error_of(e)
            entry["duration_s"] = round(time.monotonic() - t0, 2)
            if out_nb.exists():
                _relative_paths(out_nb, nb.parent)
                try:
                    render_notebook(out_nb, run_dir / "report" / f"{stem}.html")
                except Exception as e:   # the executed notebook is kept; say why its HTML is missing
                    entry["status"] = "failed"
                    entry["error"] = (entry.get("error", "") + f"; HTML not rendered: {type(e).__name__}: "
                                      f"{str(e).splitlines()[0] if str(e) else ''}").lstrip("; ")
            say(f"[{i}/{len(p.notebooks)}] {stem}: {entry['status']} in {entry['duration_s']:.1f} s"
                + (f" - {entry['error']}" if entry.get("error") else ""))
            mf.write(run_dir / "manifest.json", man)
    finally:
        if old_jp is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = old_jp
        shutil.rmtree(kernel_dir, ignore_errors=True)
        man["end"] = mf.utc_now()
        man["duration_s"] = round(time.monotonic() - t_run, 1)
        ok = all(v.get("status") == "ok" for v in man["notebooks"].values())
        man["status"] = "ok" if ok else "failed"
        mf.write(run_dir / "manifest.json", man)
        judged = claims.evaluate(run_dir, p.platform, man["notebooks"])
        judged.to_csv(run_dir / "report" / "claims.csv", index=False)
        render_index(run_dir, man, [("Claims", claims_section(judged)), ("Headline figures", figures_section(run_dir))])
        _point_latest(out_dir, rid)
    return run_dir, man


def list_runs(out_dir: Path = OUTPUTS_DIR) -> list[tuple[str, dict]]:
    """(run id, manifest) of every run folder under ``out_dir``, oldest first."""
    runs = []
    for man_path in sorted(Path(out_dir).glob("*/manifest.json")):
        if man_path.parent.is_symlink():
            continue
        try:
            runs.append((man_path.parent.name, json.loads(man_path.read_text())))
        except (OSError, json.JSONDecodeError):
            runs.append((man_path.parent.name, {"status": "unreadable"}))
    return runs


def _relative_paths(out_nb: Path, base: Path) -> None:
    """papermill writes absolute input and output paths into the notebook's metadata."""
    import nbformat
    nb = nbformat.read(out_nb, as_version=4)
    meta = nb.metadata.get("papermill", {})
    for key in ("input_path", "output_path"):
        if meta.get(key):
            meta[key] = os.path.relpath(meta[key], base)
    nbformat.write(nb, out_nb)


def compare(run_dirs: list[Path], out_path: Path) -> Path:
    """Render the claims of several runs side by side into ``out_path`` (an HTML file)."""
    runs = []
    for d in run_dirs:
        man_path = Path(d) / "manifest.json"
        if not man_path.is_file():
            raise BadParameter(f"{d}: not a pinpath run (no manifest.json)")
        man = json.loads(man_path.read_text())
        runs.append((man, claims.evaluate(Path(d), man["platform"], man.get("notebooks"))))
    if len(runs) < 2:
        raise BadParameter("compare needs at least two runs")
    return render_compare(out_path, runs)


def _point_latest(out_dir: Path, rid: str) -> None:
    link = out_dir / "latest"
    tmp = out_dir / ".latest.tmp"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(rid)
    tmp.replace(link)


def run(preset: str, platform: str, *, only: list[str] | None = None, out_dir: Path = OUTPUTS_DIR,
        nb_dir: Path = NOTEBOOKS_DIR, params_dir: Path = PARAMS_DIR, progress=None,
        cell_timeout_s: int | None = None) -> tuple[Path, dict]:
    """Validate, then execute; see ``plan`` and ``execute``."""
    p = plan(preset, platform, only=only, nb_dir=nb_dir, params_dir=params_dir)
    return execute(p, out_dir=out_dir, progress=progress, cell_timeout_s=cell_timeout_s)
