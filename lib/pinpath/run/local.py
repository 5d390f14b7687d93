"""The local executor: every notebook of a run in this process, one after the other, then
finalize (``run``); or what an earlier run left not ok, into its folder (``resume``).
SIGINT and SIGTERM mark the run ``interrupted`` and still render what finished."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

from .. import runfolder as rf
from ..errors import BadParameter, PinpathError, RunFailed
from .finalize import finalize, mark, unwritable
from .jobs import resolve_part
from .notebook import run_notebook, say_stderr
from .plan import init_run, plan
from .resume import check_resume
from .signals import Interrupted, on_signals, raise_pending
from .stopby import StopBy

__all__ = ["run", "resume", "run_one", "redo_notebook"]


def _eta(done_s: list[float], left: int) -> str:
    if not done_s or not left:
        return ""
    return f", about {sum(done_s) / len(done_s) * left:.0f} s left"


def _aside(run_dir: Path, stem: str) -> Path | None:
    """Move the outputs of ``stem`` (and its part) into ``<run>/.aside-<stem>/``; None if it had
    none. An aside folder left by a resume that died holds the older outputs: they come back first."""
    aside = rf.inside(run_dir, rf.rel("aside", stem))
    if aside.is_symlink() or (aside.exists() and not aside.is_dir()):
        raise BadParameter(f"{aside}: is not a folder the runner made; move it away to redo {stem}")
    if aside.is_dir():
        _restore(run_dir, stem, aside)
    part = rf.read_part(run_dir, stem)
    files = rf.outputs_of(run_dir, stem, part) + [p for p in [rf.part_path(run_dir, stem)] if p.is_file()]
    if not files:
        return None
    for f in files:
        dst = aside / f.relative_to(run_dir)
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.replace(f, dst)
    return aside


def _restore(run_dir: Path, stem: str, aside: Path, *, redone: bool = False) -> None:
    """Put the outputs moved aside back, each renamed over its place (nothing is removed before
    what replaces it is there); ``redone``: then remove what the redo wrote beside them. An aside
    left by a resume that died (``redone`` False) only puts back what it holds: an empty one
    changes nothing."""
    back = set()
    for f in sorted(p for p in aside.rglob("*") if p.is_file() and not p.is_symlink()):
        dst = rf.inside(run_dir, f.relative_to(aside).as_posix())
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.replace(f, dst)
        back.add(dst)
    if redone:
        for f in rf.outputs_of(run_dir, stem, rf.read_part(run_dir, stem)):
            if f not in back:
                f.unlink(missing_ok=True)
    shutil.rmtree(aside, ignore_errors=True)


def redo_notebook(run_dir: Path, stem: str, why: str = "", *, say=None, cell_timeout_s=None,
                  man: dict | None = None) -> dict:
    """Run ``stem`` again with its old outputs aside: dropped when it ends ok, put back otherwise
    (a notebook redone for its missing data then says so in its status). ``pinpath run-notebook``
    and a resume; the caller holds the run (``runfolder.open_for_write``) and passes its ``man``."""
    say = say or say_stderr
    aside = _aside(run_dir, stem)
    try:
        part = run_notebook(run_dir, stem, cell_timeout_s=cell_timeout_s, say=say, man=man)
    except BaseException:
        if aside:
            _restore(run_dir, stem, aside, redone=True)
        raise
    if aside and part["status"] != "ok":
        _restore(run_dir, stem, aside, redone=True)
        old = rf.read_part(run_dir, stem) or {"status": "pending"}
        if old.get("status") == "ok":
            rf.write_part(run_dir, stem, {**old, "status": "failed",
                                          "error": f"{why or 'run again'}; the redo ended {part['status']}"})
        say(f"      {stem}: the redo ended {part['status']}; its earlier outputs are back in place")
    elif aside:
        shutil.rmtree(aside, ignore_errors=True)
    return part


def run_one(run_dir: Path, stem: str, *, cell_timeout_s=None, say=None) -> dict:
    """``pinpath run-notebook``: ``redo`` of one notebook under ``runfolder.open_for_write``."""
    rf.check_name(stem, "notebook")
    with rf.open_for_write(run_dir, "run-notebook") as (run_dir, man, notice):
        if notice:
            (say or say_stderr)(f"notice: {notice}")
        return redo_notebook(run_dir, stem, say=say, cell_timeout_s=cell_timeout_s, man=man)


def _execute(run_dir: Path, stems: list[str], man: dict, *, say, cell_timeout_s=None, out_dir=None,
             todo: dict[str, str] | None = None, stop_by_s: int | None = None) -> tuple[Path, dict]:
    """Run ``stems`` into ``run_dir`` one after the other, then finalize; a signal stops the run
    after recording the notebook that was running. ``man``: the manifest the caller read once,
    holding the run, passed down to each notebook. ``todo``: stems run again by a resume (their
    old outputs are kept until they end ok) and why. ``stop_by_s``: no notebook is started that
    would not end by then (``stopby``); the run ends incomplete, a resume runs the rest."""
    t_run, durations = time.monotonic(), []
    stop_by = StopBy(stop_by_s, man["preset"], man["platform"], Path(out_dir or run_dir.parent), start=t_run)
    current = None
    try:
        with on_signals(signums=(signal.SIGTERM,)):     # SIGINT stays Python's KeyboardInterrupt here
            for i, stem in enumerate(stems, 1):
                if why := stop_by.refuses(stem):
                    say(f"[{i}/{len(stems)}] {stem}: {why}; it and the {len(stems) - i} after it are left "
                        f"pending (RESUME={run_dir.name} runs them)")
                    break
                current = stem
                say(f"[{i}/{len(stems)}] {stem}: running ({man['preset']}, {man['platform']}; "
                    f"{time.monotonic() - t_run:.0f} s elapsed{_eta(durations, len(stems) - i + 1)})")
                if todo is not None:
                    part = redo_notebook(run_dir, stem, todo.get(stem, ""), say=say, cell_timeout_s=cell_timeout_s,
                                         man=man)
                else:
                    part = run_notebook(run_dir, stem, cell_timeout_s=cell_timeout_s, say=say, man=man)
                durations.append(part["duration_s"])
                say(f"[{i}/{len(stems)}] {stem}: {part['status']} in {part['duration_s']:.1f} s"
                    + (f" - {part['error']}" if part.get("error") else ""))
                raise_pending()         # a signal whose raise was swallowed while the notebook ran
            current = None
    except (Interrupted, KeyboardInterrupt):
        say(f"interrupted while {current} ran: rendering what finished")
        mark(run_dir, "interrupted", interrupted_at=current or "")
        return run_dir, _finish(run_dir, current or "", out_dir)
    except OSError as e:
        raise unwritable(run_dir, e) from None
    except PinpathError as e:       # e.g. a folder of the run that leads out of it
        mark(run_dir, "failed", error=str(e))
        raise
    return run_dir, _finish(run_dir, None, out_dir)


def _finish(run_dir: Path, interrupted_at: str | None, out_dir) -> dict:
    """finalize; a signal while it works (a second one, after an interruption) leaves the run
    marked interrupted, a full or read-only disk leaves it marked failed - each in one sentence."""
    try:
        with on_signals():
            return finalize(run_dir, interrupted_at=interrupted_at, out_dir=out_dir)
    except (Interrupted, KeyboardInterrupt):
        mark(run_dir, "interrupted", interrupted_at=interrupted_at or "finalize")
        again = " again" if interrupted_at is not None else ""
        raise Interrupted(f"{run_dir.name}: stopped{again} while its report was written; the run is marked "
                          f"interrupted (`pinpath finalize {run_dir}` writes the report)") from None
    except OSError as e:
        raise unwritable(run_dir, e, "interrupted" if interrupted_at is not None else "failed") from None


def run(preset: str, platform: str, *, only: list[str] | None = None, out_dir: Path | None = None,
        nb_dir: Path | None = None, params_dir: Path | None = None, progress=None,
        cell_timeout_s: int | None = None, overrides: list[str] = (), stop_by_s: int | None = None) -> tuple[Path, dict]:
    """Validate, make the run folder, run every notebook (those that fit ``stop_by_s``), finalize."""
    say = progress or say_stderr
    p = plan(preset, platform, only=only, overrides=overrides, nb_dir=nb_dir, params_dir=params_dir)
    for notice in [p.fallback] * bool(p.fallback) + p.notices:
        say(f"notice: {notice}")
    try:
        run_dir = init_run(p, out_dir)
    except OSError as e:
        raise RunFailed(f"{e.filename or out_dir}: the run folder cannot be made ({e.strerror or e})") from None
    with rf.open_for_write(run_dir, "run") as (_, man, _):
        return _execute(run_dir, [nb.stem for nb in p.notebooks], man, say=say, cell_timeout_s=cell_timeout_s,
                        out_dir=out_dir, stop_by_s=stop_by_s)


def resume(run: str | Path, *, out_dir: Path | None = None, progress=None, cell_timeout_s: int | None = None,
           preset: str | None = None, platform: str | None = None, only: list[str] | None = None,
           overrides: list[str] = (), stop_by_s: int | None = None) -> tuple[Path, dict]:
    """Run every notebook of an earlier run that is not ``ok`` (or whose data is missing) into
    the same run folder, after ``check_resume``; a notebook's old outputs stay until its redo
    ends ok."""
    say = progress or say_stderr
    run_dir, man, todo = check_resume(run, out_dir=out_dir, preset=preset, platform=platform, only=only,
                                      overrides=overrides)
    with rf.open_for_write(run_dir, "resume") as (_, _, notice):
        if notice:
            say(f"notice: {notice}")
        say(f"resuming {run_dir.name}: {len(todo)} of {len(man['notebooks'])} notebook(s) to run"
            + "".join(f"\n  {s}: {why}" for s, why in todo.items()))
        try:
            man = rf.reopen(run_dir, resolve_part)
        except OSError as e:
            raise RunFailed(f"{e.filename or run_dir}: cannot be written ({e.strerror or e}); nothing was changed") from None
        return _execute(run_dir, list(todo), man, say=say, cell_timeout_s=cell_timeout_s, out_dir=out_dir, todo=todo,
                        stop_by_s=stop_by_s)


