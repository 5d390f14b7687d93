"""What a notebook's part records about the job that ran it: the batch system's variables and
the GPU it saw (nvidia-smi, asked once per process)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

__all__ = ["job_facts"]

_JOB_ENV = ("SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_ARRAY_TASK_ID", "CUDA_VISIBLE_DEVICES",
            "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")


@functools.lru_cache(maxsize=1)
def gpu_uuid() -> str | None:
    """The UUID of the GPU this job sees (the first of CUDA_VISIBLE_DEVICES, which nvidia-smi
    itself ignores), where nvidia-smi answers; asked once per process."""
    if not shutil.which("nvidia-smi"):
        return None
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader", *(["-i", first] if first else [])],
                           capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = r.stdout.split()
    return lines[0] if r.returncode == 0 and lines else None


def job_facts() -> dict:
    """The job's batch-system variables and the GPU it sees, for its part of the manifest."""
    job = {k: os.environ[k] for k in _JOB_ENV if k in os.environ}
    uuid = gpu_uuid()
    if uuid:
        job["gpu_uuid"] = uuid
    return job

