"""Each experiment on a real runtime, small: declared columns, verified bytes, sane figures."""

import numpy as np
import pytest

from pinpath import experiments as ex
from pinpath.report import tables as claims
from pinpath.runtimes import has
from pinpath.experiments.lock_cost import COUNTED_CALL
from pinpath.schema import BANDWIDTH, C12, HARNESS, LOCK_COST, TRANSFERS, check_frame


def test_harness(any_rt):
    df = check_frame(ex.harness(any_rt, loops=200, rounds=5), HARNESS)
    m = dict(zip(df.metric, df.ns))
    assert m["trace_overhead_ns"] > 0 and m["null_call_ns"] > 0 and m["resolution_ns"] >= 1


@pytest.mark.parametrize("engine", ["auto", "python"])
def test_bandwidth(any_rt, engine):
    from pinpath.experiments.bandwidth import ROUNDS
    from pinpath.experiments.native import native_why_not
    df = check_frame(ex.bandwidth(any_rt, sizes_nbytes=[1 << 16, 1 << 20], repeats=2, warmup=1, verify="all",
                                  engine=engine), BANDWIDTH)
    policies = df[df.case.isin(["pinned", "pageable"])]
    if engine == "auto" and not native_why_not(any_rt):   # the engine's rows and the loops': ROUNDS a repeat
        assert df.groupby(["case", "direction", "nbytes", "repeat"]).size().eq(ROUNDS).all() and ROUNDS >= 8
        assert policies.dma_event_ns.isna().all()
    elif has(any_rt, "events"):
        assert policies.dma_event_ns.notna().all()
    assert {"pinned", "pageable", "plain_loop"} <= set(df.case) <= {"pinned", "pageable", "plain_loop", "sync_loop"}
    assert df[df.case != "plain_loop"].verified.all()
    assert (df.gb_per_s > 0).all()
    assert set(df[df.case == "pinned"].path) == {"pinned_direct"}
    table = claims.bandwidth_table(df)
    assert "pinned / plain loop" in table.columns and len(table) == 4


def test_lock_cost(any_rt):
    df = check_frame(ex.lock_cost(any_rt, sizes_nbytes=[4096, 1 << 20], repeats=2, warmup=1), LOCK_COST)
    ops = set(zip(df.op, df.state))
    assert {("lock", "pageable"), ("unlock", "locked"), ("relock", "locked"), ("query", "locked"),
            ("query", "pageable"), ("lock", "pinned"), ("query", "pinned")} <= ops
    assert (df[df.rc == 0].ns > 0).all() and set(df.source) <= {"python", "native"}
    assert set(df.backing) <= {"4k", "thp", "hugetlbfs", "runtime", "file"}
    both = df[(df.op == "lock") & (df.state == "pageable")]
    if (df.source == "native").any():   # the C figures are taken on the very same buffers
        assert set(both[both.source == "native"].nbytes) == set(both[both.source == "python"].nbytes)
    refused = df[df.error != ""]
    assert (refused.rc != 0).all()
    assert len(claims.lock_table(df))
    counted = df[df.op.isin(["relock_counted", "unlock_after_relock_counted"])]   # pinpath's count: from C,
    if (df.source == "native").any() and any_rt.relock != "counted":             # where the runtime keeps none
        assert set(counted.call) == {COUNTED_CALL} and (counted.rc == 0).all()
        assert len(counted) == 2 * len(df[(df.op == "relock") & (df.source == "native")])
    else:
        assert counted.empty


def test_concurrency_native_counts_where_the_runtime_does_not(any_rt):
    from pinpath.experiments.threads import concurrency_native
    from pinpath.nativelib import load
    if not has(any_rt, "native"):
        pytest.skip("no C library for this runtime")
    lib = load(any_rt.name)
    df = concurrency_native(any_rt, lib, threads=(1, 2), reps=4, warmup=1, repeats=1)
    ops = set(df.op)
    assert {"relock"} <= ops and (("relock_counted" in ops) == (not lib.locks_counted))
    counted = df[df.op.str.endswith("_counted")]
    assert (counted.rc == 0).all() and (counted.ns > 0).all()
    assert set(counted.groupby("threads").thread.nunique().items()) <= {(1, 1), (2, 2)}


def test_c12_cases(any_rt):
    df = check_frame(ex.c12_cases(any_rt, nbytes=1 << 22, repeats=2, warmup=1, verify="all"), C12)
    from pinpath.experiments.c12 import COUNTED
    native = df[df.source == "native"]
    counting = any_rt.relock == "counted"    # where the runtime keeps no count, pinpath's count is case 3 too
    assert set(df.case) - {COUNTED} == {"1_lock_copy", "2_prelocked_copy", "3_relock_copy", "pageable_copy"}
    assert (COUNTED in set(native.case)) == (len(native) > 0 and not counting)
    counted = df[df.case == COUNTED]
    assert (counted.lock_rc == 0).all() and (counted.lock_ns > 0).all() and (counted.unlock_ns > 0).all()
    assert df.verified.all()
    one = df[df.case == "1_lock_copy"]
    assert (one.lock_ns > 0).all() and (one.unlock_ns > 0).all()
    assert (df[df.case == "2_prelocked_copy"].lock_ns == 0).all()
    three = df[df.case == "3_relock_copy"]         # the re-lock answers as the runtime's semantics say
    refused = any_rt.relock == "refused"
    assert (three.lock_ns > 0).all() and ((three.lock_rc != 0) == refused).all(), three[["lock_rc", "lock_error"]]
    assert len(claims.c12_table(df)) >= 4


@pytest.mark.parametrize("engine", ["native", "python"])
@pytest.mark.parametrize("direction", ["h2d", "d2h"])
def test_policy_sweep_staging(any_rt, direction, engine):
    if engine == "native" and ex.native.native_why_not(any_rt):
        pytest.skip(ex.native.native_why_not(any_rt))
    df = check_frame(ex.policy_sweep(any_rt, sizes_nbytes=[4096, 1 << 18], directions=[direction], repeats=3,
                                     engine=engine), TRANSFERS)
    assert set(df.engine) == {engine}
    fresh, pooled = df[df.policy == "stage_per_copy"], df[df.policy == "stage_pooled"]
    assert (fresh.alloc_ns > 0).all() and (fresh.free_ns > 0).all()
    assert (pooled.alloc_ns == 0).all() and set(pooled.path) == {"staged_pooled_hit"}
    if engine == "python":
        assert df.verified.sum() == 4    # the first timed transfer of each point
    else:   # every row of the first repeat carries its point's check; the others none
        assert df[df.repeat == 0].verified.all() and df[df.repeat > 0].verified.isna().all()
        assert sorted(df.repeat.unique()) == [0, 1, 2]
    assert len(claims.c2_table(df)) == 2


@pytest.mark.parametrize("engine", ["native", "python"])
def test_policy_sweep_rows_say_where_the_timing_thread_ran(any_rt, engine):
    """Every round's rows carry the CPU and NUMA node the timing thread ran on when it began (as
    notebook 14's sections), so that a claim judged on them names its state (issue 33 item 1)."""
    import os
    from pinpath import machine_state
    if engine == "native" and ex.native.native_why_not(any_rt):
        pytest.skip(ex.native.native_why_not(any_rt))
    df = ex.policy_sweep(any_rt, policies=["stage_pooled"], sizes_nbytes=[4096], directions=["h2d"], repeats=2,
                         engine=engine)
    assert {"thread_cpu", "thread_node", "gpu_node"} <= set(df.columns)
    assert set(df.thread_cpu) <= set(os.sched_getaffinity(0))
    assert all(node == machine_state.cpu_node(cpu) for cpu, node in zip(df.thread_cpu, df.thread_node))


def test_replica_counts_and_threshold(any_rt):
    from pinpath.kernels import out_nbytes
    tr, calls = ex.replica(any_rt, policies=["stage_per_copy", "nextgen", "nextgen_lock_mapped"], nw_values=[2, 69],
                           steps=1, invocations_per_step=3, verify="all")
    check_frame(tr, TRANSFERS)
    moved = tr[(tr.event == "transfer")]
    assert moved.verified.all()
    assert (tr.event == "kernel").sum() == (6 * 3 if has(any_rt, "kernels") else 0)
    counts = claims.call_counts(tr, calls).set_index("policy")
    assert counts.loc["stage_per_copy", "alloc"] == 1 and counts.loc["stage_per_copy", "free"] == 1
    assert counts.loc["nextgen_lock_mapped", "lock"] == 0 and counts.loc["nextgen_lock_mapped", "alloc"] == 0
    big = moved[(moved.policy == "nextgen") & (moved.array == "out") & (moved.nw == 69)]
    assert out_nbytes(69) > 1 << 20 and set(big.path) == {"locked"}
    small = moved[(moved.policy == "nextgen") & (moved.array == "out") & (moved.nw == 2)]
    assert set(small.path) <= {"staged_pooled_hit", "staged_pooled_miss"}


def test_api_stats_in_rocprof_columns(any_rt):
    tr, calls = ex.replica(any_rt, policies=["lock_always"], nw_values=[2], steps=1, invocations_per_step=4,
                           user_pinned=[False, True])
    st = ex.api_stats(tr, calls)
    assert list(st.columns[:5]) == ["Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage"]
    for _, g in st.groupby(["user_pinned", "counted"]):   # one table per arm
        assert abs(g.Percentage.sum() - 100) < 1e-6
        assert (g.AverageNs == g.TotalDurationNs // g.Calls).all()
    assert "lock" in set(st.category)


def test_replica_counts_the_relock_where_the_runtime_keeps_no_count(host_rt):
    """mlock keeps no count: the user-pinned arm of lock_always also runs as a counting runtime
    would, each transfer's lock of the registered arrays and its unlock counted by pinpath (no
    runtime call, the application's pin kept), and C10's lock test judges that arm, labelled so."""
    from pinpath.engine import COUNT_CALLS
    from pinpath.report.claims import judge
    from pinpath.report.claims.measures.common import COUNTED
    from pinpath.registry import DATASETS
    from pinpath.report.rundata import RunData
    invocations = 4
    tr, calls = ex.replica(host_rt, policies=["lock_always"], nw_values=[2], steps=2, invocations_per_step=invocations,
                           user_pinned=[False, True], engine="native")
    api = check_frame(ex.api_calls(tr, calls), DATASETS["api_calls"])
    arm = api[api.counted.astype(bool)]
    assert arm.user_pinned.all() and len(arm)
    mine = arm[arm.caller == "runtime"]
    locks = mine[mine.category.isin(["lock", "unlock"])]
    assert set(locks.call) == set(COUNT_CALLS) and (locks.rc == 0).all()   # no runtime lock: pinpath's count only
    assert (locks.call == "pinpath_count_lock").sum() == 2 * 2 * invocations   # 2 arrays, 2 steps
    assert set(arm[arm.caller == "application"].call) == {"mlock", "munlock"}
    moved = tr[tr.counted.astype(bool) & (tr.event == "transfer")]
    assert set(moved.path) == {"locked"} and (moved.hazard == "").all() and moved.verified.fillna(True).all()
    own = tr[tr.user_pinned.astype(bool) & ~tr.counted.astype(bool) & (tr.event == "transfer")]
    assert (own.hazard != "").any()   # the runtime's own munlock undid the application's pin
    assert set(ex.api_stats(tr, calls).query("counted").Name) >= set(COUNT_CALLS)
    row = judge(["C10"], RunData({"api_calls": api}), "host").iloc[0]   # a GPU claim: shown for information here
    assert f"lock calls, {COUNTED}" in row.detail and "no re-lock was performed" not in row.detail, row.detail


@pytest.mark.unbalanced   # the probes lock twice and unlock what was never locked, on purpose
def test_semantics_probes(any_rt):
    from pinpath.schema import SEMANTICS
    from pinpath.experiments.semantics import PROBES
    df = check_frame(ex.semantics(any_rt), SEMANTICS)
    assert set(df.probe) == set(PROBES)
    assert df[df.action.str.startswith("query")].locked.notna().all()
    assert (df[df.error != ""].rc != 0).all()


def test_relied_lock_race(any_rt):
    from pinpath.experiments.limits import RACE_ANSWERS
    from pinpath.schema import HAZARD_MEANT
    race = check_frame(ex.relied_lock_race(any_rt, nbytes=1 << 20, copies=2, iterations=4, verify="all"),
                       HAZARD_MEANT)
    if not has(any_rt, "native"):
        assert race.empty
        return
    assert len(race) == 4 and set(race.answer) <= set(RACE_ANSWERS) and race.copy_verified.all()
    assert race.a_found_locked.astype(bool).all() and (race.b_lock_rc == 0).all()   # A relied on B's lock
    assert (race.b_unlock_rc == 0).all() and (race.idle_unlock_ns > 0).all()
    if any_rt.name == "host":   # the OS's share, labelled so (whether munlock returned mid-copy is up to the
        assert race.mechanism.str.startswith("the operating system").all()   # scheduler on a loaded machine)


def test_race_answer_reads_the_timestamps():
    from pinpath.experiments.limits import race_answer
    base = dict(premise=True, in_flight=True, failed=False, verified=True, unlock_start_ns=100, idle_unlock_ns=50)
    assert race_answer(**base, unlock_end_ns=400, copy_done_ns=300) == "waits"        # idle would end at 150
    assert race_answer(**base, unlock_end_ns=200, copy_done_ns=300) == "returns mid-copy"
    assert race_answer(**{**base, "idle_unlock_ns": 250}, unlock_end_ns=400, copy_done_ns=300) == "undecided"
    assert race_answer(**{**base, "verified": False}, unlock_end_ns=400, copy_done_ns=300) == "corrupts"
    assert race_answer(**{**base, "failed": True}, unlock_end_ns=400, copy_done_ns=300) == "fails"
    assert race_answer(**{**base, "in_flight": False}, unlock_end_ns=400, copy_done_ns=300) == "not in flight"
    assert race_answer(**{**base, "premise": False}, unlock_end_ns=400, copy_done_ns=300) == "no premise"


def test_hazard_and_limits(any_rt):
    from pinpath.schema import HAZARD, LIMITS
    # 4 MiB: two of them (A's lock, B's staging) fit a non-root user's 8 MiB lock limit
    # eight iterations: whether B's unlock falls inside A's copy is up to the scheduler on a loaded machine
    hz = check_frame(ex.page_sharing_hazard(any_rt, nbytes=4 << 20, iterations=8, verify="all"), HAZARD)
    assert hz.copy_verified.all() and len(hz) == 16 and set(hz.policy) == {"query_then_lock", "lock_always"}
    assert (hz.page_locked_before.astype(bool)).all()   # B's lock covers A's first page
    if any_rt.name == "host":   # mlock keeps no count: B's munlock unlocks A's page, whoever locked A
        assert set(hz.observed_by) == {"smaps"} and not hz.page_locked_after.astype(bool).any()
        assert (hz.hazard == hz.unlock_inside_copy).all() and hz.hazard.any()
    here, lim = ex.lock_limits(any_rt, limit_nbytes=8 << 20)
    check_frame(lim, LIMITS)
    assert set(lim.op) == {"lock", "alloc_pinned"} and len(lim) == 6
    assert "rlimit_memlock_soft_nbytes" in here
    if any_rt.name == "host":   # mlock obeys the lowered limit once CAP_IPC_LOCK is gone
        assert not lim[(lim.op == "lock") & (lim.nbytes == 16 << 20)].granted.any()
        assert lim[(lim.op == "lock") & (lim.nbytes == 4 << 20)].granted.all()


@pytest.mark.parametrize("engine", ["native", "python"])
def test_concurrency(any_rt, engine):
    from pinpath.schema import THREADS
    if engine == "native" and ex.native.native_why_not(any_rt):
        pytest.skip(ex.native.native_why_not(any_rt))
    df = check_frame(ex.concurrency(any_rt, policies=["lock_always", "nextgen_lock_mapped"], threads=[1, 3],
                                    transfers=5, repeats=2, engine=engine), THREADS)
    reps = 2 if engine == "native" else 1
    assert len(df) == reps * 2 * (1 + 3) and (df.overhead_ns > 0).all() and (df.aggregate_gb_per_s > 0).all()
    assert set(df.engine) == {engine}


def test_overlap(any_rt):
    df = ex.overlap_or_reason(any_rt, nbytes=1 << 20, chains=2, queues=[1, 2], repeats=1)
    if "not_applicable" in df:
        assert any_rt.name in df.not_applicable.iloc[0]
        return
    assert set(df.queues) == {1, 2} and df[df.repeat == 0].verified.all() and (df.wall_ns > 0).all()


def test_limits_stay_under_a_hard_limit_that_cannot_be_raised(host_rt):
    from pinpath.osinfo import memlock_limit_nbytes
    soft, hard = memlock_limit_nbytes()
    if hard < 0 or hard > 64 << 20:
        pytest.skip(f"RLIMIT_MEMLOCK hard limit is {hard}: too large to probe past it here")
    _, lim = ex.lock_limits(host_rt, limit_nbytes=4 * hard)
    assert (lim.limit_nbytes <= hard).all() and len(lim) == 6


def test_unknown_verify_mode_is_refused(host_rt):
    from pinpath.errors import BadParameter
    with pytest.raises(BadParameter, match="verify must be one of all, first, none, got 'some'"):
        ex.policy_sweep(host_rt, sizes_nbytes=[64], repeats=1, verify="some")


def test_around_covers_the_policy_calls_and_not_the_check(host_rt, monkeypatch):
    """A CUPTI tag passed as ``around`` must not see the byte check's own copies."""
    from contextlib import contextmanager

    from pinpath.memkinds import host_buffer
    from pinpath.policies import make_policy
    from pinpath.experiments.sweep import DeviceBuffers, transfer
    inside, seen = [False], []
    real_read = host_rt.read_device
    monkeypatch.setattr(host_rt, "read_device", lambda *a: (seen.append(inside[0]), real_read(*a))[1])

    @contextmanager
    def around():
        inside[0] = True
        yield
        inside[0] = False
    with DeviceBuffers(host_rt) as dev, host_buffer("heap", 8192, rt=host_rt) as buf, \
            make_policy("lock_always", host_rt) as pol:
        r = transfer(pol, buf, dev, dev.get(8192), "h2d", verify=True, around=around())
    assert r.verified and seen == [False]


@pytest.mark.parametrize("path, src, dst, direction, want", [
    ("driver_unobserved", "PAGEABLE", "DEVICE", "h2d", "driver_staged"),
    ("driver_unobserved", "DEVICE", "PINNED", "d2h", "driver_pinned"),
    ("driver_unobserved", "none", "DEVICE", "h2d", "driver_unobserved"),
    ("driver_unobserved", "DEVICE+PAGEABLE", "DEVICE", "h2d", "driver_unobserved"),
    ("locked_direct", "PINNED", "DEVICE", "h2d", "locked_direct"),
])
def test_observed_path(path, src, dst, direction, want):
    from pinpath.experiments.copy_paths import observed_path
    assert observed_path(path, src, dst, direction) == want


def test_label_paths_takes_the_largest_observed_size_not_above():
    import pandas as pd
    from pinpath.experiments.copy_paths import label_paths
    seen = pd.DataFrame({"policy": ["nextgen"] * 2, "kind": ["heap"] * 2, "direction": ["h2d"] * 2,
                         "nbytes": [4096, 1 << 20], "observed_path": ["driver_staged", "driver_pinned"]})
    timed = pd.DataFrame({"policy": ["nextgen"] * 3, "kind": ["heap"] * 3, "direction": ["h2d"] * 3,
                          "nbytes": [4096, 2 << 20, 100], "path": ["driver_unobserved"] * 2 + ["staged_fresh"]})
    assert list(label_paths(timed, seen).path) == ["driver_staged", "driver_pinned", "staged_fresh"]


def test_a_failing_thread_does_not_hang_the_others(host_rt, monkeypatch):
    """One thread's error breaks the barrier and is raised; the other threads do not wait forever."""
    import threading
    from pinpath.experiments import threads as th
    calls = [0]
    real = th.transfer

    def flaky(*a, **kw):
        calls[0] += 1
        if calls[0] == 2:
            raise RuntimeError("thread's first transfer failed")
        return real(*a, **kw)
    monkeypatch.setattr(th, "transfer", flaky)
    done: list = []
    t = threading.Thread(target=lambda: done.append(pytest.raises(RuntimeError, ex.concurrency, host_rt,
                                                                     policies=["lock_always"], threads=[3], transfers=2,
                                                                     engine="python")))
    t.start()
    t.join(20)
    assert not t.is_alive() and done and "first transfer failed" in str(done[0].value)


def test_rows_keep_no_warmup_round():
    from pinpath.experiments.sweep import Sweep
    sw = Sweep(repeats=2, warmup=3, key=None)
    for i, p in sw.rounds(["a", "b"]):
        sw.add(i, {"round": i, "point": p})
    assert sorted((r["round"], r["point"]) for r in sw.rows) == [(0, "a"), (0, "b"), (1, "a"), (1, "b")]


def test_sweep_rows_carry_repeat_and_platform_and_drop_the_warmup():
    from pinpath.experiments.sweep import Sweep
    sw = Sweep(repeats=2, warmup=1, platform="host")
    for i, p in sw.rounds(["a", "b"]):
        sw.add(i, {"point": p})
    sw.add(None, {"point": "map"})          # outside the rounds: kept as it is
    assert sorted((r.get("repeat"), r["point"], r.get("platform")) for r in sw.rows if "repeat" in r) == \
        [(0, "a", "host"), (0, "b", "host"), (1, "a", "host"), (1, "b", "host")]
    assert {"point": "map"} in sw.rows and len(sw.rows) == 5
    pairs = Sweep(key="iteration")
    pairs.add(0, ("record", {"kind": "heap"}))
    assert pairs.rows == [("record", {"iteration": 0, "kind": "heap"})]


def test_sweep_orders_share_one_seeded_generator():
    """Every order a sweep gives is a shuffle of its points from one generator: two sweeps of
    one seed agree, the warm-up of a plan keeps the given order, and every round holds every point."""
    from pinpath.experiments.sweep import Sweep, rounds
    a, b = Sweep(repeats=3, seed=5), Sweep(repeats=3, seed=5)
    pts = list(range(8))
    assert list(a.independent(pts)) == list(b.independent(pts))
    assert [r for r, _ in a.independent(pts)] == [0, 1, 2]
    plan = list(a.in_plan(pts, 2))
    assert plan[:8] == [(-1, p) for p in pts]
    assert [sorted(p for r, p in plan if r == k) for k in (0, 1)] == [pts, pts]
    assert list(rounds(pts, repeats=2, warmup=1, seed=9)) == list(Sweep(repeats=2, warmup=1, seed=9).rounds(pts))
    assert list(Sweep(repeats=2, warmup=1).in_order()) == [-1, 0, 1]
    assert a.shuffled(pts, seed=3) == b.shuffled(pts, seed=3) and sorted(a.shuffled(pts)) == pts


def test_sweep_refuses_a_bad_verify_mode_at_once():
    from pinpath.errors import BadParameter
    from pinpath.experiments.sweep import Sweep
    with pytest.raises(BadParameter, match="verify must be one of"):
        Sweep(verify="some")
    with pytest.raises(BadParameter, match="repeats must be at least 1"):
        Sweep(repeats=0)
    assert [Sweep(repeats=3, verify="first").checks(r) for r in range(3)] == [True, False, False]


@pytest.mark.parametrize("direction", ["h2d", "d2h"])
def test_poisoned_destination_is_judged_after_the_transfer(host_rt, direction):
    """Poisoned overwrites the destination; a transfer that did not happen is a failed check,
    one that did is verified, an unchecked one is None."""
    from pinpath.errors import VerificationFailed
    from pinpath.experiments.sweep import POISON, DeviceBuffers, Poisoned
    from pinpath.memkinds import host_buffer
    with DeviceBuffers(host_rt) as dev, host_buffer("heap", 4096, rt=host_rt, seed=3) as buf:
        dptr = dev.get(4096)
        src = buf.array.copy() if direction == "h2d" else dev.content[dptr]
        dst = Poisoned(host_rt, direction, buf.array, dptr, 4096, on=True, want=dev.content[dptr])
        seen = host_rt.read_device(dptr, 4096) if direction == "h2d" else buf.array
        assert (seen == POISON).all()
        with pytest.raises(VerificationFailed, match="the test's copy left the destination different"):
            dst.verdict("the test's copy")
        if direction == "h2d":
            host_rt.write_device(dptr, src)
        else:
            buf.array[:] = src
        assert dst.verdict("the test's copy") is True
        assert Poisoned(host_rt, direction, buf.array, dptr, 4096, on=False).verdict("unchecked") is None
        if direction == "d2h":       # a source known only after the transfer (a kernel's output)
            other = src.copy()
            other[0] ^= 0xFF
            with pytest.raises(VerificationFailed):
                dst.verdict("the kernel's output", want=other)


def test_the_fidelity_timing_thread_stays_on_the_gpus_node(monkeypatch):
    from types import SimpleNamespace

    from pinpath import machine_state
    from pinpath.experiments import fidelity
    assert fidelity.timing_cpu(SimpleNamespace(reason=lambda cap: "no device")) is None   # host: worker threads
    gpu = SimpleNamespace(reason=lambda cap: "")
    monkeypatch.setattr(machine_state, "cpus_by_node", lambda: {0: [0, 1], 1: [2, 3]})
    monkeypatch.setattr(machine_state, "gpu_node", lambda device=0: (1, "sysfs"))
    for now, pinned in ((0, 2), (3, 3), (-1, 2)):
        monkeypatch.setattr(machine_state, "thread_cpu", lambda now=now: now)
        assert fidelity.timing_cpu(gpu) == pinned
    monkeypatch.setattr(machine_state, "gpu_node", lambda device=0: (-1, "unknown"))
    monkeypatch.setattr(machine_state, "thread_cpu", lambda: 1)
    assert fidelity.timing_cpu(gpu) == 1                                # no NUMA facts: where it runs now


def test_bandwidth_loops_take_one_device_buffer_per_size_and_repeat(host_rt, monkeypatch):
    """The bare loops copy to one device buffer per size in a repeat, not a fresh one per copy
    (which once made notebook 00's bandwidth cell allocate and fill 256 MiB for every copy)."""
    from pinpath.experiments import sweep
    from pinpath.experiments.native import native_why_not
    if native_why_not(host_rt):
        pytest.skip(native_why_not(host_rt))
    got = []
    real_get = sweep.DeviceBuffers.get
    monkeypatch.setattr(sweep.DeviceBuffers, "get", lambda self, n, seed=7: got.append(n) or real_get(self, n, seed))
    df = ex.bandwidth(host_rt, sizes_nbytes=[4096, 1 << 16], repeats=2, verify="none")
    loops = df[df.case.isin(["plain_loop", "sync_loop"])]
    assert len(loops) > 4
    # per repeat: each policy case's sweep and each loop case get one buffer per size
    cases = df.case.nunique()
    assert len(got) == 2 * cases * 2


def test_device_patterns_are_made_once_and_read_only(host_rt):
    from pinpath.experiments.sweep import DeviceBuffers
    with DeviceBuffers(host_rt) as a, DeviceBuffers(host_rt) as b:
        pa, pb = a.get(1 << 16), b.get(1 << 16)
        assert a.content[pa] is b.content[pb] and not a.content[pa].flags.writeable
        assert a.content[pa].any()                       # never zeros
        assert (host_rt.read_device(pb, 1 << 16) == b.content[pb]).all()


def test_bandwidths_large_points_get_one_copy_a_repeat(host_rt, monkeypatch):
    from pinpath.experiments import native
    from pinpath.experiments.bandwidth import ROUNDS
    if native.native_why_not(host_rt):
        pytest.skip(native.native_why_not(host_rt))
    large = 1 << 20          # as large, here: a user's locked-memory limit (8 MiB) holds no 256 MiB buffer
    monkeypatch.setattr(native, "ONE_ROUND_NBYTES", large)
    df = ex.bandwidth(host_rt, sizes_nbytes=[4096, large], repeats=1, verify="none")
    n = df.groupby(["case", "nbytes"]).size().unstack("nbytes")
    assert (n[4096] == 2 * ROUNDS).all() and (n[large] == 2).all()   # two directions each


def test_large_points_get_one_round_after_their_warm_up():
    from pinpath.experiments.native import ONE_ROUND_NBYTES, rounds_for
    from pinpath.experiments.sweep import Sweep
    assert rounds_for(ONE_ROUND_NBYTES, 2) == 1 and rounds_for(ONE_ROUND_NBYTES - 1, 2) == 2
    visits = list(Sweep(repeats=1).in_plan(["small", "large"], 3, lambda p: 1 if p == "large" else 3))
    assert [p for i, p in visits if i < 0] == ["small", "large"]      # every point warmed up once
    assert sum(p == "large" for i, p in visits if i >= 0) == 1
    assert sum(p == "small" for i, p in visits if i >= 0) == 3


def test_the_mmap_threshold_is_fixed_in_every_pinpath_process():
    """open_runtime fixes glibc's mmap threshold: a freed large buffer does not move it, so the next
    one is a fresh mapping of 4 KiB pages (in THP's madvise mode), never recycled heap pages."""
    import subprocess
    import sys
    code = ("import ctypes; from pinpath import libc, open_runtime, osinfo; rt = open_runtime('host');\n"
            "L = libc.LIBC; L.malloc.restype = ctypes.c_void_p; L.malloc.argtypes = (ctypes.c_size_t,);\n"
            "L.free.argtypes = (ctypes.c_void_p,); n = 16 << 20\n"
            "L.free(L.malloc(n)); p = L.malloc(n); v = osinfo.find_vma(p)\n"
            "print(libc.mmap_threshold_nbytes(), v.pathname == '[heap]')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["131072", "False"]   # glibc's dynamic threshold would put it on the [heap]


def test_the_fidelity_ratio_pairs_the_two_sides_of_each_repeat_and_keeps_the_yardsticks_rows(host_rt, monkeypatch):
    from pinpath.experiments import fidelity
    monkeypatch.setattr(fidelity, "ROUND_TIERS", ())   # the caller's rounds and repeats at every size
    fid, eng, plain = fidelity.engine_fidelity(host_rt, sizes_nbytes=[4096], policies=("prepinned", "lock_always"),
                                               directions=("h2d",), repeats=3, rounds=2)
    assert set(plain.process) == {"notebook", "own"} and set(plain[plain.process == "notebook"]["first"]) == \
        {"engine", "plain"}                                   # which side went first alternates
    beside = plain[plain.process == "notebook"]
    for row in fid.itertuples():
        e = eng[(eng.event == "transfer") & (eng.policy == row.policy)].groupby("repeat").total_ns.median()
        p = beside[beside.policy == row.policy].groupby("repeat").ns.median()
        assert row.repeats == 3 and row.ratio == pytest.approx(float(np.median(e / p)))   # the repeats' own ratios
        assert row.engine_ns == pytest.approx(float(e.median())) and row.plain_ns == pytest.approx(float(p.median()))
        own = plain[(plain.process == "own") & (plain.policy == row.policy)]
        assert row.plain_process_ns == pytest.approx(float(own.groupby("repeat").ns.median().median()))


def test_the_fidelity_runs_both_sides_in_one_cache_state_and_names_it(host_rt, monkeypatch):
    """evict_nbytes reaches the engine's plan and the yardstick (in this process and apart), and every
    row says the state; the yardstick's -e writes other memory between its timed transfers only."""
    from pinpath.experiments import fidelity
    monkeypatch.setattr(fidelity, "ROUND_TIERS", ())
    fid, eng, plain = fidelity.engine_fidelity(host_rt, sizes_nbytes=[4096], policies=("prepinned",),
                                               directions=("h2d",), repeats=2, rounds=2, evict_nbytes=8 << 20)
    assert set(fid.cache) == set(plain.cache) == set(eng[eng.event == "transfer"].cache) == {"cold"}
    assert set(fid.evict_nbytes) == {8 << 20} and set(plain.process) == {"notebook", "own"}
    spec = [("driver_pageable", "h2d", 4096)]
    cold = fidelity.plain_policies("host", spec, repeats=1, rounds=5, evict_nbytes=256 << 20)
    hot = fidelity.plain_policies("host", spec, repeats=1, rounds=5, in_process=True)
    # 256 MiB written inside the clock reads would take more than 4 ms (64 GB/s); a 4 KiB copy takes far less
    assert len(cold) == len(hot) == 5 and cold.ns.median() < 4_000_000


def test_the_fidelitys_small_sizes_get_more_transfers_and_repeats_and_each_group_runs_side_by_side(host_rt, monkeypatch):
    from pinpath.experiments import fidelity
    assert fidelity.size_groups([4096, 1 << 20, 16 << 20, 256 << 20], 8, 5) == [
        ([4096, 1 << 20], 32, 9), ([16 << 20], 32, 5), ([256 << 20], 8, 5)]
    assert fidelity.size_groups([256 << 20], 8, 3) == [([256 << 20], 8, 3)]
    assert fidelity.size_groups([4096], 40, 12) == [([4096], 40, 12)]   # a caller's larger rounds and repeats win
    monkeypatch.setattr(fidelity, "ROUND_TIERS", ((4096, 6, 3),))
    fid, eng, plain = fidelity.engine_fidelity(host_rt, sizes_nbytes=[4096, 8192], policies=("prepinned",),
                                               directions=("h2d",), repeats=2, rounds=2)
    moved = eng[eng.event == "transfer"]
    for rows in (moved, plain[plain.process == "notebook"]):
        assert rows.groupby(["nbytes", "repeat"]).size().to_dict() == {
            (4096, 0): 6, (4096, 1): 6, (4096, 2): 6, (8192, 0): 2, (8192, 1): 2}
    assert fid.set_index("nbytes").repeats.to_dict() == {4096: 3, 8192: 2}
    own = plain[plain.process == "own"]   # the yardstick apart keeps the caller's repeats
    assert set(own.repeat) == {0, 1}


def test_a_cold_policy_sweep_runs_on_the_engine_and_says_so(host_rt):
    """policy_sweep(evict_nbytes=N): the engine's rows say cold and N, the engine's scratch is given
    back after; the Python policies refuse it in one sentence."""
    from pinpath import engine as native_engine
    from pinpath.errors import NotAvailable
    from pinpath.experiments import policy_sweep
    df = policy_sweep(host_rt, policies=["lock_always"], sizes_nbytes=[4096], directions=("h2d",), repeats=2,
                      evict_nbytes=4 << 20)
    moved = df[df.event == "transfer"]
    assert set(moved.cache) == {"cold"} and set(moved.evict_nbytes) == {4 << 20} and set(moved.engine) == {"native"}
    assert len(native_engine.load("host").scratch(0)) == 0
    hot = policy_sweep(host_rt, policies=["lock_always"], sizes_nbytes=[4096], directions=("h2d",), repeats=2)
    assert set(hot[hot.event == "transfer"].cache) == {"hot"}
    with pytest.raises(NotAvailable, match="native engine only"):
        policy_sweep(host_rt, policies=["lock_always"], sizes_nbytes=[4096], repeats=1, engine="python",
                     evict_nbytes=4 << 20)


def test_a_replica_step_that_raises_leaves_no_array_registered(host_rt, monkeypatch):
    """The Python replica's user-pinned arrays are unregistered also when a step raises (before,
    the application's registration outlived the buffers freed under it)."""
    import importlib
    rep = importlib.import_module("pinpath.experiments.replica")   # the module (the package exports the function)
    calls = []

    def failing(self, rng, kernel, check):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("a step failed")
        return orig(self, rng, kernel, check)

    orig = rep._Region.invocation
    monkeypatch.setattr(rep._Region, "invocation", failing)
    with pytest.raises(RuntimeError, match="a step failed"):
        ex.replica(host_rt, policies=["lock_always"], nw_values=[2], steps=2, invocations_per_step=2,
                   user_pinned=[True], engine="python")
    assert not host_rt.recorder.outstanding()
