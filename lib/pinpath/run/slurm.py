"""Slurm before anything is submitted: the values a person types (a time limit, a memory size),
and ``check``: ``sbatch`` on PATH, the partition, the account, and a ``sbatch --test-only`` of
one notebook job with the profile's resources. Also the one way pinpath calls Slurm's tools."""

from __future__ import annotations

import getpass
import math
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..errors import PinpathError

__all__ = ["ClusterError", "Check", "check", "describe", "parse_minutes", "parse_mem_mb", "run_tool", "first_line"]

_CLIENTS = ("sbatch", "squeue", "scontrol", "sinfo")


class ClusterError(PinpathError):
    """Slurm is missing, or would refuse the jobs; the message is one sentence."""


# --------------------------------------------------------------------------------------------
# values a person types: a time limit and a memory size

MAX_MINUTES, MAX_MEM_MB = 365 * 24 * 60, 1 << 30     #: a year; a PiB: beyond any job


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
    if minutes > MAX_MINUTES:
        raise ClusterError(f"time limit {text!r} is more than a year")
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
    if value > MAX_MEM_MB:
        raise ClusterError(f"memory {text!r} is more than the {MAX_MEM_MB} MiB (1 PiB) of any node")
    return math.ceil(value)


# --------------------------------------------------------------------------------------------
# talking to Slurm

def run_tool(argv: Sequence[str], timeout: float = 30) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        return subprocess.CompletedProcess(list(argv), 127, "", f"{argv[0]}: command not found")
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(list(argv), 124, "", f"{argv[0]} did not answer within {timeout:.0f} s")


def first_line(text: str) -> str:
    """Slurm's message without the program's prefix, e.g. 'invalid partition specified: gpu'."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    if not lines:
        return "no message"
    line = next((ln for ln in lines if "error" in ln.lower()), lines[0])
    return re.sub(r"^(sbatch|srun|scontrol|sacct|sacctmgr|sinfo|squeue):\s*(error:\s*)?", "", line).rstrip(".")


def _config() -> dict[str, str]:
    r = run_tool(["scontrol", "show", "config"])
    if r.returncode != 0:
        raise ClusterError(f"Slurm does not answer here: scontrol show config says {first_line(r.stderr or r.stdout)}")
    out = {}
    for line in r.stdout.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def _has_accounting(conf: dict[str, str]) -> bool:
    return conf.get("AccountingStorageType", "accounting_storage/none") != "accounting_storage/none"


def _partitions() -> tuple[list[str], str | None]:
    r = run_tool(["sinfo", "-h", "-o", "%P"])
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
            r = run_tool(["sacctmgr", "-n", "-P", "show", "associations", "where", f"user={user}", "format=Account"])
            if r.returncode != 0:
                raise ClusterError(f"cannot check Slurm account {account!r}: sacctmgr says {first_line(r.stderr)}")
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
    r = run_tool(argv)
    if r.returncode != 0:
        raise ClusterError(f"Slurm refuses a notebook job ({describe(resources, partition, account)}): "
                           f"{first_line(r.stderr or r.stdout)}")
    return Check(partition, account, accounting, min_job_age, first_line(r.stderr or r.stdout), notes)


def describe(res: dict[str, Any], partition: str, account: str | None) -> str:
    parts = [f"partition {partition}"] + ([f"account {account}"] if account else [])
    parts += [f"{int(res.get('gpu', 0) or 0)} GPU", f"{int(res.get('cpus_per_task', 1))} CPU",
              f"{int(res.get('runtime', 60))} min", f"{int(res.get('mem_mb', 1000))} MiB"]
    return ", ".join(parts)

