"""What a resume needs, checked before the run folder is touched (every executor's)."""

from __future__ import annotations

from pathlib import Path

from .. import paths
from .. import runfolder as rf
from ..errors import BadParameter
from ..params import defaults, notebook_parameters, parse_override, resolve
from ..runtimes import open_runtime
from .jobs import resolve_part
from .notebook import missing_data, source_of

__all__ = ["check_resume"]


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
    man = rf.merge(run_dir, rf.read_manifest(run_dir), resolve_part)
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
        declared = notebook_parameters(source_of(man, stem))
        asked = resolve({pname: value}, declared, where=f"--set {stem}")[pname]
        has = man["parameters"][stem].get(pname, defaults(declared, stem).get(pname))
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
        elif missing := missing_data(run_dir, part):
            todo[stem] = f"ok, but its data {', '.join(missing)} is missing or unreadable"
    for stem in todo:
        source_of(man, stem)
    if check_platform:
        open_runtime(man["platform"]).close()      # RuntimeUnavailable in one sentence
    return run_dir, man, todo


