"""The timed claims' measurements over fresh processes (issue 34 item 4): experiments.replicated
and the driver it shares with notebook 14 (experiments.processes), on the host platform."""

from __future__ import annotations

import os

import pytest

from pinpath import experiments
from pinpath.errors import BadParameter
from pinpath.experiments import processes
from pinpath.schema import C12, LOCK_COST, NATIVE_THREADS, check_frame


def test_each_repeat_of_the_lock_cost_is_a_fresh_process_in_an_order_of_its_own(host_rt):
    df = check_frame(experiments.replicated(host_rt, "lock_cost", repeats=3, warmup=0, sizes_nbytes=[4096, 65536],
                                            kinds=["heap"]), LOCK_COST)
    assert sorted(set(df.repeat)) == [0, 1, 2] and set(df.repeat_unit) == {"process"}
    pids = df.groupby("repeat").pid.unique()
    assert all(len(p) == 1 for p in pids) and len({p[0] for p in pids}) == 3 and os.getpid() not in set(df.pid)
    # every process ran every point once (its own buffers), from C and from Python
    per = df[(df.source == "native") & (df.op == "lock")].groupby("repeat").nbytes.apply(sorted)
    assert per.tolist() == [[4096, 65536]] * 3
    # each process shuffled with its own seed: the sizes' order of the Python locks is not the same in all
    orders = {tuple(g[(g.op == "lock") & (g.source == "python")].nbytes) for _, g in df.groupby("repeat")}
    assert len(orders) > 1 or len(df) == 0


def test_c12_checks_the_bytes_in_the_first_process_only_when_asked_first(host_rt):
    df = check_frame(experiments.replicated(host_rt, "c12_cases", repeats=2, warmup=1, nbytes=1 << 20,
                                            verify="first"), C12)
    assert sorted(set(df.repeat)) == [0, 1] and set(df.repeat_unit) == {"process"}
    assert df[df.repeat == 0].verified.eq(True).all() and df[df.repeat == 1].verified.isna().all()
    assert set(df.case) >= {"1_lock_copy", "2_prelocked_copy", "3_relock_copy"}


def test_c13s_c_loop_over_processes_and_over_rounds(host_rt):
    kw = dict(threads=[1, 2], nbytes=15360, reps=5)
    p = check_frame(experiments.replicated(host_rt, "concurrency_native", repeats=2, warmup=0, **kw), NATIVE_THREADS)
    r = check_frame(experiments.replicated(host_rt, "concurrency_native", unit="round", repeats=2, warmup=1, **kw),
                    NATIVE_THREADS)
    for df, unit in ((p, "process"), (r, "round")):
        assert sorted(set(df.repeat)) == [0, 1] and set(df.repeat_unit) == {unit}
        assert df.groupby(["repeat", "threads", "op"]).size().loc[(0, 2, "relock")] == 2 * 5
    assert p.pid.nunique() == 2 and "pid" not in r


def test_the_unit_and_the_measurement_are_checked_and_a_failing_process_says_why(host_rt):
    with pytest.raises(BadParameter, match="unit of repeat is one of process, round"):
        experiments.replicated(host_rt, "lock_cost", unit="thread")
    with pytest.raises(BadParameter, match="unknown measurement"):
        experiments.replicated(host_rt, "bandwidth")
    with pytest.raises(processes.Failed, match="a process of lock cost failed .*No module named"):
        processes.run("pinpath.no_such_module", {"lock_cost": {}}, platform="host", repeats=1, warmup=0)


def test_on_the_gpu_each_process_opens_its_own_runtime_and_times_in_c(cuda_rt):
    """The GPU node: C12's cases and the lock cost in two fresh CUDA processes, timed in C."""
    c12 = check_frame(experiments.replicated(cuda_rt, "c12_cases", repeats=2, warmup=0, nbytes=1 << 20,
                                             verify="first"), C12)
    assert c12.pid.nunique() == 2 and (c12.source == "native").any() and c12[c12.repeat == 0].verified.eq(True).all()
    lc = check_frame(experiments.replicated(cuda_rt, "lock_cost", repeats=2, warmup=0, sizes_nbytes=[4096],
                                            kinds=["heap"]), LOCK_COST)
    assert sorted(set(lc.repeat)) == [0, 1] and (lc[(lc.op == "lock") & (lc.source == "native")].rc == 0).all()
