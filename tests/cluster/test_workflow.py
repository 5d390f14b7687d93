"""The Snakemake workflow on this machine (`pinpath run --executor snakemake`) leaves the same run
folder as the runner in one process (`pinpath run`), keeps a failed notebook's outputs, builds
the report anyway, and a second invocation on the same folder runs only what is not ok."""

import time
from pathlib import Path

HERE = Path(__file__).parent
NB = HERE / "notebooks"
FIXTURES = {"00_quick": NB / "00_quick.ipynb", "03_flaky": NB / "03_flaky.ipynb"}
PARAMS = "00_quick:\n  STEPS: 2\n03_flaky:\n  STEPS: 3\n"


def _both(cl, root, *args, **env):
    """The runner, then the workflow, on the same notebooks; their run folders."""
    e = cl.env_for(root, **env)
    t0 = time.monotonic()
    r1 = cl.pinpath("run", *args, env=e)
    t1 = time.monotonic()
    r2 = cl.pinpath("run", "--executor", "snakemake", *args, env=e)
    t2 = time.monotonic()
    print(f"runner {t1 - t0:.1f} s, Snakemake (local) {t2 - t1:.1f} s")
    assert r2.returncode == r1.returncode, (r1.stderr[-2000:], r2.stdout[-2000:], r2.stderr[-3000:])
    a, b = cl.runs(root)
    return r1, r2, a, b


def _same(cl, a: Path, b: Path):
    assert cl.layout(a) == cl.layout(b)
    ma, mb = cl.manifest(a), cl.manifest(b)
    assert set(ma) == set(mb)
    assert ma["status"] == mb["status"]
    assert {s: e["status"] for s, e in ma["notebooks"].items()} == {s: e["status"] for s, e in mb["notebooks"].items()}
    for stem in ma["notebooks"]:
        assert set(ma["notebooks"][stem]) == set(mb["notebooks"][stem]), stem


def test_same_run_folder_as_the_runner(tmp_path, cl):
    """smoke on host, the harness notebook: same files, manifest keys and statuses."""
    cl.needs_snakemake()
    root = cl.project(tmp_path)
    r1, r2, a, b = _both(cl, root, "--preset", "smoke", "--platform", "host", "--notebooks", "00_platform")
    assert r2.returncode == 0, r2.stderr[-3000:]
    _same(cl, a, b)
    assert {"manifest.json", "notebooks/00_platform.ipynb", "report/00_platform.html", "report/index.html",
            "report/claims.csv", "status/00_platform.json"} <= cl.layout(b)
    assert "00_platform                   ok" in r2.stdout


def test_a_failure_keeps_every_output_builds_the_report_and_resumes(tmp_path, cl):
    cl.needs_snakemake()
    root = cl.project(tmp_path, FIXTURES, PARAMS)
    r1, r2, a, b = _both(cl, root, "--preset", "smoke", "--platform", "host", PINPATH_TEST_FAIL="1")
    assert r2.returncode == 1
    _same(cl, a, b)
    man = cl.manifest(b)
    assert man["status"] == "failed"
    assert man["notebooks"]["00_quick"]["status"] == "ok"
    assert man["notebooks"]["03_flaky"]["status"] == "failed"
    assert "failing on purpose" in man["notebooks"]["03_flaky"]["error"]
    assert (b / "notebooks" / "03_flaky.ipynb").is_file() and (b / "report" / "03_flaky.html").is_file()
    assert "failing on purpose" in (b / "report" / "index.html").read_text()
    assert f"RESUME={b.name}" in r2.stderr

    quick = (b / "status" / "00_quick.json").read_text()
    r3 = cl.pinpath("run", "--executor", "snakemake", "--resume", b.name, env=cl.env_for(root))
    assert r3.returncode == 0, r3.stderr[-3000:]
    assert "run-notebook" in r3.stderr and "03_flaky" in r3.stderr
    assert (b / "status" / "00_quick.json").read_text() == quick          # the ok one did not run again
    man = cl.manifest(b)
    assert man["status"] == "ok" and man["notebooks"]["03_flaky"]["status"] == "ok"
    r4 = cl.pinpath("run", "--executor", "snakemake", "--resume", str(b), env=cl.env_for(root))
    assert r4.returncode == 0 and "Nothing to be done" in r4.stderr


def test_the_workflow_refuses_without_a_run_folder(tmp_path, cl):
    cl.needs_snakemake()
    import sys
    r = cl.pinpath("--snakefile", str(cl.ROOT / "workflow" / "Snakefile"), "--directory", str(tmp_path),
                   "--cores", "1", "--dry-run", env=cl.env_for(tmp_path), module="snakemake")
    assert r.returncode != 0 and "needs --config run_dir=outputs/<run-id>" in r.stdout + r.stderr
    r = cl.pinpath("resume-nothing", env=cl.env_for(tmp_path))
    assert r.returncode == 2
    r = cl.pinpath("run", "--executor", "snakemake", "--resume", "20990101T000000Z-nowhere", env=cl.env_for(tmp_path))
    assert r.returncode == 2 and "not a pinpath run (no manifest.json in 20990101T000000Z-nowhere)" in r.stderr
    assert sys.executable
