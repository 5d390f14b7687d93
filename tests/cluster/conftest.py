"""Shared by the cluster tests: a project root of their own (PINPATH_ROOT) holding notebooks, a
parameter file and the runs, so nothing lands in the checkout's outputs/."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent


def pytest_configure(config):
    config.addinivalue_line("markers", "slurm: needs a real one-node Slurm (PINPATH_SLURM_TESTS=1; root and apt)")
    config.addinivalue_line("markers", "offline: builds environments from a wheelhouse with no package index "
                                       "(PINPATH_OFFLINE_TESTS=1; minutes)")


def needs_snakemake():
    for mod in ("snakemake", "snakemake_executor_plugin_slurm"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} is not installed in this environment (pyproject's cluster extra)")


def project(tmp_path: Path, notebooks: dict[str, Path] | None = None, params: str | None = None) -> Path:
    """A project root under ``tmp_path``: the checkout's notebooks and parameter files, or the given
    notebooks ({stem: file}) with ``params`` as params/smoke.yaml."""
    root = tmp_path / "project"
    (root / "notebooks").mkdir(parents=True)
    (root / "params").mkdir()
    if notebooks is None:
        for nb in (ROOT / "notebooks").glob("*.ipynb"):
            shutil.copy(nb, root / "notebooks" / nb.name)
        for f in (ROOT / "params").glob("*.yaml"):
            shutil.copy(f, root / "params" / f.name)
    else:
        for stem, src in notebooks.items():
            shutil.copy(src, root / "notebooks" / f"{stem}.ipynb")
        (root / "params" / "smoke.yaml").write_text(params or "")
    return root


def env_for(root: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINPATH_")}
    env["PINPATH_ROOT"] = str(root)
    env.update(extra)
    return env


def pinpath(*args: str, env: dict[str, str], module: str = "pinpath", timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=timeout)


def runs(root: Path) -> list[Path]:
    return sorted(p.parent for p in (root / "outputs").glob("*/manifest.json") if not p.parent.is_symlink())


def manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


def layout(run_dir: Path, skip=("slurm",)) -> set[str]:
    """Every file of a run folder, relative to it (Slurm's own logs left out)."""
    return {str(p.relative_to(run_dir)) for p in run_dir.rglob("*")
            if p.is_file() and p.relative_to(run_dir).parts[0] not in skip}


@pytest.fixture(scope="session")
def cl():
    """The helpers above, for test modules (which cannot import this conftest under --import-mode=importlib)."""
    from types import SimpleNamespace
    return SimpleNamespace(ROOT=ROOT, HERE=HERE, needs_snakemake=needs_snakemake, project=project, env_for=env_for,
                           pinpath=pinpath, runs=runs, manifest=manifest, layout=layout)
