"""What became of a notebook's Slurm job: ``job_state`` asks Slurm, ``resolve_part`` turns the
answer into the notebook's status and one sentence (the hook ``runfolder.merge`` calls; the
answer is then kept in the part, so Slurm is asked about a finished job once)."""

from __future__ import annotations

import re
import shutil

from .jobstate import SACCT_FIELDS, JobState, parse_jobcomp, parse_sacct, parse_scontrol, oom_in_log
from .slurm import run_tool

__all__ = ["job_state", "resolve_part", "log_in_run", "job_id_of"]


def job_state(job_id: str | int) -> JobState | None:
    """What Slurm says about one job: ``sacct`` where there is accounting, with ``scontrol show job``'s
    reason, comment and log file while slurmctld still remembers the job (MinJobAge); else
    ``scontrol`` alone; else the job completion log. A memory kill that the job's state does not
    show is looked for in the steps (sacct) and in the job's log. None if nobody knows the job."""
    jid = str(job_id).strip()
    if not re.fullmatch(r"\d+(_\d+)?", jid):
        return None
    js = None
    if shutil.which("sacct"):
        r = run_tool(["sacct", "-n", "-P", "-j", jid, "-o", ",".join(SACCT_FIELDS)])
        if r.returncode == 0:
            js = parse_sacct(r.stdout, jid)
    if shutil.which("scontrol"):
        r = run_tool(["scontrol", "show", "job", "-o", jid])
        sc = parse_scontrol(r.stdout, jid) if r.returncode == 0 else None
        if js is None:
            js = sc
        elif sc is not None:
            if js.reason in (None, "None") and sc.reason not in (None, "None"):
                js.reason = sc.reason
            js.comment = js.comment or sc.comment
            js.log = js.log or sc.log
    if js is None and shutil.which("sacct"):
        r = run_tool(["sacct", "--completion", "-n", "-P", "-j", jid, "-o", "JobID,State,ExitCode,NodeList,Elapsed,Timelimit"])
        if r.returncode == 0:
            js = parse_jobcomp(r.stdout, jid)
    if js is not None and js.finished and not js.oom and js.state in ("FAILED", "CANCELLED"):
        js.oom = oom_in_log(js.log)
    return js


def log_in_run(path: str) -> str:
    """The job's log as a path inside the run folder (where ``run_workflow`` has the plugin put it:
    slurm/rule_notebook/<stem>/<job id>.log), so the manifest names no path of this machine."""
    m = re.search(r"(?:^|/)(slurm/rule_[^/]+/[^/]+/[^/]+\.log)$", path)
    return m.group(1) if m else path


def job_id_of(part: dict) -> str | None:
    """The Slurm job of a notebook's part (run-notebook writes SLURM_JOB_ID there)."""
    return str(part["SLURM_JOB_ID"]) if part.get("SLURM_JOB_ID") else None


#: statuses run-notebook writes at its end: the notebook's own verdict, which Slurm does not overrule
_NOTEBOOK_VERDICTS = ("ok", "failed", "leaked", "dead_kernel")


def resolve_part(part: dict) -> dict | None:
    """The hook of ``pinpath finalize``: what became of a notebook's Slurm job.

    For a part left ``running`` (or ``interrupted``, ``stale``: the job was killed under the notebook)
    returns it with ``status`` (timeout, oom, cancelled, failed), ``slurm_state``, ``slurm_reason``,
    ``slurm_exit_code``, ``slurm_log`` where known and ``error``, one sentence naming the notebook and
    Slurm's reason. For a part the notebook finished (ok, failed, leaked, dead_kernel) only the
    ``slurm_*`` keys are added. None when there is no job id, Slurm cannot tell, or the job still runs."""
    jid = job_id_of(part)
    if not jid:
        return None
    js = job_state(jid)
    if js is None or not js.finished:
        return None
    out = dict(part)
    out.update(slurm_state=js.state, slurm_reason=js.reason, slurm_exit_code=js.exit_code)
    if js.log:
        out["slurm_log"] = log_in_run(js.log)
    if js.node and not out.get("SLURM_JOB_NODELIST"):
        out["SLURM_JOB_NODELIST"] = js.node
    if part.get("status") in _NOTEBOOK_VERDICTS:
        return out
    notebook = part.get("notebook") or js.notebook or "the notebook"
    out.update(status=js.status, error=js.sentence(notebook))
    if js.oom:
        out["slurm_reason"] = f"{js.reason or js.state}; {js.oom}"
    return out

