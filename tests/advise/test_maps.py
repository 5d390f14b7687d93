"""Per-step maps (issue 33 item 3): LIBOMPTARGET_INFO bit 8's map entries made and removed tell
which copies a `target enter data` / `exit data` made; an array mapped every step is charged its
map and unmap every step, and its copies carry the runtime term of those directives, probed as the
trace makes them. Synthetic traces and known times check the arithmetic (not measurements)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pinpath import ompinfo
from pinpath.advise import pattern, read_trace
from pinpath.advise.predict import predict
from pinpath.advise.runtime_term import layout_of, runtime_rows

_HERE = Path(__file__).parent
REFERENCE = _HERE.parents[1] / "outputs" / "reference" / "cuda" / "advise"
_spec = importlib.util.spec_from_file_location("advise_test_helpers_maps", _HERE / "test_advise.py")

MAP = ("omptarget device 0 info: Creating new map entry with HstPtrBase={hp}, HstPtrBegin={hp}, TgtAllocBegin={tp}, "
       "TgtPtrBegin={tp}, Size={n}, DynRefCount=1, HoldRefCount=0, Name={name}")
MAP_OLD = ("Libomptarget device 0 info: Creating new map entry with HstPtrBase={hp}, HstPtrBegin={hp}, TgtPtrBegin={tp}, "
           "Size={n}, DynRefCount=1, HoldRefCount=0, Name={name}")   # before LLVM 17: no TgtAllocBegin
UNMAP = "omptarget device 0 info: Removing map entry with HstPtrBegin={hp}, TgtPtrBegin={tp}, Size={n}, Name={name}"
ARRAYS = (("0x0000560000001000", 64), ("0x0000560000003000", 8192))
COUNTER = "0x00007ffc00000100"   # a local variable on the stack


def _helpers():
    mod = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(mod)
    return mod


def species_like(tr, steps=4, *, maps=True, alloc=False) -> str:
    """species.cpp's pattern: per step a stack counter and two arrays mapped in (enter data), then
    out (exit data). ``alloc``: the second array's map copies nothing (map(alloc:)); its exit copies
    back. Without ``maps``: the same copies as LIBOMPTARGET_INFO=32 prints them."""
    lines = []
    for s in range(steps):
        lines.append(f"pinpath-region: invocation step={s} invocation=0")
        for hp, n, name in ((COUNTER, 8, "hits"),) + tuple((hp, n, "p[0:m]") for hp, n in ARRAYS):
            if maps:
                lines.append(MAP.format(hp=hp, tp="0xa000", n=n, name=name))
            if not (alloc and n == 8192):
                lines.append(tr.H2D.format(hp=hp, tp="0xa000", n=n, name=name))
        for hp, n, name in tuple((hp, n, "p[0:m]") for hp, n in ARRAYS) + ((COUNTER, 8, "hits"),):
            lines.append(tr.D2H.format(hp=hp, tp="0xa000", n=n, name=name))
            if maps:
                lines.append(UNMAP.format(hp=hp, tp="0xa000", n=n, name=name))
    lines.append("pinpath-region: teardown")
    return "\n".join(lines) + "\n"


def test_map_lines_are_read_in_both_forms():
    got = list(ompinfo.events("\n".join([MAP.format(hp="0x10", tp="0x20", n=64, name="p[0:m]"),
                                         MAP_OLD.format(hp="0x30", tp="0x40", n=819200, name="y"),
                                         UNMAP.format(hp="0x10", tp="0x20", n=64, name="a, b[0:n]")])))
    assert got == [("map", {"nbytes": 64, "name": "p[0:m]", "host_ptr": "0x10", "tgt_ptr": "0x20", "device": 0}),
                   ("map", {"nbytes": 819200, "name": "y", "host_ptr": "0x30", "tgt_ptr": "0x40", "device": 0}),
                   ("unmap", {"nbytes": 64, "name": "a, b[0:n]", "host_ptr": "0x10", "tgt_ptr": "0x20", "device": 0})]
    assert list(ompinfo.events("omptarget device 0 info: Removing map entry with nothing"))[0][0] == "unreadable"


def test_the_trace_says_which_copies_a_map_made(write, tr):
    t = read_trace(write("s.err", species_like(tr, steps=3, alloc=True)))
    assert t.has_maps and any("mapped and unmapped" in k for k in t.knows)
    assert not any("mapped or unmapped" in k for k in t.lacks)
    c = t.copies
    assert set(c[c.direction == "h2d"]["at"]) == {"map"} and set(c[c.direction == "d2h"]["at"]) == {"unmap"}
    m = t.maps
    assert len(m) == 3 * 3 * 2 and m.groupby("step").size().tolist() == [6, 6, 6]
    assert m.region.tolist() == [s for s in range(3) for _ in range(6)]
    # the alloc map made no copy; its unmap did
    big = m[m.nbytes == 8192]
    assert big[big.event == "map"].copied.eq(False).all() and big[big.event == "unmap"].copied.all()
    # a map line comes before the copy it made (seq: the copies before it)
    first = m.iloc[0]
    assert first.event == "map" and first.seq == 0 and c.iloc[0]["at"] == "map"


def test_a_trace_of_copies_only_says_what_it_lacks(write):
    """The CUDA reference's species trace as LIBOMPTARGET_INFO=32 alone prints it (its map entry
    lines, bit 8, left out): no map lines, each array charged one map and one unmap, and the trace
    says which setting would tell more."""
    lines = (REFERENCE / "species.info").read_text().splitlines(keepends=True)
    copies_only = [line for line in lines if " map entry " not in line]
    assert len(copies_only) < len(lines)   # the reference's trace has the map lines this test removes
    t = read_trace(write("species32.info", "".join(copies_only)))
    assert not t.has_maps and (t.copies["at"] == "").all()
    assert any("LIBOMPTARGET_INFO=40" in k for k in t.lacks)
    p = pattern(t)
    assert not p.arrays.remapped.any()


def test_pattern_names_arrays_mapped_every_step(write, tr):
    p = pattern(read_trace(write("s.err", species_like(tr))))
    a = p.arrays.set_index("name")
    assert a.remapped.all() and a.maps.tolist() == [4, 4, 4]
    # an array mapped once, at setup (the stencil's grid): its copy at the map is probed as an update
    setup = (MAP.format(hp="0x0000560000009000", tp="0xb000", n=4096, name="g[0:n]") + "\n" +
             tr.H2D.format(hp="0x0000560000009000", tp="0xb000", n=4096, name="g[0:n]") + "\n")
    q = pattern(read_trace(write("t.err", setup + species_like(tr))))
    g = q.arrays.set_index("name").loc["g[0:n]"]
    assert not g.remapped and g.maps == 1
    assert (q.transfers[q.transfers.name == "g[0:n]"]["at"] == "").all()
    assert q.maps[q.maps.name == "g[0:n]"].segment.tolist() == ["setup"]


def _pols():
    return {"plain": ("driver_pageable", False, None), "app_pinned": ("prepinned", True, None)}


def _replay(p, transfer=1000, event=100):
    h = _helpers()
    classes = [tuple(r) for r in p.classes[["nbytes", "direction", "reuse"]].itertuples(index=False)]
    return h._synthetic_replay(h._known_times(_pols(), classes, lambda v, use: transfer if v == "plain" else 400,
                                              lambda v, ev: event if ev in ("map", "unmap") else 700))


def test_each_map_is_charged_where_the_trace_makes_it(write, tr):
    steps = 4
    with_maps = pattern(read_trace(write("m.err", species_like(tr, steps))))
    copies_only = pattern(read_trace(write("c.err", species_like(tr, steps, maps=False))))
    a = predict(with_maps, _replay(with_maps), _pols()).totals.set_index("variant").predicted_ns
    b = predict(copies_only, _replay(copies_only), _pols()).totals.set_index("variant").predicted_ns
    copies = 2 * 3 * steps
    # plain: 24 copies at 1000; a map and an unmap (100 each) of 3 arrays, every step against once
    assert a["plain"] == copies * 1000 + steps * 3 * 200
    assert b["plain"] == copies * 1000 + 3 * 200
    # app_pinned: the counter moved as plain moves it; the two arrays registered once (700 + 700)
    assert a["app_pinned"] == 2 * steps * 1000 + 4 * steps * 400 + steps * 3 * 200 + 2 * 1400
    # the typical step: its own maps, not the whole trace's
    typ = predict(with_maps, _replay(with_maps), _pols()).typical.set_index(["variant", "by"]).predicted_ns
    assert typ[("plain", "step")] == 6 * 1000 + 3 * 200


def _probe(p, directive_ns: dict, update_ns=5000.0, per_step=True) -> pd.DataFrame:
    """Probe rows as updates --layout prints them, of known times: a directive (at, direction) takes
    directive_ns[(variant, at)], an update update_ns."""
    rows = []
    for line in layout_of(p, 9, per_step).splitlines():
        w = line.split()
        if w[0] != "copy":
            continue
        at = w[6] if len(w) > 6 else "update"
        for v in _pols():
            for proc in range(3):
                rows += [{"variant": v, "process": proc, "direction": w[4], "nbytes": int(w[3]), "round": r,
                          "ns": directive_ns.get((v, at), update_ns) + (r % 3) - 1, "at": at} for r in range(9)]
    return pd.DataFrame(rows)


def test_a_copy_made_by_a_map_costs_the_directive(write, tr):
    """The runtime term of a copy a map made is the probed `target enter data` less the replay's copy
    and map event: the three charges add up to the directive's time; a map that copies nothing is
    charged its own probed directive."""
    steps = 4
    p = pattern(read_trace(write("m.err", species_like(tr, steps, alloc=True))))
    rep = _replay(p)
    times = {("plain", "map"): 30_000.0, ("plain", "unmap"): 40_000.0,
             ("app_pinned", "map"): 20_000.0, ("app_pinned", "unmap"): 25_000.0}
    rt = runtime_rows(_probe(p, times), rep)
    assert set(rt.event) == {"runtime_map", "runtime_unmap"}
    assert set(rt[rt.direction == "none"].nbytes) == {8192}      # the alloc map of the large array
    pred = predict(p, pd.concat([rep, rt], ignore_index=True), _pols())
    typ = pred.typical.set_index(["variant", "by"]).predicted_ns
    # per step: 3 maps (2 copying, 1 not) and 3 unmaps, each the directive's probed time
    assert typ[("plain", "step")] == pytest.approx(3 * 30_000 + 3 * 40_000)
    # app_pinned: the counter is the stack's (plain's directives), the arrays pinned
    assert typ[("app_pinned", "step")] == pytest.approx(30_000 + 40_000 + 2 * 20_000 + 2 * 25_000)
    # a break-even's saving per transfer is the directives' (the map's term where no update was probed)
    be = pred.break_even.set_index(["nbytes", "direction"])
    assert be.loc[(64, "h2d"), "saving_ns"] == pytest.approx(30_000 - 20_000)
    assert be.loc[(64, "d2h"), "saving_ns"] == pytest.approx(40_000 - 25_000)


def test_the_layout_maps_per_step_arrays_in_its_rounds(write, tr):
    p = pattern(read_trace(write("m.err", species_like(tr, 6, alloc=True))))
    lines = layout_of(p, 30).splitlines()
    arrays = [l for l in lines if l.startswith("array")]
    assert arrays == ["array 8 stack per_step", "array 64 application per_step", "array 8192 application per_step"]
    copies = [l for l in lines if l.startswith("copy")]
    assert copies == ["copy 0 0 8 h2d 1 map", "copy 1 0 64 h2d 1 map", "copy 2 0 8192 none 1 map",
                      "copy 1 0 64 d2h 1 unmap", "copy 2 0 8192 d2h 1 unmap", "copy 0 0 8 d2h 1 unmap"]


def test_per_step_maps_through_the_host_libomptarget(tmp_path, host_offload):
    """species traced with LIBOMPTARGET_INFO=40 through libomptarget's host target: every copy of a
    step is a map's or an unmap's; its layout probed by updates makes them as enter/exit data."""
    from pinpath.advise.runtime_term import probe_runtime
    from pinpath.experiments import offload_build as ob
    build = host_offload("species")
    env = {**os.environ, **ob.runtime_env(build), "LIBOMPTARGET_INFO": "40"}
    r = subprocess.run([str(build.binary), "--species", "3", "--steps", "3", "--markers"], capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    (tmp_path / "species.info").write_text(r.stderr)
    p = pattern(read_trace(tmp_path / "species.info"))
    steps = p.transfers[p.transfers.step >= 0]
    assert (steps["at"] != "").all() and steps.groupby("step").size().tolist() == [8, 8, 8]
    assert p.arrays[p.arrays.name != "initial"].remapped.all()
    host_offload("updates")   # the probe's binary, the build's manifest now its
    probe, why = probe_runtime(p.classes, ["plain", "app_pinned"], vendor="host", offload_dir=tmp_path, rounds=4,
                               processes=1, layout=p)
    assert why == "", why
    per = probe.groupby(["variant", "at"]).size().unstack()
    # per round: 4 maps and 4 unmaps (3 arrays and the counter); the setup's `initial` as an update
    assert per.loc["plain", "map"] == per.loc["plain", "unmap"] == 4 * 4
    assert set(probe.direction) == {"h2d", "d2h"} and (probe.ns > 0).all()


def test_advise_of_a_trace_with_maps_writes_them(write, tr, tmp_path):
    """The command on the host: the pattern's maps as a data set, the arrays table says how often
    each was mapped and whether every step."""
    from pinpath.__main__ import main
    out = tmp_path / "adv"
    assert main(["advise", str(write("m.err", species_like(tr, 3))), "--platform", "host", "--out", str(out),
                 "--repeats", "5", "--no-runtime-term"]) == 0
    maps = pd.read_csv(out / "pattern" / "maps.csv")
    assert len(maps) == 3 * 3 * 2 and set(maps.event) == {"map", "unmap"} and maps.remapped.all()
    md = (out / "summary.md").read_text()
    assert "| maps | mapped every step |" in md and "when each buffer was mapped and unmapped" in md
    steps = pd.read_csv(out / "steps.csv")
    assert np.isfinite(steps.predicted_ns).all()


def test_without_markers_an_array_mapped_once_is_not_mapped_every_step(write, tr):
    """A trace without pinpath's markers (every line in one segment): an array mapped once before
    its kernels is not probed as mapped every step; one mapped before each kernel is. A copy back
    before a kernel is not the copy of a removal after it."""
    once = [MAP.format(hp="0x0000560000009000", tp="0xb000", n=4096, name="g")]
    for k in range(3):
        once += [tr.H2D.format(hp="0x0000560000009000", tp="0xb000", n=4096, name="g"), tr.LAUNCH.format(line=k)]
    once += [tr.D2H.format(hp="0x0000560000009000", tp="0xb000", n=4096, name="g"), tr.LAUNCH.format(line=9),
             UNMAP.format(hp="0x0000560000009000", tp="0xb000", n=4096, name="g")]
    p = pattern(read_trace(write("once.err", "\n".join(once) + "\n")))
    assert not p.arrays.remapped.any() and (p.transfers["at"] == "").all()
    assert p.trace.copies["at"].tolist() == ["map", "", "", ""]   # the last copy: not its removal's (a kernel between)
    each = []
    for k in range(3):
        each += [MAP.format(hp="0x0000560000009000", tp="0xb000", n=4096, name="g"),
                 tr.H2D.format(hp="0x0000560000009000", tp="0xb000", n=4096, name="g"), tr.LAUNCH.format(line=k),
                 tr.D2H.format(hp="0x0000560000009000", tp="0xb000", n=4096, name="g"),
                 UNMAP.format(hp="0x0000560000009000", tp="0xb000", n=4096, name="g")]
    q = pattern(read_trace(write("each.err", "\n".join(each) + "\n")))
    assert q.arrays.remapped.all() and q.transfers["at"].tolist() == ["map", "unmap"] * 3


def test_an_updates_that_cannot_map_per_step_is_probed_with_updates(write, tr, tmp_path, host_offload, monkeypatch):
    """A build whose updates predates per-step maps refuses the layout (exit 2, "cannot be read"):
    the probe runs again with every copy an update, and says so."""
    from pinpath.advise import runtime_term as rt_mod
    host_offload("updates")
    p = pattern(read_trace(write("m.err", species_like(tr, 3))))
    real, seen = rt_mod._probe, []

    def old_build(exe, env, vendor, variants, where, *rest):
        text = Path(where[1]).read_text()
        seen.append(" per_step" in text)
        if " per_step" in text:   # what an older updates says of a line it does not know
            return rt_mod._empty(), "the runtime probe (plain) stopped: updates: --layout x: line 1 cannot be read"
        return real(exe, env, vendor, variants, where, *rest)

    monkeypatch.setattr(rt_mod, "_probe", old_build)
    probe, why = rt_mod.probe_runtime(p.classes, ["plain"], vendor="host", offload_dir=tmp_path, rounds=3,
                                      processes=1, layout=p)
    assert why == "" and seen == [True, False] and set(probe["at"]) == {"update"}
    assert "cannot map per step" in probe.attrs["note"]


def test_per_step_maps_through_the_offload_bundle(write, tr):
    """On a GPU node with the offload build (build/offload, as the reference carries it): updates
    makes a species-like step's maps and unmaps through the real libomptarget, timed per directive,
    plain and app_pinned. Skipped without a GPU build and its GPU."""
    from pinpath.advise.runtime_term import probe_runtime
    from pinpath.errors import NotAvailable
    from pinpath.experiments import offload_build as ob
    try:
        build = ob.find_build()
    except NotAvailable as e:
        pytest.skip(str(e))
    if build.vendor == "host" or ob.device_reason(build):
        pytest.skip(ob.device_reason(build) or "the offload build is the host's")
    p = pattern(read_trace(write("m.err", species_like(tr, 3, alloc=True))))
    probe, why = probe_runtime(p.classes, ["plain", "app_pinned"], vendor=build.vendor, rounds=5, processes=1,
                               layout=p)
    assert why == "", why
    assert not probe.attrs.get("note"), f"{probe.attrs.get('note')}: rebuild build/offload from these sources"
    per = probe.groupby(["variant", "at"]).size().unstack()
    assert (per["map"] == 3 * 5).all() and (per["unmap"] == 3 * 5).all()   # 3 directives each per round
    assert set(probe[probe["at"] == "map"].direction) == {"h2d", "none"} and (probe.ns > 0).all()


def test_mapping_once_is_predicted_from_the_updates_probe(write, tr):
    """The code change for an array mapped every step: its copies as updates (their probed time),
    its map and unmap once; the advice says so where the intervals are apart."""
    from pinpath.advise.map_once import map_once_lines, mapped_once
    p = pattern(read_trace(write("m.err", species_like(tr, 5))))
    rep = _replay(p)
    times = {(v, at): ns for v in _pols() for at, ns in (("map", 30_000.0), ("unmap", 40_000.0))}
    now = predict(p, pd.concat([rep, runtime_rows(_probe(p, times), rep)], ignore_index=True), _pols())
    layout = layout_of(p, 9, per_step=False)
    assert "per_step" not in layout and " map" not in layout and " unmap" not in layout
    once_p = mapped_once(p)
    assert not once_p.arrays.remapped.any() and once_p.maps is None and (once_p.transfers["at"] == "").all()
    once = predict(once_p, pd.concat([rep, runtime_rows(_probe(p, times, per_step=False), rep)],
                                     ignore_index=True), _pols())
    step = once.typical.set_index(["variant", "by"]).predicted_ns
    assert step[("plain", "step")] == pytest.approx(6 * 5000)   # six updates, no map in the median step
    lines = map_once_lines(p, now, once)
    assert len(lines) == 1 and lines[0].startswith("**Map the arrays once.**")
    assert "3 array(s) (1 of them local variables" in lines[0] and "`app_pinned`" in lines[0]
    # the same times both ways: not advised
    same = map_once_lines(p, now, now)
    assert same[0].startswith("Mapping the arrays once would not pay")
    assert map_once_lines(pattern(read_trace(write("c.err", species_like(tr, 5, maps=False)))), now, once) == []


def test_advise_predicts_mapping_once_through_the_host_libomptarget(write, tr, tmp_path, host_offload):
    from pinpath.__main__ import main
    host_offload("updates")
    out = tmp_path / "adv"
    assert main(["advise", str(write("m.err", species_like(tr, 4))), "--platform", "host", "--out", str(out),
                 "--repeats", "5", "--offload-dir", str(tmp_path)]) == 0
    once = pd.read_csv(out / "map_once.csv")
    assert set(once.variant) >= {"plain", "app_pinned"} and np.isfinite(once.predicted_ns).all()
    md = (out / "summary.md").read_text()
    assert "arrays once" in md and "mapped once runtime term added" in md


def test_the_probes_variants_take_turns_process_by_process(host_offload, tmp_path):
    """The runtime probe runs process 0 of every variant, then process 1 ...: a node whose state drifts
    during the probe gives each variant the same share of it (the variants are not timed one after
    the other), in turn_order's order."""
    from pinpath.advise.runtime_term import probe_runtime
    host_offload("updates")
    classes = pd.DataFrame({"nbytes": [4096], "direction": ["h2d"]})
    probe, why = probe_runtime(classes, ["plain", "app_pinned", "lock_mapped"], vendor="host", offload_dir=tmp_path,
                               rounds=3, processes=3)
    assert why == "", why
    order = probe[["process", "variant"]].drop_duplicates().apply(tuple, axis=1).tolist()
    p, a, lm = "plain", "app_pinned", "lock_mapped"
    assert order == [(0, p), (0, a), (0, lm), (1, lm), (1, a), (1, p), (2, a), (2, lm), (2, p)]


def test_turn_order_gives_every_order_and_every_neighbour():
    from pinpath.advise.runtime_term import turn_order
    turns = [tuple(turn_order(["p", "a", "l"], t)) for t in range(6)]
    assert len(set(turns)) == 6   # each of the six orders once
    assert sum("al" in "".join(t) for t in turns) == 2   # l right after a in two of six, as over all orders
    assert turn_order([], 3) == [] and turn_order(["x"], 5) == ["x"]
