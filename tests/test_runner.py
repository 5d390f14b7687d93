"""The runner and the command line: bad input refused before anything is written, failures and
leaks recorded, stopped runs marked and resumable, every notebook of the project run with the
smoke preset."""

import glob
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from pinpath import __main__ as cli
from pinpath import paths, runner
from pinpath.errors import BadParameter, UnknownName
from pinpath.report.html import external_scripts

HERE = Path(__file__).parent
FIXTURES = HERE / "notebooks"
ROOT = Path(__file__).resolve().parents[1]


def _notebook(path: Path, body: str, params: str = "") -> Path:
    cells = [nbformat.v4.new_markdown_cell("# a test notebook"),
             nbformat.v4.new_code_cell("\n".join(['PLATFORM: str = "host"  # runtime', 'RUN_DIR: str = ""  # run folder',
                                                   f'NOTEBOOK: str = "{path.stem}"  # name', params]).strip()),
             nbformat.v4.new_code_cell(body)]
    cells[1].metadata["tags"] = ["parameters"]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "pinpath", "language": "python",
                                                                                   "display_name": "pinpath"}}), path)
    return path


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder of its own (notebooks/, params/, outputs/), where the runner looks."""
    for name, sub in (("PROJECT_ROOT", ""), ("NOTEBOOKS_DIR", "notebooks"), ("PARAMS_DIR", "params"),
                      ("OUTPUTS_DIR", "outputs")):
        monkeypatch.setattr(paths, name, tmp_path / sub if sub else tmp_path)
    (tmp_path / "params").mkdir()
    return tmp_path


def _params(root: Path, text: str, preset: str = "smoke") -> Path:
    (root / "params").mkdir(exist_ok=True)
    (root / "params" / f"{preset}.yaml").write_text(text)
    return root / "params"


def _cli(*args, env=None, cwd=None, plain_user=False):
    """``python -m pinpath ARGS``; ``plain_user``: with what a fresh non-root user has, an 8 MiB
    RLIMIT_MEMLOCK and no CAP_IPC_LOCK (as root, setpriv takes the capability away)."""
    prefix = []
    if plain_user and os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("running as root, and setpriv (util-linux) is missing to drop CAP_IPC_LOCK")
        prefix = ["setpriv", "--bounding-set=-ipc_lock", "--inh-caps=-ipc_lock", "--"]
    return subprocess.run([*prefix, sys.executable, "-m", "pinpath", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **(env or {})}, preexec_fn=_plain_lock_limit if plain_user else None)


def _plain_lock_limit() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    soft = PLAIN_LOCK_NBYTES if hard == resource.RLIM_INFINITY else min(PLAIN_LOCK_NBYTES, hard)
    resource.setrlimit(resource.RLIMIT_MEMLOCK, (soft, hard))


PLAIN_LOCK_NBYTES = 8 << 20     #: a non-root user's usual `ulimit -l`


# -- validation ----------------------------------------------------------------------------------
@pytest.mark.parametrize("text,match", [
    ("00_ok:\n  STEPZ: 2\n01_broken: {}\n", r"\[00_ok\]: unknown parameter 'STEPZ'; the notebook declares: STEPS"),
    ("00_ok:\n  STEPS: two\n01_broken: {}\n", r"STEPS must be integer, got str 'two'"),
    ("00_ok:\n  STEPS: [1\n", r"smoke.yaml: not valid YAML at line"),
    ("- just\n- a list\n", r"must map each notebook name"),
    ("00_ok: {}\n01_broken: {}\n02_missing: {}\n", r"section '02_missing' names a missing notebook"),
    ("00_ok:\n  PLATFORM: cuda\n01_broken: {}\n", r"PLATFORM is set by the runner"),
    ("00_ok: {}\n", r"no section for notebook '01_broken'"),
])
def test_bad_parameter_files(tmp_path, text, match):
    (tmp_path / "params").mkdir()
    with pytest.raises(BadParameter, match=match):
        runner.plan("smoke", "host", nb_dir=FIXTURES, params_dir=_params(tmp_path, text))


def _sizes_project(root: Path, extra: str) -> None:
    _notebook(root / "notebooks" / "00_ok.ipynb", "pass", extra)


def test_sizes_are_parsed_and_checked(project):
    _sizes_project(project, "SIZES_NBYTES: list = [4096]  # sizes\nTHREADS: list = [1]  # threads")
    for value, match in (("[0]", "must be a positive"), ("[-4KiB]", "must be a positive"), ("[4 parsecs]", "is not a size"),
                         ("[1000TiB]", "is greater than the maximum"), ("[]", "at least one size"),
                         ("[1MiB, 4KiB]", "must be in increasing order"), ("[4KiB, 4096]", "repeats a value")):
        _params(project, f"00_ok:\n  SIZES_NBYTES: {value}\n")
        with pytest.raises(BadParameter, match=match):
            runner.plan("smoke", "host")
    _params(project, "00_ok:\n  SIZES_NBYTES: [4KiB, 1MiB]\n")
    assert runner.plan("smoke", "host").parameters["00_ok"]["SIZES_NBYTES"] == [4096, 1 << 20]


def test_vocabulary_words_are_checked(project):
    _sizes_project(project, 'POLICIES: list = ["nextgen"]  # policies\nVERIFY: str = "first"  # check')
    _params(project, "00_ok:\n  POLICIES: [nextgen, lock_allways]\n")
    with pytest.raises(BadParameter, match=r"\[00_ok\]: POLICIES\[1\] 'lock_allways' is not one of"):
        runner.plan("smoke", "host")
    _params(project, "00_ok:\n  VERIFY: sometimes\n")
    with pytest.raises(BadParameter, match="VERIFY 'sometimes' is not one of"):
        runner.plan("smoke", "host")


def test_unknown_platform_preset_notebook(tmp_path):
    (tmp_path / "params").mkdir()
    params = _params(tmp_path, "00_ok: {}\n01_broken: {}\n")
    with pytest.raises(UnknownName, match="unknown platform 'gpu'"):
        runner.plan("smoke", "gpu", nb_dir=FIXTURES, params_dir=params)
    with pytest.raises(BadParameter, match="unknown preset 'quick'"):
        runner.plan("quick", "host", nb_dir=FIXTURES, params_dir=params)
    with pytest.raises(UnknownName, match="unknown notebook '07_nope'"):
        runner.plan("smoke", "host", only=["07_nope"], nb_dir=FIXTURES, params_dir=params)


def _corrupt_runs(root: Path) -> dict[str, Path]:
    """Run folders broken in every way compare and runs meet."""
    runs = {}
    for name, text in (("truncated", '{"run_id": "x", "pla'), ("list", "[1, 2]"), ("noplatform", '{"run_id": "x", "preset": "smoke"}'),
                       ("notebooks", '{"run_id": "x", "preset": "s", "platform": "host", "notebooks": [1]}')):
        d = root / "outputs" / name
        d.mkdir(parents=True)
        (d / "manifest.json").write_text(text)
        runs[name] = d
    return runs


# (arguments, parameter file text or None, the sentence it must contain)
MALFORMED = [
    (["run", "--platform", "cdua"], None, "unknown platform 'cdua'"),
    (["run", "--preset", "quick"], None, "unknown preset 'quick'"),
    (["run", "--preset", "smoke; rm -rf /"], None, "unknown preset 'smoke; rm -rf /'"),
    (["run", "--notebooks", "99_none"], None, "unknown notebook '99_none'"),
    (["run", "--cell-timeout", "0"], None, "must be a positive number of seconds, got 0"),
    (["run", "--cell-timeout", "-1"], None, "must be a positive number of seconds, got -1"),
    (["run", "--cell-timeout", "soon"], None, "'soon' is not a whole number of seconds"),
    (["run", "--set", "00_ok.STEPS"], None, "write NOTEBOOK.NAME=VALUE"),
    (["run", "--set", "99_x.STEPS=1"], None, "unknown notebook '99_x'"),
    (["run", "--set", "00_ok.STEPS=0"], None, "--set 00_ok: STEPS 0 is less than the minimum of 1"),
    (["run", "--set", "00_ok.STEPS=[2"], None, "the value is not valid YAML"),
    (["run", "--set", "00_ok.SIZES_NBYTES=[64GiB]"], None, "SIZES_NBYTES cannot run here"),
    (["run", "--resume", "no-such-run"], None, "no-such-run: not a pinpath run (no manifest.json in no-such-run)"),
    (["run"], "00_ok:\n  STEPS: 1\n  STEPS: 2\n", "'STEPS' is given twice (line 3)"),
    (["run"], "base: &b {STEPS: 1}\n00_ok: *b\n", "aliases (*name) are not allowed"),
    (["run"], "00_ok:\n  THREADS: [0]\n", "THREADS[0] 0 is less than the minimum of 1"),
    (["run"], "00_ok:\n  THREADS: [10000]\n", "THREADS[0] 10000 is greater than the maximum of 256"),
    (["run"], "00_ok:\n  THREADS: 4\n", "THREADS must be a list, got int 4"),
    (["run"], "00_ok:\n  THREADS: [4, 2]\n", "THREADS [4, 2] must be in increasing order"),
    (["run"], "00_ok:\n  REPEATS: 0\n", "REPEATS 0 is less than the minimum of 1"),
    (["run"], "00_ok:\n  REPEATS: [3]\n", "REPEATS must be integer, got list [3]"),
    (["run"], "00_ok:\n  REPEATS: true\n", "REPEATS must be integer, got bool True"),
    (["run"], "00_ok:\n  TRANSFERS: 0\n", "TRANSFERS 0 is less than the minimum of 1"),
    (["run"], "00_ok:\n  NW: 0\n", "NW 0 is less than the minimum of 1"),
    (["run"], "00_ok:\n  INVOCATIONS: 1000000000\n", "INVOCATIONS 1000000000 is greater than the maximum"),
    (["run"], "00_ok:\n  INVOCATIONS: 100000\n  STEPS: 1000\n", "timed operations; the budget of one notebook"),
    (["run"], "00_ok:\n  SIZES_NBYTES: 4096\n", "SIZES_NBYTES must be a list"),
    (["run"], "00_ok:\n  SIZES_NBYTES: [4KiB, 4KiB]\n", "repeats a value"),
    (["run"], "00_ok:\n  SIZES_NBYTES: [64GiB]\n", "cannot run here"),
    (["run"], "00_ok:\n  VERIFY: sometimes\n", "VERIFY 'sometimes' is not one of"),
    (["run"], "00_ok:\n  POLICIES: [nextgen, nextgen]\n", "repeats a value"),
    (["run"], "00_ok:\n  KINDS: [ram]\n", "KINDS[0] 'ram' is not one of"),
    (["run"], "00_ok:\n  STEPS: 1\n  BOGUS: 1\n", "unknown parameter 'BOGUS'"),
    (["run"], "00_ok: [1, 2]\n", "must map each notebook name"),
    (["validate"], "00_ok:\n  QUEUES: [1, 2, 2]\n", "repeats a value"),
    (["init"], "00_ok:\n  CHAINS: 65\n", "CHAINS 65 is greater than the maximum of 64"),
    (["compare", "{truncated}", "{list}"], None, "unreadable manifest (JSONDecodeError)"),
    (["compare", "{list}", "{truncated}"], None, "a manifest is a JSON object, this one is a list"),
    (["compare", "{noplatform}", "{list}"], None, "the manifest has no platform"),
    (["compare", "{notebooks}", "{list}"], None, "the manifest's notebooks entry is not an object"),
    (["compare", "{truncated}"], None, "compare needs at least two runs"),
    (["share", "{list}"], None, "a manifest is a JSON object"),
    (["run-notebook", "{noplatform}", "00_ok"], None, "the manifest has no platform"),
    (["finalize", "{truncated}"], None, "unreadable manifest"),
]


@pytest.mark.parametrize("args,text,match", MALFORMED, ids=[f"{i}-{' '.join(a)[:40]}" for i, (a, _, _) in enumerate(MALFORMED)])
def test_malformed_input_is_refused_in_one_sentence(project, capsys, monkeypatch, args, text, match):
    from pinpath import osinfo
    monkeypatch.setattr(osinfo, "meminfo_nbytes", lambda key="MemTotal": 32 << 30)   # 64 GiB never fits
    _notebook(project / "notebooks" / "00_ok.ipynb", "pass",
              "\n".join(f"{n}: {t} = {d}  # x" for n, t, d in (
                  ("STEPS", "int", 1), ("THREADS", "list", [1]), ("REPEATS", "int", 1), ("TRANSFERS", "int", 1),
                  ("NW", "int", 1), ("INVOCATIONS", "int", 1), ("SIZES_NBYTES", "list", [4096]), ("VERIFY", "str", '"all"'),
                  ("POLICIES", "list", ["nextgen"]), ("KINDS", "list", ["heap"]), ("QUEUES", "list", [1]), ("CHAINS", "int", 1))))
    for preset in ("default", "smoke"):
        _params(project, text if text is not None else "00_ok: {}\n", preset)
    runs = _corrupt_runs(project)
    before = sorted(str(p) for p in project.rglob("*"))
    args = [a.format(**{k: str(v) for k, v in runs.items()}) for a in args]
    with pytest.raises(SystemExit) as e:
        sys.exit(cli.main(args))
    err = capsys.readouterr().err
    assert e.value.code != 0 and err.startswith("pinpath: ") and match in err, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert sorted(str(p) for p in project.rglob("*")) == before        # nothing written


def test_cli_refuses_bad_input_and_writes_nothing(tmp_path):
    out = tmp_path / "outs"
    for args, match in ((["--platform", "cdua"], "unknown platform 'cdua'"),
                        (["--notebooks", "99_none"], "unknown notebook '99_none'")):
        r = _cli("run", "--outputs", str(out), *args)
        assert r.returncode == 2 and r.stderr.startswith("pinpath: ") and match in r.stderr
        assert r.stderr.count("\n") == 1, r.stderr
    assert not out.exists()


def test_a_notebook_that_is_not_json_or_has_no_parameters_cell(project):
    (project / "notebooks").mkdir()
    (project / "notebooks" / "00_ok.ipynb").write_text("{not json")
    _params(project, "00_ok: {}\n")
    with pytest.raises(BadParameter, match=r"00_ok.ipynb: not a notebook \(not JSON\)"):
        runner.plan("smoke", "host")
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("pass")]), project / "notebooks" / "00_ok.ipynb")
    with pytest.raises(BadParameter, match="has no cell tagged 'parameters'"):
        runner.plan("smoke", "host")


def test_make_variables_reach_the_command_as_one_argument(tmp_path):
    """A make variable with shell in it is one (refused) argument, never run."""
    marker = tmp_path / "ran"
    r = subprocess.run(["make", "-s", "-o", "setup", "-o", ".venv/.stamp", "validate",   # never rebuild .venv here
                        f"PRESET=x\"; touch {marker}; echo \"", "ENV=venv"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode != 0 and not marker.exists()
    assert "unknown preset 'x\"; touch" in r.stderr, r.stderr


# -- running ---------------------------------------------------------------------------------------
def test_failure_is_recorded_and_the_run_goes_on(tmp_path):
    out = tmp_path / "outs"
    (tmp_path / "params").mkdir()
    params = _params(tmp_path, "00_ok: {}\n01_broken: {}\n")
    lines = []
    run_dir, man = runner.run("smoke", "host", nb_dir=FIXTURES, params_dir=params, out_dir=out, progress=lines.append)
    assert man["status"] == "failed"
    assert man["notebooks"]["00_ok"]["status"] == "ok"
    err = man["notebooks"]["01_broken"]
    assert err["status"] == "failed" and "ValueError: broken on purpose" in err["error"]
    assert lines[0].startswith("[1/2] 00_ok: running (smoke, host;") and lines[-1].startswith("[2/2] 01_broken: failed")
    index = (run_dir / "report" / "index.html").read_text()
    assert "class='banner'" in index and "broken on purpose" in index
    assert (out / "latest").resolve() == run_dir.resolve()
    on_disk = json.loads((run_dir / "manifest.json").read_text())
    assert on_disk["status"] == "failed" and on_disk["end"]
    assert not list(run_dir.rglob("*.partial*"))


LEAKY = """from pinpath.runtimes import open_runtime
import numpy as np
rt = open_runtime("host")
held = np.ones(1 << 20, np.uint8)
rt.lock(held.ctypes.data, held.nbytes)   # and never unlocked"""


def test_a_notebook_that_leaves_a_lock_behind_is_leaked(project):
    _notebook(project / "notebooks" / "00_leaky.ipynb", LEAKY)
    _params(project, "00_leaky: {}\n")
    run_dir, man = runner.run("smoke", "host", progress=lambda s: None)
    part = man["notebooks"]["00_leaky"]
    assert part["status"] == "leaked" and "+1 lock@0x" in part["error"] and "VmLck grew" in part["error"], part
    assert man["status"] == "failed"
    kernel = json.loads((run_dir / "status" / "00_leaky.kernel.json").read_text())
    assert kernel["vmlck_after_nbytes"] >= kernel["vmlck_before_nbytes"] + (1 << 20)


def test_a_dead_kernel_is_recorded_and_shown(project):
    _notebook(project / "notebooks" / "00_dies.ipynb", "import os\nos._exit(3)")
    _params(project, "00_dies: {}\n")
    run_dir, man = runner.run("smoke", "host", progress=lambda s: None)
    part = man["notebooks"]["00_dies"]
    assert part["status"] == "dead_kernel" and "kernel died" in part["error"], part
    assert "kernel died" in (run_dir / "notebooks" / "00_dies.ipynb").read_text()
    assert "kernel died" in (run_dir / "report" / "00_dies.html").read_text()


def _sleepy_project(root: Path) -> None:
    _notebook(root / "notebooks" / "00_ok.ipynb", "pass")
    _notebook(root / "notebooks" / "01_sleeps.ipynb",
              "import os, time\ntime.sleep(float(os.environ.get('PINPATH_TEST_SLEEP_S', '0')))")
    _notebook(root / "notebooks" / "02_ok.ipynb", "pass")
    _params(root, "00_ok: {}\n01_sleeps: {}\n02_ok: {}\n")


def _start(root: Path, *args, sleep_s: float):
    env = {**os.environ, "PINPATH_ROOT": str(root), "PINPATH_TEST_SLEEP_S": str(sleep_s), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "pinpath", "run", "--preset", "smoke", "--platform", "host", *args],
                            stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, start_new_session=True)


def _wait_for(proc, text: str, limit_s: float = 60) -> str:
    seen, t0 = "", time.monotonic()
    while text not in seen:
        line = proc.stderr.readline()
        assert line or proc.poll() is None, seen
        seen += line
        assert time.monotonic() - t0 < limit_s, seen
    return seen


def _kernel_dirs() -> set[str]:
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "pinpath-kernel-*")))


def test_sigterm_marks_the_run_interrupted_and_resume_finishes_it(tmp_path):
    _sleepy_project(tmp_path)
    kernels = _kernel_dirs()
    proc = _start(tmp_path, sleep_s=60)
    _wait_for(proc, "[2/3] 01_sleeps: running")
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    run_dir = (tmp_path / "outputs" / "latest").resolve()
    man = json.loads((run_dir / "manifest.json").read_text())
    assert man["status"] == "interrupted" and man["interrupted_at"] == "01_sleeps"
    assert man["notebooks"]["00_ok"]["status"] == "ok" and man["notebooks"]["01_sleeps"]["status"] == "interrupted"
    assert man["notebooks"]["02_ok"]["status"] == "pending"
    assert (run_dir / "report" / "00_ok.html").exists() and (run_dir / "report" / "index.html").exists()
    assert _kernel_dirs() <= kernels
    man["git"] = {"commit": "0" * 40, "dirty": False}       # resumed after a newer commit was checked out
    (run_dir / "manifest.json").write_text(json.dumps(man))
    env = {**os.environ, "PINPATH_ROOT": str(tmp_path), "PINPATH_TEST_SLEEP_S": "0"}
    r = subprocess.run([sys.executable, "-m", "pinpath", "run", "--resume", run_dir.name], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0, r.stderr
    man = json.loads((run_dir / "manifest.json").read_text())
    assert man["status"] == "ok" and {v["status"] for v in man["notebooks"].values()} == {"ok"}
    assert "judged_by" not in man and man["end"]             # a resumed run is finished, not re-judged
    assert "resuming" in r.stderr and "2 of 3 notebook(s) to run" in r.stderr


def test_a_killed_runner_leaves_a_stale_run(tmp_path):
    _sleepy_project(tmp_path)
    proc = _start(tmp_path, sleep_s=60)
    _wait_for(proc, "[2/3] 01_sleeps: running")
    for _ in range(100):            # its job has written its "running" part
        if list((tmp_path / "outputs").glob("*/status/01_sleeps.json")):
            break
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    r = _cli("runs", env={"PINPATH_ROOT": str(tmp_path)})
    assert r.returncode == 0 and " stale " in r.stdout, r.stdout
    (run_dir,) = [p for p in (tmp_path / "outputs").iterdir() if p.is_dir()]
    man = runner.finalize(run_dir)
    assert man["notebooks"]["01_sleeps"]["status"] == "stale" and man["status"] == "failed"


def test_a_broken_data_file_is_named_in_the_report(tmp_path):
    out = tmp_path / "outs"
    (tmp_path / "params").mkdir()
    params = _params(tmp_path, "00_ok: {}\n01_broken: {}\n")
    run_dir, _ = runner.run("smoke", "host", nb_dir=FIXTURES, params_dir=params, out_dir=out, progress=lambda s: None)
    (run_dir / "data" / "lock_cost.parquet").write_bytes(b"PAR1 truncated")
    man = runner.finalize(run_dir)
    assert man["unreadable_data"] == ["lock_cost.parquet"]


# -- the project's own notebooks ---------------------------------------------------------------------
# smoke_run (tests/conftest.py): the project's own notebooks, smoke preset, host platform, once per session


def test_a_plain_user_gets_the_default_preset_fitted_and_explicit_sizes_refused(tmp_path):
    probe = _cli("validate", "--preset", "smoke", "--platform", "host", "--outputs", str(tmp_path), plain_user=True)
    assert probe.returncode == 0, probe.stderr
    r = _cli("validate", "--preset", "default", "--platform", "host", "--outputs", str(tmp_path), plain_user=True)
    assert r.returncode == 0, r.stderr
    assert "01_c12_lock_copy: left out NBYTES" in r.stdout and "ulimit -l" in r.stdout, r.stdout
    r = _cli("validate", "--preset", "default", "--platform", "host", "--outputs", str(tmp_path),
             "--set", "01_c12_lock_copy.NBYTES=64MiB", plain_user=True)
    assert r.returncode == 2 and "NBYTES cannot run here" in r.stderr and "RLIMIT_MEMLOCK" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not list(tmp_path.iterdir())


def test_smoke_run_every_notebook_ok_and_quiet(smoke_run):
    run_dir, man, stderr = smoke_run
    stems = [p.stem for p in runner.available_notebooks(ROOT / "notebooks")]
    assert list(man["notebooks"]) == stems and stems
    assert all(v["status"] == "ok" for v in man["notebooks"].values()), man["notebooks"]
    for i, stem in enumerate(stems, 1):
        assert f"[{i}/{len(stems)}] {stem}: ok in" in stderr
    assert "IPKernelApp" not in stderr and "ERROR" not in stderr and "b'" not in stderr, stderr[-2000:]
    for key in ("git", "runtime", "machine", "packages", "parameters", "start", "end", "harness_ns"):
        assert man[key], key
    assert man["machine"]["thp_mode"] and "rlimit_memlock_soft_nbytes" in man["machine"]
    for stem in stems:   # every kernel reported its balance: nothing left behind
        k = json.loads((run_dir / "status" / f"{stem}.kernel.json").read_text())
        assert not {n: c for n, c in k["unreleased"].items() if c > 0}, (stem, k)


def test_smoke_run_outputs(smoke_run):
    run_dir, man, _ = smoke_run
    for stem in man["notebooks"]:
        nb = json.loads((run_dir / "notebooks" / f"{stem}.ipynb").read_text())
        assert not any("papermill-error-cell-tag" in c["metadata"].get("tags", []) for c in nb["cells"])
        page = (run_dir / "report" / f"{stem}.html").read_text()
        assert external_scripts(page) == [] and ("What the run found" in page or stem in ("00_platform", "13_real_runtime"))
        assert "What this notebook's data show" not in page      # finalize restated it from claims.csv
        assert (run_dir / "data" / f"harness.{stem}.parquet").exists()
    staging = pd.read_parquet(run_dir / "data" / "staging.parquet")
    assert {"path", "kind", "nbytes", "alloc_ns", "calls", "hazard"} <= set(staging.columns)
    assert set(staging.path) <= {"staged_fresh", "staged_pooled_hit", "staged_pooled_miss"}
    assert staging.verified.any()
    for path in run_dir.rglob("*"):
        if path.is_file() and path.suffix in (".html", ".ipynb", ".json", ".csv", ".md"):
            text = path.read_text(errors="replace")
            assert str(ROOT) not in text and tempfile.gettempdir() + "/" not in text, path


def test_runs_listing(smoke_run):
    run_dir, man, _ = smoke_run
    r = _cli("runs", "--outputs", str(run_dir.parent))
    assert r.returncode == 0 and run_dir.name in r.stdout and " ok " in r.stdout


def test_smoke_report_has_the_claims_table(smoke_run):
    run_dir, man, _ = smoke_run
    claims = pd.read_csv(run_dir / "report" / "claims.csv")
    assert list(claims.id) == [f"C{i}" for i in range(1, 16)]
    assert {"id", "verdict", "measured", "low", "high", "threshold", "rule", "notebook"} <= set(claims.columns)
    assert set(claims.verdict) <= {"holds", "does not hold", "inconclusive", "not applicable", "not measured"}
    assert "not measured" not in set(claims.verdict), claims[["id", "why"]]
    assert (claims[claims.id == "C11"].verdict != "not applicable").all()   # about the OS: judged on host too
    index = (run_dir / "report" / "index.html").read_text()
    assert "<h2" in index and "C15" in index


def test_compare_two_runs(smoke_run, tmp_path):
    run_dir, _, _ = smoke_run
    out = tmp_path / "cmp.html"
    r = _cli("compare", str(run_dir), str(run_dir), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert external_scripts(out.read_text()) == [] and out.with_suffix(".md").exists()
    r = _cli("compare", str(tmp_path), str(run_dir), "--out", str(out))
    assert r.returncode == 2 and "not a pinpath run" in r.stderr
    r = _cli("compare", str(run_dir), str(run_dir), "--out", str(tmp_path))
    assert r.returncode == 2 and "is a folder" in r.stderr


def test_a_run_judged_again_by_newer_code_says_so(smoke_run, tmp_path):
    run_dir, _, _ = smoke_run
    outs = tmp_path / "outs"
    old = outs / "old"
    shutil.copytree(run_dir, old, symlinks=True)
    (outs / "latest").symlink_to("newer")
    man = json.loads((old / "manifest.json").read_text())
    man["git"] = {"commit": "0" * 40, "dirty": False}
    (old / "manifest.json").write_text(json.dumps(man))
    again = runner.finalize(old)
    assert again["judged_by"]["commit"] not in ("0" * 40, None) and again["end"] == man["end"]
    assert os.readlink(outs / "latest") == "newer"      # the old run did not become the latest
