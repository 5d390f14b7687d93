"""Shared fixtures. After every test: locked bytes (VmLck) back to baseline, and every
runtime a test opened has undone each lock and allocation it made."""

from __future__ import annotations

import gc

import pytest

from pinpath import osinfo
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
