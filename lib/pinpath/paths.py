"""Where things live, derived once from the package's own location (cookiecutter-data-science's config)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["PROJECT_ROOT", "NOTEBOOKS_DIR", "PARAMS_DIR", "OUTPUTS_DIR"]

PROJECT_ROOT = Path(os.environ.get("PINPATH_ROOT", Path(__file__).resolve().parents[2]))
NOTEBOOKS_DIR = PROJECT_ROOT / "notebooks"
PARAMS_DIR = PROJECT_ROOT / "params"
OUTPUTS_DIR = PROJECT_ROOT / "outputs"
