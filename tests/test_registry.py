"""The registry of notebooks is the one list: it names every notebook in notebooks/, its parameters
and defaults are the notebook's parameters cell, its data sets are what the notebook saves, its
experiment exists, every claim is judged by exactly one notebook (whose judge cell reads the
registry), and each preset's effective parameters are what they were before the registry (frozen
in tests/data/effective_params.json from the presets and notebooks of commit 5dad07e)."""

import importlib
import json
import re
from pathlib import Path

import pytest
import yaml

from pinpath import params, registry
from pinpath.run import plan as run_plan
from pinpath.report import claims

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
FROZEN = json.loads((ROOT / "tests" / "data" / "effective_params.json").read_text())


def _source(path: Path) -> str:
    return "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")


def test_the_registry_lists_every_notebook_in_order():
    assert list(registry.NOTEBOOKS) == [p.stem for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_parameters_cell_declares_the_registrys_parameters_and_defaults(path):
    declared = params.notebook_parameters(path)
    nb = registry.notebook(path.stem)
    assert [n for n in declared if n not in params.RESERVED] == list(nb.params)
    assert params.defaults(declared) == dict(nb.params)          # the cell's literals
    assert params.defaults(declared, path.stem) == dict(nb.params)
    assert set(nb.schema()) == set(nb.params) and all(nb.schema().values())
    for name, value in nb.params.items():
        params.resolve({name: value}, declared, where=path.stem)   # every default fits its schema


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_notebook_saves_the_registrys_data_sets_and_its_experiment_exists(path):
    nb = registry.notebook(path.stem)
    saved = re.findall(r'out\.data\(.*?, "([a-z_0-9]+)"\)', _source(path))
    assert sorted(set(saved)) == sorted(nb.datasets)
    module = importlib.import_module(f"pinpath.experiments.{nb.experiment}")
    package = importlib.import_module("pinpath.experiments")
    called = {getattr(getattr(package, f, None), "__module__", "") for f in re.findall(r"experiments\.(\w+)\(", _source(path))}
    assert module.__name__ in called or f"from pinpath.experiments import {nb.experiment}" in _source(path)


def test_a_data_set_belongs_to_one_notebook():
    assert sum(len(nb.datasets) for nb in registry.NOTEBOOKS.values()) == len(registry.DATASETS)


def test_every_claim_is_judged_by_one_notebook_whose_judge_cell_reads_the_registry():
    linked = [cid for nb in registry.NOTEBOOKS.values() for cid in nb.claims]
    assert sorted(linked) == sorted(claims.CLAIMS)
    for cid, c in claims.CLAIMS.items():
        assert c.datasets and set(c.datasets) <= set(registry.notebook(registry.claim_notebook(cid)).datasets), cid
    for path in NOTEBOOKS:
        src, nb = _source(path), registry.notebook(path.stem)
        assert "claims.judge(" not in src, path.stem
        assert ("claims.judge_notebook(NOTEBOOK, out.saved, rt.name)" in src) == bool(nb.claims), path.stem


def test_judge_notebook_judges_the_registrys_claims():
    assert list(claims.judge_notebook("01_c12_lock_copy", {}, "host").id) == ["C12a", "C12b"]
    assert list(claims.judge_notebook("03_c6_c7_c9_lock_cost", {}, "host").id) == ["C6", "C7", "C9"]
    assert claims.judge_notebook("00_platform", {}, "host").empty


@pytest.mark.parametrize("preset", params.PRESETS)
def test_each_presets_effective_parameters_are_unchanged(preset):
    sections = params.load_preset(ROOT / "params", preset)
    for path in NOTEBOOKS:
        declared = params.notebook_parameters(path)
        values = params.resolve(sections.get(path.stem, {}), declared, where=f"{preset} {path.stem}")
        effective = {**params.defaults(declared, path.stem), **values}
        assert effective == FROZEN[preset][path.stem], (preset, path.stem)
    assert set(FROZEN[preset]) == {p.stem for p in NOTEBOOKS}


def test_a_preset_without_a_notebooks_section_runs_it_with_the_defaults(tmp_path):
    (tmp_path / "smoke.yaml").write_text("12_c15_overlap: {}\n")
    # notebook 07 holds no sizes, so no locked-memory limit trims it (a non-root user's 8 MiB would trim 12's)
    p = run_plan.plan("smoke", "host", only=["07_c8_semantics"], params_dir=tmp_path)
    assert p.parameters == {"07_c8_semantics": {}}       # the runner injects nothing: the cell's defaults run


def test_presets_only_name_registered_notebooks():
    for preset in params.PRESETS:
        assert set(yaml.safe_load((ROOT / "params" / f"{preset}.yaml").read_text())) <= set(registry.NOTEBOOKS)
