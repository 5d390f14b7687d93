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
    """The GPU node: C12's cases, the lock cost and C2's sweep with its cold arm in two fresh CUDA
    processes, timed in C (the sweeps on the engine)."""
    c12 = check_frame(experiments.replicated(cuda_rt, "c12_cases", repeats=2, warmup=0, nbytes=1 << 20,
                                             verify="first"), C12)
    assert c12.pid.nunique() == 2 and (c12.source == "native").any() and c12[c12.repeat == 0].verified.eq(True).all()
    lc = check_frame(experiments.replicated(cuda_rt, "lock_cost", repeats=2, warmup=0, sizes_nbytes=[4096],
                                            kinds=["heap"]), LOCK_COST)
    assert sorted(set(lc.repeat)) == [0, 1] and (lc[(lc.op == "lock") & (lc.source == "native")].rc == 0).all()
    sweeps = experiments.replicated_all(cuda_rt, {"policy_sweep": dict(sizes_nbytes=[4096], verify="first"),
                                                  "policy_sweep:cold": dict(sizes_nbytes=[4096], evict_nbytes=32 << 20)},
                                        repeats=2, warmup=1)
    for df in sweeps.values():
        assert df.pid.nunique() == 2 and set(df.engine) == {"native"} and set(df.repeat_unit) == {"process"}


def test_c2_c3_c4s_sweeps_and_their_cold_arms_share_fresh_processes(host_rt):
    """Notebooks 02, 05 and 06: the policy sweep, its cold arm ("policy_sweep:cold") and the query cost
    in the same fresh processes, each its own rows; the byte check in the first process only."""
    from pinpath.registry import DATASETS
    kw = dict(policies=["lock_always", "stage_per_copy"], verify="first")
    got = experiments.replicated_all(host_rt, {"policy_sweep": dict(kw, sizes_nbytes=[4096, 65536]),
                                               "policy_sweep:cold": dict(kw, sizes_nbytes=[4096], evict_nbytes=8 << 20),
                                               "lock_cost": dict(sizes_nbytes=[4096], kinds=["heap"])},
                                     repeats=3, warmup=1)
    assert set(got) == {"policy_sweep", "policy_sweep:cold", "lock_cost"}
    check_frame(got["lock_cost"], LOCK_COST)
    pids = {}
    for name, df in got.items():
        if name != "lock_cost":
            check_frame(df, DATASETS["staging"])
        assert sorted(set(df.repeat)) == [0, 1, 2] and set(df.repeat_unit) == {"process"}
        per = df.groupby("repeat").pid.unique()
        assert all(len(p) == 1 for p in per) and os.getpid() not in set(df.pid)
        pids[name] = [p[0] for p in per]
    assert len(set(pids["policy_sweep"])) == 3 and pids["policy_sweep"] == pids["policy_sweep:cold"] == pids["lock_cost"]
    hot, cold = got["policy_sweep"], got["policy_sweep:cold"]
    assert set(hot.cache) == {"hot"} and set(cold.cache) == {"cold"} and set(cold.nbytes) == {4096}
    # every process ran every point of its sweep (its own buffers), and checked bytes only in the first
    points = [sorted(set(zip(g.policy, g.nbytes, g.direction))) for _, g in hot.groupby("repeat")]
    assert len(points[0]) == 2 * 2 * 2 and all(x == points[0] for x in points)
    assert hot[hot.repeat == 0].verified.eq(True).all() and hot[hot.repeat > 0].verified.isna().all()
    # in rounds: the same measurements in this process, the sweep's repeats its own
    r = experiments.replicated_all(host_rt, {"policy_sweep": dict(kw, sizes_nbytes=[4096])}, unit="round", repeats=2,
                                   warmup=1)["policy_sweep"]
    assert sorted(set(r.repeat)) == [0, 1] and set(r.repeat_unit) == {"round"} and "pid" not in r


def test_c10s_replica_over_processes_drops_each_processs_warm_up_step(host_rt):
    """Notebook 08: the replica's calls (api_calls) with one untimed step and one timed step per fresh
    process: every process has the calls of one step, with and without user pinning; rocprof's
    table of them (calls_stats) counts every process's calls."""
    from pinpath.registry import DATASETS
    kw = dict(policies=["lock_always"], nw_values=[4], invocations_per_step=8, user_pinned=[False, True],
              verify="first")
    p = check_frame(experiments.replicated(host_rt, "api_calls", repeats=2, warmup=1, **kw), DATASETS["api_calls"])
    one = experiments.replicated(host_rt, "api_calls", unit="round", repeats=1, warmup=0, **kw)
    assert sorted(set(p.repeat)) == [0, 1] and set(p.repeat_unit) == {"process"} and p.pid.nunique() == 2
    assert os.getpid() not in set(p.pid) and set(one.repeat_unit) == {"round"}
    locks = p[p.category == "lock"].groupby(["repeat", "user_pinned"]).size()
    assert locks.loc[0].to_dict() == locks.loc[1].to_dict() == one[one.category == "lock"].groupby("user_pinned").size().to_dict()
    stats = experiments.calls_stats(p)
    assert stats.Calls.sum() == len(p) and set(stats.user_pinned) == {False, True}


def test_c2_c3_c4_c10_judged_on_rows_of_fresh_processes_say_so(host_rt):
    """The claims' rows over these processes (judged as on a GPU: the host's reading is not applicable):
    ``repeat_unit`` "process" and a why that reads "over N processes (between-process spread ...)"."""
    from pinpath.report.claims import judge
    got = experiments.replicated_all(host_rt, {
        "policy_sweep": dict(policies=["stage_per_copy", "stage_pooled", "lock_always", "query_then_lock"],
                             sizes_nbytes=[4096], app_pinned=[False, True], verify="none"),
        "lock_cost": dict(sizes_nbytes=[4096], kinds=["heap"])}, repeats=3, warmup=1)
    sweep = got["policy_sweep"]
    api = experiments.replicated(host_rt, "api_calls", repeats=2, warmup=1, policies=["lock_always"], nw_values=[4],
                                 invocations_per_step=8, user_pinned=[False, True])
    data = {"staging": sweep[~sweep.app_pinned.astype(bool)], "lock_or_stage": sweep[~sweep.app_pinned.astype(bool)],
            "query_cost": got["lock_cost"], "query_saving": sweep, "api_calls": api}
    rows = judge(["C2", "C3", "C4", "C10"], data, "cuda")
    assert list(rows.id) == ["C2", "C3", "C4", "C10"] and set(rows.repeat_unit) == {"process"}
    for row in rows.itertuples():
        assert f"over {int(row.n_repeats)} processes (between-process spread" in row.why, (row.id, row.why)
    assert list(rows.n_repeats) == [3, 3, 3, 2]
