"""The CUDA wait mode: set at open in a fresh process, read back, refused where the context is
already active in another mode; the model in both modes over fresh processes, and on the host the
sentence why it is not applicable (the term then not measured, with that reason)."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from pinpath.errors import RuntimeUnavailable
from pinpath.experiments import processes, real_terms, wait_mode
from pinpath.experiments.real_runtime import RealRun
from pinpath.experiments.replica_compare import model_plan
from pinpath.runtimes import WAIT_ENV, WAIT_NOT_APPLICABLE, open_runtime
from pinpath.schema import MODEL_INVOCATIONS, REAL_INVOCATIONS, WAIT_MODEL, check_frame, frame

LIB = str(Path(wait_mode.__file__).resolve().parents[2])


def test_the_modes_interleave_process_by_process():
    assert [wait_mode.mode_of(r) for r in range(8)] == ["auto", "blocking", "blocking", "auto"] * 2


def test_on_the_host_the_wait_mode_is_not_applicable_and_the_term_not_measured(host_rt):
    assert host_rt.wait_mode == WAIT_NOT_APPLICABLE
    plan = model_plan("nvidia", ["plain"])
    got = wait_mode.wait_model(host_rt, plan, nw_values=[4], steps=1, invocations=4, processes_per_mode=1)
    why = got.not_applicable.iloc[0]
    assert why.startswith("host: the wait mode is not applicable")
    # the fresh process itself says so too (its measurement refused, the process not failed)
    spec = {"plan": plan.astype(object).where(plan.notna(), None).to_dict("records"), "nw_values": [4], "steps": 1,
            "invocations": 4}
    child = processes.run(wait_mode.__name__, {"wait_model": spec}, platform="host", repeats=1, warmup=0,
                          vary=lambda r, _: {"wait": wait_mode.mode_of(r)})["wait_model"]
    assert child == why
    # test input for the other sides: a model and a real run of one point, 2 invocations each
    model = frame([{"variant": "plain", "policy": "driver_pageable", "user_pinned": False, "threshold_nbytes": None,
                    "nw": 4, "step": 0, "invocation": i, "ns": 10_000, "h2d_ns": 0, "kernel_ns": 0, "d2h_ns": 10_000,
                    "sync_ns": 0, "kernel_only_ns": 4_000, "repeat": 0, "platform": "host"} for i in range(2)],
                  MODEL_INVOCATIONS)
    inv = frame([{"variant": "plain", "nw": 4, "process": 0, "traced": False, "step": 0, "invocation": i, "ns": 20_000,
                  "verified": True, "vendor": "host", "arch": ""} for i in range(2)], REAL_INVOCATIONS)
    t = real_terms.model_terms(model, RealRun(pd.DataFrame(), inv, pd.DataFrame(), pd.DataFrame()), wait=got)
    assert t[t.term == "blocking wait"].note.tolist() == [why] and t[t.step == 3].ratio.isna().all()
    assert real_terms.wait_phases(got).not_applicable.iloc[0] == why


def test_each_process_gets_its_own_environment(tmp_path, monkeypatch):
    """``vary_env``: the variables of process r reach that process before it opens anything."""
    (tmp_path / "envtarget.py").write_text(textwrap.dedent(f"""
        import os
        from contextlib import contextmanager
        import pandas as pd
        @contextmanager
        def open_for_process(platform, device):
            yield os.environ.get("{WAIT_ENV}", "")
        SECTIONS = {{"seen": lambda first, **kw: pd.DataFrame([{{"seen": first}}])}}
        """))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    got = processes.run("envtarget", {"seen": {}}, platform="host", repeats=4, warmup=0,
                        vary_env=lambda r: {WAIT_ENV: wait_mode.mode_of(r)})["seen"]
    assert list(got.sort_values("repeat").seen) == ["auto", "blocking", "blocking", "auto"]


def test_interleaved_processes_start_one_per_call_and_the_rest_at_the_end(monkeypatch):
    """``Interleaved``: each call (after a round of another measurement) starts the next process, in
    ``mode_of`` order, its byte check in the first of each mode; ``frame()`` starts those left."""
    started = []

    def fake_run(target, specs, *, repeats, first, vary, vary_env, **_):
        assert repeats == 1 and target == wait_mode.__name__
        started.append((first, vary_env(first)[WAIT_ENV], vary(first, "wait_model")["verify"]))
        row = {c: 0 for c in WAIT_MODEL} | {"variant": "plain", "policy": "driver_pageable", "platform": "cuda",
                                            "wait": wait_mode.mode_of(first), "repeat": first, "threshold_nbytes": None}
        return {"wait_model": pd.DataFrame([row])}

    monkeypatch.setattr(processes, "run", fake_run)
    rt = type("Rt", (), {"name": "cuda", "wait_mode": "auto", "device": 0})()
    waiting = wait_mode.Interleaved(rt, model_plan("nvidia", ["plain"]), nw_values=[16], steps=1, invocations=4,
                                    processes_per_mode=2, verify="all")
    waiting(0)
    waiting(1)
    assert started == [(0, "auto", "all"), (1, "blocking", "all")]
    got = check_frame(waiting.frame(), WAIT_MODEL)
    assert [s[:2] for s in started] == [(0, "auto"), (1, "blocking"), (2, "blocking"), (3, "auto")]
    assert [s[2] for s in started[2:]] == ["none", "none"] and list(got.repeat) == [0, 1, 2, 3]
    assert waiting.said() == "4 wait-mode processes, one after each of the real runs' rounds 1, 2, 2 after them."
    waiting(5)   # none left: nothing more starts
    assert len(started) == 4
    # a process that fails: the reason, and nothing more starts
    monkeypatch.setattr(processes, "run", lambda *a, **k: (_ for _ in ()).throw(processes.Failed("cuda: it died")))
    broken = wait_mode.Interleaved(rt, model_plan("nvidia", ["plain"]), nw_values=[16], steps=1, invocations=4,
                                   processes_per_mode=1)
    broken(0)
    assert broken.frame().not_applicable.iloc[0] == "cuda: it died" and broken.said() == ""


def test_interleaved_processes_spread_evenly_over_the_rounds_given(monkeypatch):
    """With the other measurement's rounds: 5 per mode over 5 rounds, one of each mode after every
    round; 3 per mode over 5 rounds, the rest spread (2, 1, 1, 1, 1), none left for the end."""
    started = []

    def fake_run(target, specs, *, first, **_):
        started.append(first)
        row = {c: 0 for c in WAIT_MODEL} | {"variant": "plain", "policy": "driver_pageable", "platform": "cuda",
                                            "wait": wait_mode.mode_of(first), "repeat": first, "threshold_nbytes": None}
        return {"wait_model": pd.DataFrame([row])}

    monkeypatch.setattr(processes, "run", fake_run)
    rt = type("Rt", (), {"name": "cuda", "wait_mode": "auto", "device": 0})()
    for per_mode, after in ((5, [2, 2, 2, 2, 2]), (3, [2, 1, 1, 1, 1])):
        started.clear()
        waiting = wait_mode.Interleaved(rt, model_plan("nvidia", ["plain"]), nw_values=[16], steps=1, invocations=4,
                                        processes_per_mode=per_mode, rounds=5)
        counts = []
        for k in range(5):
            waiting(k)
            counts.append(len(started) - sum(counts))
        assert counts == after and len(waiting.frame()) == 2 * per_mode and len(started) == 2 * per_mode
        if per_mode == 5:   # each round: one process of each mode
            assert all({wait_mode.mode_of(i) for i in (2 * k, 2 * k + 1)} == {"auto", "blocking"} for k in range(5))
            assert waiting.said() == "10 wait-mode processes, 2 after each of the real runs' rounds 1, 2, 3, 4, 5."
        else:
            assert waiting.said() == ("6 wait-mode processes, after the real runs' rounds: 2 after round 1, "
                                      "1 after round 2, 1 after round 3, 1 after round 4, 1 after round 5.")


def test_an_unknown_wait_mode_is_refused(monkeypatch):
    from pinpath.errors import BadParameter
    from pinpath.runtimes.cuda_ import CudaRuntime
    monkeypatch.setenv(WAIT_ENV, "spinning")
    with pytest.raises(BadParameter, match="PINPATH_CUDA_WAIT is one of auto, blocking, not 'spinning'"):
        CudaRuntime()


# -- on a CUDA device (skipped elsewhere with the runtime's reason) ------------------------------------------
def _fresh(code: str, wait: str) -> subprocess.CompletedProcess:
    env = {**os.environ, WAIT_ENV: wait, "PYTHONPATH": os.pathsep.join([LIB, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=300)


@pytest.fixture
def cuda_here():
    try:
        open_runtime("cuda").close()
    except RuntimeUnavailable as e:
        pytest.skip(str(e))


def test_a_fresh_process_opens_in_the_blocking_mode_and_reads_it_back(cuda_here):
    code = """
        from pinpath.runtimes import open_runtime
        from cuda.bindings import driver
        rt = open_runtime("cuda")
        err, flags = driver.cuCtxGetFlags()
        print(rt.describe()["wait_mode"], rt.wait_mode, int(flags) & 7)
        """
    blocking = _fresh(code, "blocking")
    assert blocking.returncode == 0, blocking.stderr
    assert blocking.stdout.split() == ["blocking", "blocking", "4"]   # CU_CTX_SCHED_BLOCKING_SYNC
    auto = _fresh(code, "auto")
    assert auto.returncode == 0, auto.stderr
    assert auto.stdout.split()[0] == auto.stdout.split()[1] != "blocking" and auto.stdout.split()[2] != "4"


@pytest.mark.parametrize("first", ["cudart", "native"])
def test_a_context_already_active_in_another_mode_is_refused(cuda_here, first):
    """A context created before pinpath opens (by the runtime API or the native library's start,
    cudaSetDevice + cudaFree(0)) is in CUDA's default mode: the blocking open refuses in one sentence."""
    start = ("from cuda.bindings import runtime as r; r.cudaSetDevice(0); r.cudaFree(0)" if first == "cudart" else
             "from pinpath.nativelib import load; load('cuda')._ensure()")
    code = f"""
        {start}
        from pinpath.errors import RuntimeUnavailable
        from pinpath.runtimes import open_runtime
        try:
            open_runtime("cuda")
        except RuntimeUnavailable as e:
            print("refused:", e)
        """
    p = _fresh(code, "blocking")
    if first == "native" and "NativeUnavailable" in p.stderr:
        pytest.skip(p.stderr.strip().splitlines()[-1])
    assert p.returncode == 0, p.stderr
    assert "refused: cuda runtime unavailable in the blocking wait mode: device 0's primary context is already " \
           "active in the auto mode" in p.stdout


def test_an_auto_open_of_a_blocking_context_is_refused(cuda_here):
    """The other way: once the process's context waits blocking, a runtime opened in auto says so."""
    code = f"""
        import os
        from pinpath.errors import RuntimeUnavailable
        from pinpath.runtimes import open_runtime
        first = open_runtime("cuda")
        os.environ["{WAIT_ENV}"] = "auto"
        try:
            open_runtime("cuda")
        except RuntimeUnavailable as e:
            print(first.wait_mode, "refused:", e)
        """
    p = _fresh(code, "blocking")
    assert p.returncode == 0, p.stderr
    assert "blocking refused: cuda runtime unavailable in the auto wait mode: device 0's context waits in the " \
           "blocking mode" in p.stdout


def test_the_model_runs_in_both_modes_over_fresh_processes(cuda_rt):
    plan = model_plan("nvidia", ["plain", "app_pinned"])
    got = check_frame(wait_mode.wait_model(cuda_rt, plan, nw_values=[4], steps=1, invocations=8, processes_per_mode=2),
                      WAIT_MODEL)
    per = got.groupby("repeat")[["wait", "wait_in_force"]].first()
    assert list(per.wait) == ["auto", "blocking", "blocking", "auto"]
    assert (per.wait_in_force[per.wait == "blocking"] == "blocking").all()
    assert (per.wait_in_force[per.wait == "auto"] != "blocking").all()
    assert got.pid.nunique() == 4 and set(got.variant) == {"plain", "app_pinned"}
    phases = real_terms.wait_phases(got)
    assert (phases.auto_processes == 2).all() and phases.difference_ns.notna().all()


def test_a_process_labels_its_rows_and_refuses_a_mode_not_in_force(host_rt, monkeypatch):
    """The section a fresh process runs, on the host with a wait mode stood in for (test input:
    the host has none): the plan as JSON gives the replica model, each row labelled with the mode
    asked for and the one in force; a mode asked for that is not in force fails the process."""
    from pinpath.errors import PinpathError
    monkeypatch.setattr(host_rt, "wait_mode", "auto", raising=False)
    plan = model_plan("nvidia", ["plain", "app_pinned"])
    records = plan.astype(object).where(plan.notna(), None).to_dict("records")
    got = wait_mode.SECTIONS["wait_model"](host_rt, wait="auto", plan=records, nw_values=[4], steps=1, invocations=3,
                                           repeats=1, warmup=0, seed=1)
    assert set(got.wait) == {"auto"} and set(got.wait_in_force) == {"auto"} and set(got.variant) == {"plain", "app_pinned"}
    assert len(got) == 2 * 3 and got.kernel_only_ns.notna().all()
    with pytest.raises(PinpathError, match="asked for the blocking wait mode, the context waits in the auto mode"):
        wait_mode.SECTIONS["wait_model"](host_rt, wait="blocking", plan=records, nw_values=[4], steps=1, invocations=3)


def test_auto_never_passes_over_a_runtime_in_the_wrong_wait_mode(monkeypatch):
    """open_runtime("auto") passes over a platform that is absent, never one whose context waits in
    another mode than asked (it would measure another platform without saying so); test input: a
    stand-in CUDA backend that refuses its mode, the host after it."""
    import pinpath.runtimes as runtimes
    from pinpath.errors import WaitModeRefused
    from pinpath.vocab import Platform

    class Refusing:
        def __init__(self, recorder=None):
            raise WaitModeRefused("cuda runtime unavailable in the blocking wait mode: (test input)")

    real_backend = runtimes._backend
    monkeypatch.setattr(runtimes, "_backend", lambda p: Refusing if p == Platform.CUDA else real_backend(p))
    monkeypatch.setattr(runtimes, "AUTO_ORDER", (Platform.CUDA, Platform.HOST))
    with pytest.raises(WaitModeRefused, match="test input"):
        open_runtime("auto")
