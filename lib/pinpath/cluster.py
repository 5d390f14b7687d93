"""Slurm, as pinpath meets it: a check before anything is submitted, what Slurm says about a
notebook's job in one sentence, and ``make reproduce CLUSTER=...`` (``python -m pinpath.cluster``).

The workflow is Snakemake's (``workflow/Snakefile``: one job per notebook, then ``pinpath
finalize``); dispatch is snakemake-executor-plugin-slurm's, with the profile in
``profiles/slurm/config.yaml``; scheduling is Slurm's. This module only

* checks, before ``pinpath init`` writes anything, that Slurm is there and would accept the
  notebook jobs (``check``): ``sbatch`` on PATH, the partition, the account, and a
  ``sbatch --test-only`` of one notebook job with the profile's resources;
* turns what ``sacct`` (or, without accounting, ``scontrol show job`` and the job completion
  log) says about a job into a status and one sentence (``job_state``, ``resolve_part``, the hook
  ``pinpath finalize`` calls for a notebook whose part was left "running");
* records, from Snakemake's log, why a notebook's job never started it (``record_unstarted``,
  called by the workflow's onerror handler): sbatch refused it, or the job failed first;
* runs ``pinpath init``, then Snakemake with the right profile (``reproduce``).
"""

from __future__ import annotations

import argparse
import getpass
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from .errors import PinpathError, printable
from . import runfolder as rf
from .paths import PROJECT_ROOT

__all__ = ["ClusterError", "JobState", "check", "job_state", "resolve_part", "record_unstarted", "slurm_profile",
           "slurm_resources", "parse_minutes", "parse_mem_mb", "reproduce", "main", "WORKFLOW_DIR", "PROFILES_DIR"]

#: the workflow and the profiles live beside the package, whatever PINPATH_ROOT says about the data
_SOURCE_ROOT = Path(__file__).resolve().parents[2]
WORKFLOW_DIR = _SOURCE_ROOT / "workflow"
PROFILES_DIR = _SOURCE_ROOT / "profiles"

#: the profile reads these; ``reproduce`` sets them from its options (make's SLURM_* variables)
ENV_NAMES = {"partition": "PINPATH_SLURM_PARTITION", "account": "PINPATH_SLURM_ACCOUNT",
             "gpus": "PINPATH_SLURM_GPUS", "cpus": "PINPATH_SLURM_CPUS", "time": "PINPATH_SLURM_TIME_MIN",
             "mem": "PINPATH_SLURM_MEM_MB"}

_CLIENTS = ("sbatch", "squeue", "scontrol", "sinfo")


class ClusterError(PinpathError):
    """Slurm is missing, or would refuse the jobs; the message is one sentence."""


# --------------------------------------------------------------------------------------------
# values a person types: a time limit and a memory size

def parse_minutes(text: str | int) -> int:
    """A time limit in whole minutes (rounded up) from ``90``, ``90m``, ``1h30m``, ``2h``, ``1d``,
    or Slurm's ``MM:SS``, ``HH:MM:SS``, ``D-HH[:MM[:SS]]``."""
    s = str(text).strip().lower()
    if re.fullmatch(r"\d+", s):
        minutes = int(s)
    elif m := re.fullmatch(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m(?:in)?)?(?:(\d+)s)?", s.replace(" ", "")):
        if not any(m.groups()):
            raise ClusterError(f"time limit {text!r} is not a time: write minutes (90), 1h30m or Slurm's HH:MM:SS")
        d, h, mi, sec = (int(g or 0) for g in m.groups())
        minutes = math.ceil(((d * 24 + h) * 60 + mi) + sec / 60)
    elif m := re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", s):
        d, a, b, c = m.groups()
        if d is not None:        # D-HH, D-HH:MM, D-HH:MM:SS
            h, mi, sec = int(a), int(b or 0), int(c or 0)
            minutes = math.ceil((int(d) * 24 + h) * 60 + mi + sec / 60)
        elif c is not None:      # HH:MM:SS
            minutes = math.ceil(int(a) * 60 + int(b) + int(c) / 60)
        else:                    # MM:SS
            minutes = math.ceil(int(a) + int(b or 0) / 60)
    else:
        raise ClusterError(f"time limit {text!r} is not a time: write minutes (90), 1h30m or Slurm's HH:MM:SS")
    if minutes <= 0:
        raise ClusterError(f"time limit {text!r} must be at least one minute")
    return minutes


def parse_mem_mb(text: str | int) -> int:
    """Memory in MiB (what ``sbatch --mem`` means by M) from ``32000``, ``500M``, ``16G``, ``16GB``,
    ``16GiB``, ``1T``."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", str(text).lower())
    if not m:
        raise ClusterError(f"memory {text!r} is not a size: write 16G, 500M or a number of MiB")
    value = float(m.group(1)) * {"k": 1 / 1024, "": 1, "m": 1, "g": 1024, "t": 1024 ** 2}[m.group(2)]
    if value < 1:
        raise ClusterError(f"memory {text!r} must be at least 1 MiB")
    return math.ceil(value)


# --------------------------------------------------------------------------------------------
# talking to Slurm

def _run(argv: Sequence[str], timeout: float = 30) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        return subprocess.CompletedProcess(list(argv), 127, "", f"{argv[0]}: command not found")
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(list(argv), 124, "", f"{argv[0]} did not answer within {timeout:.0f} s")


def _first_line(text: str) -> str:
    """Slurm's message without the program's prefix, e.g. 'invalid partition specified: gpu'."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    if not lines:
        return "no message"
    line = next((ln for ln in lines if "error" in ln.lower()), lines[0])
    return re.sub(r"^(sbatch|srun|scontrol|sacct|sacctmgr|sinfo|squeue):\s*(error:\s*)?", "", line).rstrip(".")


def _config() -> dict[str, str]:
    r = _run(["scontrol", "show", "config"])
    if r.returncode != 0:
        raise ClusterError(f"Slurm does not answer here: scontrol show config says {_first_line(r.stderr or r.stdout)}")
    out = {}
    for line in r.stdout.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def _has_accounting(conf: dict[str, str]) -> bool:
    return conf.get("AccountingStorageType", "accounting_storage/none") != "accounting_storage/none"


def _partitions() -> tuple[list[str], str | None]:
    r = _run(["sinfo", "-h", "-o", "%P"])
    names = [p for p in r.stdout.split()] if r.returncode == 0 else []
    default = next((p.rstrip("*") for p in names if p.endswith("*")), None)
    return sorted({p.rstrip("*") for p in names}), default


@dataclass
class Check:
    """What ``check`` found: the cluster's answer to one notebook job with these resources."""
    partition: str
    account: str | None
    accounting: bool
    min_job_age_s: int | None
    sbatch: str
    notes: list[str] = field(default_factory=list)


def check(resources: dict[str, Any]) -> Check:
    """Raise ClusterError, one sentence, if Slurm is absent or would refuse a notebook job with
    ``resources`` (``slurm_partition``, ``slurm_account``, ``gpu``, ``cpus_per_task``, ``runtime``
    in minutes, ``mem_mb``; as ``slurm_resources`` returns them)."""
    for tool in _CLIENTS:
        if shutil.which(tool) is None:
            raise ClusterError(f"no {tool} on PATH: run on a login node of the Slurm cluster, or put Slurm's "
                               "client commands on PATH")
    conf = _config()
    accounting = _has_accounting(conf)
    m = re.match(r"(\d+)", conf.get("MinJobAge", ""))
    min_job_age = int(m.group(1)) if m else None
    known, default = _partitions()
    partition = resources.get("slurm_partition") or default
    if not partition:
        raise ClusterError("no Slurm partition given (SLURM_PARTITION) and the cluster has no default one; "
                           f"known: {', '.join(known) or 'none'}")
    if partition not in known:
        raise ClusterError(f"unknown Slurm partition {partition!r}; known: {', '.join(known) or 'none'}")
    account = resources.get("slurm_account") or None
    notes = []
    if account:
        if accounting:
            user = getpass.getuser()
            r = _run(["sacctmgr", "-n", "-P", "show", "associations", "where", f"user={user}", "format=Account"])
            if r.returncode != 0:
                raise ClusterError(f"cannot check Slurm account {account!r}: sacctmgr says {_first_line(r.stderr)}")
            mine = sorted({a.strip() for a in r.stdout.split() if a.strip()})
            if account.lower() not in {a.lower() for a in mine}:
                raise ClusterError(f"unknown Slurm account {account!r} for user {user}; known: "
                                   f"{', '.join(mine) or 'none'}")
        else:
            notes.append(f"this cluster keeps no accounting, so Slurm does not check account {account!r}")
    argv = ["sbatch", "--test-only", "--parsable", "-J", "pinpath-check", "-p", partition, "--ntasks=1",
            f"--time={int(resources.get('runtime', 60))}", f"--mem={int(resources.get('mem_mb', 1000))}",
            f"--cpus-per-task={max(1, int(resources.get('cpus_per_task', 1)))}", "-o", "/dev/null"]
    if account:
        argv += ["-A", account]
    if int(resources.get("gpu", 0) or 0) > 0:
        argv.append(f"--gpus={int(resources['gpu'])}")
    argv += ["--wrap", "true"]
    r = _run(argv)
    if r.returncode != 0:
        raise ClusterError(f"Slurm refuses a notebook job ({_describe(resources, partition, account)}): "
                           f"{_first_line(r.stderr or r.stdout)}")
    return Check(partition, account, accounting, min_job_age, _first_line(r.stderr or r.stdout), notes)


def _describe(res: dict[str, Any], partition: str, account: str | None) -> str:
    parts = [f"partition {partition}"] + ([f"account {account}"] if account else [])
    parts += [f"{int(res.get('gpu', 0) or 0)} GPU", f"{int(res.get('cpus_per_task', 1))} CPU",
              f"{int(res.get('runtime', 60))} min", f"{int(res.get('mem_mb', 1000))} MiB"]
    return ", ".join(parts)


# --------------------------------------------------------------------------------------------
# what Slurm says about one job

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


_SACCT_FIELDS = ("JobIDRaw", "State", "Reason", "ExitCode", "NodeList", "Elapsed", "Timelimit", "ReqMem", "Comment",
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
        v = dict(zip(_SACCT_FIELDS, cells + [""] * len(_SACCT_FIELDS)))
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
        r = _run(["sacct", "-n", "-P", "-j", jid, "-o", ",".join(_SACCT_FIELDS)])
        if r.returncode == 0:
            js = parse_sacct(r.stdout, jid)
    if shutil.which("scontrol"):
        r = _run(["scontrol", "show", "job", "-o", jid])
        sc = parse_scontrol(r.stdout, jid) if r.returncode == 0 else None
        if js is None:
            js = sc
        elif sc is not None:
            if js.reason in (None, "None") and sc.reason not in (None, "None"):
                js.reason = sc.reason
            js.comment = js.comment or sc.comment
            js.log = js.log or sc.log
    if js is None and shutil.which("sacct"):
        r = _run(["sacct", "--completion", "-n", "-P", "-j", jid, "-o", "JobID,State,ExitCode,NodeList,Elapsed,Timelimit"])
        if r.returncode == 0:
            js = parse_jobcomp(r.stdout, jid)
    if js is not None and js.finished and not js.oom and js.state in ("FAILED", "CANCELLED"):
        js.oom = oom_in_log(js.log)
    return js


def _log_in_run(path: str) -> str:
    """The job's log as a path inside the run folder (where `reproduce` has the plugin put it:
    slurm/rule_notebook/<stem>/<job id>.log), so the manifest names no path of this machine."""
    m = re.search(r"(?:^|/)(slurm/rule_[^/]+/[^/]+/[^/]+\.log)$", path)
    return m.group(1) if m else path


def _job_id_of(part: dict) -> str | None:
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
    jid = _job_id_of(part)
    if not jid:
        return None
    js = job_state(jid)
    if js is None or not js.finished:
        return None
    out = dict(part)
    out.update(slurm_state=js.state, slurm_reason=js.reason, slurm_exit_code=js.exit_code)
    if js.log:
        out["slurm_log"] = _log_in_run(js.log)
    if js.node and not out.get("SLURM_JOB_NODELIST"):
        out["SLURM_JOB_NODELIST"] = js.node
    if part.get("status") in _NOTEBOOK_VERDICTS:
        return out
    notebook = part.get("notebook") or js.notebook or "the notebook"
    out.update(status=js.status, error=js.sentence(notebook))
    if js.oom:
        out["slurm_reason"] = f"{js.reason or js.state}; {js.oom}"
    return out


# --------------------------------------------------------------------------------------------
# a notebook whose job never reached `pinpath run-notebook`: only Snakemake's log says why

_ERROR_BLOCK = re.compile(r"^Error in rule notebook:[ \t]*\n(?P<body>.*?)(?=^\[|^Error in rule |^Exiting because|^Shutting down|\Z)",
                          re.M | re.S)


def unstarted_in_log(log_text: str) -> dict[str, dict[str, str]]:
    """``{notebook: {"refused": Slurm's message} or {"job_id": id, "message": ...}}`` for each notebook
    job that failed in Snakemake's log: sbatch refused it, or its Slurm job ended without running it."""
    out: dict[str, dict[str, str]] = {}
    for m in _ERROR_BLOCK.finditer(log_text):
        body = m.group("body")
        stem = re.search(r"/status/([^/,\s]+)\.json", body)
        if not stem:
            continue
        refused = re.search(r"SLURM sbatch failed\. The error message was '(?P<msg>.*?)'", body, re.S) \
            or re.search(r"(?:Job|Array job) submission failed with exception: (?P<msg>.*)", body)
        jid = re.search(r"^\s+external_jobid:\s*(\S+)", body, re.M)
        message = re.search(r"^\s+message:\s*(.*)", body, re.M)
        if refused:
            out[stem.group(1)] = {"refused": _first_line(refused.group("msg"))}
        elif jid:
            out[stem.group(1)] = {"job_id": jid.group(1), "message": message.group(1).strip() if message else ""}
    return out


def record_unstarted(run_dir: Path, logs) -> dict[str, str]:
    """Write ``status/STEM.json`` for each notebook whose job never started ``pinpath run-notebook``
    (sbatch refused it; or Slurm ran the job and it failed first: no Python on the node, srun
    refused), so that ``finalize`` shows Slurm's reason. Notebooks with a part are left alone.
    ``logs``: Snakemake's log file(s), as its onerror handler receives them. Returns the sentences."""
    from .manifest import utc_now
    from .runfolder import write_part
    run_dir = Path(run_dir)
    text = ""
    for path in ([logs] if isinstance(logs, (str, os.PathLike)) else list(logs or [])):
        try:
            text += Path(path).read_text(errors="replace") + "\n"
        except OSError:
            pass
    recorded = {}
    for stem, what in unstarted_in_log(text).items():
        part_path = run_dir / "status" / f"{stem}.json"
        if part_path.exists():
            continue
        if "refused" in what:
            part = {"notebook": stem, "status": "refused", "slurm_state": "REFUSED", "slurm_reason": what["refused"],
                    "error": f"{stem}: Slurm refused the job: {what['refused']}"}
        else:
            part = {"notebook": stem, "status": "failed", "SLURM_JOB_ID": what["job_id"]}
            js = job_state(what["job_id"])
            if js is not None:
                part.update(slurm_state=js.state, slurm_reason=js.reason, slurm_exit_code=js.exit_code,
                            error=js.sentence(stem) + " before the notebook started")
                if js.status != "failed" and js.finished:
                    part["status"] = js.status
                if js.node:
                    part["SLURM_JOB_NODELIST"] = js.node
                if js.log:
                    part["slurm_log"] = _log_in_run(js.log)
            else:
                part["error"] = f"{stem}: Slurm job {what['job_id']} failed before the notebook started ({what['message']})"
        part["end"] = utc_now()
        write_part(run_dir, stem, part)
        recorded[stem] = part["error"]
    return recorded


# --------------------------------------------------------------------------------------------
# make reproduce CLUSTER=local|slurm

def _need_extra(module: str, what: str) -> None:
    """ClusterError in one sentence where the cluster extra's ``module`` is not installed."""
    import importlib.util
    if importlib.util.find_spec(module) is None:
        raise ClusterError(f"{what} is not installed in this environment: `make setup EXTRAS=test,cuda,cluster` "
                           "(or `pip install -e '.[cluster]'`)")


def _profile(executor: str) -> Path:
    return PROFILES_DIR / executor


def slurm_profile(env: dict[str, str] | None = None) -> dict[str, Any]:
    """``profiles/slurm/config.yaml`` as Snakemake will read it under ``env`` (the profile is a YTE
    template over the environment)."""
    _need_extra("yte", "YTE (Snakemake's profile templates)")
    import yte
    env = dict(os.environ if env is None else env)
    old = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        with open(_profile("slurm") / "config.yaml") as f:
            return yte.process_yaml(f, require_use_yte=True)
    finally:
        os.environ.clear()
        os.environ.update(old)


def slurm_resources(env: dict[str, str] | None = None) -> dict[str, Any]:
    """The notebook jobs' resources (the profile's default-resources) under ``env``."""
    return dict(slurm_profile(env).get("default-resources") or {})


def _say(msg: str) -> None:
    print(f"pinpath: {msg}", file=sys.stderr, flush=True)


def _manifest(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / "manifest.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def _summary(run_dir: Path, wall_s: float) -> str:
    man = _manifest(run_dir)
    rows = []
    for stem, e in (man.get("notebooks") or {}).items():
        jid = _job_id_of(e)
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
        rows.append("  " + "  ".join(bits))
    head = f"{man.get('status', 'unknown')}: {run_dir} ({wall_s:.0f} s wall); report: {run_dir / 'report' / 'index.html'}"
    return "\n".join([head, *rows])


#: make's names for the job resources; Slurm's own commands read some of them (srun: SLURM_PARTITION,
#: SLURM_ACCOUNT, SLURM_GPUS), so they reach the profile as PINPATH_SLURM_* and never the jobs
MAKE_NAMES = ("SLURM_PARTITION", "SLURM_ACCOUNT", "SLURM_GPUS", "SLURM_CPUS", "SLURM_TIME", "SLURM_MEM")


def reproduce(*, executor: str, preset: str, platform: str, notebooks: str = "", outputs: Path | None = None,
              resume: str = "", sets: Sequence[str] = (), cell_timeout: int | None = None,
              options: dict[str, str] | None = None, snakemake_args: Sequence[str] = ()) -> int:
    """``pinpath init`` (or resume a run folder), then Snakemake with ``profiles/<executor>``, which
    ends with ``pinpath finalize``; prints one line per notebook; returns the exit status."""
    if executor not in ("local", "slurm"):
        raise ClusterError(f"unknown executor {executor!r} (CLUSTER); known: local, slurm")
    _need_extra("snakemake", "Snakemake")
    if executor == "slurm":
        _need_extra("snakemake_executor_plugin_slurm", "Snakemake's Slurm executor")
    env = {k: v for k, v in os.environ.items() if k not in MAKE_NAMES}
    for key, value in (options or {}).items():
        if value not in (None, ""):
            env[ENV_NAMES[key]] = str(value)
    extra: list[str] = []
    if executor == "slurm":
        prof = slurm_profile(env)
        res = dict(prof.get("default-resources") or {})
        found = check(res)
        for note in found.notes:
            _say(note)
        _say(f"Slurm accepts the notebook jobs ({_describe(res, found.partition, found.account)}): {found.sbatch}")
        if not found.accounting:
            # the plugin's default status query is sacct, which answers nothing without slurmdbd; squeue
            # sees a finished job for MinJobAge seconds, and the plugin wants three polling intervals of it
            extra += ["--slurm-status-command", "squeue"]
            need = 3 * int(prof.get("slurm-init-seconds-before-status-checks") or 40)
            if found.min_job_age_s is not None and found.min_job_age_s < need:
                raise ClusterError(f"this cluster keeps no accounting and forgets finished jobs after MinJobAge="
                                   f"{found.min_job_age_s} s; Snakemake polling every "
                                   f"{need // 3} s needs at least {need} s to see how they ended")
    py = sys.executable
    t0 = time.monotonic()
    if resume:
        from .runner import check_resume
        base = Path(outputs) if outputs else Path(os.environ.get("PINPATH_ROOT") or PROJECT_ROOT) / "outputs"
        run_abs, man, todo = check_resume(resume, out_dir=base, preset=preset or None, platform=platform,
                                          only=[s.strip() for s in notebooks.split(",")] if notebooks.strip() else None,
                                          overrides=list(sets), check_platform=executor == "local")
        lock = rf.RunLock(run_abs)
        notice = lock.acquire()
        if notice:
            _say(f"notice: {notice}")
        for stem, why in todo.items():      # an ok notebook whose data is gone runs again, as a failed one
            if man["notebooks"][stem].get("status") == "ok":
                rf.write_part(run_abs, stem, {**man["notebooks"][stem], "status": "failed", "error": why})
        rf.reopen(run_abs, resolve_part)
        _say(f"resuming {run_abs}: {len(todo)} of {len(man['notebooks'])} notebook(s) to run"
             + "".join(f"; {s}: {why}" for s, why in todo.items()))
    else:
        argv = [py, "-m", "pinpath", "init", "--preset", preset, "--platform", platform]
        if notebooks:
            argv += ["--notebooks", notebooks]
        if outputs:
            argv += ["--outputs", str(outputs)]
        argv += [f"--set={x}" for x in sets]
        r = subprocess.run(argv, stdout=subprocess.PIPE, text=True, env=env)
        if r.returncode != 0:
            return r.returncode
        lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
        if not lines:
            raise ClusterError("pinpath init printed no run folder")
        run_abs = Path(lines[-1].strip()).resolve()
        lock = rf.RunLock(run_abs)
        lock.acquire()
    try:
        return _workflow(run_abs, executor=executor, env=env, extra=extra, cell_timeout=cell_timeout,
                         snakemake_args=snakemake_args, t0=t0)
    finally:
        lock.release()


def _workflow(run_abs: Path, *, executor: str, env: dict, extra: list[str], cell_timeout, snakemake_args,
              t0: float) -> int:
    """Snakemake on the run folder ``run_abs``, then its summary; the exit status."""
    py = sys.executable
    workdir = Path(os.environ.get("PINPATH_ROOT") or PROJECT_ROOT).resolve()
    try:
        run_arg = str(run_abs.relative_to(workdir))
    except ValueError:
        run_arg = str(run_abs)
    argv = [py, "-m", "snakemake", "--snakefile", str(WORKFLOW_DIR / "Snakefile"), "--directory", str(workdir),
            "--workflow-profile", str(_profile(executor)), "--config", f"run_dir={run_arg}"]
    if cell_timeout:
        argv.append(f"cell_timeout={int(cell_timeout)}")
    if executor == "slurm":
        argv += ["--slurm-logdir", str(run_abs / "slurm")]
    argv += extra + list(snakemake_args)
    _say(f"run folder {run_arg}; Snakemake with profiles/{executor}")
    proc = subprocess.Popen(argv, env=env)
    try:
        rc = proc.wait()
    except KeyboardInterrupt:   # Snakemake had the same ^C: it cancels its jobs and stops; then finalize
        rc = proc.wait()
    man = _manifest(run_abs)
    if man.get("status") in (None, "running"):
        # Snakemake stopped before its onerror handler could run (a lock, a broken profile, ^C)
        _say(f"Snakemake stopped (exit {rc}) before the run was finalized; finalizing {run_arg}")
        subprocess.run([py, "-m", "pinpath", "finalize", str(run_abs)], env=env)
        man = _manifest(run_abs)
    print(_summary(run_abs, time.monotonic() - t0), flush=True)
    if man.get("status") != "ok":
        _say(f"to run what is not ok again: make reproduce CLUSTER={executor} RESUME={run_abs.name}")
        return 1
    return 0 if rc == 0 else 1


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m pinpath.cluster", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    def slurm_options(p):
        p.add_argument("--partition", default="", help="Slurm partition (default: the profile's, else the cluster's)")
        p.add_argument("--account", default="", help="Slurm account (default: the profile's, else none)")
        p.add_argument("--gpus", default="", help="GPUs per notebook job (default: the profile's, 1)")
        p.add_argument("--cpus", default="", help="CPUs per notebook job (default: the profile's, 8)")
        p.add_argument("--time", default="", help="time limit per notebook job: 90, 1h30m, 01:30:00 (default: 60 min)")
        p.add_argument("--mem", default="", help="memory per notebook job: 32G, 500M (default: 32000 MiB)")

    p = sub.add_parser("reproduce", help="pinpath init, then Snakemake (local or Slurm); finalize at the end")
    p.add_argument("--executor", default="local", help="local or slurm (make's CLUSTER)")
    p.add_argument("--preset", default="", help="default: default; with --resume, the run's")
    p.add_argument("--platform", default="auto")
    p.add_argument("--notebooks", default="", help="comma-separated notebook stems (default: all)")
    p.add_argument("--outputs", type=Path, default=None, help="folder of runs (default: outputs/)")
    p.add_argument("--resume", default="", help="a run id (or folder): run its notebooks that are not ok again")
    p.add_argument("--set", action="append", default=[], metavar="NOTEBOOK.NAME=VALUE", help="as pinpath init's")
    p.add_argument("--cell-timeout", default="", help="seconds a cell may run (default: no limit)")
    slurm_options(p)
    p.add_argument("snakemake_args", nargs="*", help="after --: more Snakemake options (e.g. --dry-run)")
    p = sub.add_parser("check", help="would Slurm accept the notebook jobs? (nothing is submitted)")
    slurm_options(p)
    p = sub.add_parser("job", help="what Slurm says about a job, in one sentence")
    p.add_argument("job_id")
    p.add_argument("--notebook", default="", help="the notebook's name for the sentence (default: from the job)")
    return ap


def _options(args) -> dict[str, str]:
    out = {}
    for key in ENV_NAMES:
        value = (getattr(args, key) or "").strip()
        if not value:
            continue
        if key == "time":
            value = str(parse_minutes(value))
        elif key == "mem":
            value = str(parse_mem_mb(value))
        elif key in ("gpus", "cpus") and not re.fullmatch(r"\d+", value):
            raise ClusterError(f"{key} {value!r} must be a whole number")
        out[key] = value
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.cmd == "job":
            js = job_state(args.job_id)
            if js is None:
                print(f"{args.notebook or 'job'}: Slurm knows nothing of job {args.job_id}")
                return 1
            print(js.sentence(args.notebook or js.notebook or "job"))
            return 0
        opts = _options(args)
        if args.cmd == "check":
            env = {k: v for k, v in os.environ.items() if k not in MAKE_NAMES}
            env.update({ENV_NAMES[k]: v for k, v in opts.items()})
            res = slurm_resources(env)
            found = check(res)
            for note in found.notes:
                _say(note)
            print(f"ok: Slurm accepts the notebook jobs ({_describe(res, found.partition, found.account)}): {found.sbatch}")
            return 0
        timeout = str(args.cell_timeout).strip()
        if timeout and not re.fullmatch(r"[1-9]\d*", timeout):
            raise ClusterError(f"cell timeout {timeout!r} must be a positive whole number of seconds")
        return reproduce(executor=args.executor, preset=args.preset, platform=args.platform,
                         notebooks=args.notebooks, outputs=args.outputs, resume=args.resume, sets=args.set,
                         cell_timeout=int(timeout) if timeout else None, options=opts,
                         snakemake_args=args.snakemake_args)
    except PinpathError as e:
        print(f"pinpath: {printable(e)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
