"""The snakemake and slurm executors: make the run folder in this process (``plan``,
``init_run``) or reopen an earlier one, then Snakemake on it with ``profiles/local`` or
``profiles/slurm`` (``workflow/Snakefile``: one job per notebook, then ``pinpath finalize``);
Slurm is checked first (``slurm.check``). Prints one line per notebook."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

from .. import paths
from .. import runfolder as rf
from ..errors import PinpathError, printable
from ..paths import PROJECT_ROOT
from .jobs import job_id_of, resolve_part
from .plan import init_run, plan
from .profile import WORKFLOW_DIR, env_for_profile, need_extra, profile_dir, slurm_profile
from .resume import check_resume
from .slurm import ClusterError, check, describe

__all__ = ["run_workflow", "PROFILE_OF"]


def _say(msg: str) -> None:
    print(f"pinpath: {msg}", file=sys.stderr, flush=True)


def _manifest(run_dir: Path) -> dict:
    try:
        return rf.read_manifest(run_dir)
    except PinpathError:
        return {}


def _summary(run_dir: Path, wall_s: float) -> str:
    man = _manifest(run_dir)
    rows = []
    for stem, e in (man.get("notebooks") or {}).items():
        jid = job_id_of(e)
        gpu = e.get("gpu_uuid") or e.get("CUDA_VISIBLE_DEVICES")
        bits = [f"{stem:28}", f"{e.get('status', '?'):10}"]
        if jid:
            bits.append(f"job {jid} on {e.get('SLURM_JOB_NODELIST') or e.get('host') or '?'}")
        if gpu:
            bits.append(f"GPU {gpu}")
        if e.get("duration_s") is not None:
            bits.append(f"{e['duration_s']} s")
        if e.get("error") and e.get("status") != "ok":
            bits.append(f"- {e['error']}")
        rows.append("  " + printable("  ".join(map(str, bits))))
    head = f"{man.get('status', 'unknown')}: {run_dir} ({wall_s:.0f} s wall); report: {rf.path(run_dir, 'index')}"
    return "\n".join([head, *rows])


#: each executor's Snakemake profile (profiles/<name>/config.yaml)
PROFILE_OF = {"snakemake": "local", "slurm": "slurm"}


def _new_run(preset: str, platform: str, only, outputs: Path | None, sets: Sequence[str]) -> Path:
    """``plan`` and ``init_run`` in this process: the new run folder, absolute."""
    p = plan(preset or "default", platform, only=only, overrides=list(sets))
    for notice in p.notices:
        print(f"notice: {printable(notice)}", file=sys.stderr, flush=True)
    return init_run(p, outputs or paths.OUTPUTS_DIR).resolve()


def _reopen(resume: str, held: contextlib.ExitStack, *, executor: str, preset: str, platform: str, only,
            outputs: Path | None, sets: Sequence[str]) -> Path:
    """An earlier run folder checked (``check_resume``), locked (``runfolder.open_for_write``, held
    until ``held`` closes) and marked running again; its notebooks to redo are those Snakemake
    runs (an ok one whose data is gone, as a failed one)."""
    run_abs, man, todo = check_resume(resume, out_dir=outputs or paths.OUTPUTS_DIR, preset=preset or None,
                                      platform=platform, only=only, overrides=list(sets),
                                      check_platform=executor == "snakemake")
    _, _, notice = held.enter_context(rf.open_for_write(run_abs, "resume"))
    if notice:
        _say(f"notice: {notice}")
    for stem, why in todo.items():      # an ok notebook whose data is gone runs again, as a failed one
        if man["notebooks"][stem].get("status") == "ok":
            rf.write_part(run_abs, stem, {**man["notebooks"][stem], "status": "failed", "error": why})
    rf.reopen(run_abs, resolve_part)
    _say(f"resuming {run_abs}: {len(todo)} of {len(man['notebooks'])} notebook(s) to run"
         + "".join(f"; {s}: {why}" for s, why in todo.items()))
    return run_abs


def run_workflow(*, executor: str, preset: str, platform: str, only: list[str] | None = None,
                 outputs: Path | None = None, resume: str = "", sets: Sequence[str] = (),
                 cell_timeout_s: int | None = None, options: dict[str, str] | None = None,
                 snakemake_args: Sequence[str] = ()) -> int:
    """Make the run folder (or reopen ``resume``), then Snakemake with the executor's profile,
    which ends with ``pinpath finalize``; prints one line per notebook; returns the exit status."""
    if executor not in PROFILE_OF:
        raise ClusterError(f"unknown executor {executor!r}; known: local, {', '.join(PROFILE_OF)}")
    need_extra("snakemake", "Snakemake")
    if executor == "slurm":
        need_extra("snakemake_executor_plugin_slurm", "Snakemake's Slurm executor")
    env = env_for_profile(options)
    extra = _check_slurm(env) if executor == "slurm" else []
    t0 = time.monotonic()
    with contextlib.ExitStack() as held:
        if resume:
            run_abs = _reopen(resume, held, executor=executor, preset=preset, platform=platform, only=only,
                              outputs=outputs, sets=sets)
        else:
            run_abs = _new_run(preset, platform, only, outputs, sets)
            held.enter_context(rf.open_for_write(run_abs, "run"))
        env = {**env, rf.LOCK_ENV: rf.RunLock(run_abs).token()}     # its jobs write under this lock
        return _workflow(run_abs, executor=executor, env=env, extra=extra, cell_timeout_s=cell_timeout_s,
                         snakemake_args=snakemake_args, t0=t0)


def _check_slurm(env: dict[str, str]) -> list[str]:
    """``slurm.check`` of the profile's resources under ``env``, said; Snakemake's extra options
    for a cluster that keeps no accounting."""
    prof = slurm_profile(env)
    res = dict(prof.get("default-resources") or {})
    found = check(res)
    for note in found.notes:
        _say(note)
    _say(f"Slurm accepts the notebook jobs ({describe(res, found.partition, found.account)}): {found.sbatch}")
    if found.accounting:
        return []
    # the plugin's default status query is sacct, which answers nothing without slurmdbd; squeue
    # sees a finished job for MinJobAge seconds, and the plugin wants three polling intervals of it
    need = 3 * int(prof.get("slurm-init-seconds-before-status-checks") or 40)
    if found.min_job_age_s is not None and found.min_job_age_s < need:
        raise ClusterError(f"this cluster keeps no accounting and forgets finished jobs after MinJobAge="
                           f"{found.min_job_age_s} s; Snakemake polling every "
                           f"{need // 3} s needs at least {need} s to see how they ended")
    return ["--slurm-status-command", "squeue"]


def _workflow(run_abs: Path, *, executor: str, env: dict, extra: list[str], cell_timeout_s, snakemake_args,
              t0: float) -> int:
    """Snakemake on the run folder ``run_abs``, then its summary; the exit status."""
    py = sys.executable
    workdir = Path(os.environ.get("PINPATH_ROOT") or PROJECT_ROOT).resolve()
    try:
        run_arg = str(run_abs.relative_to(workdir))
    except ValueError:
        run_arg = str(run_abs)
    argv = [py, "-m", "snakemake", "--snakefile", str(WORKFLOW_DIR / "Snakefile"), "--directory", str(workdir),
            "--workflow-profile", str(profile_dir(PROFILE_OF[executor])), "--config", f"run_dir={run_arg}"]
    if env.get(rf.LOCK_ENV):
        argv.append(f"lock={env[rf.LOCK_ENV]}")
    if cell_timeout_s:
        argv.append(f"cell_timeout={cell_timeout_s}")
    if executor == "slurm":
        argv += ["--slurm-logdir", str(run_abs / "slurm")]
    argv += extra + list(snakemake_args)
    _say(f"run folder {run_arg}; Snakemake with profiles/{PROFILE_OF[executor]}")
    proc = subprocess.Popen(argv, env=env)
    try:
        rc = proc.wait()
    except KeyboardInterrupt as e:   # Snakemake had the same ^C (a SIGTERM is passed on): it cancels its jobs
        if getattr(e, "signum", signal.SIGINT) != signal.SIGINT:      # and stops; then finalize
            proc.send_signal(e.signum)
        rc = proc.wait()
    man = _manifest(run_abs)
    if man.get("status") in (None, "running"):
        # Snakemake stopped before its onerror handler could run (a lock, a broken profile, ^C)
        _say(f"Snakemake stopped (exit {rc}) before the run was finalized; finalizing {run_arg}")
        subprocess.run([py, "-m", "pinpath", "finalize", str(run_abs)], env=env)
        man = _manifest(run_abs)
    print(_summary(run_abs, time.monotonic() - t0), flush=True)
    if man.get("status") != "ok":
        _say(f"to run what is not ok again: make reproduce EXECUTOR={executor} RESUME={run_abs.name}")
        return 1
    return 0 if rc == 0 else 1
