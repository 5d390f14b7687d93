"""A run folder and its manifest, written so that several notebook jobs (one process each, on
one machine or on a cluster's nodes) can share it.

``manifest.json`` holds the run's provenance; each notebook's entry lives in its own part,
``status/<stem>.json``, which only that notebook's job writes (atomically). ``merge`` folds the
parts into the manifest; ``state`` tells a manifest left behind by a killed runner (``stale``).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import socket
from pathlib import Path

from . import atomic
from .errors import BadParameter

__all__ = ["SUBDIRS", "new_run_id", "create", "find_run", "read_manifest", "write_manifest", "read_part",
           "write_part", "parts", "merge", "reopen", "state", "list_runs", "point_latest", "pid_alive"]

SUBDIRS = ("notebooks", "data", "figures", "report", "status")
#: notebook statuses a job leaves behind when it ends; "pending" and "running" are not final


def _host() -> str:
    return socket.gethostname()


def new_run_id(platform: str, out_dir: Path) -> str:
    host = re.sub(r"[^A-Za-z0-9.-]+", "-", _host())[:40] or "host"
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    rid, n = f"{stamp}-{host}-{platform}", 2
    while (out_dir / rid).exists():
        rid, n = f"{stamp}-{host}-{platform}-{n}", n + 1
    return rid


def create(out_dir: Path, manifest: dict) -> Path:
    """Make the folder ``out_dir/<run_id>`` with its subfolders and write the manifest."""
    run_dir = Path(out_dir) / manifest["run_id"]
    for sub in SUBDIRS:
        (run_dir / sub).mkdir(parents=True, exist_ok=True)
    write_manifest(run_dir, manifest)
    return run_dir


def read_manifest(run_dir: Path) -> dict:
    """The manifest of ``run_dir``; BadParameter in one sentence when it is missing or broken."""
    path = Path(run_dir) / "manifest.json"
    if not path.is_file():
        raise BadParameter(f"{run_dir}: not a pinpath run (no manifest.json)")
    try:
        man = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadParameter(f"{path}: unreadable manifest ({type(e).__name__})") from None
    if not isinstance(man, dict):
        raise BadParameter(f"{path}: a manifest is a JSON object, this one is a {type(man).__name__}")
    for key in ("run_id", "platform", "preset"):
        if not isinstance(man.get(key), str):
            raise BadParameter(f"{path}: the manifest has no {key}")
    if not isinstance(man.get("notebooks", {}), dict):
        raise BadParameter(f"{path}: the manifest's notebooks entry is not an object")
    return man


def write_manifest(run_dir: Path, manifest: dict) -> None:
    atomic.write_json_atomic(Path(run_dir) / "manifest.json", manifest)


def read_part(run_dir: Path, stem: str) -> dict | None:
    path = Path(run_dir) / "status" / f"{stem}.json"
    try:
        part = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return part if isinstance(part, dict) else None


def write_part(run_dir: Path, stem: str, part: dict) -> None:
    atomic.write_json_atomic(Path(run_dir) / "status" / f"{stem}.json", part)


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
    followed, so the folder has its real run id. BadParameter where there is no run."""
    if run is None or str(run) == "":
        run = "latest"
    p = Path(run)
    cand = p if p.exists() else Path(outputs) / p
    if not (cand / "manifest.json").is_file():
        raise BadParameter(f"{run}: not a pinpath run (no manifest.json in {cand.name or cand})")
    return cand.resolve()


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
    gone becomes ``stale`` (or what ``resolve(part)`` says: a cluster knows why its job ended)."""
    nbs = parts(run_dir, manifest.get("notebooks", {}))
    for stem, part in nbs.items():
        on_cluster = resolve is not None and bool(part.get("SLURM_JOB_ID"))
        if part.get("status") != "running" and not on_cluster:
            continue
        told = resolve({"notebook": stem, **part}) if resolve else None
        if told is not None:
            nbs[stem] = told
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


def point_latest(out_dir: Path, rid: str) -> None:
    link, tmp = Path(out_dir) / "latest", Path(out_dir) / ".latest.tmp"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(rid)
    tmp.replace(link)
