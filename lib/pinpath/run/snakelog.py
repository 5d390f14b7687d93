"""A notebook whose job never reached ``pinpath run-notebook``: only Snakemake's log says why
(sbatch refused it, or the job failed first). The workflow's onerror handler calls
``record_unstarted``."""

from __future__ import annotations

import os
import re
from pathlib import Path

from .. import runfolder as rf
from ..manifest import utc_now
from . import jobs
from .slurm import first_line

__all__ = ["unstarted_in_log", "record_unstarted"]


_ERROR_BLOCK = re.compile(r"^Error in rule notebook:[ \t]*\n(?P<body>.*?)(?=^\[|^Error in rule |^Exiting because|^Shutting down|\Z)",
                          re.M | re.S)
#: a notebook's part as the log names it (an output of its job): the stem is the group
_PART = re.compile("/" + re.escape(rf.rel("part", stem="STEM", check=False)).replace("STEM", r"([^/,\s]+)"))


def unstarted_in_log(log_text: str) -> dict[str, dict[str, str]]:
    """``{notebook: {"refused": Slurm's message} or {"job_id": id, "message": ...}}`` for each notebook
    job that failed in Snakemake's log: sbatch refused it, or its Slurm job ended without running it."""
    out: dict[str, dict[str, str]] = {}
    for m in _ERROR_BLOCK.finditer(log_text):
        body = m.group("body")
        stem = _PART.search(body)
        if not stem:
            continue
        refused = re.search(r"SLURM sbatch failed\. The error message was '(?P<msg>.*?)'", body, re.S) \
            or re.search(r"(?:Job|Array job) submission failed with exception: (?P<msg>.*)", body)
        jid = re.search(r"^\s+external_jobid:\s*(\S+)", body, re.M)
        message = re.search(r"^\s+message:\s*(.*)", body, re.M)
        if refused:
            out[stem.group(1)] = {"refused": first_line(refused.group("msg"))}
        elif jid:
            out[stem.group(1)] = {"job_id": jid.group(1), "message": message.group(1).strip() if message else ""}
    return out


def record_unstarted(run_dir: Path, logs) -> dict[str, str]:
    """Write ``status/STEM.json`` for each notebook whose job never started ``pinpath run-notebook``
    (sbatch refused it; or Slurm ran the job and it failed first: no Python on the node, srun
    refused), so that ``finalize`` shows Slurm's reason. Notebooks with a part are left alone.
    ``logs``: Snakemake's log file(s), as its onerror handler receives them. Returns the sentences."""
    run_dir = Path(run_dir)
    text = ""
    for path in ([logs] if isinstance(logs, (str, os.PathLike)) else list(logs or [])):
        try:
            text += Path(path).read_text(errors="replace") + "\n"
        except OSError:
            pass
    recorded = {}
    for stem, what in unstarted_in_log(text).items():
        part_path = rf.part_path(run_dir, stem)
        if part_path.exists():
            continue
        if "refused" in what:
            part = {"notebook": stem, "status": "refused", "slurm_state": "REFUSED", "slurm_reason": what["refused"],
                    "error": f"{stem}: Slurm refused the job: {what['refused']}"}
        else:
            part = {"notebook": stem, "status": "failed", "SLURM_JOB_ID": what["job_id"]}
            js = jobs.job_state(what["job_id"])
            if js is not None:
                part.update(slurm_state=js.state, slurm_reason=js.reason, slurm_exit_code=js.exit_code,
                            error=js.sentence(stem) + " before the notebook started")
                if js.status != "failed" and js.finished:
                    part["status"] = js.status
                if js.node:
                    part["SLURM_JOB_NODELIST"] = js.node
                if js.log:
                    part["slurm_log"] = jobs.log_in_run(js.log)
            else:
                part["error"] = f"{stem}: Slurm job {what['job_id']} failed before the notebook started ({what['message']})"
        part["end"] = utc_now()
        rf.write_part(run_dir, stem, part)
        recorded[stem] = part["error"]
    return recorded

