"""Shared fixtures. After every test: locked bytes (VmLck) back to baseline, and every
runtime a test opened has undone each lock and allocation it made."""

from __future__ import annotations

import gc
import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pinpath import osinfo, paths
from pinpath.runtimes import open_runtime
from pinpath.errors import RuntimeUnavailable


@pytest.fixture(autouse=True)
def vmlck_baseline():
    before = osinfo.vmlck_nbytes()
    yield
    after = osinfo.vmlck_nbytes()
    if after != before:      # a buffer may only wait for the collector to be freed: collect, then judge
        gc.collect()
        after = osinfo.vmlck_nbytes()
    assert after == before, f"VmLck went from {before} to {after} bytes during the test"


_REPORT: list[str] = []


@pytest.fixture
def report():
    """A line for the end of the test session's output (figures a test measured)."""
    return _REPORT.append


def pytest_terminal_summary(terminalreporter):
    """Skips grouped by reason (one line each, with a count), then the figures tests measured."""
    reasons: dict[str, int] = {}
    for rep in terminalreporter.stats.get("skipped", []):
        text = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        text = text.removeprefix("Skipped: ")
        reasons[text] = reasons.get(text, 0) + 1
    if reasons:
        terminalreporter.section("skipped, by reason")
        for text, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
            terminalreporter.write_line(f"{n:5d}  {text}")
    if _REPORT:
        terminalreporter.section("pinpath figures")
        for line in _REPORT:
            terminalreporter.write_line(line)


def pytest_configure(config):
    config.addinivalue_line("markers", "unbalanced: the test makes unmatched lock/unlock calls on purpose "
                                       "(VmLck and outstanding locks are still checked)")


def _checked(rt, request):
    yield rt
    held = rt.recorder.outstanding()
    rt.close()
    assert not held, f"{rt.name}: locks or allocations left outstanding: {held}"
    if not request.node.get_closest_marker("unbalanced"):
        assert rt.recorder.acquired == rt.recorder.released, (rt.recorder.acquired, rt.recorder.released)


@pytest.fixture
def host_rt(request):
    yield from _checked(open_runtime("host"), request)


@pytest.fixture
def cuda_rt(request):
    try:
        rt = open_runtime("cuda")
    except RuntimeUnavailable as e:
        pytest.skip(str(e))
    yield from _checked(rt, request)


@pytest.fixture(params=["host", "cuda", "hsa", "hip"])
def any_rt(request):
    try:
        rt = open_runtime(request.param)
    except RuntimeUnavailable as e:
        pytest.skip(str(e))
    yield from _checked(rt, request)


# -- the project's own notebooks, once per session ----------------------------------------------
SMOKE_LOCK_NBYTES = 8 << 20      #: a non-root user's usual `ulimit -l`, for the smoke run


def _smoke_lock_limit() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    soft = SMOKE_LOCK_NBYTES if hard == resource.RLIM_INFINITY else min(SMOKE_LOCK_NBYTES, hard)
    resource.setrlimit(resource.RLIMIT_MEMLOCK, (soft, hard))


class _SmokeRun:
    """The smoke run as a child process, started as soon as the tests are collected where any of
    them needs it, so that the tests before those run meanwhile (about a minute of `make test`)."""

    def __init__(self, out: Path):
        self.out, self.proc, self.skip = out, None, ""
        prefix = []
        if os.geteuid() == 0:
            if not shutil.which("setpriv"):
                self.skip = "running as root, and setpriv (util-linux) is missing to drop CAP_IPC_LOCK"
                return
            prefix = ["setpriv", "--bounding-set=-ipc_lock", "--inh-caps=-ipc_lock", "--"]
        self.stderr_file = out / "stderr.txt"
        with open(self.stderr_file, "w") as err:
            self.proc = subprocess.Popen([*prefix, sys.executable, "-m", "pinpath", "run", "--preset", "smoke",
                                          "--platform", "host", "--outputs", str(out / "outs")],
                                         stdout=subprocess.DEVNULL, stderr=err, text=True,
                                         preexec_fn=_smoke_lock_limit)

    def result(self):
        """(run folder, manifest, stderr) once the run has ended; the test is skipped or fails as the run did."""
        if self.skip:
            pytest.skip(self.skip)
        rc = self.proc.wait()
        stderr = self.stderr_file.read_text()
        assert rc == 0, stderr[-3000:]
        run_dir = (self.out / "outs" / "latest").resolve()
        return run_dir, json.loads((run_dir / "manifest.json").read_text()), stderr

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.hookimpl(trylast=True)    # after -k and -m have deselected what they deselect
def pytest_collection_modifyitems(session, config, items):
    if (os.environ.get("PINPATH_SMOKE_RUN") or config.option.collectonly
            or not any("smoke_run" in getattr(i, "fixturenames", ()) for i in items)):
        return
    config._pinpath_smoke = _SmokeRun(config._tmp_path_factory.mktemp("smoke"))


def pytest_unconfigure(config):
    smoke = getattr(config, "_pinpath_smoke", None)
    if smoke is not None:
        smoke.stop()


@pytest.fixture(scope="session")
def smoke_run(request):
    """The project's own notebooks, smoke preset, host platform, through the command line, as a
    fresh non-root user runs them (8 MiB RLIMIT_MEMLOCK, no CAP_IPC_LOCK): (run folder,
    manifest, stderr). One run for the session, started in the background once the tests are
    collected: the runner's, report's and browser tests read it.
    ``PINPATH_SMOKE_RUN=<run folder>`` reads that run instead (its stderr is then empty)."""
    if os.environ.get("PINPATH_SMOKE_RUN"):      # look again at a run made before, without waiting
        run_dir = Path(os.environ["PINPATH_SMOKE_RUN"]).resolve()
        return run_dir, json.loads((run_dir / "manifest.json").read_text()), ""
    return request.config._pinpath_smoke.result()


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder of its own (notebooks/, params/, outputs/), where the runner looks."""
    for name, sub in (("PROJECT_ROOT", ""), ("NOTEBOOKS_DIR", "notebooks"), ("PARAMS_DIR", "params"),
                      ("OUTPUTS_DIR", "outputs")):
        monkeypatch.setattr(paths, name, tmp_path / sub if sub else tmp_path)
    (tmp_path / "params").mkdir()
    return tmp_path
