"""What Slurm's tools print about one job, read into a ``JobState``: ``sacct`` (with a memory
kill seen in the steps), ``scontrol show job`` and the job completion log; and slurmstepd's
memory-kill line in a job's output file."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from .slurm import ClusterError, parse_minutes

__all__ = ["JobState", "STATUS_OF_STATE", "SACCT_FIELDS", "parse_sacct", "parse_scontrol", "parse_jobcomp", "oom_in_log"]


#: Slurm's job state -> pinpath's status of the notebook
STATUS_OF_STATE = {"TIMEOUT": "timeout", "DEADLINE": "timeout", "OUT_OF_MEMORY": "oom", "CANCELLED": "cancelled",
                   "PREEMPTED": "cancelled", "REVOKED": "cancelled", "FAILED": "failed", "NODE_FAIL": "failed",
                   "BOOT_FAIL": "failed", "COMPLETED": "failed", "SPECIAL_EXIT": "failed"}
_STILL_GOING = {"PENDING", "RUNNING", "REQUEUED", "RESIZING", "SUSPENDED", "CONFIGURING", "COMPLETING",
                "STAGE_OUT", "SIGNALING", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "STOPPED"}
#: what slurmstepd writes into a job's output when a step outgrows its memory
_OOM_IN_LOG = re.compile(r"(StepId=\S+ exceeded memory limit \([^)]*\)|Detected \d+ oom[_-]kill events?[^\n]*)")


@dataclass
class JobState:
    job_id: str
    state: str                      #: Slurm's word, e.g. TIMEOUT ("CANCELLED by 0" is kept as CANCELLED)
    reason: str | None = None       #: e.g. TimeLimit, OutOfMemory, NonZeroExitCode
    exit_code: str | None = None    #: "rc:signal"
    node: str | None = None
    elapsed: str | None = None
    time_limit: str | None = None
    mem: str | None = None
    log: str | None = None          #: the job's standard output file (scontrol only)
    comment: str | None = None      #: snakemake-executor-plugin-slurm's "rule_notebook_wildcards_<stem>"
    oom: str | None = None          #: evidence that a step was killed for memory, though the job says FAILED
    source: str = "sacct"           #: sacct, scontrol or jobcomp

    @property
    def finished(self) -> bool:
        return self.state not in _STILL_GOING

    @property
    def status(self) -> str:
        return "oom" if self.oom else STATUS_OF_STATE.get(self.state, "failed")

    @property
    def notebook(self) -> str | None:
        m = re.fullmatch(r"rule_notebook_wildcards_(\S+)", self.comment or "")
        return m.group(1) if m else None

    def sentence(self, notebook: str) -> str:
        """One sentence naming the notebook and Slurm's reason."""
        on = f" on {self.node}" if self.node and self.node not in ("None", "None assigned") else ""
        mem = f" of {self.mem}" if self.mem else ""
        what = {
            "TIMEOUT": f"reached its time limit of {_limit(self.time_limit)}",
            "DEADLINE": "reached its deadline",
            "OUT_OF_MEMORY": f"ran out of its memory limit{mem}",
            "CANCELLED": "was cancelled",
            "PREEMPTED": "was preempted",
            "REVOKED": "was revoked",
            "NODE_FAIL": "lost its node",
            "BOOT_FAIL": "could not boot its node",
            "FAILED": f"failed with exit code {self.exit_code}" if self.exit_code else "failed",
            "COMPLETED": "ended without the notebook's process writing its result",
        }.get(self.state, f"ended in state {self.state}")
        if self.oom and self.state != "OUT_OF_MEMORY":
            what = f"was killed for outgrowing its memory limit{mem}"
        said = [f"state {self.state}"]
        if self.reason and self.reason not in ("None", "(null)"):
            said.append(f"reason {self.reason}")
        if self.oom and self.state != "OUT_OF_MEMORY":
            said.append(self.oom)
        if self.elapsed:
            said.append(f"after {self.elapsed}")
        return f"{notebook}: Slurm job {self.job_id}{on} {what} ({', '.join(said)})"


def _limit(text: str | None) -> str:
    if not text:
        return "its allocation"
    try:
        minutes = parse_minutes(text)
    except ClusterError:
        return text
    return f"{minutes} min" if minutes < 120 else text


SACCT_FIELDS = ("JobIDRaw", "State", "Reason", "ExitCode", "NodeList", "Elapsed", "Timelimit", "ReqMem", "Comment",
                 "MaxRSS")


def _kib(text: str | None) -> float | None:
    """Slurm's sizes (``2222368K``, ``1G``, ``1000Mn``) in KiB."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGTP]?)[nc]?", (text or "").strip())
    if not m:
        return None
    return float(m.group(1)) * 1024 ** "KMGTP".index(m.group(2) or "K") if m.group(2) else float(m.group(1)) / 1024


def parse_sacct(text: str, job_id: str) -> JobState | None:
    """``sacct -n -P -o JobIDRaw,State,Reason,ExitCode,NodeList,Elapsed,Timelimit,ReqMem,Comment,MaxRSS -j ID``:
    the allocation's line, and a memory kill seen in its steps: a step OUT_OF_MEMORY (cgroup
    enforcement), or one cancelled after its peak RSS passed the job's memory (sampling enforcement)."""
    job, steps = None, []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 8:
            continue
        v = dict(zip(SACCT_FIELDS, cells + [""] * len(SACCT_FIELDS)))
        word = v["State"].split()[0] if v["State"] else "UNKNOWN"
        if v["JobIDRaw"] == str(job_id):
            job = JobState(job_id=str(job_id), state=word, reason=v["Reason"] or None, exit_code=v["ExitCode"] or None,
                           node=v["NodeList"] or None, elapsed=v["Elapsed"] or None,
                           time_limit=v["Timelimit"] or None, mem=v["ReqMem"] or None,
                           comment=v["Comment"] or None, source="sacct")
        elif v["JobIDRaw"].startswith(f"{job_id}."):
            steps.append((v["JobIDRaw"], word, v["MaxRSS"]))
    if job is None:
        return None
    limit = _kib(job.mem)
    for step, word, rss in steps:
        if job.state == "OUT_OF_MEMORY":
            break
        if word == "OUT_OF_MEMORY":
            job.oom = f"step {step} ran out of memory"
            break
        peak = _kib(rss)
        if word in ("CANCELLED", "FAILED") and limit and peak and peak > limit:
            job.oom = f"step {step} reached {peak / 1024 ** 2:.1f} GiB resident, over the job's {job.mem}"
            break
    return job


def parse_scontrol(text: str, job_id: str) -> JobState | None:
    """``scontrol show job -o ID`` (one line of Key=Value words)."""
    def get(key):
        m = re.search(rf"(?:^|\s){key}=(\S*)", text)
        return m.group(1) if m and m.group(1) not in ("", "(null)") else None
    state = get("JobState")
    if not state or get("JobId") != str(job_id):
        return None
    mem = None
    if tres := get("TRES"):
        mem = dict(kv.split("=", 1) for kv in tres.split(",") if "=" in kv).get("mem")
    return JobState(job_id=str(job_id), state=state, reason=get("Reason"), exit_code=get("ExitCode"),
                    node=get("NodeList"), elapsed=get("RunTime"), time_limit=get("TimeLimit"), mem=mem,
                    log=get("StdOut"), comment=get("Comment"), source="scontrol")


def parse_jobcomp(text: str, job_id: str) -> JobState | None:
    """``sacct --completion -n -P -o JobID,State,ExitCode,NodeList,Elapsed,Timelimit`` (Slurm <= 22.05 with
    jobcomp/filetxt, no accounting): the state survives there after slurmctld forgets the job."""
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) >= 2 and cells[0] == str(job_id):
            cells += [""] * (6 - len(cells))
            return JobState(job_id=str(job_id), state=cells[1].split()[0], exit_code=cells[2] or None,
                            node=cells[3] or None, elapsed=cells[4] or None, time_limit=cells[5] or None,
                            source="jobcomp")
    return None


def oom_in_log(path: str | os.PathLike | None) -> str | None:
    """slurmstepd's line saying a step outgrew its memory, from the end of a job's output file."""
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 65536))
            tail = f.read().decode(errors="replace")
    except OSError:
        return None
    m = _OOM_IN_LOG.search(tail)
    return m.group(1) if m else None

