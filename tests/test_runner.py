"""The runner and the command line: bad input refused before anything is written, failures and
leaks recorded, stopped runs marked and resumable, every notebook of the project run with the
smoke preset."""

import contextlib
import glob
import io
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from pinpath import __main__ as cli
from pinpath import paths
from pinpath.run import finalize as finalizing, local, plan as planning, resume as resuming
from pinpath import runfolder as rf
from pinpath.errors import BadParameter, UnknownName
from pinpath.params import SCHEMA
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
])
def test_bad_parameter_files(tmp_path, text, match):
    (tmp_path / "params").mkdir()
    with pytest.raises(BadParameter, match=match):
        planning.plan("smoke", "host", nb_dir=FIXTURES, params_dir=_params(tmp_path, text))


def _sizes_project(root: Path, extra: str) -> None:
    _notebook(root / "notebooks" / "00_ok.ipynb", "pass", extra)


def test_sizes_are_parsed_and_checked(project):
    _sizes_project(project, "SIZES_NBYTES: list = [4096]  # sizes\nTHREADS: list = [1]  # threads")
    for value, match in (("[0]", "must be a positive"), ("[-4KiB]", "must be a positive"), ("[4 parsecs]", "is not a size"),
                         ("[1000TiB]", "is greater than the maximum"), ("[]", "at least one size"),
                         ("[1MiB, 4KiB]", "must be in increasing order"), ("[4KiB, 4096]", "repeats a value")):
        _params(project, f"00_ok:\n  SIZES_NBYTES: {value}\n")
        with pytest.raises(BadParameter, match=match):
            planning.plan("smoke", "host")
    _params(project, "00_ok:\n  SIZES_NBYTES: [4KiB, 1MiB]\n")
    assert planning.plan("smoke", "host").parameters["00_ok"]["SIZES_NBYTES"] == [4096, 1 << 20]


def test_vocabulary_words_are_checked(project):
    _sizes_project(project, 'POLICIES: list = ["nextgen"]  # policies\nVERIFY: str = "first"  # check')
    _params(project, "00_ok:\n  POLICIES: [nextgen, lock_allways]\n")
    with pytest.raises(BadParameter, match=r"\[00_ok\]: POLICIES\[1\] 'lock_allways' is not one of"):
        planning.plan("smoke", "host")
    _params(project, "00_ok:\n  VERIFY: sometimes\n")
    with pytest.raises(BadParameter, match="VERIFY 'sometimes' is not one of"):
        planning.plan("smoke", "host")


def test_unknown_platform_preset_notebook(tmp_path):
    (tmp_path / "params").mkdir()
    params = _params(tmp_path, "00_ok: {}\n01_broken: {}\n")
    with pytest.raises(UnknownName, match="unknown platform 'gpu'"):
        planning.plan("smoke", "gpu", nb_dir=FIXTURES, params_dir=params)
    with pytest.raises(BadParameter, match="unknown preset 'quick'"):
        planning.plan("quick", "host", nb_dir=FIXTURES, params_dir=params)
    with pytest.raises(UnknownName, match="unknown notebook '07_nope'"):
        planning.plan("smoke", "host", only=["07_nope"], nb_dir=FIXTURES, params_dir=params)


def _run_manifest(rid: str, status: str = "failed", **over) -> str:
    """A run of 00_ok (smoke, host) that did not end ok."""
    return json.dumps({"run_id": rid, "preset": "smoke", "platform": "host", "status": status,
                       "notebooks": {"00_ok": {"status": "failed"}}, "parameters": {"00_ok": {}},
                       "sources": {"00_ok": "notebooks/00_ok.ipynb"}, **over})


def _corrupt_runs(root: Path) -> dict[str, Path]:
    """Run folders broken in every way compare, runs and resume meet (and a file outside
    outputs/ that none of them may touch)."""
    from pinpath.runfolder import _proc_start
    (root / "victim.ipynb").write_text("a user's notebook")
    me = {"pid": os.getpid(), "host": socket.gethostname()}
    runs = {}
    for name, text in (("truncated", '{"run_id": "x", "pla'), ("list", "[1, 2]"), ("noplatform", '{"run_id": "x", "preset": "smoke"}'),
                       ("notebooks", '{"run_id": "x", "preset": "s", "platform": "host", "notebooks": [1]}'),
                       ("traversal", _run_manifest("traversal", notebooks={"../../victim": {"status": "failed"}})),
                       ("escape", _run_manifest("escape", sources={"00_ok": "../../../etc/passwd.ipynb"})),
                       ("done", _run_manifest("done")),
                       ("reference/h200", _run_manifest("h200")),
                       ("../elsewhere/run1", _run_manifest("run1")),
                       ("gone", _run_manifest("gone", sources={"00_ok": "notebooks/00_gone.ipynb"})),
                       ("linked", _run_manifest("linked")),
                       ("live", _run_manifest("live", status="running", runner=me)),
                       ("locked", _run_manifest("locked"))):
        d = root / "outputs" / name
        d.mkdir(parents=True)
        (d / "manifest.json").write_text(text)
        runs[name.rsplit("/", 1)[-1]] = d
    (root / "outputs" / "outlink").symlink_to(runs["run1"])
    (runs["linked"] / "report").symlink_to(root / "elsewhere")
    (runs["locked"] / "runner.lock").write_text(json.dumps({**me, "pid_start": _proc_start(os.getpid()), "start": "now"}))
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
    (["run", "--set", "00_ok.SIZES_NBYTES=[64GiB]"], None, "--set 00_ok: SIZES_NBYTES cannot run here"),
    (["run", "--set", "00_ok.THREADS=[1,\n2]"], None, "a line break or control character; give one NOTEBOOK.NAME=VALUE"),
    (["run", "--set", "00_ok.STEPS=1\n00_ok.REPEATS=2"], None, "a line break or control character"),
    (["run", "--set", "00_ok.THREADS=" + "[" * 50 + "]" * 50], None, "nested deeper than 6 levels"),
    (["run", "--set", "00_ok.REPEATS=2.5"], None, "--set 00_ok: REPEATS must be integer, got float 2.5"),
    (["run", "--notebooks", ",,,"], None, "names a notebook twice or an empty name"),
    (["run", "--notebooks", "00_ok,00_ok"], None, "names a notebook twice or an empty name"),
    (["run", "--preset", "smo\x1b[2Jke\u202e"], None, "unknown preset 'smo\\x1b[2Jke\\u202e'"),
    (["run", "--resume", "traversal"], None, "notebook in notebooks '../../victim' is not a plain name"),
    (["run-notebook", "{traversal}", "../../victim"], None, "is not a plain name"),
    (["run", "--resume", "escape"], None, "the source of 00_ok, '../../../etc/passwd.ipynb', is not a notebook path"),
    (["run", "--resume", "reference/h200"], None, "only a run directly under"),
    (["run", "--resume", "{run1}"], None, "only a run directly under"),
    (["run", "--resume", "outlink"], None, "outlink: the run folder"),
    (["share", "outlink"], None, "is not inside the folder of runs"),
    (["run", "--resume", "done", "--preset", "default"], None, "PRESET=default disagrees with run done, which ran smoke"),
    (["run", "--resume", "done", "--platform", "cuda"], None, "PLATFORM=cuda disagrees with run done, which ran host"),
    (["run", "--resume", "done", "--notebooks", "00_ok,01_x"], None, "NOTEBOOKS=00_ok,01_x disagrees with run done"),
    (["run", "--resume", "done", "--set", "00_ok.STEPS=2"], None, "--set 00_ok.STEPS=2 disagrees with run done, which ran 1"),
    (["run", "--resume", "gone"], None, "the source of 00_ok, notebooks/00_gone.ipynb, is missing"),
    (["run", "--resume", "linked"], None, "'report' leads outside the run folder"),
    (["finalize", "{linked}"], None, "'report' leads outside the run folder"),
    (["run", "--resume", "{locked}", "--set", "00_ok.STEPS=1.0", "--set", "00_ok.THREADS=[1]"], None, "holds this run"),
    (["run", "--resume", "live"], None, f"live: its runner, pid {os.getpid()}, still runs it"),
    (["run", "--resume", "locked"], None, f"locked: pid {os.getpid()} on {socket.gethostname()}, started now, holds this run"),
    (["compare", "{list}", "{truncated}", "--out", "{done}/manifest.json"], None, "is inside the run folder"),
    (["compare", "{list}", "{truncated}", "--out", "{done}/report/x.html"], None, "is inside the run folder"),
    (["init", "--run-id", "../escape"], None, "run id '../escape' is not a plain name"),
    (["init", "--run-id", "done"], None, "done: a run of that name exists already"),
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
    (["run"], "00_ok:\n  INVOCATIONS: 100000.0\n  STEPS: 1000.0\n", "timed operations; the budget of one notebook"),
    (["run"], "00_ok:\n  REPEATS: 3.5\n", "REPEATS must be integer, got float 3.5"),
    (["run"], "00_ok:\n  THREADS: [1.0, 2.5]\n", "THREADS[1] must be integer, got float 2.5"),
    (["run"], b"00_ok:\n  STEPS: \xff\n", ".yaml: not UTF-8 text (byte 0xff at offset 16)"),
    (["run"], "00_ok:\n  THREADS: " + "[" * 5000 + "]" * 5000 + "\n", ".yaml: nested deeper than 6 levels (line 2)"),
    (["run"], "00_ok: {}\n\u202eko_00: {}\n", "section '\\u202eko_00' names a missing notebook"),
    (["run"], "00_ok:\n  STEPS: !!python/object/apply:os.system [true]\n", ".yaml: not valid YAML at line 2"),
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
        if isinstance(text, bytes):
            (project / "params" / f"{preset}.yaml").write_bytes(text)
        else:
            _params(project, text if text is not None else "00_ok: {}\n", preset)
    runs = _corrupt_runs(project)
    before = sorted((str(p), p.stat().st_mtime_ns) for p in project.rglob("*"))
    args = [a.format(**{k: str(v) for k, v in runs.items()}) for a in args]
    with pytest.raises(SystemExit) as e:
        sys.exit(cli.main(args))
    err = capsys.readouterr().err
    assert e.value.code != 0 and err.startswith("pinpath: ") and match in err, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err[:-1].isprintable(), err                                  # control and bidi characters escaped
    assert sorted((str(p), p.stat().st_mtime_ns) for p in project.rglob("*")) == before   # nothing written


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
        planning.plan("smoke", "host")
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("pass")]), project / "notebooks" / "00_ok.ipynb")
    with pytest.raises(BadParameter, match="has no cell tagged 'parameters'"):
        planning.plan("smoke", "host")


def _make_validate(*variables: str) -> subprocess.CompletedProcess:
    """`make validate` in the environment these tests run in (.venv, or the node's own Python
    under make test ENV=system), never rebuilding it."""
    in_venv = Path(sys.prefix).resolve() == (ROOT / ".venv").resolve()
    env = ["ENV=venv"] if in_venv else ["ENV=system", f"PYTHON={sys.executable}"]
    return subprocess.run(["make", "-s", "-o", "setup", "-o", ".venv/.stamp", "-o", ".site/.stamp", "validate",
                           *variables, *env], cwd=ROOT, capture_output=True, text=True)


def test_make_variables_reach_the_command_as_one_argument(tmp_path):
    """A make variable with shell in it is one (refused) argument, never run."""
    marker = tmp_path / "ran"
    r = _make_validate(f"PRESET=x\"; touch {marker}; echo \"")
    assert r.returncode != 0 and not marker.exists()
    assert "unknown preset 'x\"; touch" in r.stderr, r.stderr


# -- running ---------------------------------------------------------------------------------------
def test_failure_is_recorded_and_the_run_goes_on(tmp_path):
    out = tmp_path / "outs"
    (tmp_path / "params").mkdir()
    params = _params(tmp_path, "00_ok: {}\n01_broken: {}\n")
    lines = []
    run_dir, man = local.run("smoke", "host", nb_dir=FIXTURES, params_dir=params, out_dir=out, progress=lines.append)
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
    run_dir, man = local.run("smoke", "host", progress=lambda s: None)
    part = man["notebooks"]["00_leaky"]
    assert part["status"] == "leaked" and "+1 lock@0x" in part["error"] and "VmLck grew" in part["error"], part
    assert man["status"] == "failed"
    kernel = json.loads((run_dir / "status" / "00_leaky.kernel.json").read_text())
    assert kernel["vmlck_after_nbytes"] >= kernel["vmlck_before_nbytes"] + (1 << 20)


def test_a_dead_kernel_is_recorded_and_shown(project):
    _notebook(project / "notebooks" / "00_dies.ipynb", "import os\nos._exit(3)")
    _params(project, "00_dies: {}\n")
    run_dir, man = local.run("smoke", "host", progress=lambda s: None)
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
    # the run's own temporary folder: the kernels it makes (and must remove) are told apart from those of
    # other runs on this machine (the suite's background smoke run among them)
    (root / "tmp").mkdir(exist_ok=True)
    env = {**os.environ, "PINPATH_ROOT": str(root), "PINPATH_TEST_SLEEP_S": str(sleep_s), "PYTHONUNBUFFERED": "1",
           "TMPDIR": str(root / "tmp")}
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


def _kernel_dirs(root: Path) -> set[str]:
    """The kernels a run started by ``_start(root, ...)`` left behind."""
    return set(glob.glob(str(root / "tmp" / "pinpath-kernel-*")))


def test_sigterm_marks_the_run_interrupted_and_resume_finishes_it(tmp_path):
    _sleepy_project(tmp_path)
    proc = _start(tmp_path, sleep_s=60)
    _wait_for(proc, "[2/3] 01_sleeps: running")
    time.sleep(2)
    assert _kernel_dirs(tmp_path), "the running notebook's kernel is not where this test looks for it"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    run_dir = (tmp_path / "outputs" / "latest").resolve()
    man = json.loads((run_dir / "manifest.json").read_text())
    assert man["status"] == "interrupted" and man["interrupted_at"] == "01_sleeps"
    assert man["notebooks"]["00_ok"]["status"] == "ok" and man["notebooks"]["01_sleeps"]["status"] == "interrupted"
    assert man["notebooks"]["02_ok"]["status"] == "pending"
    assert (run_dir / "report" / "00_ok.html").exists() and (run_dir / "report" / "index.html").exists()
    assert not _kernel_dirs(tmp_path)
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
    man = finalizing.finalize(run_dir)
    assert man["notebooks"]["01_sleeps"]["status"] == "stale" and man["status"] == "failed"


def test_a_broken_data_file_is_named_in_the_report(tmp_path):
    out = tmp_path / "outs"
    (tmp_path / "params").mkdir()
    params = _params(tmp_path, "00_ok: {}\n01_broken: {}\n")
    run_dir, _ = local.run("smoke", "host", nb_dir=FIXTURES, params_dir=params, out_dir=out, progress=lambda s: None)
    (run_dir / "data" / "lock_cost.parquet").write_bytes(b"PAR1 truncated")
    man = finalizing.finalize(run_dir)
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
    stems = [p.stem for p in planning.available_notebooks(ROOT / "notebooks")]
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
        judges = "tables.conclusion(" in json.dumps(nb)     # a notebook that concludes on claims
        assert external_scripts(page) == [] and ("What the run found" in page or not judges), stem
        assert "What this notebook's data show" not in page      # finalize restated it from claims.csv
        assert (run_dir / "data" / f"harness.{stem}.parquet").exists()
    staging = pd.read_parquet(run_dir / "data" / "staging.parquet")
    assert {"path", "kind", "nbytes", "alloc_ns", "calls", "hazard"} <= set(staging.columns)
    assert set(staging.path) <= {"staged_fresh", "staged_pooled_hit", "staged_pooled_miss"}
    assert staging.verified.any()
    # the timed claims' data sets (issue 34 item 4): each repeat a fresh process of its own
    for name in ("c12", "lock_cost", "staging", "staging_cold", "lock_or_stage", "lock_or_stage_cold", "query_cost",
                 "query_saving", "query_saving_cold", "api_calls", "concurrency_native"):
        df = pd.read_parquet(run_dir / "data" / f"{name}.parquet")
        pids = df.groupby("repeat").pid.unique()
        assert set(df.repeat_unit) == {"process"} and len(pids) >= 2 and all(len(x) == 1 for x in pids), name
        assert len({x[0] for x in pids}) == len(pids), name
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
    assert list(claims.id) == [*(f"C{i}" for i in range(1, 12)), "C12a", "C12b", "C13", "C14", "C15"]  # C12: two readings
    assert {"id", "verdict", "measured", "low", "high", "threshold", "rule", "notebook"} <= set(claims.columns)
    assert set(claims.verdict) <= {"holds", "does not hold", "inconclusive", "not applicable", "not measured"}
    # C15 is half about LLVM's AMDGPU plugin: where an offload build runs the real libomptarget (a GPU node),
    # its NVIDIA half is measured and the claim reads "not measured" for the AMD half, saying so
    amd_half = claims.id.eq("C15") & claims.why.str.contains("needs an AMD GPU", regex=False)
    assert "not measured" not in set(claims[~amd_half].verdict), claims[["id", "why"]]
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
    again = finalizing.finalize(old)
    assert again["judged_by"]["commit"] not in ("0" * 40, None) and again["end"] == man["end"]
    assert os.readlink(outs / "latest") == "newer"      # the old run did not become the latest


# -- run folders as untrusted input (issue 20) ----------------------------------------------------------
DATA_WRITER = """from pinpath.report.outputs import NotebookOutputs
from pinpath.runtimes import open_runtime
with open_runtime("host") as rt:
    NotebookOutputs(RUN_DIR, NOTEBOOK).harness(rt, loops=10, rounds=2)"""
FLAKY = 'import os\nif os.environ.get("PINPATH_TEST_FAIL"):\n    raise ValueError("failing on purpose")'


def test_resume_redoes_missing_data_and_keeps_what_a_failed_redo_would_lose(project, monkeypatch):
    """RESUME says what it redoes (a notebook whose data is gone, too), takes over a stale lock
    with a notice, and puts a notebook's old outputs back when its redo fails."""
    _notebook(project / "notebooks" / "00_data.ipynb", DATA_WRITER)
    _notebook(project / "notebooks" / "01_flaky.ipynb", FLAKY)
    _params(project, "00_data: {}\n01_flaky: {}\n")
    monkeypatch.setenv("PINPATH_TEST_FAIL", "1")
    run_dir, man = local.run("smoke", "host", progress=lambda s: None)
    assert man["notebooks"]["00_data"]["data"] == ["harness.00_data.parquet"] and man["status"] == "failed"
    assert not (run_dir / "runner.lock").exists()
    failed_nb, failed_part = (run_dir / "notebooks" / "01_flaky.ipynb").read_bytes(), rf.read_part(run_dir, "01_flaky")
    (run_dir / "data" / "harness.00_data.parquet").write_bytes(b"PAR1 truncated")
    dead = subprocess.Popen(["true"])      # a pid that no longer runs holds the lock
    dead.wait()
    (run_dir / "runner.lock").write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "start": "then"}))
    lines = []
    _, man = local.resume(run_dir.name, progress=lines.append)
    said = "\n".join(lines)
    assert "took over the lock of pid" in said and "2 of 2 notebook(s) to run" in said, said
    assert "00_data: ok, but its data harness.00_data.parquet is missing or unreadable" in said, said
    assert "01_flaky: the redo ended failed; its earlier outputs are back in place" in said, said
    assert (run_dir / "data" / "harness.00_data.parquet").stat().st_size > 100
    assert man["notebooks"]["00_data"]["status"] == "ok"
    assert (run_dir / "notebooks" / "01_flaky.ipynb").read_bytes() == failed_nb
    assert rf.read_part(run_dir, "01_flaky") == failed_part
    assert not list(run_dir.glob(".aside-*")) and not (run_dir / "runner.lock").exists()


def test_resume_refuses_a_platform_that_does_not_start_and_keeps_everything(project, monkeypatch, capsys):
    from pinpath.errors import RuntimeUnavailable
    runs = _corrupt_runs(project)
    _notebook(project / "notebooks" / "00_ok.ipynb", "pass")
    (runs["done"] / "notebooks").mkdir()
    (runs["done"] / "notebooks" / "00_ok.ipynb").write_text("the GPU notebook")

    def no_gpu(name):
        raise RuntimeUnavailable(f"{name}: no driver here")
    monkeypatch.setattr(resuming, "open_runtime", no_gpu)
    before = sorted((str(p), p.stat().st_mtime_ns) for p in project.rglob("*"))
    assert cli.main(["run", "--resume", "done"]) == 2
    assert capsys.readouterr().err == "pinpath: host: no driver here\n"
    assert sorted((str(p), p.stat().st_mtime_ns) for p in project.rglob("*")) == before


def _fake_notebook(run_dir, stem, **kw):
    part = {"status": "ok", "duration_s": 0.0}
    rf.write_part(run_dir, stem, part)
    return part


def _one_notebook(project):
    _notebook(project / "notebooks" / "00_ok.ipynb", "pass")
    _params(project, "00_ok: {}\n")


def test_a_full_disk_ends_in_one_sentence_and_a_failed_run(project, monkeypatch, capsys):
    import errno
    _one_notebook(project)

    def full(*a, **kw):
        raise OSError(errno.ENOSPC, "No space left on device", str(project / "outputs" / "x" / "manifest.json"))
    with monkeypatch.context() as m:            # the run folder cannot be made: none is left behind
        m.setattr(rf, "write_manifest", full)
        assert cli.main(["run", "--preset", "smoke", "--platform", "host"]) == 2
    err = capsys.readouterr().err
    assert err.endswith("the run folder cannot be made (No space left on device)\n") and err.count("\n") == 1, err
    assert not [p for p in (project / "outputs").iterdir()]
    monkeypatch.setattr(local, "run_notebook", _fake_notebook)
    monkeypatch.setattr(local, "finalize", full)    # the report cannot be written
    assert cli.main(["run", "--preset", "smoke", "--platform", "host"]) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith("pinpath: ") and "cannot be written (No space left on device); the run" in err, err
    (run_dir,) = [p for p in (project / "outputs").iterdir()]
    man = rf.read_manifest(run_dir)
    assert man["status"] == "failed" and "No space left on device" in man["error"] and man["end"]


def test_a_second_signal_while_finishing_leaves_the_run_interrupted(project, monkeypatch, capsys, request):
    _one_notebook(project)
    # Python's own SIGINT handler, also where the tests were started in the background (SIGINT ignored)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))

    def first(run_dir, stem, **kw):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)

    def second(run_dir, **kw):
        assert kw["interrupted_at"] == "00_ok"
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    monkeypatch.setattr(local, "run_notebook", first)
    monkeypatch.setattr(local, "finalize", second)
    assert cli.main(["run", "--preset", "smoke", "--platform", "host"]) == 130
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("pinpath: ") and "stopped again while its report was written" in err, err
    assert "Traceback" not in err
    (run_dir,) = [p for p in (project / "outputs").iterdir()]
    man = rf.read_manifest(run_dir)
    assert man["status"] == "interrupted" and man["interrupted_at"] == "00_ok"
    assert not (run_dir / "runner.lock").exists()


def _create_many(out_dir: str) -> str:
    return rf.create(Path(out_dir), {"run_id": "20260101T000000Z-host-host"}, exact=False).name


def test_run_ids_and_latest_are_made_atomically(tmp_path):
    import multiprocessing
    with multiprocessing.get_context("fork").Pool(4) as pool:
        made = pool.map(_create_many, [str(tmp_path)] * 8)
    assert len(set(made)) == 8 and {d.name for d in tmp_path.iterdir()} == set(made)
    with multiprocessing.get_context("fork").Pool(4) as pool:
        assert all(pool.starmap(rf.point_latest, [(tmp_path, rid) for rid in made * 4]))
    assert (tmp_path / "latest").resolve().name in made
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]    # no temporary link left
    with pytest.raises(BadParameter, match="exists already"):
        rf.create(tmp_path, {"run_id": made[0]})
    (tmp_path / "latest").unlink()
    (tmp_path / "latest").write_text("a user's file")
    assert not rf.point_latest(tmp_path, made[0]) and (tmp_path / "latest").read_text() == "a user's file"


def test_a_local_run_reads_its_manifest_once_and_passes_it_to_each_notebook(project, monkeypatch):
    """The runner's guard reads the manifest; each notebook gets it (no read per notebook); the
    finalize, a command of its own, reads it again under its guard: two reads in all."""
    _notebook(project / "notebooks" / "00_a.ipynb", "pass")
    _notebook(project / "notebooks" / "01_b.ipynb", "pass")
    _params(project, "00_a: {}\n01_b: {}\n")
    given, reads, read = {}, [], rf.read_manifest

    def fake(run_dir, stem, **kw):
        given[stem] = kw.get("man")
        return _fake_notebook(run_dir, stem)
    monkeypatch.setattr(local, "run_notebook", fake)
    monkeypatch.setattr(rf, "read_manifest", lambda run_dir: reads.append(run_dir) or read(run_dir))
    run_dir, man = local.run("smoke", "host")
    assert sorted(given) == ["00_a", "01_b"]
    assert all(m is not None and stem in m["parameters"] and m["run_id"] == run_dir.name for stem, m in given.items())
    assert len(reads) == 2, reads
    assert man["status"] == "ok"


def test_latest_only_for_a_run_of_the_folder_of_runs(project, monkeypatch):
    """A committed reference judged again, or a run finalized elsewhere, never gets a `latest`."""
    _one_notebook(project)
    monkeypatch.setattr(local, "run_notebook", _fake_notebook)
    p = planning.plan("smoke", "host")
    with pytest.raises(BadParameter, match="committed references are read-only"):
        planning.init_run(p, project / "outputs" / "reference", "h200")
    ref = project / "outputs" / "reference" / "h200"        # a reference is made elsewhere, then committed
    ref.parent.mkdir(parents=True)
    planning.init_run(p, project / "made", "h200").rename(ref)
    with pytest.raises(BadParameter, match="a committed reference is read-only"):
        local._execute(ref, ["00_ok"], rf.read_manifest(ref), say=lambda s: None)
    finalizing.finalize(ref, reference_ok=True)       # pinpath finalize --reference
    assert not (project / "outputs" / "reference" / "latest").exists()
    assert not (project / "outputs" / "latest").exists()
    made = planning.init_run(p)
    run_dir, _ = local._execute(made, ["00_ok"], rf.read_manifest(made), say=lambda s: None)
    assert (project / "outputs" / "latest").resolve() == run_dir.resolve()


def test_whole_number_floats_become_integers_for_the_schema_and_the_budget(project):
    from pinpath.params import estimated_ops
    _sizes_project(project, "REPEATS: int = 1  # r\nTHREADS: list = [1]  # t\nTRANSFERS: int = 1  # n")
    _params(project, "00_ok:\n  REPEATS: 3.0\n  THREADS: [1.0, 2.0]\n")
    got = planning.plan("smoke", "host", overrides=["00_ok.TRANSFERS=1000.0"]).parameters["00_ok"]
    assert got == {"REPEATS": 3, "THREADS": [1, 2], "TRANSFERS": 1000}
    assert all(type(v) is int for v in [got["REPEATS"], got["TRANSFERS"], *got["THREADS"]])
    assert estimated_ops({"TRANSFERS": 1e6, "THREADS": [1] * 16, "REPEATS": 30.0}) == \
        estimated_ops({"TRANSFERS": 10**6, "THREADS": [1] * 16, "REPEATS": 30})


def test_make_splits_set_at_semicolons_only(tmp_path):
    """SET="A=[4KiB, 1MiB];B=2" is two settings, each one argument (read by `make validate`)."""
    r = _make_validate("PRESET=smoke", "PLATFORM=host", "NOTEBOOKS=00_platform",
                       "SET=00_platform.SIZES_NBYTES=[4KiB, 1MiB];99_nope.X=1")
    assert r.returncode != 0 and "unknown notebook '99_nope'" in r.stderr, r.stderr
    r = _make_validate("PRESET=smoke", "PLATFORM=host", "NOTEBOOKS=00_platform", "SET=00_platform.SIZES_NBYTES=[4KiB, 1MiB]")
    assert r.returncode == 0 and r.stdout.startswith("ok: 1 notebook(s), preset smoke"), r.stderr


# -- the parameter loader fuzzed: any document (or any bytes) as a preset file is accepted, or refused in
# one printable sentence with nothing written under outputs/

FUZZ_DECLARED = (("STEPS", "int", 1), ("THREADS", "list", [1]), ("REPEATS", "int", 1), ("TRANSFERS", "int", 1),
            ("SIZES_NBYTES", "list", [4096]), ("VERIFY", "str", '"all"'), ("POLICIES", "list", ["nextgen"]),
            ("KINDS", "list", ["heap"]), ("NBYTES", "int", 4096), ("WARMUP", "int", 0))

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(), st.text(max_size=12),
                     st.sampled_from(["4KiB", "1MiB", "64GiB", "1e8", "-4KiB", "nextgen", "heap", "all", "4 parsecs"]))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=5),
                                                         st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                       max_leaves=12)
_SECTION = st.one_of(st.none(), _VALUES,
                     st.dictionaries(st.sampled_from([n for n, _, _ in FUZZ_DECLARED] + sorted(SCHEMA) + ["PLATFORM", "bogus"]),
                                     _VALUES, max_size=4))
_DOCUMENT = st.one_of(
    st.dictionaries(st.one_of(st.just("00_ok"), st.text(max_size=8)), _SECTION, max_size=3)
    .map(lambda d: yaml.safe_dump(d, allow_unicode=True).encode()),
    st.builds(lambda v: yaml.safe_dump({"00_ok": v}, allow_unicode=True).encode(), _SECTION),
    st.text(max_size=200).map(str.encode),
    st.binary(max_size=200),
)


@settings(max_examples=int(os.environ.get("PINPATH_FUZZ_EXAMPLES", "100")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=_DOCUMENT)
def test_any_parameter_file_is_accepted_or_refused_in_one_sentence(project, document):
    if not (project / "notebooks" / "00_ok.ipynb").exists():
        _notebook(project / "notebooks" / "00_ok.ipynb", "pass", "\n".join(f"{n}: {t} = {d}  # x" for n, t, d in FUZZ_DECLARED))
        (project / "outputs").mkdir()
    (project / "params" / "smoke.yaml").write_bytes(document)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = cli.main(["validate", "--preset", "smoke", "--platform", "host"])
    err = err.getvalue()
    if rc == 0:
        assert err == ""
    else:
        assert rc == 2 and err.startswith("pinpath: ") and err.count("\n") == 1 and err[:-1].isprintable(), err
    assert not list((project / "outputs").iterdir())


def test_resume_never_moves_files_through_a_link_out_of_the_run(project, monkeypatch, capsys):
    _one_notebook(project)
    run_dir = planning.init_run(planning.plan("smoke", "host"))
    rf.write_part(run_dir, "00_ok", {"status": "failed"})
    rf.write_manifest(run_dir, {**rf.read_manifest(run_dir), "status": "failed"})
    outside = project / "elsewhere" / "notebooks" / "00_ok.ipynb"
    outside.parent.mkdir(parents=True)
    outside.write_text("a user's notebook")
    (run_dir / ".aside-00_ok").symlink_to(project / "elsewhere")
    monkeypatch.setattr(local, "run_notebook", _fake_notebook)
    assert cli.main(["run", "--resume", run_dir.name]) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith("pinpath: ") and "'.aside-00_ok' leads outside the run folder" in err, err
    assert outside.read_text() == "a user's notebook" and rf.read_manifest(run_dir)["status"] == "failed"


def test_a_read_only_folder_of_runs_at_resume_and_share_is_one_sentence(project, monkeypatch, capsys):
    import errno
    from pinpath.report import share
    runs = _corrupt_runs(project)
    _notebook(project / "notebooks" / "00_ok.ipynb", "pass")

    def read_only(*a, **kw):
        raise OSError(errno.EROFS, "Read-only file system", str(runs["done"] / "runner.lock"))
    monkeypatch.setattr(rf.RunLock, "acquire", read_only)
    monkeypatch.setattr(share, "share_run", read_only)
    before = sorted((str(p), p.stat().st_mtime_ns) for p in project.rglob("*"))
    assert cli.main(["run", "--resume", "done"]) == 2
    assert cli.main(["share", "done"]) == 2         # share takes the run's lock too
    err = capsys.readouterr().err.splitlines()
    assert err == [f"pinpath: {runs['done'] / 'runner.lock'}: cannot be written (Read-only file system); nothing was changed"] * 2, err
    assert sorted((str(p), p.stat().st_mtime_ns) for p in project.rglob("*")) == before


@pytest.mark.parametrize("given, seconds", [(None, None), ("", None), (" 90 ", 90), (900, 900)])
def test_one_check_of_the_cell_timeout(given, seconds):
    assert planning.cell_timeout_s(given) == seconds


@pytest.mark.parametrize("given, said", [("0", "must be a positive number of seconds, got 0"),
                                         (-3, "must be a positive number of seconds, got -3"),
                                         ("soon", "'soon' is not a whole number of seconds"),
                                         ("1.5", "'1.5' is not a whole number of seconds")])
def test_a_bad_cell_timeout_is_one_sentence(given, said):
    with pytest.raises(BadParameter, match=f"^{re.escape(said)}$"):
        planning.cell_timeout_s(given)


def test_plan_says_when_it_falls_back_to_another_platform(project, monkeypatch):
    from pinpath.runtimes import open_runtime

    def fallback(name):
        rt = open_runtime("host")
        rt.selection = [("cuda", "cuda runtime unavailable: no device"), ("host", "started")]
        return rt
    _sizes_project(project, "")
    _params(project, "00_ok: {}\n")
    monkeypatch.setattr(planning, "open_runtime", fallback)
    p = planning.plan("smoke", "auto")
    assert p.platform == "host"
    assert p.fallback == "running on platform host, because cuda (cuda runtime unavailable: no device) did not start"
    said = []
    monkeypatch.setattr(local, "init_run", lambda *a, **k: (_ for _ in ()).throw(OSError(28, "full")))
    monkeypatch.setattr(local, "plan", lambda *a, **k: p)
    with pytest.raises(Exception):
        local.run("smoke", "auto", progress=said.append)
    assert said[0] == "notice: " + p.fallback                  # the terminal says it first


def test_a_reference_judged_again_says_where_the_reference_beside_it_gives_another_verdict(project, monkeypatch):
    """finalize --reference: the why of a claim whose verdict another committed reference gives
    differently ends naming that reference and its verdict (issue 34: two machine starts)."""
    _one_notebook(project)
    p = planning.plan("smoke", "host")
    ref = project / "outputs" / "reference" / "h200"
    ref.parent.mkdir(parents=True)
    planning.init_run(p, project / "made", "h200").rename(ref)
    other = ref.parent / "h200-b"
    (other / "report").mkdir(parents=True)
    (other / "manifest.json").write_text(json.dumps({"runtime": {"device": "NVIDIA H200"}, "git": {"commit": "abcdef0"}}))
    (other / "report" / "claims.csv").write_text("id,verdict,measured,low,high,unit,why\nC6,holds,56.4,36.4,72.8,x,w\n")
    finalizing.finalize(ref, reference_ok=True)
    got = pd.read_csv(ref / "report" / "claims.csv").set_index("id")
    assert got.verdict["C6"] != "holds"
    assert got.why["C6"].endswith("; the verdict differs between the references: h200-b (NVIDIA H200, commit "
                                  "abcdef0) gives holds (56.4x (95 % CI 36.4–72.8))")
    assert "differs between the references" not in " ".join(got.drop(index="C6").why.astype(str))


def test_stop_by_leaves_what_would_not_fit_pending_and_resume_runs_it(project, monkeypatch, capsys):
    """``--stop-by``: a notebook whose longest earlier time (with the margin) exceeds what is left
    is not started, nor any after it; the run ends incomplete and a resume runs the rest. A
    notebook no run has timed is started; a committed reference's times count too."""
    for stem in ("00_a", "01_b", "02_c"):
        _notebook(project / "notebooks" / f"{stem}.ipynb", "pass")
    _params(project, "00_a: {}\n01_b: {}\n02_c: {}\n")
    took_s, ran = {"00_a": 10.0, "01_b": 100.0, "02_c": 10.0}, []

    def timed(run_dir, stem, **kw):
        ran.append(stem)
        part = {"status": "ok", "duration_s": took_s[stem]}
        rf.write_part(run_dir, stem, part)
        return part
    monkeypatch.setattr(local, "run_notebook", timed)
    monkeypatch.setattr(local, "redo_notebook", lambda run_dir, stem, why="", **kw: timed(run_dir, stem))
    said = []
    first, man = local.run("smoke", "host", stop_by_s=1, progress=said.append)   # nothing timed yet: all start
    assert man["status"] == "ok" and ran == ["00_a", "01_b", "02_c"], said
    ref = project / "outputs" / rf.REFERENCE / "earlier"         # its times count as a reference's
    ref.parent.mkdir()
    first.rename(ref)
    ran.clear()
    run_dir, man = local.run("smoke", "host", stop_by_s=60, progress=said.append)
    assert ran == ["00_a"], said
    assert man["status"] == "incomplete"
    assert [man["notebooks"][s]["status"] for s in ("00_a", "01_b", "02_c")] == ["ok", "pending", "pending"]
    line = next(s for s in said if "01_b: not started" in s)
    assert "took up to 100 s before (with the margin 140 s)" in line and f"RESUME={run_dir.name}" in line, line
    ran.clear()
    run_dir, man = local.resume(run_dir.name, stop_by_s=200, progress=said.append)
    assert ran == ["01_b", "02_c"] and man["status"] == "ok", said


def test_stop_by_is_checked_and_only_for_the_local_executor(project, capsys):
    _one_notebook(project)
    assert cli.main(["run", "--preset", "smoke", "--platform", "host", "--executor", "slurm", "--stop-by", "60"]) == 2
    assert "--stop-by (STOP_BY) is for the local executor" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["run", "--stop-by", "0"])
    assert "argument --stop-by: must be a positive number of seconds, got 0" in capsys.readouterr().err
    assert not (project / "outputs").exists() or not list((project / "outputs").iterdir())
