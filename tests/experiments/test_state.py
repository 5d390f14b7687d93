"""Notebook 14's states on the host platform: state.c built and timed, rounds as the unit of
repeat, every registration and allocation undone, the thread really pinned, and the machine
state recorded (with what is unavailable said)."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pinpath import machine_state as ms
from pinpath import nativelib, osinfo, statelib
from pinpath.errors import BadParameter
from pinpath.experiments import state
from pinpath.schema import GPU_STATE, STATE_EFFECTS, STATE_SUMMARY, check_frame

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lib():
    why = statelib.why_not("host")
    if why:
        pytest.skip(why)
    return statelib.load("host")


def test_the_library_is_built_once_and_says_what_it_lacks(lib):
    assert statelib.load("host") is lib and nativelib.build("host", source="state.c") == lib.path
    assert lib.path.name.startswith("state-host-") and not lib.has_query and lib.has_pinned and lib.has_copy
    with lib.buffer(8192, thp=False) as p:
        with pytest.raises(nativelib.NativeUnavailable, match="no pointer query"):
            lib.reg_age(p, 8192, "query", 2)
        r = lib.reg_age(p, 8192, "reregister", 3)
        assert r.register_ns > 0 and r.first_rc == 0 and len(r.held_ns) == len(r.fresh_ns) == 3
        assert (r.held_rc == 0).all() and (r.fresh_ns > 0).all()


def test_registration_age_rounds_and_rows(lib):
    base = osinfo.vmlck_nbytes()
    df = check_frame(state.registration_age(lib, sizes_nbytes=[4096, 65536], calls=3, repeats=5, warmup=0),
                     STATE_EFFECTS)
    assert osinfo.vmlck_nbytes() == base                      # every registration undone
    assert set(df.op) == {"register", "reregister"} and df.attrs["skipped"]
    assert sorted(set(df.repeat)) == [0, 1, 2, 3, 4] and set(df.state) == {"first", "fresh", "held"}
    per = df.groupby(["state", "op", "nbytes", "repeat"]).size()
    assert per.xs("held").eq(3).all() and per.xs("first").eq(1).all()
    assert set(df.backing) <= {"4k", "unknown"} and (df.thread_cpu >= 0).all()
    assert (df.gpu_node == ms.gpu_node(0)[0]).all()   # -1 where this machine has no GPU
    s = check_frame(state.repeat_summary(df), STATE_SUMMARY)
    assert (s.repeats == 5).all() and (s.lo_ns <= s.median_ns).all() and (s.median_ns <= s.hi_ns).all()
    assert s[s.state == "first"].within_spread.isna().all() and s[s.state == "held"].within_spread.notna().all()


def test_allocator_states_are_set_up_and_undone(lib):
    base = osinfo.vmlck_nbytes()
    df = check_frame(state.allocator_state(lib, sizes_nbytes=[4096], live_counts=[8], calls=4, repeats=5, warmup=0),
                     STATE_EFFECTS)
    assert osinfo.vmlck_nbytes() == base
    assert set(df.state) == {"empty", "8 live pinned", "8 live registered", "after 8 frees"}
    assert set(df.op) == {"alloc", "free"} and (df.rc == 0).all() and (df.ns > 0).all()
    held = df[df.state == "8 live pinned"]
    assert (held.live_pinned == 8).all() and (held.live_registered == 0).all()


def test_page_backing_records_what_linux_gave(lib):
    df = check_frame(state.page_backing(lib, sizes_nbytes=[4 << 20], calls=2, repeats=5, warmup=0), STATE_EFFECTS)
    assert set(df.op) == {"copy_pageable", "lock", "copy_locked", "unlock"} and (df.rc == 0).all()
    assert set(df[df.backing_asked == "4k"].state) == {"4k"}
    if osinfo.thp_mode() in ("always", "madvise"):
        assert "thp" in set(df[df.backing_asked == "thp"].state)
    assert (df.state == df.backing).all()


def test_the_timing_thread_is_pinned_where_it_says(lib):
    cpus = sorted(os.sched_getaffinity(0))
    df = check_frame(state.thread_placement(lib, sizes_nbytes=[4096], calls=4, repeats=5, warmup=0), STATE_EFFECTS)
    irq = next((c for c in ms.gpu_irq_cpus() if c in cpus), None)   # a GPU node's interrupt CPU joins them
    assert sorted(set(df.cpu)) == sorted({cpus[0], cpus[-1]} | ({irq} if irq is not None else set()))
    assert (df.thread_cpu == df.cpu).all() and set(df[df.irq_cpu].cpu) == ({irq} if irq is not None else set())
    known = ms.gpu_node(0)[0] >= 0
    node_relation = {r.removesuffix(f", {state.IRQ_RELATION}") for r in df.relation}   # the interrupt CPU's says so too
    assert node_relation <= ({"GPU's node", "other node"} if known else {"GPU node unknown"})
    assert set(df.op) >= {"null", "reregister_held", "lock", "h2d_pinned", "h2d_pageable", "h2d_lock", "h2d_staged"}
    copies = df[df.op.str.startswith("h2d_")]
    assert set(copies.cache) == {"hot"} and (copies.rc == 0).all() and (copies.ns > 0).all()
    assert copies.groupby(["op", "cpu", "repeat"]).size().eq(2).all()   # both of ps_cache's arms, nothing evicted
    assert sorted(os.sched_getaffinity(0)) == cpus                  # the affinity is put back


def test_the_interval_is_over_rounds_not_calls():
    rows = [{"section": "s", "state": "a", "op": "x", "nbytes": 1, "repeat": r, "call": k, "ns": 1000 * (r + 1) + k,
             "rc": 0} for r in range(5) for k in range(50)]
    s = state.repeat_summary(pd.DataFrame(rows)).iloc[0]
    assert s.repeats == 5 and s.calls == 250 and s.median_ns == 3024.5
    assert s.hi_ns - s.lo_ns >= 1000 and s.between_spread == pytest.approx(4000 / 3024.5)
    assert s.within_spread < 0.03


def _fake_smi(tmp_path, monkeypatch, body: str):
    exe = tmp_path / "nvidia-smi"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    ms.gpu_node.cache_clear()


def test_snapshot_says_what_is_unavailable(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    ms.gpu_node.cache_clear()
    snap = ms.snapshot()
    assert set(snap) == set(ms.FIELDS) and snap["gpu_node"] == -1 and snap["sm_clock_mhz"] == ""
    assert "no nvidia-smi on PATH" in snap["unavailable"] and snap["thread_cpu"] in os.sched_getaffinity(0)
    _fake_smi(tmp_path, monkeypatch, 'case "$1" in --query-gpu=pci.bus_id) echo "00000000:FF:1F.7";;\n'
                                     '*) echo "1980, 2619, 1980, 2619, Enabled, P0, [N/A], 31, 75.2";; esac\n')
    snap = ms.snapshot()
    assert snap["sm_clock_mhz"] == "1980" and snap["persistence_mode"] == "Enabled" and snap["pstate"] == "P0"
    assert snap["clock_event_reasons"] == "" and "clocks_event_reasons.active: [N/A]" in snap["unavailable"]
    assert snap["gpu_node"] == -1 and "0000:ff:1f.7/numa_node gives no node and nvidia-smi topo" in snap["unavailable"]
    _fake_smi(tmp_path, monkeypatch, 'case "$1" in --query-gpu=pci.bus_id) echo "00000000:FF:1F.7";;\n'
                                     'topo) echo "NUMA IDs of closest CPU: 1";; *) exit 2;; esac\n')
    assert ms.gpu_node() == (1, "nvidia-smi topo -C")
    gpu = check_frame(state.gpu_readings([("start", snap)], "cuda"), GPU_STATE)
    assert gpu.set_index("field").available["sm_clock_mhz"] and not gpu.set_index("field").available["gpu_node"]
    ms.gpu_node.cache_clear()


def test_a_section_that_cannot_run_says_why_and_the_conclusion_comes_from_data(lib):
    why = state.section(state.registration_age, None, "cuda: no compiler here")
    assert list(why.columns) == ["not_available"] and why.not_available.iloc[0] == "cuda: no compiler here"
    age = state.registration_age(lib, sizes_nbytes=[4096], calls=2, repeats=5, warmup=0)
    text = state.conclusion(age, why, why, why)
    assert text.startswith("**What this notebook found**") and "reregister at 4 KiB: first / held" in text
    assert text.count("not measured here: cuda: no compiler here") == 1
    assert np.isfinite(float(text.split("first / held ")[1].split("x")[0]))


@pytest.mark.parametrize("platform,query,pinned,copy", [("cuda", True, True, True), ("hsa", True, True, False)])
def test_the_gpu_builds_compile_and_export_every_symbol(platform, query, pinned, copy):
    """state.c against the real headers and library where they are here (no GPU needed)."""
    reason = statelib.why_not(platform)
    if reason:
        pytest.skip(reason)
    lib = statelib.load(platform)
    assert (lib.has_query, lib.has_pinned, lib.has_copy) == (query, pinned, copy)
    assert all(hasattr(lib._lib, name) for name in statelib._SIGNATURES)
    if not copy:     # no device allocation in the table: no copy destination, decided in C
        assert lib._lib.ps_dev_alloc(4096) is None


def test_each_repeat_can_be_a_fresh_process(lib):
    """unit="process": every repeat a new process (its own runtime start and shuffle), numbered."""
    df = check_frame(state.section(state.registration_age, lib, unit="process", sizes_nbytes=[4096], calls=2,
                                   repeats=2, warmup=0), STATE_EFFECTS)
    assert sorted(set(df.repeat)) == [0, 1] and set(df.state) == {"first", "fresh", "held"}
    assert df.groupby("repeat").size().tolist() == [6, 6]   # register, first, 2 held, 2 fresh per process
    with pytest.raises(Exception, match="unit of repeat is one of process, round"):
        state.section(state.registration_age, lib, unit="thread", sizes_nbytes=[4096])


def test_sections_share_their_processes_each_in_an_order_of_its_own(lib):
    """sections(): one process per repeat runs every section; the order is shuffled per process and
    recorded; an unknown section is refused in one sentence."""
    got = state.sections(lib, unit="process", repeats=3, warmup=0,
                         registration_age=dict(sizes_nbytes=[4096], calls=1),
                         allocator_state=dict(sizes_nbytes=[4096], live_counts=[2], calls=1))
    assert sorted(got) == ["allocator_state", "registration_age"]
    for name, df in got.items():
        check_frame(df, STATE_EFFECTS)
        assert sorted(set(df.repeat)) == [0, 1, 2], name
        assert set(df.section_order) <= {0, 1}
    orders = {r: (g.section_order.iloc[0]) for r, g in got["registration_age"].groupby("repeat")}
    assert len(set(orders.values())) == 2   # seeds 0..2 do not all put it first
    with pytest.raises(Exception, match="unknown section"):
        state.sections(lib, unit="round", nope={})


def test_cache_hot_and_cold_alternate_and_cold_writes_the_other_memory(lib):
    """ps_cache: per rep one hot and one cold transfer, the cold one after the whole eviction buffer
    was written (its last byte carries the last rep's pattern); a policy it lacks is refused."""
    n, evict_n, reps = 8192, 1 << 20, 3
    with lib.destination(n) as dst, lib.buffer(n, thp=False) as p:
        evict = np.zeros(evict_n, np.uint8)
        c = lib.cache("lock", p, n, dst, evict.ctypes.data, evict_n, reps)
        assert (c.rc == 0).all() and (c.hot_ns > 0).all() and (c.cold_ns > 0).all() and c.rc.shape == (reps, 2)
        # the last rep (2, even) runs hot, then cold: its pattern 0x11 + rep + 1 fills the whole buffer
        assert (evict == 0x11 + 2 + 1).all()
        with pytest.raises(Exception, match="times pinned, pageable, lock, staged"):
            lib.cache("mapped", p, n, dst, evict.ctypes.data, evict_n, 1)


def test_the_cache_section_names_hot_and_cold_per_policy_and_size(lib):
    base = osinfo.vmlck_nbytes()
    df = check_frame(state.cache_residency(lib, sizes_nbytes=[4096, 65536], evict_nbytes=4 << 20, calls=2,
                                           repeats=2, warmup=0), STATE_EFFECTS)
    assert set(df.cache) == {"hot", "cold"} and (df.state == df.cache).all() and (df.rc == 0).all()
    assert set(df.op) == set(statelib.CACHE_POLICIES) and (df.evict_nbytes == 4 << 20).all()
    assert df.groupby(["op", "nbytes", "cache", "repeat"]).size().eq(2).all() and len(df) == 4 * 2 * 2 * 2 * 2
    assert osinfo.vmlck_nbytes() == base                                  # every lock and pinned buffer undone
    r = state.cache_ratios(df)
    assert list(r.policy.unique()) == list(statelib.CACHE_POLICIES) and (r.repeats == 2).all()
    assert "cache residency**, lock H2D, cold / hot after 4 MiB" in state.conclusion(*[df.iloc[:0]] * 4, df)


def test_cold_over_hot_is_paired_by_round():
    """Rounds at different levels, cold 3x hot in each: the paired ratio is 3 with no width."""
    rows = [{"op": "pinned", "nbytes": 4096, "repeat": r, "call": k, "cache": c, "evict_nbytes": 1 << 29, "rc": 0,
             "ns": (1000 * (r + 1) + k) * (3 if c == "cold" else 1)} for r in range(5) for k in range(3)
            for c in ("hot", "cold")]
    r = state.cache_ratios(pd.DataFrame(rows)).iloc[0]
    assert r.cold_over_hot == pytest.approx(3) and r.low == pytest.approx(3) and r.high == pytest.approx(3)
    assert r.hot_ns == 3001 and r.repeats == 5


def _fake_proc(d, lines: str, affinities: dict) -> None:
    """A /proc of ``interrupts`` (two CPUs) and each IRQ's affinity files ({irq: {file: text}})."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "interrupts").write_text("           CPU0       CPU1\n" + lines + "NMI:   0   0   Non-maskable interrupts\n")
    for irq, files in affinities.items():
        (d / "irq" / str(irq)).mkdir(parents=True)
        for name, text in files.items():
            (d / "irq" / str(irq) / name).write_text(text)


def test_the_gpus_interrupt_cpu_is_found_and_placed(tmp_path, monkeypatch):
    """The busiest GPU vector's CPU first; a vector with a real share of its interrupts (43: 400 of
    1,210, its own affinity not readable: smp_affinity_list) next; a vector with a few (44: 12, as
    IRQ 44 on the H200) and an idle one's wide affinity (41: 0-5) are not the GPU's interrupt CPUs."""
    eff = "effective_affinity_list"
    _fake_proc(tmp_path, "  9:   0   0   IO-APIC   9-fasteoi   acpi\n"
               " 41:  0  0  PCI-MSIX-0000:1b:00.0  1-edge  nvidia\n"
               " 42:   10   1200  PCI-MSIX-0000:1b:00.0   0-edge      nvidia\n 43:  400  0  PCI-MSIX  2-edge  nvidia\n"
               " 44:  12  0  PCI-MSIX  3-edge  nvidia\n",
               {42: {eff: "14\n"}, 9: {eff: "0\n"}, 41: {eff: "0-5\n"}, 43: {"smp_affinity_list": "14-15\n"},
                44: {eff: "0\n"}})
    assert ms.gpu_irq_cpus(tmp_path) == [14, 15] and ms.gpu_irq_cpus(tmp_path / "none") == []
    # a GPU that has not woken a blocked wait yet (a fresh H100: IRQ 44 12 on CPU 0, IRQ 42 none): not known
    fresh = tmp_path / "fresh"
    _fake_proc(fresh, " 42:   0   0  PCI-MSIX  0-edge  nvidia\n 44:  12  0  PCI-MSIX  3-edge  nvidia\n",
               {42: {eff: "14\n"}, 44: {eff: "0\n"}})
    assert ms.gpu_irq_cpus(fresh) == []
    assert "has not yet woken a blocked wait" in ms.placement_cpus("other_cpu", [])[1]
    # the GPU lines as the CUDA reference's advise step saw them (IRQ 42's on CPU 14; IRQ 44: 12 on CPU 0)
    seen = (ROOT / "outputs" / "reference" / "cuda" / "advise" / "irq.txt").read_text().splitlines()
    gpu = tmp_path / "gpu"
    gpu.mkdir()
    (gpu / "interrupts").write_text("".join(f" CPU{c}" for c in range(16)) + "\n" +
                                     "\n".join(l for l in seen if "nvidia" in l) + "\n")
    for irq in range(42, 50):
        (gpu / "irq" / str(irq)).mkdir(parents=True)
        (gpu / "irq" / str(irq) / eff).write_text({42: "14", 44: "0"}.get(irq, "0-15") + "\n")
    assert ms.gpu_irq_cpus(gpu) == [14]
    monkeypatch.setattr(ms, "cpus_by_node", lambda: {0: [0, 1, 2, 3], 1: [14, 15]})
    got = state.placements(1, irq_cpus=[14, 15])
    assert got == [(0, 0, "other node"), (3, 0, "other node"), (15, 1, "GPU's node"),
                   (14, 1, f"GPU's node, {state.IRQ_RELATION}")]
    assert state.placements(1, irq_cpus=[3])[-1] == (3, 0, f"other node, {state.IRQ_RELATION}")
    assert len(state.placements(1, irq_cpus=[3])) == 4                 # a CPU already picked, relabelled
    assert state.placements(1, irq_cpus=[99]) == [(0, 0, "other node"), (3, 0, "other node"), (14, 1, "GPU's node"),
                                                  (15, 1, "GPU's node")]   # not a CPU this process may use


def test_cpus_of_a_placement():
    """other_cpu: every CPU but the interrupt CPUs; irq_cpu: the first interrupt CPU the process may
    use; unpinned: all; where none can be had, all and why."""
    cpus = list(range(16))
    assert ms.placement_cpus("other_cpu", [14], cpus) == ([*range(14), 15], "")
    assert ms.placement_cpus("irq_cpu", [14, 15], cpus) == ([14], "")
    assert ms.placement_cpus("irq_cpu", [20, 15], cpus) == ([15], "")
    assert ms.placement_cpus("unpinned", [14], cpus) == (cpus, "")
    for where, irq in (("other_cpu", []), ("irq_cpu", []), ("irq_cpu", [20]), ("other_cpu", cpus)):
        got, why = ms.placement_cpus(where, irq, cpus)
        assert got == cpus and why and "." not in why[:-1]
    with pytest.raises(BadParameter):
        ms.placement_cpus("pinned", [14], cpus)
    assert ms.cpuspan([15, 0, 1, 2, 13, 3]) == "0-3,13,15" and ms.cpuspan([]) == ""
    assert ms.cpulist(ms.cpuspan([*range(14), 15])) == [*range(14), 15]


def test_the_process_is_placed_and_given_back(tmp_path):
    """This process (every thread) on the CPUs of a placement against a fake GPU interrupt CPU, the
    words naming them; "unpinned" gives back the CPUs it started with; without GPU lines it runs
    unpinned and says why."""
    start = os.sched_getaffinity(0)
    if len(start) < 2:
        pytest.skip("one CPU: no other CPU to place on")
    irq = max(start)
    _fake_proc(tmp_path, " 42:  0  1704  PCI-MSIX  0-edge  nvidia\n", {42: {"effective_affinity_list": f"{irq}\n"}})
    try:
        off = ms.place_process("other_cpu", tmp_path)
        assert os.sched_getaffinity(0) == start - {irq} and off.where == "other_cpu" and not off.why
        assert off.words() == f"processes on CPUs {ms.cpuspan(start - {irq})}, off the GPU's interrupt CPU {irq}"
        other = threading.Thread(target=lambda: seen.append(os.sched_getaffinity(0)))
        seen: list = []
        other.start()
        other.join()
        assert seen == [start - {irq}]                      # a thread started after inherits it
        on = ms.place_process("irq_cpu", tmp_path)          # from the CPUs the process started with
        assert os.sched_getaffinity(0) == {irq} and on.cpus == (irq,) and on.words().startswith(f"processes on CPU {irq},")
        free = ms.place_process("unpinned", tmp_path)
        assert os.sched_getaffinity(0) == start and free.where == "unpinned" and not free.why
        ms.place_process("other_cpu", tmp_path)
        (tmp_path / "bare").mkdir()
        (tmp_path / "bare" / "interrupts").write_text("           CPU0\n  9:   0   IO-APIC   acpi\n")
        fell = ms.place_process("other_cpu", tmp_path / "bare")
        assert os.sched_getaffinity(0) == start and fell.where == "unpinned" and fell.asked == "other_cpu"
        assert "no nvidia or amdgpu interrupt line" in fell.why and "(other_cpu asked: no nvidia" in fell.words()
    finally:
        os.sched_setaffinity(0, start)
