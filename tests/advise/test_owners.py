"""What a user can act on: a stack variable and the runtime's own buffers are not arrays to register,
are charged as the runtime moves them, and a variant that is the baseline's model is ranked with it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd

from pinpath.advise import pattern, read_trace
from pinpath.advise.advice import advice
from pinpath.advise.pattern import owner_of
from pinpath.advise.predict import predict, same_as

_HERE = Path(__file__).parent
REFERENCE = _HERE.parents[1] / "outputs" / "reference" / "cuda" / "advise"
_spec = importlib.util.spec_from_file_location("advise_test_helpers", _HERE / "test_advise.py")


def _helpers():
    mod = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(mod)
    return mod


KLE = ("PluginInterface device 0 info: Copying data from host to device, HstPtr=0x00007ffc14b35500, "
       "TgtPtr=0x00007f2d28a00000, Size=16, Name=KernelLaunchEnv")


def stencil_like(tr, steps=4) -> str:
    """Per step: a heap halo in and out, an 8-byte stack scalar back, a launch environment in."""
    lines = []
    for s in range(steps):
        lines.append(f"pinpath-region: invocation step={s} invocation=0")
        lines.append(tr.H2D.format(hp="0x00007f2458630000", tp="0xa000", n=16384, name="g[0:n]"))
        lines.append(KLE)
        lines.append(tr.D2H.format(hp="0x00007ffc14b355d8", tp="0xb000", n=8, name="sum"))
        lines.append(tr.D2H.format(hp="0x00007f2458630000", tp="0xa000", n=16384, name="g[0:n]"))
    lines.append("pinpath-region: teardown")
    return "\n".join(lines) + "\n"


def test_owner_of_names_stack_runtime_and_application():
    assert owner_of("0x00007ffc14b355d4", 4, "initial") == "stack"
    assert owner_of("0x00007ffc14b35500", 16, "KernelLaunchEnv") == "runtime"
    assert owner_of("0x00007f2458630000", 16 << 20, "g[0:n]") == "application"   # an mmap'd heap array
    assert owner_of("0x0000555555558040", 8, "counter") == "application"         # a global
    assert owner_of("0x00007ffd00000000", 64 << 20, "big") == "application"      # too large for a stack


def test_the_references_traces_name_their_stack_probe(tmp_path):
    """The CUDA reference's traces (LLVM 19): the on-device probe's `initial` is a stack int."""
    for app in ("region", "stencil"):
        p = pattern(read_trace(REFERENCE / f"{app}.info"))
        own = p.buffers.set_index("name").owner
        assert own["initial"] == "stack"
        assert (p.buffers[p.buffers.name != "initial"].owner == "application").all()


def test_pattern_owners_and_advice_never_registers_them(write, tr):
    h = _helpers()
    p = pattern(read_trace(write("s.err", stencil_like(tr))))
    own = p.arrays.set_index("name").owner.to_dict()
    assert own == {"g[0:n]": "application", "KernelLaunchEnv": "runtime", "sum": "stack"}
    assert set(p.transfers.owner) == {"application", "stack", "runtime"}
    pols = {"plain": ("driver_pageable", False, None), "app_pinned": ("prepinned", True, None),
            "lock_mapped": ("driver_pageable", False, None)}
    classes = [tuple(r) for r in p.classes[["nbytes", "direction", "reuse"]].itertuples(index=False)]
    ns = h._known_times(pols, classes, lambda v, use: {"plain": 1000, "app_pinned": 300, "lock_mapped": 5000}[v],
                        lambda v, ev: 100 if ev in ("map", "unmap") else 700)
    pred = predict(p, h._synthetic_replay(ns), pols)
    t = pred.totals.set_index("variant")
    # app_pinned: the 8 halo copies pinned; the 4 scalars and 4 launch environments as plain moves them;
    # the registration of the grid only
    assert t.loc["app_pinned", "predicted_ns"] == 8 * 300 + 8 * 1000 + 3 * 200 + 1400
    assert t.loc["plain", "predicted_ns"] == 16 * 1000 + 3 * 200
    # lock_mapped is plain's model on this runtime: plain's figures and rank, whatever its own replay said
    assert t.loc["lock_mapped", "same_as"] == "plain"
    assert t.loc["lock_mapped", ["predicted_ns", "low", "high", "rank"]].tolist() == \
        t.loc["plain", ["predicted_ns", "low", "high", "rank"]].tolist()
    assert set(pred.arrays.name) == {"g[0:n]"}   # break-evens of what a user can register only
    words = " ".join(advice(p, pred, platform="cuda", vendor="nvidia"))
    assert "Arrays worth registering: `g[0:n]`" in words
    reg = words.split("Arrays worth registering")[1].split(". ")[0]
    assert "sum" not in reg and "KernelLaunchEnv" not in reg
    assert "on the stack" in words and "`sum`" in words and "`KernelLaunchEnv`" in words
    assert "`lock_mapped` is the same as `plain` on this runtime" in words


def test_same_as():
    pols = {"plain": ("nextgen", False, None), "app_pinned": ("nextgen", True, None),
            "lock_mapped": ("nextgen_lock_mapped", False, None)}
    assert [same_as(pols, v) for v in pols] == ["plain", "app_pinned", "lock_mapped"]
    pols["lock_mapped"] = ("nextgen", False, None)
    assert same_as(pols, "lock_mapped") == "plain"


def test_layout_is_the_traces_own_arrays_and_copies(write, tr):
    from pinpath.advise.runtime_term import layout_of
    text = stencil_like(tr, steps=10).replace(
        "pinpath-region: invocation step=9 invocation=0",
        "pinpath-region: invocation step=9 invocation=0\n" +
        tr.D2H.format(hp="0x00007f2458634000", tp="0xa000", n=4096, name="g[0:n]"))   # once in 10 steps, at 16 KiB
    lines = layout_of(pattern(read_trace(write("s.err", text))), 100).splitlines()
    arrays = [l for l in lines if l.startswith("array")]
    # the copy just past the grid's end is an array of its own
    assert sorted(arrays) == ["array 16 runtime", "array 16384 application", "array 4096 application", "array 8 stack"]
    grid, other = arrays.index("array 16384 application"), arrays.index("array 4096 application")
    copies = [l for l in lines if l.startswith("copy")]
    assert copies[0] == f"copy {grid} 0 16384 h2d 1"          # trace order, every round
    assert copies[-1] == f"copy {other} 0 4096 d2h 10"        # made in 1 step of 10: every 10th round
    assert len(copies) == 5
    # a slice of an array keeps its offset
    text = stencil_like(tr, steps=2).replace("Size=16384, Name=g[0:n]\npinpath-region: teardown",
                                             "Size=16384, Name=g[0:n]\n" + tr.D2H.format(
                                                 hp="0x00007f2458631000", tp="0xa000", n=4096, name="g[0:n]") +
                                             "\npinpath-region: teardown")
    setup = tr.D2H.format(hp="0x00007ffc14b355d4", tp="0xc000", n=4, name="initial")   # before the first marker
    lines = layout_of(pattern(read_trace(write("t.err", setup + "\n" + text))), 100).splitlines()
    arrays = [l for l in lines if l.startswith("array")]
    grid = arrays.index("array 16384 application")
    assert f"copy {grid} 4096 4096 d2h 2" in lines
    # a setup copy is charged too, so it is probed too (as rarely as the trace makes it: once in 2 steps)
    assert f"copy {arrays.index('array 4 stack')} 0 4 d2h 2" in lines


def test_the_layout_probe_through_the_host_libomptarget(write, tr, tmp_path, host_offload):
    from pinpath.advise.runtime_term import probe_runtime
    host_offload("updates")
    p = pattern(read_trace(write("s.err", stencil_like(tr))))
    probe, why = probe_runtime(p.classes, ["plain", "app_pinned"], vendor="host", offload_dir=tmp_path, rounds=4,
                               processes=1, layout=p)
    assert why == "", why
    # 4 copies a round: the halo in and out, the scalar, the launch environment
    assert probe.groupby("variant").size().to_dict() == {"plain": 4 * 4, "app_pinned": 4 * 4}
    assert sorted(set(zip(probe.nbytes, probe.direction))) == [(8, "d2h"), (16, "h2d"), (16384, "d2h"), (16384, "h2d")]


def test_designs_on_host_are_labelled_runtime_designs(write, tr, tmp_path, capsys):
    """--designs: the trace replayed under all nine policies of the engine, as runtime designs in
    designs.csv, prediction.csv and the pages, apart from the user's settings."""
    from pinpath.__main__ import main
    from pinpath.advise.designs import DESIGNS
    from pinpath.vocab import Policy
    assert set(DESIGNS) == {p.value for p in Policy} and len(DESIGNS) == 9
    out = tmp_path / "adv"
    rc = main(["advise", str(write("run.err", tr.info_trace(steps=2, invocations=2))), "--platform", "host",
               "--out", str(out), "--repeats", "5", "--designs", "--no-runtime-term"])
    assert rc == 0, capsys.readouterr().err
    d = pd.read_csv(out / "designs.csv")
    assert set(d.design) == set(DESIGNS) and (d.label == "runtime design").all()
    ok = d[d.not_replayed.isna()]
    assert len(ok) >= 1 and (ok.predicted_ns > 0).all() and (ok.low <= ok.predicted_ns).all()
    assert ok.predicted_ns.is_monotonic_increasing   # best first
    pred = pd.read_csv(out / "prediction.csv")
    assert set(pred[pred.kind == "runtime design"].variant) == set(DESIGNS)
    assert set(pred[pred.kind == "variant"].variant) == {"plain", "app_pinned", "lock_mapped"}
    md = (out / "summary.md").read_text()
    assert "### Runtime designs" in md and "not settings a user can set" in md
    assert md.index("### Advice") < md.index("### Runtime designs")   # never part of the advice
    assert "runtime designs" in (out / "advice.html").read_text()
    # without --designs: nothing of them
    out2 = tmp_path / "adv2"
    assert main(["advise", str(write("run2.err", tr.info_trace(steps=1, invocations=2))), "--platform", "host",
                 "--out", str(out2), "--repeats", "5", "--no-runtime-term"]) == 0
    assert not (out2 / "designs.csv").exists() and "Runtime designs" not in (out2 / "summary.md").read_text()


def test_real_rows_per_placement_and_differences(write, tr):
    """prediction.csv: one set of rows per placement (where the timed processes ran against the GPU's
    interrupt CPU), the difference from plain predicted against the real one, and a verdict."""
    from pinpath.advise.validate import real_rows
    h = _helpers()
    p = pattern(read_trace(write("run.err", tr.info_trace(steps=4, invocations=1))))
    pols = {"plain": ("driver_pageable", False, None), "app_pinned": ("prepinned", True, None)}
    classes = [tuple(r) for r in p.classes[["nbytes", "direction", "reuse"]].itertuples(index=False)]
    ns = h._known_times(pols, classes, lambda v, use: 1000 if v == "plain" else 400, lambda v, ev: 100)
    pred = predict(p, h._synthetic_replay(ns), pols)
    step = pred.typical.set_index(["variant", "by"]).predicted_ns
    real = pd.DataFrame([{"variant": v, "step": s, "process": k, "placement": pl, "cpus": c,
                          "ns": {"plain": 2000.0, "app_pinned": 800.0}[v] * (3 if pl == "irq_cpu" else 1) + k}
                         for v in pols for s in range(4) for k in range(1, 6)
                         for pl, c in (("irq_cpu", "14"), ("other_cpu", "0 1 2"))])
    rows = pd.DataFrame(real_rows("app", pred, real))
    assert set(rows.placement) == {"irq_cpu", "other_cpu"} and len(rows) == 2 * 3
    other = rows[rows.placement == "other_cpu"].set_index("variant")
    assert other.real_ns["plain"] == 2003 and other.kind["app_pinned - plain"] == "difference"
    d = other.loc["app_pinned - plain"]
    assert d.predicted_ns == step[("app_pinned", "step")] - step[("plain", "step")]
    assert d.real_ns == 800 - 2000 and d.real_low <= d.real_ns <= d.real_high
    # 2 copies a step (1000 vs 400): predicted 2000 and 800 against real 2003 and 803: within 20 %
    assert other.verdict["plain"] == "within 20 %" and other.verdict["app_pinned - plain"] == "within 20 %"
    assert rows[rows.placement == "irq_cpu"].set_index("variant").verdict["plain"] == "outside"


def test_a_twin_of_plain_measured_apart_is_said(write, tr):
    from pinpath.advise.validate import measured_apart, real_rows
    h = _helpers()
    p = pattern(read_trace(write("run.err", tr.info_trace(steps=4, invocations=1))))
    pols = {"plain": ("driver_pageable", False, None), "lock_mapped": ("driver_pageable", False, None)}
    classes = [tuple(r) for r in p.classes[["nbytes", "direction", "reuse"]].itertuples(index=False)]
    pred = predict(p, h._synthetic_replay(h._known_times(pols, classes, lambda v, use: 1000, lambda v, ev: 100)), pols)
    def real(gap):
        return pd.DataFrame([{"variant": v, "step": s, "process": k, "ns": 2000.0 + k + (gap if v == "lock_mapped" else 0)}
                             for v in pols for s in range(4) for k in range(1, 6)])
    said = measured_apart(real_rows("app", pred, real(5000)), pred)
    assert len(said) == 1 and said[0].startswith("`lock_mapped` is predicted as plain") and "measured it apart" in said[0]
    assert measured_apart(real_rows("app", pred, real(0)), pred) == []
