"""environment.yml (conda, mamba) asks for what pyproject.toml asks for: the same versions of the
same packages, every extra, the same Python, and pinpath itself from the checkout. (The names alone
are checked by tests/test_packaging.py.) conda itself is not run here."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _split(req: str) -> tuple[str, str]:
    m = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*(.*?)\s*", req)
    return m.group(1).lower().replace("_", "-"), m.group(2).replace(" ", "")


def _pyproject() -> tuple[dict[str, str], str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"]) + [r for extra in project["optional-dependencies"].values() for r in extra]
    return dict(_split(r) for r in reqs), project["requires-python"]


def _environment() -> tuple[dict[str, str], dict[str, str], list[str]]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda, pip, raw = {}, {}, []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            for r in dep["pip"]:
                raw.append(r)
                if not r.startswith("-"):
                    pip.update([_split(r)])
        else:
            conda.update([_split(dep)])
    return conda, pip, raw


def test_same_versions_as_pyproject():
    wanted, python = _pyproject()
    conda, pip, raw = _environment()
    assert conda.pop("python") == python
    conda.pop("pip")
    assert not set(conda) & set(pip), "a package asked for twice"
    assert {**conda, **pip} == wanted


def test_pinpath_itself_comes_from_the_checkout():
    conda, pip, raw = _environment()
    assert raw[-1] == "-e ."
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["name"] == "pinpath" and env["channels"] == ["conda-forge"]
