"""The provenance of a run: code, machine, runtime, parameters, timings, notebook status."""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import platform
import socket
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from . import osinfo

__all__ = ["git_state", "source_digest", "machine", "packages", "utc_now", "PATH_ENV_VARS", "SOURCE_DIRS"]

#: environment variables that change which path a runtime takes (bench-anchors §5.2)
PATH_ENV_VARS = ("GPU_PINNED_MIN_XFER_SIZE", "GPU_PINNED_XFER_SIZE", "GPU_STAGING_BUFFER_SIZE", "HSA_USE_SVM",
                 "HSA_XNACK", "HSA_ENABLE_SDMA", "GPU_MAX_HW_QUEUES", "CUDA_MODULE_LOADING",
                 "CUDA_VISIBLE_DEVICES", "LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS",
                 "LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES", "SLURM_JOB_ID", "SLURM_JOB_NODELIST")
_PACKAGES = ("pinpath", "numpy", "pandas", "pyarrow", "matplotlib", "seaborn", "papermill", "nbclient",
             "nbconvert", "nbformat", "ipykernel", "pyyaml", "cuda-bindings", "hip-python")


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


#: the folders whose files decide what a run measures and says (their digest is in the manifest)
SOURCE_DIRS = ("lib/pinpath", "notebooks", "params", "tools")
_SOURCE_SUFFIXES = (".py", ".c", ".h", ".cpp", ".ipynb", ".yaml", ".sh", ".html", ".j2")


def source_digest(root: Path) -> str:
    """sha256 over the relative paths and contents of SOURCE_DIRS' source files, in path order:
    it names the code that ran without asking git, whose metadata can be stale where a tree was
    copied onto a node (compare it with ``pinpath``'s value at a commit on a clean checkout)."""
    h = hashlib.sha256()
    files = sorted(p for d in SOURCE_DIRS if (root / d).is_dir() for p in (root / d).rglob("*")
                   if p.is_file() and p.suffix in _SOURCE_SUFFIXES and "__pycache__" not in p.parts)
    for p in files:
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def git_state(root: Path) -> dict[str, Any]:
    """The commit (git's answer, or PINPATH_GIT_COMMIT where whoever copied the tree set it), whether
    tracked files differ from it, and ``sources``: source_digest of the tree as it is."""
    def git(*args):
        r = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else None
    if os.environ.get("PINPATH_GIT_COMMIT"):
        # a copy of the tree whose .git is missing or stale (a batch node's staging area): the launcher
        # that copied it says which commit it is
        return {"commit": os.environ["PINPATH_GIT_COMMIT"], "dirty": os.environ.get("PINPATH_GIT_DIRTY") == "1",
                "source": "PINPATH_GIT_COMMIT (set by whoever copied the tree to this node)",
                "sources": source_digest(root)}
    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit or "unknown", "dirty": bool(status) if status is not None else None,
            "sources": source_digest(root)}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict[str, Any]:
    soft, hard = osinfo.memlock_limit_nbytes()
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "mem_total_nbytes": osinfo.meminfo_nbytes("MemTotal"),
        "rlimit_memlock_soft_nbytes": soft,
        "rlimit_memlock_hard_nbytes": hard,
        "thp_mode": osinfo.thp_mode(),
        "hugepages_total": osinfo.meminfo_nbytes("HugePages_Total") // 1024,
        "env": {k: os.environ[k] for k in PATH_ENV_VARS if k in os.environ},
    }


def packages() -> dict[str, str | None]:
    out = {}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out

