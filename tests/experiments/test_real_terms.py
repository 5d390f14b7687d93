"""model / real with the real runtime's measured terms (issue 33 item 2): the arithmetic and the
text on synthetic frames shaped like notebook 13's (these numbers are inputs of the tests, not
measurements), and the paired profile's regions told apart."""

import numpy as np
import pandas as pd
import pytest

from pinpath.experiments import real_runtime as rr
from pinpath.experiments import real_terms as rt
from pinpath.schema import (MODEL_INVOCATIONS, REAL_INVOCATIONS, REAL_PRESENT, REAL_REGIONS, REAL_TERMS, WAIT_MODEL,
                            WAIT_PHASES, check_frame, frame)


def _x(ts, dur, name, line, extra=""):
    return {"pid": 7, "tid": 7, "ts": ts, "ph": "X", "dur": dur, "name": name,
            "args": {"detail": f";/src/region.cpp;main;{line};1;;{extra}"}}


# a `region --paired` profile of 2 invocations: the probe (88), invocation 0 (251) then its present-only
# region (255), invocation 1's present-only region first (247) then invocation 1, exit data (274)
PAIRED = {"traceEvents": [
    _x(900, 30, "Runtime: target exe", 88), _x(905, 5, "Kernel Target", 88),
    _x(1000, 100, "Runtime: target exe", 251), _x(1001, 0, "HostToDev", 251, "Size=1966080B"),
    _x(1001, 4, "HostToDev", 251, "Size=3072B"), _x(1006, 5, "Kernel Target", 251),
    _x(1012, 80, "DevToHost", 251, "Size=1966080B"), _x(1093, 2, "Runtime: syncronize", 251),
    _x(1200, 40, "Runtime: target exe", 255), _x(1202, 5, "Kernel Target", 255), _x(1208, 30, "Runtime: syncronize", 255),
    _x(1400, 42, "Runtime: target exe", 247), _x(1401, 5, "Kernel Target", 247), _x(1407, 30, "Runtime: syncronize", 247),
    _x(1500, 110, "Runtime: target exe", 251), _x(1501, 4, "HostToDev", 251, "Size=3072B"),
    _x(1506, 5, "Kernel Target", 251), _x(1512, 90, "DevToHost", 251, "Size=1966080B"),
    _x(1603, 2, "Runtime: syncronize", 251),
    _x(1700, 7, "Runtime: Data Copy", 274),
]}


def test_a_paired_profile_tells_the_present_only_regions_apart():
    df = check_frame(rr.parse_profile(PAIRED, invocations_per_step=2, variant="plain", nw=128, paired=True),
                     rr.REAL_PHASES)
    exe = df[df.phase == "Runtime: target exe"]
    got = {(r.location, r.segment, r.invocation) for r in exe.itertuples()}
    assert got == {("region.cpp:88", "setup", -1), ("region.cpp:251", "invocation", 0), ("region.cpp:255", "present", 0),
                   ("region.cpp:247", "present", 1), ("region.cpp:251", "invocation", 1)}
    assert df.groupby("segment").size().to_dict() == {"setup": 2, "invocation": 11, "present": 6, "teardown": 1}
    # unpaired, the present-only regions stay outside the invocations, as before
    plain = rr.parse_profile(PAIRED, invocations_per_step=2)
    assert "present" not in set(plain.segment) and (plain.segment == "invocation").sum() == 11


def test_region_work_is_the_region_less_the_union_of_its_events():
    ph = rr.parse_profile(PAIRED, invocations_per_step=2, variant="plain", nw=128, paired=True)
    w = check_frame(rt.region_work(ph), REAL_REGIONS).set_index(["region", "invocation"])
    # invocation 0: 100 us, events 0 + 4 + 5 + 80 + 2 = 91 us (the two HostToDev start together)
    assert w.loc[("full", 0)].tolist()[-3:] == [100_000, 91_000, 9_000]
    assert w.loc[("full", 1), "bookkeeping_ns"] == 9_000
    assert w.loc[("present_only", 0), "bookkeeping_ns"] == 5_000 and w.loc[("present_only", 1), "bookkeeping_ns"] == 7_000
    assert rt.region_work(pd.DataFrame([{"not_applicable": "no run"}])).empty


def _model(variant, per_repeat):
    """MODEL_INVOCATIONS rows: per repeat (ns, kernel_only_ns), 4 invocations each."""
    return [{"variant": variant, "policy": "driver_pageable", "user_pinned": False, "threshold_nbytes": None, "nw": 128,
             "step": r, "invocation": i, "ns": ns, "h2d_ns": 0, "kernel_ns": 0, "d2h_ns": ns, "sync_ns": 0,
             "kernel_only_ns": ko, "repeat": r, "platform": "cuda"}
            for r, (ns, ko) in enumerate(per_repeat) for i in range(4)]


def _real(variant, per_process, table, **more):
    return [{"variant": variant, "nw": 128, "process": p, "traced": False, "step": 0, "invocation": i, "ns": ns,
             "verified": True, "vendor": "nvidia", "arch": "sm_90", **{k: v[p] for k, v in more.items()}}
            for p, ns in enumerate(per_process) for i in range(4)]


@pytest.fixture
def composed():
    """Two variants: 'near' whose gap the terms close, 'far' whose real copies are slower still."""
    model = frame(_model("near", [(100_000, 20_000), (110_000, 22_000)])
                  + _model("far", [(100_000, 20_000), (110_000, 22_000)]), MODEL_INVOCATIONS)
    inv = frame(_real("near", [150_000, 160_000, 170_000], REAL_INVOCATIONS)
                + _real("far", [290_000, 300_000, 310_000], REAL_INVOCATIONS), REAL_INVOCATIONS)
    kernel = {"kernel_ns": [60_000, 62_000, 64_000]}
    present = pd.DataFrame(_real("near", [155_000, 165_000, 175_000], REAL_PRESENT, **kernel)
                           + _real("far", [295_000, 305_000, 315_000], REAL_PRESENT, **kernel))
    present["transfer_ns"] = present.ns - present.kernel_ns
    phases = pd.concat([rr.parse_profile(PAIRED, invocations_per_step=2, variant=v, nw=128, paired=True)
                        for v in ("near", "far")], ignore_index=True)
    return model, rr.RealRun(pd.DataFrame(), inv, pd.DataFrame(), pd.DataFrame(), "nvidia", "sm_90",
                             frame(present.to_dict("records"), REAL_PRESENT), phases)


def _wait(variant, auto, blocking, nw=128):
    """Test input, WAIT_MODEL rows: per process of each wait mode (its d2h_ns, its kernel_only_ns), 4
    invocations each; ns is the D2H, a sync of 5 us the same in both modes, and the kernel alone."""
    per = [("auto", a) for a in auto] + [("blocking", b) for b in blocking]
    return [{"variant": variant, "policy": "driver_pageable", "user_pinned": False, "threshold_nbytes": None, "nw": nw,
             "step": 0, "invocation": i, "ns": d2h + 5_000 + ko, "h2d_ns": 0, "kernel_ns": ko, "d2h_ns": d2h,
             "sync_ns": 5_000, "kernel_only_ns": ko, "repeat": p, "platform": "cuda", "wait": mode, "wait_in_force": mode,
             "repeat_unit": "process", "section_order": 0, "pid": 1000 + p}
            for p, (mode, (d2h, ko)) in enumerate(per) for i in range(4)]


@pytest.fixture
def waited():
    """Test input: the transfer part (D2H + 5 us sync) 84 us in auto, 96 us in blocking processes
    (medians of 75/79/83 and 87/91/95 us D2H plus the sync): +12 us."""
    auto = [(75_000, 20_000), (79_000, 22_000), (83_000, 21_000)]
    blocking = [(87_000, 20_000), (91_000, 21_000), (95_000, 22_000)]
    return frame(_wait("near", auto, blocking) + _wait("far", auto, blocking), WAIT_MODEL)


def test_each_term_is_added_in_turn(composed, waited):
    model, ran = composed
    t = check_frame(rt.model_terms(model, ran, wait=waited), REAL_TERMS).set_index(["variant", "step"])
    near = t.loc["near"]
    assert list(near.term) == list(rt.TERMS)
    # the model: 105 us (repeat medians 100, 110) against 160 us (process medians 150, 160, 170)
    assert near.loc[0, "model_ns"] == 105_000 and near.loc[0, "ratio"] == pytest.approx(105 / 160)
    # the present-only region (62 us) in place of the kernel alone (21 us): transfers 84 us + 62 us
    assert (near.loc[1, "measured_ns"], near.loc[1, "replaced_ns"]) == (62_000, 21_000)
    assert near.loc[1, "model_ns"] == 146_000 and near.loc[1, "term_ns"] == 41_000
    # bookkeeping: after the warm-up invocation, full 9 us less present-only 7 us
    assert near.loc[2, "measured_ns"] == 2_000 and near.loc[2, "model_ns"] == 148_000
    assert near.loc[2, "ratio"] == pytest.approx(148 / 160) and near.loc[2, "within"] and not near.loc[0, "within"]
    # the blocking wait: the blocking processes' transfer part (96 us) in place of the model's (84 us)
    assert (near.loc[3, "measured_ns"], near.loc[3, "replaced_ns"]) == (96_000, 84_000)
    assert near.loc[3, "term_ns"] == 12_000
    assert near.loc[3, "model_ns"] == 160_000 and near.loc[3, "ratio"] == pytest.approx(1.0)
    assert near.loc[3, "model_lo_ns"] < 160_000 < near.loc[3, "model_hi_ns"] and (t.wait_processes == 3).all()
    assert (t.note == "").all()
    assert (t.ratio_lo <= t.ratio).all() and (t.ratio <= t.ratio_hi).all() and (t.ratio_hi > t.ratio_lo).any()
    assert (near.real_paired_ns == 165_000).all() and (t.real_processes == 3).all()
    assert (t.present_processes == 3).all() and (t.traced_invocations == 1).all()
    far = t.loc["far"]
    assert far.loc[2, "ratio"] == pytest.approx(148 / 300) and not far.within.any()
    assert far.loc[3, "ratio"] == pytest.approx(160 / 300)


def test_the_blocking_wait_puts_the_blocking_copies_in_and_says_what_it_closed(composed, waited):
    """The term is the blocking processes' copies less the notebook's, whatever the fresh auto
    processes did (their difference is the process's state, not the wait mode); a blocking mode that
    made the copies faster takes from the model; the sentences name it."""
    model, ran = composed
    swapped = waited.assign(wait=waited.wait.map({"auto": "blocking", "blocking": "auto"}))
    t = rt.model_terms(model, ran, wait=swapped).set_index(["variant", "step"])
    assert t.loc[("near", 3), "term_ns"] == 0 and t.loc[("near", 3), "model_ns"] == 148_000
    faster = waited.assign(d2h_ns=np.where(waited.wait == "blocking", waited.d2h_ns - 24_000, waited.d2h_ns + 50_000))
    faster = faster.assign(ns=faster.d2h_ns + faster.sync_ns + faster.kernel_only_ns)
    t = rt.model_terms(model, ran, wait=faster).set_index(["variant", "step"])
    assert t.loc[("near", 3), "term_ns"] == -12_000 and t.loc[("near", 3), "model_ns"] == 136_000
    near = next(l for l in rt.terms_explanation(rt.model_terms(model, ran, wait=waited)).splitlines() if "**near" in l)
    assert ("in the blocking wait (96 us; 3 processes), in place of the notebook process's copies in CUDA's default "
            "mode (84 us): +12 us (22 % of the gap), 1.00") in near
    assert "against the replica's 96 us in the blocking wait mode" in near


def test_the_blocking_wait_not_measured_says_why(composed, waited):
    model, ran = composed
    host = pd.DataFrame([{"not_applicable": "host: the wait mode is not applicable (test input)"}])
    for wait, why in ((None, "the wait mode was not measured"), (host, "host: the wait mode is not applicable"),
                      (waited[waited.wait == "auto"], "no process of one of the wait modes at this point")):
        t = rt.model_terms(model, ran, wait=wait)
        last = t[t.step == 3]
        assert last.ratio.isna().all() and last.note.str.startswith(why).all(), why
        assert t[t.step == 2].ratio.notna().all()
        assert f"blocking wait: not measured ({why}" in rt.terms_explanation(t)
    # a term not measured adds nothing: the blocking wait goes on the last figure measured
    bare = rr.RealRun(ran.runs, ran.invocations, ran.copies, ran.phases)
    t = rt.model_terms(model, bare, wait=waited).set_index(["variant", "step"])
    assert np.isnan(t.loc[("near", 1), "ratio"]) and t.loc[("near", 3), "model_ns"] == 105_000 + 12_000
    assert t.loc[("near", 3), "term_ns"] == 12_000


def test_the_wait_phases_say_which_phase_moved(waited):
    p = check_frame(rt.wait_phases(waited), WAIT_PHASES).set_index(["variant", "phase"]).loc["near"]
    assert list(p.index) == ["h2d", "kernel", "d2h", "sync", "transfer", "invocation"]
    assert (p.loc["d2h", "auto_ns"], p.loc["d2h", "blocking_ns"], p.loc["d2h", "difference_ns"]) == (79_000, 91_000, 12_000)
    assert p.loc["sync", "difference_ns"] == 0 and p.loc["transfer", "difference_ns"] == 12_000
    assert p.loc["d2h", "difference_lo_ns"] > 0 and (p.auto_processes == 3).all()
    line = next(l for l in rt.wait_explanation(rt.wait_phases(waited)).splitlines() if "**near" in l)
    assert "moved: d2h +12 us" in line and "not clear of 0: h2d" in line and "sync +0 ns" in line.split("moved")[-1]
    gone = rt.wait_phases(pd.DataFrame([{"not_applicable": "host: test input"}]))
    assert gone.not_applicable.iloc[0] == "host: test input" and rt.wait_explanation(gone) == ""


def test_the_sentences_say_which_term_closed_how_much_and_what_is_left(composed):
    model, ran = composed
    lines = rt.terms_explanation(rt.model_terms(model, ran)).splitlines()
    assert lines[0] == "**Within 1 ± 0.15: 1 of 2 points with the measured terms (the model alone: 0 of 2).**"
    near = next(l for l in lines if "**near" in l)
    far = next(l for l in lines if "**far" in l)
    assert "model / real 0.66" in near and "+41 us (75 % of the gap), 0.91" in near
    assert "+2 us (4 % of the gap), 0.93" in near
    assert "Within 1 ± 0.15 with the measured terms" in near
    # far: 152 us left; the real copies 300 - 62 - 2 = 236 us against the replica's 84 us
    assert "Still outside 1 ± 0.15: the model with the terms is 152 us short of the real invocation, in the " \
           "transfers themselves" in far
    assert "less the present-only region and the bookkeeping: +236 us, against the replica's 84 us" in far


def test_a_term_not_measured_says_so(composed):
    model, ran = composed
    bare = rr.RealRun(ran.runs, ran.invocations, ran.copies, ran.phases)   # no paired processes ran
    t = rt.model_terms(model, bare)
    assert t[t.step > 0].ratio.isna().all() and t[t.step == 0].ratio.notna().all() and (t[t.step > 0].note != "").all()
    head, line = rt.terms_explanation(t).splitlines()[:2]
    assert head == "**Within 1 ± 0.15: the model alone 0 of 2 points; no measured term here.**"
    assert "present-only region: not measured" in line and "no measured term to add" in line
    no_model = model.assign(kernel_only_ns=pd.array([pd.NA] * len(model), dtype="Int64"))
    assert rt.model_terms(no_model, ran)[lambda d: d.step == 1].ratio.isna().all()
    reason = rr.RealRun(*[pd.DataFrame([{"not_applicable": "no build"}])] * 4)
    assert "not_applicable" in rt.model_terms(model, reason) and rt.terms_explanation(rt.model_terms(model, reason)) == ""
    assert np.isnan(rt.model_terms(model, ran).term_ns.iloc[0])


def test_the_context_the_plugin_said_is_named_per_variant():
    runs = pd.DataFrame({"variant": ["plain", "plain", "app_pinned", "lock_mapped"],
                         "traced": [False, True, True, True],
                         "context_wait": ["", "blocking sync, set by the plugin",
                                          "not blocking sync: the context was active before the plugin started, its flags kept",
                                          "blocking sync, set by the plugin"]})
    said = rt.context_said(runs)
    assert said.startswith("The real runtime's context") and "(plain, lock_mapped)" in said and "(app_pinned)" in said
    assert rt.context_said(runs.assign(context_wait="")) == "" and rt.context_said(runs.drop(columns="context_wait")) == ""
