"""The native transfer engine: every policy moves the bytes, paths come from the runtime's
answers, the call log holds each op's calls, bad plans are refused in one sentence, threads run."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pinpath import engine
from pinpath.errors import BadParameter, UnknownName
from pinpath.toolchain import NativeUnavailable
from pinpath.experiments.sweep import DeviceBuffers
from pinpath.memkinds import host_buffer
from pinpath.vocab import POLICY_STEPS, MemoryKind, Policy

#: every policy whose buffers a plan makes itself (the pinned allocator's come from its own plans: adopt)
POLICIES = [str(p) for p, steps in POLICY_STEPS.items() if not steps.allocates]


@pytest.fixture
def eng(any_rt):
    reason = engine.why_not(any_rt.name) if any_rt.name in ("cuda", "hsa", "host") else "no engine build"
    if reason:
        pytest.skip(reason)
    return engine.load(any_rt.name)


def _moved(rt, eng, policy, nbytes, *, pinned_first=False):
    """H2D then D2H of one buffer in one plan; returns (executed, host bytes, device bytes after H2D)."""
    with host_buffer(MemoryKind.HEAP, nbytes, rt=rt, seed=3) as buf, DeviceBuffers(rt) as dev:
        dptr = dev.get(nbytes)
        want_dev = buf.array.copy()
        p = engine.Plan()
        b = p.buffer(buf.ptr, dptr, nbytes)
        if pinned_first:
            p.app_lock(b)
        p.map(b)
        p.transfer(b, "h2d")
        done1 = eng.run(policy, p)
        got_dev = rt.read_device(dptr, nbytes)
        p2 = engine.Plan()
        b2 = p2.buffer(buf.ptr, dptr, nbytes)
        buf.array[:] = 0xA5
        p2.transfer(b2, "d2h")
        p2.unmap(b2)
        if pinned_first:
            p2.app_unlock(b2)
        done2 = eng.run(policy, p2)
        return done1, done2, want_dev, got_dev, buf.array.copy()


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("nbytes", [4096, 3 << 20])
def test_every_policy_moves_the_bytes(any_rt, eng, policy, nbytes):
    done1, done2, want, got_dev, back = _moved(any_rt, eng, policy, nbytes)
    assert np.array_equal(got_dev, want), (policy, done1.path(1))
    assert np.array_equal(back, want), (policy, done2.path(0))
    assert done1.path(1) not in ("copy_failed", "failed") and done2.path(0) not in ("copy_failed", "failed")


def test_paths_follow_the_runtime_answers(any_rt, eng):
    """nextgen below its threshold stages through the exact pool, at it locks; with the application's
    own pin, lock_always meets memory locked already: CUDA answers 712 (a path of its own, already_locked,
    with the refusal in `error`), HSA and mlock grant the re-lock (locked)."""
    small = _moved(any_rt, eng, "nextgen", 4096)[0]
    big = _moved(any_rt, eng, "nextgen", 1 << 20)[0]
    assert small.path(1) == "staged_pooled_miss" and big.path(1) == "locked"
    pinned = _moved(any_rt, eng, "lock_always", 4096, pinned_first=True)[0]
    rows = pinned.transfers()
    t = rows[rows.event == "transfer"].iloc[0]
    if any_rt.name == "cuda":
        assert t.path == "already_locked" and "712" in t.error and t.unlock_ns == 0
    else:
        assert t.path == "locked" and t.error == "" and t.lock_ns > 0 and t.unlock_ns > 0


def test_the_call_log_holds_each_ops_calls(any_rt, eng):
    done = _moved(any_rt, eng, "stage_per_copy", 8192)[0]
    rows, calls = done.transfers(), done.calls(any_rt.call_categories)
    t = rows[rows.event == "transfer"].iloc[0]
    mine = calls[calls.transfer_id == t.op_index]
    assert len(mine) == t.n_calls >= 4 and list(mine.call) == [c.split("=")[0] for c in t.calls.split()]
    assert set(mine.category) >= {"alloc", "copy", "wait", "free"}
    assert (mine.start_ns >= t.start_ns).all() and (mine.end_ns <= t.end_ns).all()
    phases = t[[c for c in rows.columns if c.endswith("_ns") and c not in ("start_ns", "end_ns", "total_ns",
                                                                           "dma_event_ns")]]
    assert int(phases.sum()) <= t.total_ns and t.alloc_ns > 0 and t.free_ns > 0


def test_the_engine_loads_only_with_the_python_policies_table(host_rt, monkeypatch):
    """engine.c's table POLICIES and vocab.POLICY_STEPS name the same policies with the same steps
    (checked at every load); a row that differs (here query_then_lock without its query) keeps the
    engine from loading, with both rows in the sentence."""
    assert set(engine.load("host").policy_steps()) == {str(p) for p in POLICY_STEPS}
    changed = dict(POLICY_STEPS)
    changed[Policy.QUERY_THEN_LOCK] = replace(changed[Policy.QUERY_THEN_LOCK], query_first=False)
    monkeypatch.setattr(engine, "POLICY_STEPS", changed)
    with pytest.raises(NativeUnavailable, match=r"query_then_lock: C .*query_first=True.* against Python .*query_first=False"):
        engine.Engine("host")


def test_bad_plans_are_refused(host_rt):
    eng = engine.load("host")
    p = engine.Plan()
    with pytest.raises(BadParameter, match="names buffer 0"):
        p.map(0)
    a = np.ones(4096, np.uint8)
    b = p.buffer(a.ctypes.data, a.ctypes.data, 4096)
    p.transfer(b, "h2d", nbytes=8192)            # runs past the buffer
    with pytest.raises(engine.EngineFailed, match="refused the plan"):
        eng.run("lock_always", p)
    with pytest.raises(UnknownName, match="lock_sometimes"):
        eng.run("lock_sometimes", engine.Plan())


def test_a_small_call_log_is_an_error_not_a_cut(host_rt):
    eng = engine.load("host")
    a, d = np.ones(4096, np.uint8), np.zeros(4096, np.uint8)
    p = engine.Plan()
    b = p.buffer(a.ctypes.data, d.ctypes.data, 4096)
    for _ in range(4):
        p.transfer(b, "h2d")
    with pytest.raises(engine.EngineFailed, match="overflowed"):
        eng.run("stage_per_copy", p, calls_per_op=1)



def test_a_cold_plan_writes_other_memory_between_its_transfers_outside_their_timestamps(host_rt):
    """evict_nbytes: before each transfer the thread writes that much of the engine's scratch, after
    the previous op ended and before this one starts (the gap between them holds it, not the op);
    0 writes nothing (the plan hot, as before); a negative size is refused."""
    eng = engine.load("host")
    a, d = np.ones(4096, np.uint8), np.zeros(4096, np.uint8)

    def gaps(evict_nbytes):
        p = engine.Plan(evict_nbytes=evict_nbytes)
        b = p.buffer(a.ctypes.data, d.ctypes.data, 4096)
        for _ in range(4):
            p.transfer(b, "h2d")
        out = eng.run("driver_pageable", p).out
        return (out["start_ns"][1:] - out["end_ns"][:-1]), out["end_ns"] - out["start_ns"]

    evict_nbytes = 256 << 20
    gap, ns = gaps(evict_nbytes)
    assert (gap > 4_000_000).all()                       # 256 MiB written in each gap: more than 4 ms (64 GB/s)
    assert np.median(ns) < 4_000_000                     # and not inside the transfers' timestamps
    assert (eng.scratch(0)[:evict_nbytes] == 1 + 3).all()   # the last transfer (op 3) wrote its pattern
    eng.drop_scratch()
    assert len(eng.scratch(0)) == 0
    hot_gap, _ = gaps(0)
    assert np.median(hot_gap) < 4_000_000
    with pytest.raises(BadParameter, match="evict_nbytes is 0"):
        eng.run("driver_pageable", engine.Plan(evict_nbytes=-1))


def test_a_map_past_the_reference_cap_is_refused_not_dropped(host_rt):
    """The 17th map of one buffer (PE_MAXREFS 16) fails with the cap named; the 16 before it
    are tracked and each unmap releases one."""
    eng = engine.load("host")
    a = np.ones(4096, np.uint8)
    p = engine.Plan()
    b = p.buffer(a.ctypes.data, a.ctypes.data, 4096)
    for _ in range(17):
        p.map(b)
    for _ in range(17):
        p.unmap(b)
    t = eng.run("nextgen_lock_mapped", p).transfers()
    maps, unmaps = t[t.event == "map"], t[t.event == "unmap"]
    assert list(maps.path[:16]) == ["locked"] + ["refcounted"] * 15
    assert maps.path.iloc[16] == "failed" and maps.error.iloc[16].startswith("past a cap of the engine")
    assert list(unmaps.path) == ["released"] * 15 + ["unlocked", "untracked"]
    assert eng.rc_name(-5).startswith("out of memory (pinpath's own") and "cudaError" not in eng.rc_name(-5)

def test_threads_share_the_map_and_balance_their_locks(any_rt, eng):
    """Four threads map one buffer each under nextgen_lock_mapped and transfer from it: every
    transfer hits the map, and every lock the policy made is undone by the last unmap. The buffers
    are 256 KiB, above glibc's mmap threshold, so no two share a page (on mlock a neighbour's lock
    makes a shared page's mapping read as locked: C11's situation, tested elsewhere)."""
    n, nbytes = 4, 256 << 10
    with DeviceBuffers(any_rt) as dev:
        bufs = [host_buffer(MemoryKind.HEAP, nbytes, rt=any_rt, seed=i) for i in range(n)]
        try:
            hb = [cm.__enter__() for cm in bufs]
            p = engine.Plan()
            ids = [p.buffer(h.ptr, dev.get(nbytes, seed=i), nbytes) for i, h in enumerate(hb)]
            for t, b in enumerate(ids):
                p.map(b, thread=t)
                for _ in range(20):
                    p.transfer(b, "h2d", thread=t)
                p.unmap(b, thread=t)
            rows = eng.run("nextgen_lock_mapped", p).transfers()
            assert p.nthreads == n and set(rows.thread_id) == set(range(n))
            maps = rows[rows.event != "transfer"][["thread_id", "event", "path", "error", "calls", "start_ns", "end_ns"]]
            ranges = [(hex(h.ptr), hex(h.ptr + nbytes)) for h in hb]
            assert set(rows[rows.event == "transfer"].path) == {"map_hit"}, f"{maps.to_string()}\n{ranges}"
            calls = " ".join(rows.calls)
            lock, unlock = engine.load(any_rt.name).calls[:2]
            assert calls.count(f"{lock}=0") == calls.count(f"{unlock}=0") >= 1
            for h, b in zip(hb, ids):
                assert np.array_equal(any_rt.read_device(p.buffers[b][1], nbytes), h.array)
        finally:
            for cm in bufs:
                cm.__exit__(None, None, None)


def test_the_pinned_allocator_adopts_runtime_memory(any_rt, eng):
    with host_buffer(MemoryKind.PINNED, 8192, rt=any_rt, seed=5) as buf, DeviceBuffers(any_rt) as dev:
        p = engine.Plan()
        b = p.buffer(buf.ptr, dev.get(8192), 8192, "pinned")
        p.adopt(b)
        p.map(b)
        p.transfer(b, "h2d")
        p.unmap(b)
        done = eng.run("pinned_allocator", p)
        assert [done.path(i) for i in range(4)] == ["adopted", "refcounted", "external_pinned", "released"]
        assert done.transfers().n_calls.iloc[2] == 2   # one copy, one wait: no lock, no query


def test_the_engine_and_the_python_policies_take_the_same_paths(host_rt):
    """The Python policies stay as the readable reference: on the same sweep and replica, every
    policy takes the same paths through both (each path per policy, size and direction). Small
    enough for a non-root user's 8 MiB lock limit (heap buffers have pages of their own)."""
    from pinpath import experiments as ex
    sizes = [4096, 64 << 10]
    key = ["policy", "nbytes", "direction", "path"]
    native = ex.policy_sweep(host_rt, policies=POLICIES, sizes_nbytes=sizes, repeats=2, engine="native")
    python = ex.policy_sweep(host_rt, policies=POLICIES, sizes_nbytes=sizes, repeats=2, warmup=1, engine="python")
    seen = [set(map(tuple, df[df.event == "transfer"][key].drop_duplicates().to_numpy())) for df in (native, python)]
    assert seen[0] == seen[1]
    rep = [ex.replica(host_rt, policies=["nextgen", "nextgen_lock_mapped", "prepinned", "lock_always"], nw_values=[2, 16],
                      steps=1, invocations_per_step=3, user_pinned=[False, True], threshold_nbytes=16 << 10,
                      engine=e)[0] for e in ("native", "python")]
    rep[0] = rep[0][~rep[0].counted.astype(bool)]   # the counted arm is the engine's alone
    cols = ["policy", "user_pinned", "nw", "event", "array", "path"]
    paths = [df[df.event.isin(["map", "transfer", "unmap"])].groupby(cols).size() for df in rep]
    assert paths[0].to_dict() == paths[1].to_dict()


def test_a_region_waits_once_and_only_for_work_not_yet_waited_for(any_rt, eng):
    """nextgen (LLVM's AMDGPU plugin: a stream's synchronize makes no call when nothing is
    pending) below its threshold: a staged D2H waits before its copy out and its region's end
    makes no second wait; a staged H2D is waited for at the region's end. The Python reference
    makes the same calls."""
    from pinpath.policies import make_policy
    with host_buffer(MemoryKind.HEAP, 4096, rt=any_rt, seed=4) as buf, DeviceBuffers(any_rt) as dev:
        dptr = dev.get(4096)
        p = engine.Plan()
        b = p.buffer(buf.ptr, dptr, 4096)
        p.map(b)
        p.transfer(b, "h2d")
        p.transfer(b, "d2h")
        p.unmap(b)
        rows, calls = (lambda d: (d.transfers(), d.calls(any_rt.call_categories)))(eng.run("nextgen", p))
        moved = rows[rows.event == "transfer"]
        kinds = [[c for c in calls[calls.transfer_id == i].category if c in ("host_copy", "copy", "wait")]
                 for i in moved.op_index]   # (the first takes the pool's buffer: alloc, grant)
        assert kinds == [["host_copy", "copy", "wait"], ["copy", "wait", "host_copy"]]
        with make_policy("nextgen", any_rt) as pol:
            for d in ("h2d", "d2h"):
                pol.transfer(buf, dptr, d)
                waits = [r for r in pol.sync().calls if any_rt.call_categories.get(r.call) == "wait"]
                assert len(waits) == (1 if d == "h2d" else 0), d


def test_a_closed_engine_starts_again_and_still_moves_the_bytes(any_rt, eng):
    """close() ends the engine's start (pe_fini: HSA's hsa_init is counted); the next run starts
    it again, also on a thread that started it before, and moves the bytes as before."""
    eng.close()
    done1, done2, want, got_dev, back = _moved(any_rt, eng, "prepinned", 4096)
    assert np.array_equal(got_dev, want) and np.array_equal(back, want)
    eng.close()
    done1, done2, want, got_dev, back = _moved(any_rt, eng, "lock_always", 8192)
    assert np.array_equal(got_dev, want) and np.array_equal(back, want)


def test_runs_take_kept_queues_and_close_gives_them_up(any_rt, eng):
    """A run's threads take copy queues kept from earlier runs (a runtime keeps its streams; a
    fresh CUDA stream changed a pageable 4 KiB D2H by 12 %): more runs make no more queues, a run
    of three threads makes at most two more than one thread needs, and close() lets them go."""
    with host_buffer(MemoryKind.HEAP, 3 * 4096, rt=any_rt, seed=5) as buf, DeviceBuffers(any_rt) as dev:
        dptr = dev.get(buf.nbytes)

        def run(nthreads):
            p = engine.Plan()
            b = p.buffer(buf.ptr, dptr, buf.nbytes)
            for t in range(nthreads):
                p.transfer(b, "h2d", offset=4096 * t, nbytes=4096, thread=t)
            done = eng.run("driver_pageable", p)
            assert all(done.path(i) not in ("copy_failed", "failed") for i in range(nthreads))

        run(1)
        made = eng.queues_made()
        for _ in range(3):
            run(1)
        assert eng.queues_made() == made
        run(3)
        assert made <= eng.queues_made() <= made + 2
        after = eng.queues_made()
        run(3)
        assert eng.queues_made() == after
        eng.close()
        run(1)
        assert eng.queues_made() == after + 1
        assert np.array_equal(any_rt.read_device(dptr, buf.nbytes), buf.array)


def _as_one_alloc(calls: list[str]) -> list[str]:
    """The host's staging allocation is one call in C (stage_alloc: mmap, then mlock inside it) and
    two recorded calls in Python: read Python's mmap+mlock and munlock+munmap as C's one."""
    out: list[str] = []
    for c in calls:
        if c == "mlock" and out[-1:] == ["mmap"]:
            continue
        if c == "munmap" and out[-1:] == ["munlock"]:
            out.pop()
        out.append(c)
    return out


@pytest.mark.parametrize("policy", POLICIES)
def test_the_engine_and_the_python_policy_make_the_same_calls_in_the_same_order(host_rt, policy):
    """Per policy, on heap and pinned memory below and above nextgen's threshold: map, H2D, D2H,
    H2D, unmap; each op's runtime calls (names, in order) and path are the same in engine.c and in
    the Python reference (a Python transfer's calls followed by its region's sync: the engine's op
    waits inside itself)."""
    from pinpath.policies import make_policy
    eng = engine.load("host")
    for kind in ("heap", "pinned"):
        for n in (8192, 2 << 20):
            with host_buffer(kind, n, rt=host_rt, seed=1) as buf, DeviceBuffers(host_rt) as dev:
                d = dev.get(n)
                p = engine.Plan()
                b = p.buffer(buf.ptr, d, n)
                p.map(b)
                for direction in ("h2d", "d2h", "h2d"):
                    p.transfer(b, direction)
                p.unmap(b)
                rows = eng.run(policy, p).transfers()
                native = [(r.event, r.path, [c.split("=")[0] for c in r.calls.split()]) for r in rows.itertuples()]
                with make_policy(policy, host_rt) as pol:
                    ops = [(pol.map(buf), None)]
                    ops += [(pol.transfer(buf, d, direction), pol.sync()) for direction in ("h2d", "d2h", "h2d")]
                    ops.append((pol.unmap(buf), None))
                python = [(r.event, r.path, _as_one_alloc([c.call for c in r.calls + (s.calls if s else ())]))
                          for r, s in ops]
                assert native == python, (kind, n)
