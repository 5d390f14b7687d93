"""The Snakemake profiles (``profiles/local``, ``profiles/slurm``) and what they read: the Slurm
options a person types, as the environment (``PINPATH_SLURM_*``) the slurm profile is a template
over; and the check that the cluster extra (Snakemake) is installed."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from .slurm import ClusterError, parse_mem_mb, parse_minutes

__all__ = ["slurm_profile", "slurm_resources", "options", "env_for_profile", "need_extra", "profile_dir",
           "WORKFLOW_DIR", "PROFILES_DIR", "ENV_NAMES", "MAKE_NAMES"]

#: the workflow and the profiles live beside the package, whatever PINPATH_ROOT says about the data
_SOURCE_ROOT = Path(__file__).resolve().parents[3]
WORKFLOW_DIR = _SOURCE_ROOT / "workflow"
PROFILES_DIR = _SOURCE_ROOT / "profiles"

#: the profile reads these; ``snakemake.run_workflow`` sets them from its options (make's SLURM_* variables)
ENV_NAMES = {"partition": "PINPATH_SLURM_PARTITION", "account": "PINPATH_SLURM_ACCOUNT",
             "gpus": "PINPATH_SLURM_GPUS", "cpus": "PINPATH_SLURM_CPUS", "time": "PINPATH_SLURM_TIME_MIN",
             "mem": "PINPATH_SLURM_MEM_MB"}


def need_extra(module: str, what: str) -> None:
    """ClusterError in one sentence where the cluster extra's ``module`` is not installed."""
    import importlib.util
    if importlib.util.find_spec(module) is None:
        raise ClusterError(f"{what} is not installed in this environment: `make setup EXTRAS=test,cuda,cluster` "
                           "(or `pip install -e '.[cluster]'`)")


def profile_dir(name: str) -> Path:
    """profiles/<name>: local or slurm."""
    return PROFILES_DIR / name


def slurm_profile(env: dict[str, str] | None = None) -> dict[str, Any]:
    """``profiles/slurm/config.yaml`` as Snakemake will read it under ``env`` (the profile is a YTE
    template over the environment)."""
    need_extra("yte", "YTE (Snakemake's profile templates)")
    import yte
    env = dict(os.environ if env is None else env)
    old = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        with open(profile_dir("slurm") / "config.yaml") as f:
            return yte.process_yaml(f, require_use_yte=True)
    finally:
        os.environ.clear()
        os.environ.update(old)


def slurm_resources(env: dict[str, str] | None = None) -> dict[str, Any]:
    """The notebook jobs' resources (the profile's default-resources) under ``env``."""
    return dict(slurm_profile(env).get("default-resources") or {})


#: make's names for the job resources; Slurm's own commands read some of them (srun: SLURM_PARTITION,
#: SLURM_ACCOUNT, SLURM_GPUS), so they reach the profile as PINPATH_SLURM_* and never the jobs
MAKE_NAMES = ("SLURM_PARTITION", "SLURM_ACCOUNT", "SLURM_GPUS", "SLURM_CPUS", "SLURM_TIME", "SLURM_MEM")


def env_for_profile(options: dict[str, str] | None = None) -> dict[str, str]:
    """The environment Snakemake and its profile see: make's SLURM_* names left out, the options
    (``options``'s answer) as PINPATH_SLURM_*."""
    env = {k: v for k, v in os.environ.items() if k not in MAKE_NAMES}
    for key, value in (options or {}).items():
        if value not in (None, ""):
            env[ENV_NAMES[key]] = str(value)
    return env


def options(given: dict[str, str]) -> dict[str, str]:
    """The Slurm options a person typed (``partition``, ``account``, ``gpus``, ``cpus``, ``time``,
    ``mem``), checked and in the profile's units; empty ones left out."""
    out = {}
    for key in ENV_NAMES:
        value = (given.get(key) or "").strip()
        if not value:
            continue
        if key == "time":
            value = str(parse_minutes(value))
        elif key == "mem":
            value = str(parse_mem_mb(value))
        elif key in ("gpus", "cpus") and not (re.fullmatch(r"\d{1,6}", value) and int(value) <= 100_000):
            raise ClusterError(f"{key} {value!r} must be a whole number up to 100000")
        out[key] = value
    return out
