"""A run folder and its manifest, written so that several notebook jobs (one process each, on
one machine or on a cluster's nodes) can share it.

``manifest.json`` holds the run's provenance; each notebook's entry lives in its own part,
``status/<stem>.json``, which only that notebook's job writes (atomically). ``merge`` folds the
parts into the manifest; ``state`` tells a manifest left behind by a killed runner (``stale``).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
import secrets
import shutil
import socket
from pathlib import Path
from typing import Iterator

from . import atomic
from . import paths
from .errors import BadParameter
from .safeio import NUMBER, OPT_STR, check_fields, read_json

__all__ = ["SUBDIRS", "new_run_id", "create", "find_run", "read_manifest", "write_manifest", "read_part",
           "write_part", "parts", "merge", "reopen", "state", "list_runs", "point_latest", "pid_alive",
           "check_name", "inside", "outputs_of", "RunLock", "LOCK_NAME", "open_for_write", "is_reference",
           "LOCK_ENV", "MANIFEST", "SHARE", "LAYOUT", "rel", "path", "part_path"]

LOCK_NAME = "runner.lock"     #: the file of a run folder that says which process runs it (LAYOUT's lock)
SUBDIRS = ("notebooks", "data", "figures", "report", "status")
MANIFEST = "manifest.json"    #: LAYOUT's manifest
SHARE = "share"             #: what ``pinpath share`` writes: summary.md, figures/, <run-id>.zip
REFERENCE = "reference"     #: outputs/reference/<name>: committed runs, read-only
LOCK_ENV = "PINPATH_RUN_LOCK"   #: set by a runner for its jobs: "<pid>@<host>" of the lock it holds
#: what a writing command refuses to find as a link (it would write or delete through it)
_NO_LINKS = (*SUBDIRS, SHARE, f"{SHARE}/figures", LOCK_NAME, MANIFEST)
#: the fields of a manifest and of a notebook's part that readers use, with their types
_MANIFEST_FIELDS = {"run_id": str, "platform": str, "preset": str, "status": str, "start": OPT_STR,
                    "end": OPT_STR, "runner": dict, "git": dict, "judged_by": dict, "duration_s": NUMBER,
                    "notebooks": dict, "parameters": dict, "sources": dict, "runtime": dict, "machine": dict,
                    "notices": list, "interrupted_at": str, "harness_ns": dict, "error": str}
_RUNNER_FIELDS = {"pid": int, "host": str}
_GIT_FIELDS = {"commit": str, "dirty": (bool, type(None)), "sources": str, "source": str}
_PART_FIELDS = {"status": str, "pid": int, "host": str, "start": OPT_STR, "end": OPT_STR, "duration_s": NUMBER,
                "error": str, "data": list, "SLURM_JOB_ID": (str, int), "slurm_state": (str, dict, type(None))}


# -- the layout: every path of a run folder is spelled here, once -------------------------------
LAYOUT = {
    "manifest": MANIFEST, "lock": LOCK_NAME,
    "part": "status/{stem}.json", "kernel": "status/{stem}.kernel.json", "figure_record": "status/{stem}.figures.json",
    "notebook": "notebooks/{stem}.ipynb", "partial": "notebooks/.{stem}.partial.ipynb",
    "page": "report/{stem}.html", "report": "report/{name}", "index": "report/index.html",
    "harness": "data/harness.{stem}.parquet", "data": "data/{name}", "data_dir": "data", "aside": ".aside-{stem}",
}


def rel(what: str, stem: str = "", name: str = "") -> str:
    """The path of ``what`` (a key of ``LAYOUT``) inside a run folder, ``/``-separated; ``stem``
    and ``name`` are checked plain names."""
    return LAYOUT[what].format(stem=check_name(stem, "notebook") if stem else "",
                               name=check_name(name, "file name") if name else "")


def path(run_dir: Path, what: str, stem: str = "", name: str = "") -> Path:
    """``run_dir / rel(what, stem, name)``."""
    return Path(run_dir) / rel(what, stem, name)


def _host() -> str:
    return socket.gethostname()


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,199}")


def check_name(name, what: str) -> str:
    """``name`` if it is a plain file name (a notebook stem, a run id, a data file): letters,
    digits, ``_.+-``, no leading dot, no ``..``; BadParameter in one sentence otherwise."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise BadParameter(f"{what} {name!r} is not a plain name (letters, digits, '_.+-'; no path)")
    return name


def inside(run_dir: Path, rel: str) -> Path:
    """``run_dir / rel``, refused in one sentence where it (links followed) leaves ``run_dir``."""
    path = Path(run_dir) / rel
    if not path.resolve().is_relative_to(Path(run_dir).resolve()):
        raise BadParameter(f"{run_dir}: {rel!r} leads outside the run folder")
    return path


def is_reference(run_dir: Path) -> bool:
    """Whether ``run_dir`` is a committed reference: a folder of ``outputs/reference/`` (links
    followed), or of any folder named ``reference``."""
    real = Path(run_dir).resolve()
    return real.parent.name == REFERENCE or real.is_relative_to((Path(paths.OUTPUTS_DIR) / REFERENCE).resolve())


@contextlib.contextmanager
def open_for_write(run_dir: Path, command: str, *, reference_ok: bool = False) -> Iterator[tuple[Path, dict, str]]:
    """The one guard of every command that writes into a run folder (``run-notebook``, ``share``,
    ``finalize``, a resume): the folder (links followed) and its manifest, checked, while the
    run's lock is held. Refused in one sentence, before anything is written: a folder that is no
    run, a committed reference (unless ``reference_ok``), a folder or file of the run that is a
    link (a write or delete would go through it), a manifest ``read_manifest`` refuses, and a run
    whose lock a live runner holds (not this process, nor the runner whose job this is). Yields
    the folder, its manifest and the notice that a stale lock was taken over ("" if none)."""
    run_dir = Path(run_dir)
    if not (run_dir / MANIFEST).is_file():
        raise BadParameter(f"{command} {run_dir}: not a pinpath run (no {MANIFEST})")
    real = run_dir.resolve()
    if is_reference(real) and not reference_ok:
        raise BadParameter(f"{command} {run_dir}: a committed reference is read-only "
                           f"(copy it to outputs/<new-id>/ and {command} the copy)")
    man = read_manifest(real)       # names a link that leads out of the folder
    for rel in _NO_LINKS:
        if (real / rel).is_symlink():
            raise BadParameter(f"{command} {run_dir}: {rel} is a link, which a write into the run could follow "
                               "out of it; make it a plain folder or file")
    lock = RunLock(real)
    try:
        notice, taken = lock.enter()
    except OSError as e:
        raise BadParameter(f"{e.filename or lock.path}: cannot be written ({e.strerror or e}); nothing was changed") from None
    try:
        yield real, man, notice
    finally:
        if taken:
            lock.release()


def new_run_id(platform: str) -> str:
    """The time, host and platform: ``create`` adds ``-2``, ``-3`` ... where the name is taken."""
    host = re.sub(r"[^A-Za-z0-9.-]+", "-", _host())[:40].strip(".-") or "host"
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{host}-{platform}"


def create(out_dir: Path, manifest: dict, *, exact: bool = True) -> Path:
    """Make the folder ``out_dir/<run_id>`` with its subfolders and write the manifest. The folder
    is made without exist-ok, so two processes never share one: with ``exact`` a taken name is
    refused, else ``-2``, ``-3`` ... is tried (the manifest gets the name that was made)."""
    base = check_name(manifest["run_id"], "run id")
    for n in range(1, 1000):
        rid = base if n == 1 else f"{base}-{n}"
        try:
            (Path(out_dir) / rid).mkdir()
            break
        except FileExistsError:
            if exact:
                raise BadParameter(f"{rid}: a run of that name exists already") from None
    else:
        raise BadParameter(f"{out_dir}: 999 runs named {base} exist already")
    run_dir = Path(out_dir) / rid
    try:
        for sub in SUBDIRS:
            (run_dir / sub).mkdir()
        write_manifest(run_dir, {**manifest, "run_id": rid})
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)     # no half-made run folder
        raise
    return run_dir


def read_manifest(run_dir: Path) -> dict:
    """The manifest of ``run_dir``, its fields of the types their readers use (``_MANIFEST_FIELDS``,
    each notebook's entry as a part); BadParameter in one sentence naming the file and the field
    when it is missing, too large, too deep, not JSON or of the wrong shape."""
    path = Path(run_dir) / MANIFEST
    try:
        man = read_json(path, what="manifest")
    except FileNotFoundError:
        raise BadParameter(f"{run_dir}: not a pinpath run (no {MANIFEST})") from None
    if not isinstance(man, dict):
        raise BadParameter(f"{path}: a manifest is a JSON object, this one is a {type(man).__name__}")
    for key in ("run_id", "platform", "preset"):
        if not isinstance(man.get(key), str):
            raise BadParameter(f"{path}: the manifest has no {key}")
    for key in ("notebooks", "parameters", "sources"):
        if not isinstance(man.get(key, {}), dict):
            raise BadParameter(f"{path}: the manifest's {key} entry is not an object")
    check_fields(man, _MANIFEST_FIELDS, f"{path}")
    check_fields(man.get("runner") or {}, _RUNNER_FIELDS, f"{path}: runner")
    for key in ("git", "judged_by"):
        check_fields(man.get(key) or {}, _GIT_FIELDS, f"{path}: {key}")
    try:
        for sub in _NO_LINKS:      # a folder of the run that is a link out of it
            if (Path(run_dir) / sub).is_symlink():
                inside(run_dir, sub)
        for key in ("notebooks", "parameters", "sources"):
            for stem in man.get(key, {}):
                check_name(stem, f"notebook in {key}")
        for stem, part in man.get("notebooks", {}).items():
            _check_part(part, f"notebooks.{stem}")
        for stem, values in man.get("parameters", {}).items():
            if not isinstance(values, dict):
                raise BadParameter(f"the field 'parameters.{stem}' is a {type(values).__name__}, not a dict")
        for stem, src in man.get("sources", {}).items():
            if not isinstance(src, str) or not src.endswith(".ipynb") or Path(src).is_absolute() or ".." in Path(src).parts:
                raise BadParameter(f"the source of {stem}, {src!r}, is not a notebook path inside the project")
    except BadParameter as e:
        raise BadParameter(f"{path}: {e}") from None
    return man


def _check_part(part, where: str) -> dict:
    """``part`` if it is a notebook's part whose fields have their readers' types."""
    if not isinstance(part, dict):
        raise BadParameter(f"the field {where!r} is a {type(part).__name__}, not an object")
    check_fields(part, _PART_FIELDS, where)
    if any(not isinstance(d, str) for d in part.get("data") or []):
        raise BadParameter(f"{where}: the field 'data' lists something that is not a file name")
    return part


def write_manifest(run_dir: Path, manifest: dict) -> None:
    atomic.write_json_atomic(Path(run_dir) / MANIFEST, manifest)


def part_path(run_dir: Path, stem: str) -> Path:
    """``status/<stem>.json``: notebook ``stem``'s part, which only its job writes."""
    return path(run_dir, "part", stem)


def read_part(run_dir: Path, stem: str) -> dict | None:
    """Notebook ``stem``'s part; None where its job has not written one; BadParameter naming the
    file and the field for one that is not a part (``read_json``'s checks, the part's fields)."""
    path = part_path(run_dir, stem)
    try:
        part = read_json(path, what="status part")
    except FileNotFoundError:
        return None
    try:
        return _check_part(part, "part")
    except BadParameter as e:
        raise BadParameter(f"{path}: {e}") from None


def write_part(run_dir: Path, stem: str, part: dict) -> None:
    atomic.write_json_atomic(inside(run_dir, rel("part", stem)), part)


def outputs_of(run_dir: Path, stem: str, part: dict | None = None) -> list[Path]:
    """The files notebook ``stem`` wrote into the run folder that exist: its executed notebook,
    HTML page, kernel report, figure record, harness data, long tables, figures, and the data sets
    its ``part`` lists."""
    run_dir, stem = Path(run_dir), check_name(stem, "notebook")
    data = (part or {}).get("data") or []
    names = [*(rel(w, stem) for w in ("notebook", "partial", "page", "kernel", "figure_record", "harness")),
             *(rel("data", name=p.name) for p in path(run_dir, "data_dir").glob(f"{stem}.table-*.csv")),
             *(rel("data", name=check_name(d, "data file")) for d in (data if isinstance(data, list) else [])),
             *(f"figures/{p.name}" for p in (run_dir / "figures").glob(f"{stem}-*"))]
    return [inside(run_dir, n) for n in dict.fromkeys(names) if (run_dir / n).is_file()]


def parts(run_dir: Path, stems) -> dict[str, dict]:
    """Each notebook's part; ``pending`` where its job has not written one."""
    return {s: read_part(run_dir, s) or {"status": "pending"} for s in stems}


def pid_alive(pid, host) -> bool | None:
    """Whether process ``pid`` on ``host`` still runs; None when it cannot be told from here."""
    if host != _host() or not isinstance(pid, int):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def find_run(run: str | os.PathLike | None, outputs: Path) -> Path:
    """A run folder from a path, a run id under ``outputs`` or None (``outputs/latest``); links
    followed, so the folder has its real run id. BadParameter where there is no run, or where a
    run id (``latest`` too) leads out of ``outputs``."""
    if run is None or str(run) == "":
        run = "latest"
    p = Path(run)
    cand = p if p.exists() else Path(outputs) / p
    if not (cand / MANIFEST).is_file():
        raise BadParameter(f"{run}: not a pinpath run (no manifest.json in {cand.name or cand})")
    found, base = cand.resolve(), Path(outputs).resolve()
    if cand is not p and (not found.is_relative_to(base) or found == base):
        raise BadParameter(f"{run}: the run folder {found} is not inside the folder of runs {base}")
    return found


def reopen(run_dir: Path, resolve=None) -> dict:
    """Mark an earlier run running again under this process, to run its notebooks that are not
    ok: its end is cleared, so its finalize is a first one, not a re-judgement."""
    man = merge(run_dir, read_manifest(run_dir), resolve)
    man.update(status="running", runner={"pid": os.getpid(), "host": socket.gethostname()}, end=None)
    man.pop("interrupted_at", None)
    write_manifest(run_dir, man)
    return man


def merge(run_dir: Path, manifest: dict, resolve=None) -> dict:
    """Fold the parts into ``manifest["notebooks"]``; a part left ``running`` by a job that is
    gone becomes ``stale`` (or what ``resolve(part)`` says: a cluster knows why its job ended).
    ``resolve``'s answer is kept in the part (its ``slurm_state``), so a job is asked about once."""
    nbs = parts(run_dir, manifest.get("notebooks", {}))
    for stem, part in nbs.items():
        ask = resolve is not None and bool(part.get("SLURM_JOB_ID")) and "slurm_state" not in part
        if part.get("status") != "running" and not ask:
            continue
        told = resolve({"notebook": stem, **part}) if ask else None
        if told is not None:
            nbs[stem] = told
            try:
                write_part(run_dir, stem, told)
            except OSError:          # a read-only run folder: asked again next time
                pass
        elif part.get("status") == "running" and pid_alive(part.get("pid"), part.get("host")) is False:
            nbs[stem] = {**part, "status": "stale",
                         "error": f"{stem}: its job (pid {part.get('pid')}) ended without a status"}
    manifest["notebooks"] = nbs
    return manifest


def state(manifest: dict) -> str:
    """The run's status as a reader should see it: ``stale`` for a run left ``running`` by a
    runner that is gone (killed), else the recorded status."""
    status = str(manifest.get("status", "?"))
    runner = manifest.get("runner", {})
    if status == "running" and pid_alive(runner.get("pid"), runner.get("host")) is False:
        return "stale"
    return status


def list_runs(out_dir: Path) -> list[tuple[str, dict | None, str]]:
    """(run id, manifest or None, status or the reason it is unreadable) of every run folder."""
    runs = []
    for man_path in sorted(Path(out_dir).glob("*/manifest.json")):
        if man_path.parent.is_symlink():
            continue
        try:
            man = read_manifest(man_path.parent)
        except BadParameter as e:
            runs.append((man_path.parent.name, None, f"unreadable: {str(e).split(': ', 1)[-1]}"))
            continue
        runs.append((man_path.parent.name, man, state(man)))
    return runs


def point_latest(out_dir: Path, rid: str) -> bool:
    """Point ``out_dir/latest`` at the run ``rid`` (a folder of ``out_dir``), atomically, through a
    temporary link whose name is this process's own. A ``latest`` that is not a link is left as
    it is (False)."""
    link = Path(out_dir) / "latest"
    if not (Path(out_dir) / check_name(rid, "run id")).is_dir() or (link.exists() and not link.is_symlink()):
        return False
    tmp = Path(out_dir) / f".latest.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        tmp.symlink_to(rid)
        tmp.replace(link)
    finally:
        if tmp.is_symlink():
            tmp.unlink()
    return True


def _proc_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot; tells a reused pid), None if unknown."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


_HELD: set[Path] = set()       #: the locks this process holds


class RunLock:
    """``<run>/runner.lock``: the pid, host and start time of the process that runs the run.
    ``acquire`` refuses a run whose lock names a live process (or one on another host, which
    cannot be told from here) and takes over a stale one, returning a notice; ``release``
    removes the lock where it is still this process's."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / LOCK_NAME
        self.me = {"pid": os.getpid(), "host": _host(), "pid_start": _proc_start(os.getpid()),
                   "start": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}

    def holder(self) -> dict | None:
        """The lock's holder; None where there is no lock, {} where it cannot be read (a FIFO,
        a broken file: held by someone unknown)."""
        try:
            held = read_json(self.path, 4096, "lock")
        except FileNotFoundError:
            return None
        except BadParameter:
            return {}
        if not isinstance(held, dict):
            return {}
        try:
            return check_fields(held, {**_RUNNER_FIELDS, "pid_start": OPT_STR, "start": str}, "lock")
        except BadParameter:
            return {}

    def live(self, held: dict) -> bool | None:
        alive = pid_alive(held.get("pid"), held.get("host"))
        if alive and held.get("pid_start") and _proc_start(held["pid"]) != held["pid_start"]:
            return False        # the pid was reused by another process
        return alive

    def ours(self, held: dict | None) -> bool:
        """Whether ``held`` is a lock this process took (and holds) or that of the runner whose
        job this process is (``LOCK_ENV``)."""
        if not held:
            return False
        me = self.path.resolve() in _HELD and held.get("pid") == self.me["pid"] and held.get("host") == self.me["host"]
        return me or os.environ.get(LOCK_ENV) == f"{held.get('pid')}@{held.get('host')}"

    def token(self) -> str:
        """``LOCK_ENV``'s value for the jobs of the runner that holds this lock."""
        return f"{self.me['pid']}@{self.me['host']}"

    def acquire(self) -> str:
        """Take the lock; "" or the notice that a stale lock was taken over."""
        text = json.dumps(self.me) + "\n"
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            held = self.holder() or {}
            alive = self.live(held)
            if alive is not False:
                where = "" if alive else " (on another host, so it cannot be told whether it still runs)"
                raise BadParameter(f"{self.path.parent.name}: pid {held.get('pid', '?')} on {held.get('host', '?')}, "
                                   f"started {held.get('start', '?')}, holds this run{where}; remove {self.path} "
                                   "if that runner is gone") from None
            atomic.write_text_atomic(self.path, text)
            if (self.holder() or {}).get("pid_start") != self.me["pid_start"] or self.holder().get("pid") != self.me["pid"]:
                raise BadParameter(f"{self.path.parent.name}: another runner took over its stale lock at the same time")
            _HELD.add(self.path.resolve())
            return (f"{self.path.parent.name}: took over the lock of pid {held.get('pid', '?')} on "
                    f"{held.get('host', '?')} (started {held.get('start', '?')}), which no longer runs")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        _HELD.add(self.path.resolve())
        return ""

    def enter(self) -> tuple[str, bool]:
        """``acquire`` unless this process or its runner holds the lock already: the notice and
        whether this call took it (and so releases it)."""
        if self.ours(self.holder()):
            return "", False
        return self.acquire(), True

    def release(self) -> None:
        held = self.holder()
        if held and held.get("pid") == self.me["pid"] and held.get("host") == self.me["host"]:
            self.path.unlink(missing_ok=True)
        _HELD.discard(self.path.resolve())
