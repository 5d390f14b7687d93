"""Validate a run before anything is written (``plan``), then make its folder (``init_run``);
the cell timeout, validated here once for every command line."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from .. import budget
from .. import manifest as mf
from .. import paths
from .. import runfolder as rf
from ..errors import BadParameter, UnknownName
from ..params import OPS_BUDGET, RESERVED, defaults, estimated_ops, load_preset, notebook_parameters, parse_override, resolve
from ..runtimes import open_runtime
from ..trace import measure_harness
from ..vocab import Platform, Relock, choose

__all__ = ["Plan", "plan", "init_run", "available_notebooks", "cell_timeout_s"]


class Plan:
    """A validated run: which notebooks with which parameters on which runtime."""

    def __init__(self, preset, platform, notebooks, parameters, runtime_info, selection, harness, notices=()):
        self.preset, self.platform = preset, platform
        self.notebooks: list[Path] = notebooks
        self.parameters: dict[str, dict] = parameters
        self.runtime_info, self.selection = runtime_info, selection
        self.harness: dict[str, float] = harness   #: the recorder's own cost, clock, null call
        self.notices: list[str] = list(notices)     #: what validation changed, e.g. sizes left out

    @property
    def fallback(self) -> str:
        """Which platform runs and why the ones before it did not start ('' when the first did)."""
        passed = [f"{name} ({why})" for name, why in self.selection if why != "started"]
        return f"running on platform {self.platform}, because " + "; ".join(passed) + " did not start" if passed else ""


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
    if rf.is_reference(out_dir / "new"):
        raise BadParameter(f"{out_dir}: the committed references are read-only; make runs elsewhere (outputs/)")
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


MAX_CELL_TIMEOUT_S = 30 * 24 * 3600


def cell_timeout_s(value) -> int | None:
    """Seconds a cell may run, as every command line takes it (``run``, ``run-notebook``, each
    executor): None for nothing (no limit), else a positive whole number; BadParameter otherwise."""
    if value is None or str(value).strip() == "":
        return None
    try:
        seconds = int(str(value).strip())
    except ValueError:
        raise BadParameter(f"{value!r} is not a whole number of seconds") from None
    if seconds <= 0:
        raise BadParameter(f"must be a positive number of seconds, got {seconds}")
    if seconds > MAX_CELL_TIMEOUT_S:
        raise BadParameter(f"must be at most {MAX_CELL_TIMEOUT_S} seconds (30 days), got {seconds}")
    return seconds
