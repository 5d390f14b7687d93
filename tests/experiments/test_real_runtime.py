"""The real offload runtime beside the model (issue #11; ``real_runtime``, ``replica_compare``):
parsing of libomptarget's own output (fixtures in LLVM 19's formats), the one-sentence reasons,
and where clang-19 with OpenMP offload is installed, the region built for the host offload
target and run for real."""

import io
import json
import os
import resource
import shutil
import stat
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pinpath import machine_state as ms
from pinpath.errors import NotAvailable
from pinpath.experiments import offload_build
from pinpath.experiments import real_runtime as rr
from pinpath.experiments import real_terms
from pinpath.experiments import replica_compare as rc
from pinpath.experiments import wait_mode
from pinpath.schema import MODEL_INVOCATIONS, RATIO, REAL_TERMS, SUMMARY, check_frame

# stderr of `region --markers` under LIBOMPTARGET_INFO=32 (LLVM 19.1.7), with the plugin's
# kernel-launch-environment copy and an older release's prefix mixed in
INFO = """\
omptarget device 0 info: Copying data from device to host, TgtPtr=0x000055f72c49cf60, HstPtr=0x00007ffe3bd1757c, Size=4, Name=initial
pinpath-region: invocation step=0 invocation=0
omptarget device 0 info: Copying data from host to device, HstPtr=0x000055f72c49b000, TgtPtr=0x000055f72c4a6780, Size=384, Name=pos[0:pos_len]
"PluginInterface" device 0 info: Copying data from host to device, HstPtr=0x00007ffe3bd17000, TgtPtr=0x0000155547200000, Size=48, Name=KernelLaunchEnv
omptarget device 0 info: Copying data from device to host, TgtPtr=0x000055f72c4a6950, HstPtr=0x000055f72c49d000, Size=245760, Name=out[0:out_len]
pinpath-region: invocation step=0 invocation=1
Libomptarget device 0 info: Copying data from host to device, HstPtr=0x000055f72c49b000, TgtPtr=0x000055f72c4a6780, Size=384, Name=pos[0:pos_len]
omptarget device 0 info: Copying data from device to host, TgtPtr=0x000055f72c4a6950, HstPtr=0x000055f72c49d000, Size=245760, Name=out[0:out_len]
OMP: Warning #96: Cannot form a team with 4 threads, using 2 instead.
pinpath-region: teardown
omptarget device 0 info: Copying data from device to host, TgtPtr=0x1, HstPtr=0x2, Size=8, Name=unknown
"""


def _x(ts, dur, name, line=None, extra=""):
    e = {"pid": 7, "tid": 7, "ts": ts, "ph": "X", "dur": dur, "name": name}
    if line is not None:
        e["args"] = {"detail": f";/src/region.cpp;main;{line};1;;{extra}"}
    return e


# LIBOMPTARGET_PROFILE with LIBOMPTARGET_PROFILE_GRANULARITY=0 (LLVM 19.1.7): the probe region
# (line 208), target enter data (228), two invocations of the region (251), exit data (274)
PROFILE = {"traceEvents": [
    _x(17, 1840, "void initRuntime()"),
    _x(2291, 9, "HostToDev", 208, "Size=4B"), _x(2304, 6, "Kernel Target", 208, "NumArguments=1"),
    _x(2311, 18, "DevToHost", 208, "Size=4B"), _x(2286, 47, "Runtime: target exe", 208, "NumTeams=1;NumArgs=1"),
    _x(2339, 0, "HostToDev", 228, "Size=384B"), _x(2336, 9, "Runtime: Data Copy", 228, "NumArgs=2"),
    _x(2360, 1, "HostToDev", 251, "Size=245760B"), _x(2361, 3, "HostToDev", 251, "Size=384B"),
    _x(2365, 915, "Kernel Target", 251, "NumTeams=2"), _x(3286, 20, "DevToHost", 251, "Size=245760B"),
    _x(3308, 1, "Runtime: syncronize", 251), _x(2359, 951, "Runtime: target exe", 251, "NumTeams=2;NumArgs=6"),
    _x(3322, 1, "HostToDev", 251, "Size=245760B"), _x(3324, 4, "HostToDev", 251, "Size=384B"),
    _x(3330, 106, "Kernel Target", 251, "NumTeams=2"), _x(3438, 6, "DevToHost", 251, "Size=245760B"),
    _x(3446, 0, "Runtime: syncronize", 251), _x(3321, 126, "Runtime: target exe", 251, "NumTeams=2;NumArgs=6"),
    _x(3454, 7, "Runtime: Data Copy", 274, "NumArgs=2"),
    {"pid": 7, "tid": 8, "ph": "X", "ts": 0, "dur": 1123, "name": "Total Runtime: target exe",
     "args": {"count": 3, "avg ms": 0}},
    {"cat": "", "pid": 7, "tid": 7, "ts": 0, "ph": "M", "name": "process_name", "args": {"name": "libomptarget"}},
], "beginningOfTime": 1733150000000000}


def test_info_lines_become_copies_of_their_invocation():
    df = check_frame(rr.parse_info(INFO, variant="plain", nw=16), rr.REAL_COPIES)
    assert len(df) == 7 and set(df.variant) == {"plain"} and set(df.nw) == {16}
    setup, inv, tear = (df[df.segment == s] for s in ("setup", "invocation", "teardown"))
    assert list(setup.name) == ["initial"] and list(setup.direction) == ["d2h"] and list(setup.step) == [-1]
    assert list(zip(inv.invocation, inv.direction, inv.nbytes)) == [
        (0, "h2d", 384), (0, "h2d", 48), (0, "d2h", 245760), (1, "h2d", 384), (1, "d2h", 245760)]
    assert set(inv.source) == {"omptarget", "PluginInterface", "Libomptarget"}
    d2h = inv[inv.direction == "d2h"].iloc[0]   # D2H lines name the target pointer first
    assert (d2h.host_ptr, d2h.tgt_ptr) == ("0x000055f72c49d000", "0x000055f72c4a6950")
    assert len(tear) == 1 and tear.invocation.iloc[0] == -1


def test_copies_table_against_the_replica():
    copies = rr.parse_info(INFO, variant="plain", nw=16)
    t = rc.copies_table(copies)
    row = t.iloc[0]
    # invocation 0 has the plugin's extra H2D: 1.5 H2D per invocation, so not as the replica
    assert row.h2d_per_invocation == 1.5 and row.d2h_per_invocation == 1.0 and not row.as_replica
    assert row.replica_h2d_nbytes == 384 and row.replica_d2h_nbytes == 245760
    plain = rc.copies_table(copies[copies.name != "KernelLaunchEnv"])
    assert bool(plain.as_replica.iloc[0])


def test_profile_events_belong_to_their_invocation():
    df = check_frame(rr.parse_profile(PROFILE, invocations_per_step=2, variant="plain", nw=16), rr.REAL_PHASES)
    assert not df.phase.str.startswith("Total ").any() and len(df) == 20
    inv = df[df.segment == "invocation"]
    assert len(inv) == 12 and set(inv.location) == {"region.cpp:251"}
    assert sorted(set(zip(inv.step, inv.invocation))) == [(0, 0), (0, 1)]
    exe = inv[inv.phase == "Runtime: target exe"]
    assert list(exe.dur_ns) == [951_000, 126_000]          # whole microseconds
    h2d = inv[(inv.phase == "HostToDev") & (inv.invocation == 1)]
    assert sorted(h2d.nbytes.tolist()) == [384, 245760]
    assert set(df[df.location.isin(["region.cpp:208", "region.cpp:228"])].segment) == {"setup"}
    assert list(df[df.location == "region.cpp:274"].segment) == ["teardown"]
    assert df[df.phase == "void initRuntime()"].nbytes.isna().all()
    t = rr.phase_table(df)
    k = t[t.phase == "Kernel Target"].iloc[0]
    assert k.per_invocation == 1.0 and k.median_ns == (915_000 + 106_000) / 2
    assert t[t.phase == "HostToDev"].per_invocation.iloc[0] == 2.0


def test_profile_file_and_facts(tmp_path):
    p = tmp_path / "profile.json"
    p.write_text(json.dumps(PROFILE))
    assert len(rr.parse_profile(p, invocations_per_step=384)) == 20
    facts = rr.parse_facts(["# offload_devices=1 on_device=1 variant=plain nw=16 register=none register_ns=0",
                            "# exit_ns=12 wrong=0"])
    assert facts == {"offload_devices": 1, "on_device": 1, "variant": "plain", "nw": 16, "register": "none",
                     "register_ns": 0, "exit_ns": 12, "wrong": 0}


def _one_sentence(text: str) -> None:
    assert text and "\n" not in text and text.count(". ") == 0, text


def test_no_build_says_why_in_one_sentence(tmp_path):
    ran = rr.real_runtime_or_reason(offload_dir=tmp_path, nw_values=[4], steps=1, invocations=2)
    for df in (ran.runs, ran.invocations, ran.copies, ran.phases):
        assert list(df.columns) == ["not_applicable"] and len(df) == 1
    _one_sentence(ran.reason)
    assert "no offload build" in ran.reason and "manifest.json is missing" in ran.reason
    assert rc.model_real_ratio(pd.DataFrame(columns=list(MODEL_INVOCATIONS)), ran) is ran.invocations
    assert "not_applicable" in rc.copies_table(ran.copies) and "not_applicable" in rr.phase_table(ran.phases)
    (tmp_path / "manifest.json").write_text(json.dumps({"vendor": "nvidia", "arch": "sm_90", "binary": "region-sm_90"}))
    ran = rr.real_runtime_or_reason(offload_dir=tmp_path)
    _one_sentence(ran.reason)
    assert "region-sm_90" in ran.reason and "is missing" in ran.reason


def _fake_binary(d, script: str):
    exe = d / "region-x86_64"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    (d / "manifest.json").write_text(json.dumps({"vendor": "host", "arch": "x86_64", "binary": exe.name,
                                                 "bundle": None, "ld_library_path": []}))


def test_an_app_built_from_other_sources_is_refused(tmp_path):
    """A bundle carried from before a change to an application's source would run the old program:
    app_binary compares the manifest's source_sha256 with this checkout's {app}.cpp."""
    src = Path(offload_build.__file__).resolve().parents[1] / "native" / "offload" / "updates.cpp"
    (tmp_path / "region-sm_90").write_text("")
    (tmp_path / "updates-sm_90").write_text("")
    man = {"vendor": "nvidia", "arch": "sm_90", "binary": "region-sm_90", "bundle": None, "ld_library_path": [],
           "apps": {"updates": {"binary": "updates-sm_90", "source_sha256": offload_build._sha256(src)}}}
    (tmp_path / "manifest.json").write_text(json.dumps(man))
    assert offload_build.app_binary(offload_build.find_build(tmp_path), "updates") == tmp_path / "updates-sm_90"
    man["apps"]["updates"]["source_sha256"] = "0" * 64
    (tmp_path / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(NotAvailable, match="built from another updates.cpp than this checkout's: make offload-bundle"):
        offload_build.app_binary(offload_build.find_build(tmp_path), "updates")
    man["source_sha256"] = "1" * 64   # the region, the build's own binary
    (tmp_path / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(NotAvailable, match="another region.cpp"):
        offload_build.app_binary(offload_build.find_build(tmp_path), "region")
    del man["apps"]["updates"]["source_sha256"]   # a host build records none: nothing to compare
    (tmp_path / "manifest.json").write_text(json.dumps(man))
    assert offload_build.app_binary(offload_build.find_build(tmp_path), "updates") == tmp_path / "updates-sm_90"
    man["common_sha256"] = "2" * 64   # an older bundle records common.h alone
    (tmp_path / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(NotAvailable, match="another common.h"):
        offload_build.app_binary(offload_build.find_build(tmp_path), "updates")
    headers = src.parent
    man["headers_sha256"] = {h.name: offload_build._sha256(h) for h in headers.glob("*.h")}   # a newer, every header
    (tmp_path / "manifest.json").write_text(json.dumps(man))
    assert offload_build.app_binary(offload_build.find_build(tmp_path), "updates") == tmp_path / "updates-sm_90"
    man["headers_sha256"]["stencil_step.h"] = "3" * 64
    (tmp_path / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(NotAvailable, match="another stencil_step.h"):
        offload_build.app_binary(offload_build.find_build(tmp_path), "updates")


def test_a_refused_offload_says_why(tmp_path):
    """What libomptarget 19 prints when MANDATORY offload finds no usable device."""
    _fake_binary(tmp_path, 'echo "omptarget error: Consult https://openmp.llvm.org/design/Runtimes.html for '
                           'debugging options." >&2\necho "region.cpp:208:1: omptarget fatal error 1: failure of '
                           'target construct while offloading is mandatory" >&2\nexit 134\n')
    ran = rr.real_runtime_or_reason(offload_dir=tmp_path, nw_values=[4], steps=1, invocations=2)
    _one_sentence(ran.reason)
    assert "OMP_TARGET_OFFLOAD=MANDATORY" in ran.reason and "exit status 134" in ran.reason
    assert "failure of target construct while offloading is mandatory" in ran.reason and "Consult" not in ran.reason


def test_an_nvidia_build_without_a_gpu_says_why(tmp_path):
    (tmp_path / "region-sm_90").write_text("")
    (tmp_path / "manifest.json").write_text(json.dumps({"vendor": "nvidia", "arch": "sm_90", "binary": "region-sm_90",
                                                        "bundle": None, "ld_library_path": []}))
    if offload_build.find_libcuda():
        pytest.skip("this machine has an NVIDIA driver")
    ran = rr.real_runtime_or_reason(offload_dir=tmp_path)
    _one_sentence(ran.reason)
    assert "no NVIDIA driver here" in ran.reason


def test_model_plan_and_ratio_interval():
    plan = rc.model_plan("nvidia", ["plain", "app_pinned", "lock_mapped", "async_threshold0"])
    assert list(plan.policy) == ["driver_pageable", "prepinned", "driver_pageable", ""]
    assert plan.note.iloc[3] and list(plan.user_pinned[:3]) == [False, True, False]
    amd = rc.model_plan("amd", ["plain", "lock_mapped", "async_threshold0"])
    assert list(amd.policy) == ["nextgen", "nextgen_lock_mapped", "nextgen"] and amd.threshold_nbytes.iloc[2] == 0
    rng = np.random.default_rng(3)
    n = 400
    real = pd.DataFrame({"variant": "plain", "nw": 16, "traced": False, "step": 0, "invocation": np.arange(n),
                         "ns": rng.normal(100_000, 5_000, n).astype(int)})
    model = pd.DataFrame({"variant": "plain", "policy": "driver_pageable", "user_pinned": False, "nw": 16, "step": 0,
                          "invocation": np.arange(n), "ns": rng.normal(200_000, 10_000, n).astype(int)})
    r1, r2 = rc.model_real_ratio(model, real), rc.model_real_ratio(model, real)
    check_frame(r1, RATIO)
    pd.testing.assert_frame_equal(r1, r2)
    row = r1.iloc[0]
    assert row.ratio_lo < row.ratio < row.ratio_hi and row.ratio_lo < 2.0 < row.ratio_hi and 1.9 < row.ratio < 2.1
    assert row.n_model == row.n_real == n - 1        # the first invocation is warm-up
    s = check_frame(rc.summary(model, real.assign(vendor="", arch="", verified=None)), SUMMARY)
    assert set(s.source) == {"model", "real"} and (s.lo_ns <= s.median_ns).all() and (s.median_ns <= s.hi_ns).all()


@pytest.fixture(scope="module")
def host_build(tmp_path_factory):
    if not shutil.which("clang++-19"):
        pytest.skip("no clang++-19 here (apt-get install clang-19 libomp-19-dev clang-tools-19)")
    try:
        return rr.build_host_region(tmp_path_factory.mktemp("offload"))
    except NotAvailable as e:
        pytest.skip(str(e))


def test_host_offload_region_runs_through_libomptarget(host_build):
    """The region offloaded to libomptarget's x86_64 plugin: every invocation's D2H checked
    against the kernel's formula, the runtime's own copies and phases parsed."""
    variants = ["plain", "lock_mapped"]
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if soft == resource.RLIM_INFINITY or soft >= 1 << 20:
        variants.append("app_pinned")       # mlock of the two arrays (40 KiB at nw=2)
    ran = rr.real_runtime(build=host_build, variants=variants, nw_values=[2], steps=1, invocations=3, trace_steps=1,
                          processes=2)
    runs = check_frame(ran.runs, rr.REAL_RUNS)
    assert runs.on_device.all() and (runs.wrong == 0).all() and len(runs) == 3 * len(variants)
    assert (runs[runs.variant == "lock_mapped"].env == "LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS=1").all()
    inv = check_frame(ran.invocations, rr.REAL_INVOCATIONS)
    assert len(inv) == 3 * 3 * len(variants) and inv.verified.all() and (inv.ns > 0).all()
    copies = rc.copies_table(ran.copies)
    assert copies.as_replica.all() and set(copies.variant) == set(variants)
    phases = ran.phases[ran.phases.segment == "invocation"]
    exe = phases[phases.phase == "Runtime: target exe"]
    assert len(exe) == 3 * len(variants) and exe.location.str.startswith("region.cpp:").all()
    if "app_pinned" in variants:
        assert runs[runs.variant == "app_pinned"].register.eq("mlock").all()


def test_host_offload_refuses_wrong_bytes_never(host_build):
    """--verify all on a bigger walker count; a seed other than the default."""
    env = rr.runtime_env(host_build)
    res = rr.run_region(host_build, env, variant="plain", nw=9, steps=1, invocations=2, seed=7)
    assert res["facts"]["wrong"] == 0 and res["invocations"].verified.all()
    assert res["facts"]["out_nbytes"] == 9 * 15_360 and res["facts"]["pos_nbytes"] == 9 * 24


def test_replica_model_on_the_host_runtime(host_rt):
    plan = rc.model_plan("nvidia", ["plain", "app_pinned", "lock_mapped"])
    model = check_frame(rc.replica_model(host_rt, plan, nw_values=[2], steps=1, invocations=3), MODEL_INVOCATIONS)
    assert sorted(set(model.variant)) == ["app_pinned", "lock_mapped", "plain"]
    assert model.groupby("variant").size().eq(3).all() and (model.ns > 0).all()
    assert set(model[model.variant == "app_pinned"].policy) == {"prepinned"}
    fig_rows = rc.beside(model, rr.real_runtime_or_reason(offload_dir="/nonexistent"))
    assert set(fig_rows.source) == {"model"} and fig_rows.label.str.contains("nw=2").all()


# a region that answers like the real binary: its per-invocation time is set by the process
# (its --seed), so the processes differ far more than one process's invocations do
_REGION = r"""
while [ $# -gt 0 ]; do case "$1" in --variant) v=$2; shift;; --nw) nw=$2; shift;; --steps) st=$2; shift;;
  --invocations) n=$2; shift;; --seed) seed=$2; shift;; esac; shift; done
echo "# offload_devices=1 on_device=1 vendor=0 variant=$v nw=$nw steps=$st invocations=$n register=none register_rc=0 register_ns=0 enter_ns=5"
echo "# exit_ns=3 unregister_rc=0 unregister_ns=0 wrong=0"
echo "variant,nw,step,invocation,ns,verified"
i=0; while [ $i -lt $n ]; do echo "$v,$nw,0,$i,$((seed * 10000 + i)),true"; i=$((i + 1)); done
"""


def test_the_real_runtime_repeats_in_processes_and_its_interval_is_over_them(tmp_path):
    _fake_binary(tmp_path, _REGION)
    ran = rr.real_runtime(offload_dir=tmp_path, variants=["plain", "app_pinned"], nw_values=[4, 8], steps=1,
                          invocations=6, trace_steps=0, processes=5, seed=1)
    runs = check_frame(ran.runs, rr.REAL_RUNS)
    assert len(runs) == 4 * 5 and all(sorted(g) == [0, 1, 2, 3, 4] for _, g in runs.groupby(["variant", "nw"]).process)
    first_round = list(zip(runs.variant[:4], runs.nw[:4]))
    rounds = [list(zip(runs.variant[i:i + 4], runs.nw[i:i + 4])) for i in range(0, 20, 4)]
    assert all(sorted(r) == sorted(first_round) for r in rounds) and len({tuple(r) for r in rounds}) > 1  # shuffled
    inv = check_frame(ran.invocations, rr.REAL_INVOCATIONS)
    assert inv.groupby("process").ns.min().tolist() == [10000 * (p + 1) for p in range(5)]
    s = check_frame(rc.summary(inv.iloc[:0].assign(policy="", user_pinned=False, platform="").drop(
        columns=["traced", "verified", "vendor", "arch", "process"]), ran), SUMMARY)
    real = s[s.source == "real"]
    assert (real.repeats == 5).all() and (real.interval_over == "processes").all() and (real.n == 25).all()
    # the medians of the processes are 10,003 .. 50,003: the interval spans processes, not invocations
    assert (real.median_ns == 30003).all() and (real.hi_ns - real.lo_ns >= 10000).all()
    assert (real.within_spread < 0.001).all() and (real.between_spread > 1).all()
    model = inv[inv.process == 0].assign(policy="driver_pageable", user_pinned=False, platform="host")
    ratio = check_frame(rc.model_real_ratio(model, ran), RATIO)
    row = ratio.iloc[0]
    assert row.real_processes == 5 and row.interval_over == "processes" and row.n_real == 25
    assert row.ratio == pytest.approx(10003 / 30003) and row.ratio_lo < 0.5 < row.ratio_hi


def test_each_real_run_records_its_placement_and_the_cpus_it_inherited(tmp_path):
    """``runs`` names the placement and the CPUs each process ran on: the parent's affinity, which
    the child (here a region that writes down its own) inherits."""
    _fake_binary(tmp_path, f"grep Cpus_allowed_list /proc/$$/status >>{tmp_path}/seen\n" + _REGION)
    cpu = max(os.sched_getaffinity(0))
    with ms.pinned_to(cpu):
        ran = rr.real_runtime(offload_dir=tmp_path, variants=["plain"], nw_values=[4], steps=1, invocations=2,
                              trace_steps=0, processes=2, placement="irq_cpu")
    runs = check_frame(ran.runs, rr.REAL_RUNS)
    assert (runs.placement == "irq_cpu").all() and (runs.cpus == str(cpu)).all() and len(runs) == 2
    assert (tmp_path / "seen").read_text().split() == ["Cpus_allowed_list:", str(cpu)] * 2
    whole = ms.cpuspan(os.sched_getaffinity(0))
    free = rr.real_runtime(offload_dir=tmp_path, variants=["plain"], nw_values=[4], steps=1, invocations=2,
                           trace_steps=0, processes=1).runs
    assert set(free.cpus) == {whole} and set(free.placement) == {"unpinned"}   # all of this process's CPUs
    if len(os.sched_getaffinity(0)) > 1:   # pinned by its caller and not told so: never called "unpinned"
        with ms.pinned_to(cpu):
            told = rr.real_runtime(offload_dir=tmp_path, variants=["plain"], nw_values=[4], steps=1, invocations=2,
                                   trace_steps=0, processes=1).runs
        assert set(told.placement) == {"set by the caller"} and set(told.cpus) == {str(cpu)}


def test_processes_below_one_are_refused_in_one_sentence(tmp_path):
    _fake_binary(tmp_path, _REGION)
    ran = rr.real_runtime_or_reason(offload_dir=tmp_path, processes=0)
    _one_sentence(ran.reason)
    assert "processes must be at least 1" in ran.reason


def test_host_offload_region_paired_splits_off_the_copies(host_build):
    """--paired: each invocation beside the same region over present arrays (no copies); the
    transfer_ns column is ns - kernel_ns, and the bytes are still checked."""
    r = subprocess.run([str(host_build.binary), "--nw", "3", "--steps", "1", "--invocations", "4", "--paired"],
                       capture_output=True, text=True, env=rr.runtime_env(host_build), timeout=120)
    assert r.returncode == 0, r.stderr[-500:]
    inv = pd.read_csv(io.StringIO("\n".join(l for l in r.stdout.splitlines() if not l.startswith("#"))))
    assert list(inv.columns[-2:]) == ["kernel_ns", "transfer_ns"] and len(inv) == 4 and inv.verified.all()
    assert (inv.kernel_ns > 0).all() and (inv.transfer_ns == inv.ns - inv.kernel_ns).all()


def test_host_offload_updates_probe(tmp_path):
    """updates.cpp through the host libomptarget: one row per timed update, both round trips checked."""
    if not shutil.which("clang++-19"):
        pytest.skip("no clang++-19 here (apt-get install clang-19 libomp-19-dev clang-tools-19)")
    try:
        build = rr.build_host_region(tmp_path, app="updates")
    except NotAvailable as e:
        pytest.skip(str(e))
    r = subprocess.run([str(build.binary), "--nbytes", "8,4100", "--rounds", "5"], capture_output=True, text=True,
                       env=rr.runtime_env(build), timeout=120)
    assert r.returncode == 0, r.stderr[-500:]
    facts = rr.parse_facts(l for l in r.stdout.splitlines() if l.startswith("#"))
    assert facts["on_device"] == 1 and facts["checked"] == 1 and facts["wrong"] == 0 and facts["nbytes"] == "8,4100"
    rows = pd.read_csv(io.StringIO("\n".join(l for l in r.stdout.splitlines() if not l.startswith("#"))))
    assert len(rows) == 20 and sorted(set(rows.direction)) == ["d2h", "h2d"] and (rows.ns > 0).all()
    assert rows.groupby(["nbytes", "direction"]).size().to_dict() == {(n, d): 5 for n in (8, 4100) for d in ("d2h", "h2d")}
    # the copy as a target region's map: the region with it less the same region over present data
    r = subprocess.run([str(build.binary), "--nbytes", "4100", "--rounds", "4", "--construct", "region"],
                       capture_output=True, text=True, env=rr.runtime_env(build), timeout=120)
    assert r.returncode == 0, r.stderr[-500:]
    facts = rr.parse_facts(l for l in r.stdout.splitlines() if l.startswith("#"))
    assert facts["construct"] == "region" and facts["checked"] == 1 and facts["wrong"] == 0
    rows = pd.read_csv(io.StringIO("\n".join(l for l in r.stdout.splitlines() if not l.startswith("#"))))
    assert len(rows) == 8 and sorted(set(rows.direction)) == ["d2h", "h2d"]


def test_phase_explanation_names_the_phases_that_hold_a_difference():
    """Outside 1 ± 0.15 the line names the profile's phases, largest difference first, and the rest
    outside them; within it says so; a variant without a profile says it cannot tell where."""
    ratio = pd.DataFrame([
        {"variant": "plain", "nw": 16, "ratio": 0.70, "ratio_lo": 0.66, "ratio_hi": 0.74, "interval_over": "processes"},
        {"variant": "app_pinned", "nw": 16, "ratio": 0.95, "ratio_lo": 0.90, "ratio_hi": 1.02, "interval_over": "processes"},
        {"variant": "lock_mapped", "nw": 16, "ratio": 0.60, "ratio_lo": 0.5, "ratio_hi": 0.7, "interval_over": "processes"}])
    rows = [("h2d", 2000, 4000), ("kernel", 4000, 4000), ("d2h", 30000, 36000), ("sync", 2000, 3000),
            ("region", 40000, 50000)]
    compare = pd.DataFrame([{"variant": "plain", "nw": 16, "phase": ph, "model_ns": m, "real_ns": r,
                             "difference_ns": r - m, "real_events": name}
                            for (ph, m, r), name in zip(rows, ["HostToDev", "Kernel Target", "DevToHost",
                                                               "Runtime: syncronize", "Runtime: target exe"])])
    text = rc.phase_explanation(ratio, compare).splitlines()
    assert len(text) == 3
    plain = next(t for t in text if "**plain" in t)
    assert "outside" in plain and plain.index("DevToHost +6 us") < plain.index("HostToDev +2 us")
    assert "outside the profiled phases +1 us" in plain   # 10 us in all, 9 us in the phases
    assert "within 1 ± 0.15" in next(t for t in text if "**app_pinned" in t)
    assert "no profile" in next(t for t in text if "**lock_mapped" in t)
    assert rc.phase_explanation(ratio.iloc[:0], compare) == ""
    assert rc.phase_explanation(pd.DataFrame([{"not_applicable": "no real run here"}]), compare) == ""


def _check_paired(ran, variants, *, processes: int, invocations: int) -> None:
    """What ``paired_processes`` leaves: the paired processes' invocations with the present-only
    region's time, and one traced paired run per point whose profile holds both regions."""
    runs = check_frame(ran.runs, rr.REAL_RUNS)
    paired = runs[runs.paired.astype(bool)]
    assert len(paired) == (processes + 1) * len(variants) and paired.traced.sum() == len(variants)
    present = check_frame(ran.present, rr.REAL_PRESENT)
    assert len(present) == (processes + 1) * invocations * len(variants) and present.verified.all()
    assert (present.kernel_ns > 0).all() and (present.transfer_ns == present.ns - present.kernel_ns).all()
    assert not ran.invocations.paired.any() and "kernel_ns" not in ran.invocations.columns
    ph = check_frame(ran.present_phases, rr.REAL_PHASES)
    exe = ph[ph.phase == "Runtime: target exe"]
    for seg in ("invocation", "present"):   # one region of each kind per invocation, at its own construct
        got = exe[exe.segment == seg]
        assert len(got) == invocations * len(variants) and got.groupby("variant").location.nunique().max() == (
            1 if seg == "invocation" else min(2, invocations))
        assert sorted(set(got.invocation)) == list(range(invocations))
    assert set(exe[exe.segment == "invocation"].location).isdisjoint(exe[exe.segment == "present"].location)


def test_host_offload_paired_processes_measure_the_present_only_region(host_build, host_rt):
    """paired_processes through the host plugin: the --paired runs beside the timed ones, and the
    model with each measured term (figures of the host plugin: only their presence is checked)."""
    ran = rr.real_runtime(build=host_build, variants=["plain"], nw_values=[2], steps=1, invocations=4, trace_steps=1,
                          processes=2, paired_processes=2)
    _check_paired(ran, ["plain"], processes=2, invocations=4)
    assert len(ran.invocations) == 3 * 4          # the timed processes and the traced one, unpaired
    model = rc.replica_model(host_rt, rc.model_plan("host", ["plain"]), nw_values=[2], steps=2, invocations=4)
    waited = wait_mode.wait_model(host_rt, rc.model_plan("host", ["plain"]), nw_values=[2], steps=1, invocations=4)
    terms = check_frame(real_terms.model_terms(model, ran, wait=waited), REAL_TERMS)
    assert list(terms.step) == [0, 1, 2, 3] and np.isfinite(terms[terms.step < 3].ratio).all()
    assert (terms[terms.step < 3].note == "").all()   # the host has no wait mode: that term not measured, saying so
    assert terms[terms.step == 3].ratio.isna().all() and terms[terms.step == 3].note.str.contains("not applicable").all()


def test_paired_processes_and_the_terms_on_the_gpu(cuda_rt):
    """The GPU node: the real offload build (build/offload) through the vendor's plugin, --paired
    processes and their traced profile, the model's kernel-alone invocations, and model / real with
    each measured term; skips where there is no build or no GPU for it."""
    try:
        build = offload_build.find_build()
    except NotAvailable as e:
        pytest.skip(str(e))
    why = offload_build.device_reason(build)
    if why or build.vendor == "host":
        pytest.skip(why or "the offload build here targets the host")
    variants = ["plain", "app_pinned"]
    ran = rr.real_runtime(build=build, variants=variants, nw_values=[16], steps=1, invocations=6, trace_steps=1,
                          processes=2, paired_processes=2)
    _check_paired(ran, variants, processes=2, invocations=6)
    model = rc.replica_model(cuda_rt, rc.model_plan(build.vendor, variants), nw_values=[16], steps=2, invocations=6)
    waited = wait_mode.wait_model(cuda_rt, rc.model_plan(build.vendor, variants), nw_values=[16], steps=1, invocations=6,
                                  processes_per_mode=2)
    terms = check_frame(real_terms.model_terms(model, ran, wait=waited), REAL_TERMS)
    assert len(terms) == 4 * len(variants) and np.isfinite(terms.ratio).all() and (terms.ratio_lo <= terms.ratio_hi).all()
    assert (terms[terms.step == 3].wait_processes == 2).all()
    assert (terms[terms.step == 1].measured_ns > 0).all() and (terms[terms.step == 1].replaced_ns > 0).all()
    head, *text = real_terms.terms_explanation(terms).splitlines()   # the headline, then a line per point
    assert head.startswith("**Within 1 ± 0.15: ") and f"of {len(variants)} points" in head
    assert len(text) == len(variants) and all("present-only region (" in t and "not measured" not in t for t in text)
    assert all("as the real runtime runs them, in fresh processes in the blocking wait (" in t for t in text)


def test_the_model_times_each_invocation_without_its_copies(any_rt):
    """replica_model's kernel_only_ns: the same invocation without copies, run beside it on the
    engine (timed in C); it costs less than the invocation with its copies (the D2H of 1 MiB)."""
    from pinpath.experiments.native import native_why_not
    if native_why_not(any_rt):
        pytest.skip(native_why_not(any_rt))
    plan = rc.model_plan("nvidia", ["plain", "app_pinned"])
    model = check_frame(rc.replica_model(any_rt, plan, nw_values=[69], steps=2, invocations=8), MODEL_INVOCATIONS)
    assert model.kernel_only_ns.notna().all() and (model.kernel_only_ns > 0).all()
    assert (model.groupby("variant").kernel_only_ns.median() < model.groupby("variant").ns.median()).all()
    bare = rc.replica_model(any_rt, plan, nw_values=[4], steps=1, invocations=2, kernel_only=False)
    assert bare.kernel_only_ns.isna().all() and len(bare) == 2 * 2


def test_between_rounds_is_called_after_each_round_and_before_the_traced_runs(tmp_path):
    """``between_rounds(k)`` (notebook 13: a wait-mode process) runs after round k's processes, so
    other processes take their turn in the same stretch of the run; the traced runs come after."""
    _fake_binary(tmp_path, f"echo run >>{tmp_path}/seen\n" + _REGION)
    seen = lambda: len((tmp_path / "seen").read_text().split()) if (tmp_path / "seen").is_file() else 0  # noqa: E731
    calls = []
    ran = rr.real_runtime(offload_dir=tmp_path, variants=["plain"], nw_values=[4, 8], steps=1, invocations=2,
                          trace_steps=1, processes=3, between_rounds=lambda k: calls.append((k, seen())))
    # rounds of 2 points each, then the 2 traced runs
    assert calls == [(0, 2), (1, 4), (2, 6)] and seen() == 8 and len(ran.runs) == 8
