"""advise replays in the wait mode of the runtime it predicts for (LLVM's CUDA plugin: blocking) and says so."""

import os

import pytest

from pinpath.advise.main import _open_waiting_as, wait_lines
from pinpath.runtimes import WAIT_ENV, WAIT_NOT_APPLICABLE


def test_the_sentence_names_the_mode_the_replay_ran_in(monkeypatch):
    monkeypatch.delenv(WAIT_ENV, raising=False)
    assert wait_lines(WAIT_NOT_APPLICABLE, "host") == []
    assert "waiting blocking (`CU_CTX_SCHED_BLOCKING_SYNC`), as LLVM's CUDA plugin sets it" in wait_lines("blocking", "nvidia")[0]
    refused = wait_lines("auto", "nvidia", "device 0's primary context is already active in the auto mode")[0]
    assert refused.startswith("The replay ran with the CUDA context in the auto wait mode, not the blocking one LLVM's "
                              "CUDA plugin sets (device 0's primary context is already active")
    assert "(advise called inside a longer-lived process" in wait_lines("auto", "nvidia")[0]
    monkeypatch.setenv(WAIT_ENV, "auto")
    assert f"({WAIT_ENV} said so)" in wait_lines("auto", "nvidia")[0]


def test_the_open_leaves_the_environment_as_it_was(monkeypatch):
    monkeypatch.delenv(WAIT_ENV, raising=False)
    rt, why = _open_waiting_as("host", "auto", True)
    try:
        assert rt.wait_mode == WAIT_NOT_APPLICABLE and why == "" and WAIT_ENV not in os.environ
    finally:
        rt.close()


def test_on_cuda_a_fresh_process_replays_blocking():
    """In a process of its own (the pinpath advise command), the CUDA runtime opens blocking."""
    import subprocess
    import sys
    from pinpath.errors import RuntimeUnavailable
    from pinpath.runtimes import open_runtime
    try:
        open_runtime("cuda").close()
    except RuntimeUnavailable as e:
        pytest.skip(str(e))
    env = {k: v for k, v in os.environ.items() if k != WAIT_ENV}
    code = "from pinpath.advise.main import _open_waiting_as; rt, why = _open_waiting_as('cuda', 'auto'); print(rt.wait_mode, repr(why))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["blocking", "''"]
