"""The project's own files agree with each other."""

import json
import re
import subprocess
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _name(req: str) -> str:
    return re.split(r"[<>=!~ \[]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_names_the_pyproject_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_name(r) for r in project["dependencies"]}
    wanted |= {_name(r) for reqs in project["optional-dependencies"].values() for r in reqs}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    names = set()
    for dep in env:
        if isinstance(dep, dict):
            names |= {_name(r) for r in dep["pip"] if not r.startswith("-e")}
        elif _name(dep) not in ("python", "pip"):
            names.add(_name(dep))
    assert names == wanted, (names - wanted, wanted - names)


def test_notebooks_are_stripped_with_one_parameters_cell():
    nbs = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert nbs
    for p in nbs:
        nb = json.loads(p.read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert not any(c.get("outputs") or c.get("execution_count") for c in code), p.name
        tagged = [c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", [])]
        assert len(tagged) == 1, p.name
        assert nb["metadata"]["kernelspec"]["name"] == "pinpath"
        assert re.fullmatch(r"\d\d_[a-z0-9_]+", p.stem)
        src = "\n".join("".join(c["source"]) for c in code)
        assert not re.search(r"^\s*(for|while|try)\b", src, re.M), f"{p.name}: logic belongs in lib"


def test_every_preset_section_names_a_notebook():
    stems = {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")}     # a preset only overrides: it may leave one out
    for preset in ("smoke", "default", "full"):
        assert set(yaml.safe_load((ROOT / "params" / f"{preset}.yaml").read_text())) <= stems, preset


def test_make_help_lists_every_target():
    out = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True).stdout
    targets = re.findall(r"^([a-z][a-z_-]*):", (ROOT / "Makefile").read_text(), re.M)
    for t in targets:
        if not t.startswith(".") and t not in ("venv",):
            assert re.search(rf"^\s+{re.escape(t)}\s", out, re.M), f"make help does not list {t}"


def test_no_machine_paths_or_registry_hosts():
    machine_path, registry = "/" + "work/", "pypi" + ".org"    # spelt apart so this file passes itself
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True).stdout.split()
    for rel in tracked:
        p = ROOT / rel
        if not p.is_file():   # in the index, deleted from this working tree
            continue
        if p.suffix in (".py", ".md", ".yaml", ".yml", ".toml", ".ipynb", ".c", ".html", ".json") \
                or p.name in ("Makefile", "run"):
            text = p.read_text(errors="replace")
            assert machine_path not in text, rel
            assert registry not in text, rel


def test_no_policy_experiment_or_notebook_branches_on_the_platform():
    """Policies, experiments and notebooks look at capabilities, never at which runtime it is."""
    pattern = re.compile(r"""(\.name\s*[!=]=|==\s*["'](cuda|hsa|hip|host)["']|["'](cuda|hsa|hip|host)["']\s*[!=]=|"""
                         r"""isinstance\([^)]*Runtime)""")
    files = sorted((ROOT / "lib" / "pinpath" / "policies").glob("*.py"))
    files += sorted((ROOT / "lib" / "pinpath" / "experiments").glob("*.py"))
    for p in files:
        for i, line in enumerate(p.read_text().splitlines(), 1):
            assert not pattern.search(line), f"{p.relative_to(ROOT)}:{i}: {line.strip()}"
    for p in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for c in json.loads(p.read_text())["cells"]:
            if c["cell_type"] == "code" and "parameters" not in c["metadata"].get("tags", []):
                src = "".join(c["source"])
                assert not pattern.search(src) and "PLATFORM ==" not in src, f"{p.name}: {src[:80]}"
