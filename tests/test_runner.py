"""The runner and the command line: bad input is refused before anything is written;
failures are recorded; every notebook of the project runs with the smoke preset."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pinpath import runner
from pinpath.errors import BadParameter, UnknownName
from pinpath.report.html import external_scripts

HERE = Path(__file__).parent
FIXTURES = HERE / "notebooks"


def _params(tmp_path, text, preset="smoke"):
    d = tmp_path / "params"
    d.mkdir(exist_ok=True)
    (d / f"{preset}.yaml").write_text(text)
    return d


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "pinpath", *args], capture_output=True, text=True, cwd=cwd)


@pytest.mark.parametrize("text,match", [
    ("00_ok:\n  STEPZ: 2\n01_broken: {}\n", r"\[00_ok\]: unknown parameter 'STEPZ'; the notebook declares: STEPS"),
    ("00_ok:\n  STEPS: two\n01_broken: {}\n", r"STEPS must be int, got str 'two'"),
    ("00_ok:\n  STEPS: [1\n", r"smoke.yaml: not valid YAML at line"),
    ("- just\n- a list\n", r"must map each notebook name"),
    ("00_ok: {}\n01_broken: {}\n02_missing: {}\n", r"section '02_missing' names a missing notebook"),
    ("00_ok:\n  PLATFORM: cuda\n01_broken: {}\n", r"PLATFORM is set by the runner"),
    ("00_ok: {}\n", r"no section for notebook '01_broken'"),
])
def test_bad_parameter_files(tmp_path, text, match):
    with pytest.raises(BadParameter, match=match):
        runner.plan("smoke", "host", nb_dir=FIXTURES, params_dir=_params(tmp_path, text))


def test_sizes_are_checked(tmp_path):
    nb_dir = tmp_path / "nbs"
    nb_dir.mkdir()
    src = json.loads((FIXTURES / "00_ok.ipynb").read_text())
    src["cells"][1]["source"] += "\nSIZES_NBYTES: list = [4096]  # sizes"
    (nb_dir / "00_ok.ipynb").write_text(json.dumps(src))
    for value, match in (("[0]", "must be a positive"), ("[-4KiB]", "must be a positive"), ("[4 parsecs]", "is not a size"),
                         ("[1000TiB]", "more than this host's memory"), ("[]", "at least one size")):
        with pytest.raises(BadParameter, match=match):
            runner.plan("smoke", "host", nb_dir=nb_dir, params_dir=_params(tmp_path, f"00_ok:\n  SIZES_NBYTES: {value}\n"))
    p = runner.plan("smoke", "host", nb_dir=nb_dir, params_dir=_params(tmp_path, "00_ok:\n  SIZES_NBYTES: [4KiB, 1MiB]\n"))
    assert p.parameters["00_ok"]["SIZES_NBYTES"] == [4096, 1 << 20]


def test_vocabulary_words_are_checked(tmp_path):
    nb_dir = tmp_path / "nbs"
    nb_dir.mkdir()
    src = json.loads((FIXTURES / "00_ok.ipynb").read_text())
    src["cells"][1]["source"] += '\nPOLICIES: list = ["nextgen"]  # policies\nVERIFY: str = "first"  # check'
    (nb_dir / "00_ok.ipynb").write_text(json.dumps(src))
    with pytest.raises(BadParameter, match=r"\[00_ok\]: POLICIES: unknown policy 'lock_allways'; known: stage_per_copy"):
        runner.plan("smoke", "host", nb_dir=nb_dir, params_dir=_params(tmp_path, "00_ok:\n  POLICIES: [nextgen, lock_allways]\n"))
    with pytest.raises(BadParameter, match="VERIFY must be one of all, first, none"):
        runner.plan("smoke", "host", nb_dir=nb_dir, params_dir=_params(tmp_path, "00_ok:\n  VERIFY: sometimes\n"))


def test_unknown_platform_preset_notebook(tmp_path):
    params = _params(tmp_path, "00_ok: {}\n01_broken: {}\n")
    with pytest.raises(UnknownName, match="unknown platform 'gpu'"):
        runner.plan("smoke", "gpu", nb_dir=FIXTURES, params_dir=params)
    with pytest.raises(BadParameter, match="unknown preset 'quick'"):
        runner.plan("quick", "host", nb_dir=FIXTURES, params_dir=params)
    with pytest.raises(UnknownName, match="unknown notebook '07_nope'"):
        runner.plan("smoke", "host", only=["07_nope"], nb_dir=FIXTURES, params_dir=params)


def test_cli_refuses_bad_input_and_writes_nothing(tmp_path):
    out = tmp_path / "outs"
    for args, match in ((["--platform", "cdua"], "unknown platform 'cdua'"),
                        (["--preset", "quick"], "unknown preset 'quick'"),
                        (["--notebooks", "99_none"], "unknown notebook '99_none'")):
        r = _cli("run", "--outputs", str(out), *args)
        assert r.returncode == 2 and r.stderr.startswith("pinpath: ") and match in r.stderr
        assert r.stderr.count("\n") == 1, r.stderr
    assert not out.exists()


def test_failure_is_recorded_and_the_run_goes_on(tmp_path):
    out = tmp_path / "outs"
    params = _params(tmp_path, "00_ok: {}\n01_broken: {}\n")
    lines = []
    run_dir, man = runner.run("smoke", "host", nb_dir=FIXTURES, params_dir=params, out_dir=out, progress=lines.append)
    assert man["status"] == "failed"
    assert man["notebooks"]["00_ok"]["status"] == "ok"
    err = man["notebooks"]["01_broken"]
    assert err["status"] == "failed" and "ValueError: broken on purpose" in err["error"]
    assert lines[0] == "[1/2] 00_ok: running (smoke, host)" and lines[-1].startswith("[2/2] 01_broken: failed")
    index = (run_dir / "report" / "index.html").read_text()
    assert "class='banner'" in index and "broken on purpose" in index
    assert (out / "latest").resolve() == run_dir.resolve()
    on_disk = json.loads((run_dir / "manifest.json").read_text())
    assert on_disk["status"] == "failed" and on_disk["end"]


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """The project's own notebooks, smoke preset, host platform, through the command line."""
    out = tmp_path_factory.mktemp("outs")
    r = _cli("run", "--preset", "smoke", "--platform", "host", "--outputs", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    run_dir = (out / "latest").resolve()
    return run_dir, json.loads((run_dir / "manifest.json").read_text()), r.stderr


def test_smoke_run_every_notebook_ok(smoke_run):
    run_dir, man, stderr = smoke_run
    stems = [p.stem for p in runner.available_notebooks()]
    assert list(man["notebooks"]) == stems and stems
    assert all(v["status"] == "ok" for v in man["notebooks"].values()), man["notebooks"]
    for i, stem in enumerate(stems, 1):
        assert f"[{i}/{len(stems)}] {stem}: ok in" in stderr
    for key in ("git", "runtime", "machine", "packages", "parameters", "start", "end", "harness_ns"):
        assert man[key], key
    assert man["harness_ns"]["trace_overhead_ns"] > 0
    assert man["machine"]["thp_mode"] and "rlimit_memlock_soft_nbytes" in man["machine"]
    assert man["runtime"]["platform"] == "host"


def test_smoke_run_outputs(smoke_run):
    run_dir, man, _ = smoke_run
    for stem in man["notebooks"]:
        nb = json.loads((run_dir / "notebooks" / f"{stem}.ipynb").read_text())
        assert not any("papermill-error-cell-tag" in c["metadata"].get("tags", []) for c in nb["cells"])
        page = (run_dir / "report" / f"{stem}.html").read_text()
        assert external_scripts(page) == [] and "data:image/png;base64" in page
        assert list((run_dir / "figures").glob(f"{stem}-*.png"))
    transfers = pd.read_parquet(run_dir / "data" / "02_c2_staging.parquet")
    assert {"path", "kind", "nbytes", "alloc_ns", "calls"} <= set(transfers.columns)
    assert set(transfers.path) <= {"staged_fresh", "staged_pooled_hit", "staged_pooled_miss"}
    assert transfers.verified.all()
    index = (run_dir / "report" / "index.html").read_text()
    assert "class='banner'" not in index and external_scripts(index) == []


def test_runs_listing(smoke_run):
    run_dir, man, _ = smoke_run
    r = _cli("runs", "--outputs", str(run_dir.parent))
    assert r.returncode == 0 and run_dir.name in r.stdout and "ok" in r.stdout


def test_smoke_report_has_the_claims_table(smoke_run):
    run_dir, man, _ = smoke_run
    claims = pd.read_csv(run_dir / "report" / "claims.csv")
    assert list(claims.id) == [f"C{i}" for i in range(1, 16)]
    assert set(claims.verdict) <= {"holds", "does not hold", "not applicable here"}
    assert not claims.why.str.contains("the data do not allow|not measured").any(), claims[["id", "why"]]
    assert (claims.measured != "-").sum() >= 14      # only C15 may lack a figure, where no latch exists
    index = (run_dir / "report" / "index.html").read_text()
    assert index.count("<tr>") >= 16 + len(man["notebooks"]) and "<h2>Claims</h2>" in index
    assert index.count("data:image/png;base64") >= len(man["notebooks"]) - 2
    for stem in man["notebooks"]:
        assert f"href='{stem}.html'" in index


def test_compare_two_runs(smoke_run, tmp_path):
    run_dir, _, _ = smoke_run
    out = tmp_path / "cmp.html"
    r = _cli("compare", str(run_dir), str(run_dir), "--out", str(out))
    assert r.returncode == 0, r.stderr
    page = out.read_text()
    assert page.count("<tr>") == 16 and external_scripts(page) == []
    r = _cli("compare", str(tmp_path), "--out", str(out))
    assert r.returncode == 2 and "not a pinpath run" in r.stderr
