"""The claims' rules on small synthetic frames: each verdict word where the rule can give it,
the verdict function itself, each claim's reading (as meant, analogue, not applicable), the
repeat as the unit, the C engine's rows preferred, and "not measured" for a missing data set or a
notebook that did not end ok."""

import math

import numpy as np
import pandas as pd
import pytest

from pinpath.report import claims
from pinpath.report.claims import CLAIMS, judge, verdict_of
from pinpath.report.claims.measures import common, concurrency
from pinpath.report.rundata import RunData
from pinpath.stats import Estimate, proportion_ci, ratio_ci
from pinpath.vocab import Verdict

H, N, I, M = Verdict.HOLDS, Verdict.DOES_NOT_HOLD, Verdict.INCONCLUSIVE, Verdict.NOT_MEASURED
SIZES = (4096, 1 << 20)


@pytest.mark.parametrize("cmp,thr,est,word", [
    (">=", 10, Estimate(12, 11, 13), H), (">=", 10, Estimate(8, 7, 9), N), (">=", 10, Estimate(10, 9, 11), I),
    (">", 0, Estimate(0.2, 0.05, 0.4), H), (">", 0, Estimate(0, 0, 0.3), I),
    ("<=", 2, Estimate(1, 0.9, 1.1), H), ("<=", 2, Estimate(3, 2.5, 3.5), N), ("<=", 2, Estimate(2, 1.5, 2.5), I),
    ("<", 1, Estimate(0.5, 0.4, 0.6), H), ("<", 1, Estimate(1.5, 1.2, 1.8), N), ("<", 1, Estimate(1, 0.8, 1.2), I),
    ("within", 0.1, Estimate(1.02, 0.95, 1.08), H), ("within", 0.1, Estimate(1.5, 1.3, 1.7), N),
    ("within", 0.1, Estimate(1.1, 1.0, 1.2), I), (">=", 1, Estimate(math.nan, math.nan, math.nan), M),
])
def test_verdict_of(cmp, thr, est, word):
    assert verdict_of(est, cmp, thr) == word


def test_intervals():
    e = ratio_ci([10.0] * 10, [1.0] * 10)
    assert e.value == e.low == e.high == 10
    wide = ratio_ci([1, 30, 2, 25, 3, 20], [1, 1, 1, 1, 1, 1])
    assert wide.low < wide.value < wide.high
    p = proportion_ci(0, 50)
    assert p.low == 0 and 0 < p.high < 0.1


# -- synthetic data --------------------------------------------------------------------------
def _spread(center: float, how: str, n: int = 12) -> np.ndarray:
    """``n`` samples around ``center``: tight, or wide enough that an interval straddles."""
    rng = np.random.default_rng(1)
    rel = 0.02 if how == "tight" else 1.2
    return np.abs(center * (1 + rel * rng.uniform(-1, 1, n))) + 1


def _lock_cost(ns: dict, how: str = "tight", source: str = "native") -> pd.DataFrame:
    rows = []
    for (op, state), center in ns.items():
        for n in SIZES:
            for i, v in enumerate(_spread(center, how)):
                rows.append({"op": op, "state": state, "kind": "heap", "backing": "4k", "nbytes": n, "repeat": i,
                             "call": op, "ns": int(v), "rc": 0, "error": "", "source": source, "platform": "cuda"})
    return pd.DataFrame(rows)


def _transfers(ns: dict, how: str = "tight", **extra) -> pd.DataFrame:
    rows = []
    for policy, center in ns.items():
        for n in SIZES:
            for d in ("h2d", "d2h"):
                for i, v in enumerate(_spread(center, how)):
                    rows.append({"event": "transfer", "policy": policy, "kind": "heap", "nbytes": n, "direction": d,
                                 "repeat": i, "total_ns": int(v), "alloc_ns": int(v * 0.7), "grant_ns": 0,
                                 "free_ns": int(v * 0.1), "path": "x", **extra})
    return pd.DataFrame(rows)


def _ratio_data(factor: float, how: str, num, den) -> pd.DataFrame:
    return _lock_cost({num: 1000 * factor, den: 1000}, how)


def _word(factor_holds, factor_not, thr_factor=1.0):
    return {H: (factor_holds, "tight"), N: (factor_not, "tight"), I: (thr_factor, "wide")}


def _real_runs(vendor: str = "amd") -> pd.DataFrame:
    return pd.DataFrame([{"variant": "plain", "nw": 16, "traced": False, "vendor": vendor}])


def _replica_model() -> dict:
    """The replica's models: stage_per_copy allocates once per transfer by construction."""
    tr = pd.DataFrame([{"transfer_id": i, "event": "transfer", "policy": p} for i, p in
                       enumerate(["stage_per_copy"] * 4 + ["nextgen_lock_mapped"] * 4)])
    return {"replica": tr, "replica_calls": pd.DataFrame([{"transfer_id": i, "category": "alloc"} for i in range(4)])}


#: claim -> verdict word -> data sets that give it
def _c1(word):
    """The real runtime's own calls (AMD): allocations per copy of arrays mapped once."""
    allocs = {H: 1, N: 0}[word]
    copies = pd.DataFrame([{"variant": "plain", "nw": 16, "segment": "invocation", "step": 0, "invocation": i,
                            "direction": d} for i in range(4) for d in ("h2d", "d2h")])
    calls = pd.DataFrame([{"segment": "invocation", "category": "alloc"}] * (8 * allocs)
                         + [{"segment": "invocation", "category": "copy"}] * 8)
    return {**_replica_model(), "real_runs": _real_runs(), "real_copies": copies, "real_calls": calls}


def _c2(word):
    f, how = {H: (3, "tight"), N: (0.5, "tight"), I: (1, "wide")}[word]
    t = pd.concat([_transfers({"stage_per_copy": 1000 * f}, how), _transfers({"stage_pooled": 1000}, how)])
    return {"staging": t}


def _c3(word):
    f, how = {H: (0.5, "tight"), N: (2, "tight"), I: (1, "wide")}[word]
    return {"lock_or_stage": pd.concat([_transfers({"lock_always": 1000 * f}, how),
                                        _transfers({"stage_per_copy": 1000}, how)])}


def _c4(word):
    f, how = {H: (0.1, "tight"), N: (3, "tight"), I: (1, "wide")}[word]
    qs = pd.concat([_transfers({"query_then_lock": 1000 * f, "lock_always": 1000}, how, app_pinned=True),
                    _transfers({"stage_per_copy": 1000 * f}, how, app_pinned=True)])
    return {"query_cost": _lock_cost({("query", "pageable"): 1000 * f, ("lock", "pageable"): 1000}, how),
            "query_saving": qs}


def _c5(word):
    granted = word == N
    rows = [{"kind": k, "nbytes": 4096, "backing": "4k", "read_only_flag": False, "call": "lock", "ns": 1, "rc": 0 if granted else 1,
             "error": "" if granted else "E (1)", "granted": granted, "already_pinned": False, "not_available": ""}
            for k in ("rodata", "stack")] + [{**{"kind": "read_only", "nbytes": 4096, "backing": "4k",
                                                 "read_only_flag": False, "call": "lock", "ns": 1, "rc": 1,
                                                 "error": "E (1)", "granted": False, "already_pinned": False,
                                                 "not_available": ""}}]
    paths = pd.DataFrame([{"event": "transfer", "kind": "read_only", "path": "locked" if granted else "lock_failed_staged"}])
    return {"lock_outcomes": pd.DataFrame(rows), "kind_paths": paths}


def _lock_pair(num, den, holds, fails, thr):
    def build(word):
        f, how = {H: (holds, "tight"), N: (fails, "tight"), I: (thr, "wide")}[word]
        return {"lock_cost": _ratio_data(f, how, num, den)}
    return build


def _c8(word):
    rows = [{"probe": "lock_twice_unlock_once", "step": 0, "action": "lock A again", "error": "", "locked": None},
            {"probe": "lock_twice_unlock_once", "step": 1, "action": "query A", "error": "", "locked": word == H}]
    return {"semantics": pd.DataFrame(rows)}


def _c9(word):
    f, how = {H: (40, "tight"), N: (2, "tight"), I: (10, "wide")}[word]
    return {"lock_cost": _lock_cost({("lock", "pageable"): 1000 * f, ("relock", "locked"): 1000,
                                     ("unlock", "locked"): 1000 * f, ("unlock_after_relock", "locked"): 1000}, how)}


def _c10(word):
    f, how = {H: (0.3, "tight"), N: (3, "tight"), I: (1, "wide")}[word]
    rows = []
    for pinned, scale in ((True, f), (False, 1.0)):
        for i, v in enumerate(_spread(10000 * scale, how)):
            rows.append({"transfer_id": i + (100 if pinned else 0), "call": "lock", "category": "lock", "repeat": i,
                         "duration_ns": int(v), "rc": 0, "user_pinned": pinned, "caller": "runtime"})
            if pinned:   # the application's own pinning, once per repeat
                rows.append({**rows[-1], "transfer_id": -1, "duration_ns": 10, "caller": "application"})
    return {"api_calls": pd.DataFrame(rows)}


def _c10_counted(word):
    """CUDA's api_calls with the counted arm: every runtime lock of registered memory refused (712)
    at three times a real lock's cost, and the same locks counted by pinpath (ROCT's count's
    analogue) at ``_c10``'s cost; only the counted arm decides."""
    ac = _c10(word)["api_calls"].assign(counted=False)
    counted = ac[ac.user_pinned].assign(counted=True)
    counted["call"] = np.where(counted.caller == "runtime", "pinpath_count_lock", counted.call)
    refused = ac.user_pinned & (ac.caller == "runtime")
    ac.loc[refused, "rc"], ac.loc[refused, "duration_ns"] = 712, 30000
    return {"api_calls": pd.concat([ac, counted], ignore_index=True)}


def _race(answers: list[str], in_flight: bool = True) -> pd.DataFrame:
    """hazard_meant rows: one race per answer, B's unlock inside A's copies."""
    return pd.DataFrame([{"iteration": i, "nbytes": 16 << 20, "copies": 8, "in_flight": in_flight, "answer": a,
                          "b_unlock_ns": 1_300_000, "idle_unlock_ns": 40_000, "unlock_end_after_copy_ns": 60_000,
                          "copy_verified": a != "corrupts", "mechanism": "the runtime's own lock, copy and unlock (cuda)"}
                         for i, a in enumerate(answers)])


def _c11(word):
    """As meant: the unlock took effect under the copies in 3 races (holds), waited in all (does not
    hold), or no race could tell (inconclusive); the page-sharing case beside it."""
    answers = {H: ["returns mid-copy"] * 3 + ["waits"] * 17, N: ["waits"] * 20, I: ["undecided"] * 20}[word]
    k = {H: 3, N: 0, I: 0}[word]      # none seen in 20 proves no absence: the interval reaches 0
    rows = [{"policy": "query_then_lock", "unlock_inside_copy": True, "hazard": i < k, "observed_by": "smaps",
             "a_path": "already_locked", "a_copy_end_ns": 100, "b_unlock_end_ns": 90} for i in range(20)]
    return {"hazard_meant": _race(answers), "hazard": pd.DataFrame(rows)}


def _c12(word, wait: bool = False):
    """Both readings of the braces: the one judged gets ``word``, the other the opposite figures."""
    f1, f3, how = {H: (500, 1.0, "tight"), N: (3, 2.0, "tight"), I: (100, 1.1, "wide")}[word]
    o1, o3 = (3, 2.0) if word == H else (500, 1.0)
    rows = []
    for case, f, o in (("1_lock_copy", f1, o1), ("2_prelocked_copy", 1, 1), ("3_relock_copy", f3, o3)):
        for i, (v, w) in enumerate(zip(_spread(1000 * f, how), _spread(1000 * o, "tight"))):
            a, b = (w, v) if wait else (v, w)
            rows.append({"case": case, "source": "native", "repeat": i, "braces_ns": int(a), "braces_wait_ns": int(b)})
    return {"c12": pd.DataFrame(rows)}


def _c13(word, counted: bool = True):
    """CUDA: every re-lock refused (712, 100 ns); the figures are pinpath's count's (with ``counted``)."""
    lo, hi, how = {H: (1500, 4000, "tight"), N: (1000, 1200, "tight"), I: (1600, 1600, "wide")}[word]
    rows = []
    for threads, c in ((1, lo), (16, hi)):
        for i, v in enumerate(_spread(c, how)):
            for k in range(3):   # three calls a repeat: the figure is per call, not their sum
                rows.append({"threads": threads, "thread": 0, "repeat": i, "call": k, "op": "relock", "ns": 100,
                             "rc": 712})
                if counted:
                    rows += [{"threads": threads, "thread": 0, "repeat": i, "call": k, "op": op, "ns": int(v) // 2,
                              "rc": 0} for op in ("relock_counted", "unlock_after_relock_counted")]
    return {"concurrency": pd.DataFrame([{"policy": "lock_always", "threads": 1, "overhead_ns": 1, "native_ns": 1}]),
            "concurrency_native": pd.DataFrame(rows)}


def _tracked(f: float, how: str) -> dict:
    """The tracked model: nextgen_lock_mapped locks at map time (one map event, one lock call)."""
    t = pd.concat([_transfers({"nextgen_lock_mapped": 1000 * f}, how), _transfers({"lock_always": 1000}, how)])
    t = pd.concat([t, pd.DataFrame([{"event": "map", "policy": "nextgen_lock_mapped", "total_ns": 50000, "repeat": 0}])])
    t["nw"] = 16
    t["transfer_id"] = range(len(t))
    return {"tracked": t, "tracked_calls": pd.DataFrame({"transfer_id": [len(t) - 1], "category": ["lock"]})}


def _c14(word):
    """The real runtime (AMD): mapped buffers locked and tracked against plain, per invocation."""
    f, how = {H: (0.5, "tight"), N: (3, "tight"), I: (1, "wide")}[word]
    rows = [{"variant": v, "nw": 16, "traced": False, "step": 0, "invocation": i + 1, "repeat": i, "ns": int(x)}
            for v, c in (("lock_mapped", 1000 * f), ("plain", 1000)) for i, x in enumerate(_spread(c, how))]
    return {**_tracked(0.2, "tight"), "real_runs": _real_runs(), "real_invocations": pd.DataFrame(rows)}


def _overlap_real(vendor: str, f: float, how: str) -> pd.DataFrame:
    """Rounds of the real runtime on ``vendor``: nowait rounds ``f`` times the waited ones, per process."""
    return pd.DataFrame([{"variant": "plain", "mode": m, "round": 0, "process": i, "chains": 8, "nbytes": 1 << 24,
                          "ns": int(v), "verified": True, "vendor": vendor, "arch": "x"}
                         for m, c in (("wait", 1e6), ("nowait", 1e6 * f)) for i, v in enumerate(_spread(c, how))])


def _c15(word, vendors=("nvidia", "amd")):
    """The CUDA plugin overlaps (0.5) and the AMD plugin does not (1.0): holds; the CUDA plugin does
    not: does not hold; wide: inconclusive. Both vendors' rounds are in one data set here, as two
    machines' runs joined."""
    f, how = {H: (0.5, "tight"), N: (1.0, "tight"), I: (0.9, "wide")}[word]
    rows = [{"queues": q, "repeat": i, "wall_ns": int(v)} for q, c in ((1, 1000), (4, 1000 * f))
            for i, v in enumerate(_spread(c, how))]
    real = pd.concat([_overlap_real(v, f if v == "nvidia" else 1.0, how if v == "nvidia" else "tight") for v in vendors])
    streams = pd.DataFrame([{"variant": "plain", "mode": m, "round": 0, "copies": 16, "kernels": 8, "syncs": 8,
                             "streams_created": 0, "streams": n, "source": "cudalog", "vendor": "nvidia"}
                            for m, n in (("nowait", 8), ("wait", 1))])
    return {"overlap": pd.DataFrame(rows), "overlap_real": real, "overlap_streams": streams}


BUILDERS = {
    "C1": (_c1, "hsa", (H, N)), "C2": (_c2, "cuda", (H, N, I)), "C3": (_c3, "cuda", (H, N, I)),
    "C4": (_c4, "cuda", (H, N, I)), "C5": (_c5, "cuda", (H, N)),
    "C6": (_lock_pair(("lock", "pageable"), ("query", "pageable"), 50, 2, 10), "cuda", (H, N, I)),
    "C7": (_lock_pair(("relock", "locked"), ("query", "locked"), 1, 5, 2), "cuda", (H, N, I)),
    "C8": (_c8, "hsa", (H, N)), "C9": (_c9, "cuda", (H, N, I)), "C10": (_c10_counted, "cuda", (H, N, I)),
    "C11": (_c11, "host", (H, N, I)), "C12a": (_c12, "cuda", (H, N, I)),
    "C12b": (lambda w: _c12(w, wait=True), "cuda", (H, N, I)), "C13": (_c13, "cuda", (H, N, I)),
    "C14": (_c14, "hsa", (H, N, I)), "C15": (_c15, "cuda", (H, N, I)),
}
CASES = [(cid, word) for cid, (_, _, words) in BUILDERS.items() for word in words]


def test_every_claim_has_builders():
    assert set(BUILDERS) == set(CLAIMS)


@pytest.mark.parametrize("cid,word", CASES)
def test_rule_gives(cid, word):
    build, platform, _ = BUILDERS[cid]
    row = judge([cid], build(word), platform).iloc[0]
    assert row.verdict == word, (row.why, row.detail)
    assert row.rule and row.metric and row.unit is not None


@pytest.mark.parametrize("cid", list(CLAIMS))
def test_not_measured_when_data_is_missing_or_its_notebook_failed(cid):
    build, platform, words = BUILDERS[cid]
    row = judge([cid], {}, platform).iloc[0]
    assert row.verdict == M, row.why
    frames = build(words[0])
    data = RunData(frames, notebooks={name: "99_x" for name in frames})
    row = judge([cid], data, platform, {"99_x": {"status": "failed", "error": "ValueError: boom"}}).iloc[0]
    assert row.verdict == M and "99_x is failed" in row.why and "boom" in row.why


def test_gpu_claims_are_not_applicable_on_host():
    build, _, _ = BUILDERS["C6"]
    row = judge(["C6"], build(H), "host").iloc[0]
    assert row.verdict == Verdict.NOT_APPLICABLE and "not applicable on host" in row.why
    assert "measured here for information" in row.detail


def test_a_killed_notebook_gives_not_measured_for_its_claims(tmp_path):
    """A notebook that wrote its data and was then killed: the claims it feeds are not measured."""
    from pinpath.report.outputs import NotebookOutputs
    out = NotebookOutputs(str(tmp_path), "01_c12_lock_copy")
    (tmp_path / "data").mkdir()
    from pinpath.schema import C12, frame
    rows = _c12(H)["c12"].assign(nbytes=1, lock_ns=0, enqueue_ns=0, wait_ns=0, unlock_ns=0, dma_event_ns=None,
                                 lock_rc=0, lock_error="", verified=None, platform="cuda")
    out.data(frame(rows.to_dict("records"), C12), "c12")
    judged, bad = claims.evaluate(tmp_path, "cuda", {"01_c12_lock_copy": {"status": "interrupted"}})
    row = judged.set_index("id").loc["C12a"]
    assert row.verdict == M and "interrupted" in row.why and not bad
    judged, _ = claims.evaluate(tmp_path, "cuda", {"01_c12_lock_copy": {"status": "ok"}})
    assert judged.set_index("id").loc["C12a"].verdict == H


def test_the_claims_document_carries_the_rules_the_code_applies():
    from pathlib import Path
    doc = (Path(__file__).resolve().parents[2] / "CLAIMS.md").read_text()
    section = doc.split("<!-- rules:begin -->\n", 1)[1].split("<!-- rules:end -->", 1)[0]
    assert section == claims.rules_markdown(), "run tools/claims-doc"


# -- readings: as meant, analogue, not applicable ----------------------------------------------
def test_a_claim_reads_as_meant_on_its_subject_and_as_a_named_analogue_elsewhere():
    build, _, _ = BUILDERS["C7"]
    meant = judge(["C7"], build(H), "hsa").iloc[0]
    assert (meant.subject, meant.reading, meant.analogue) == ("HSA/ROCT", claims.AS_MEANT, "")
    analogue = judge(["C7"], build(H), "cuda").iloc[0]
    assert analogue.reading == claims.ANALOGUE and "712" in analogue.analogue and analogue.verdict == H
    none = judge(["C6"], _lock_pair(("lock", "pageable"), ("query", "pageable"), 50, 2, 10)(H), "hsa").iloc[0]
    assert none.reading == Verdict.NOT_APPLICABLE and none.verdict == Verdict.NOT_APPLICABLE and "NVIDIA" in none.why


@pytest.mark.parametrize("cid", ["C1", "C14"])
def test_a_plugin_claim_is_never_judged_from_a_model(cid):
    """On CUDA (the real runtime is LLVM's CUDA plugin) and on AMD without a real AMD run the
    model's own call pattern gives no verdict; it is shown for information."""
    data = {**BUILDERS[cid][0](H), "real_runs": _real_runs("nvidia")}
    row = judge([cid], data, "cuda").iloc[0]
    assert row.verdict == Verdict.NOT_APPLICABLE and row.why.startswith(claims.MODEL_ONLY)
    assert row.detail.startswith("measured here for information")
    amd = judge([cid], BUILDERS[cid][0](H), "hsa").iloc[0]
    assert amd.reading == claims.AS_MEANT and amd.verdict == H and "real runtime" in amd.rule


def test_c14_model_counts_the_locks_of_map_events():
    row = judge(["C14"], {**_tracked(0.2, "tight"), "real_runs": _real_runs("nvidia")}, "cuda").iloc[0]
    assert "1 lock calls" in row.detail and "1 in map events" in row.detail


def _refused_lock_cost(counted: bool) -> pd.DataFrame:
    """CUDA's answers: every re-lock refused (712) and no unlock of it; with ``counted`` pinpath's count too."""
    ns = {("lock", "pageable"): 40000, ("relock", "locked"): 1000, ("unlock", "locked"): 5000,
          ("query", "locked"): 500}
    if counted:
        ns.update({("relock_counted", "locked"): 60, ("unlock_after_relock_counted", "locked"): 50})
    lc = _lock_cost(ns)
    lc.loc[lc.op == "relock", "error"] = "cudaErrorHostMemoryAlreadyRegistered (712)"
    lc.loc[lc.op == "relock", "rc"] = 712
    return lc


def test_a_relock_no_call_performed_is_not_applicable():
    """CUDA refused every re-lock and pinpath's count was not measured: C7 and C9 rest on no re-lock."""
    lc = _refused_lock_cost(counted=False)
    for cid in ("C7", "C9"):
        row = judge([cid], {"lock_cost": lc}, "cuda").iloc[0]
        assert row.verdict == Verdict.NOT_APPLICABLE, (cid, row.why)
        assert "no re-lock was performed" in row.why and "712" in row.why and "for information" in row.why


def test_where_the_runtime_refuses_the_relock_pinpaths_count_is_the_labelled_analogue():
    lc = _refused_lock_cost(counted=True)
    c7 = judge(["C7"], {"lock_cost": lc}, "cuda").iloc[0]
    assert c7.reading == claims.ANALOGUE and c7.verdict == H and "counted by pinpath" in c7.metric
    assert c7.measured == pytest.approx(110 / 500, rel=0.1) and "refuses the re-lock itself" in c7.why
    assert "counted by pinpath" in c7.analogue
    c9 = judge(["C9"], {"lock_cost": lc}, "cuda").iloc[0]
    assert c9.verdict == H and "counted by pinpath" in c9.metric and "never arose" not in c9.detail


def test_c12_case_3_refused_is_counted_by_pinpath_or_not_applicable():
    data = _c12(H)
    c = data["c12"]
    c["lock_rc"] = np.where(c.case == "3_relock_copy", 712, 0)
    row = judge(["C12a"], {"c12": c}, "cuda").iloc[0]
    assert row.verdict == Verdict.INCONCLUSIVE and "no re-lock was performed" in row.detail   # case 3: in part only
    counted = c[c.case == "3_relock_copy"].assign(case="3_relock_counted_copy", lock_rc=0)
    row = judge(["C12a"], {"c12": pd.concat([c, counted])}, "cuda").iloc[0]
    assert row.verdict == H and "counted by pinpath" in row.detail


def test_c11_whose_premise_never_arose_is_not_applicable():
    rows = [{"policy": "query_then_lock", "unlock_inside_copy": False, "hazard": False, "observed_by": "query",
             "a_path": "locked", "a_copy_end_ns": 100, "b_unlock_end_ns": 190, "b_unlock_start_ns": 0}
            for _ in range(20)]
    row = judge(["C11"], {"hazard_meant": _race(["waits"] * 5, in_flight=False), "hazard": pd.DataFrame(rows)},
                "cuda").iloc[0]
    assert row.reading == claims.AS_MEANT and row.verdict == Verdict.NOT_APPLICABLE
    assert "never arose" in row.why and "locked 20" in row.why and "ended after A's copy in 20 of 20" in row.why


def test_c11_as_meant_the_driver_waiting_decides_against_the_claim():
    """B's unlock waited for the copies in every race: the hazard does not arise as meant, whatever
    the page-sharing case (not applicable there: never arose) says."""
    data = _c11(N)
    data["hazard"] = data["hazard"].assign(a_path="locked")
    row = judge(["C11"], data, "cuda").iloc[0]
    assert row.verdict == N and "waits 20" in row.why and "ms" not in row.metric


def test_c10_needs_the_applications_own_pinning_calls():
    data = _c10(H)
    data["api_calls"] = data["api_calls"][data["api_calls"].caller == "runtime"]
    row = judge(["C10"], data, "cuda").iloc[0]
    assert row.verdict == M and "application's own pinning calls" in row.why


def test_c10_lock_test_on_refused_locks_is_not_applicable():
    data = _c10(H)
    ac = data["api_calls"]
    ac.loc[ac.user_pinned & (ac.caller == "runtime"), "rc"] = 712
    row = judge(["C10"], data, "cuda").iloc[0]
    assert row.verdict == H or row.verdict == I   # the whole replica's test decides; the lock test rests on no re-lock
    assert "no re-lock was performed" in row.detail and "re-lock refused by the runtime" in row.detail
    assert "refused (712)" in row.analogue


@pytest.mark.parametrize("word", [H, N, I])
def test_c10_judges_the_counted_arm_labelled_as_pinpaths_count(word):
    """Where pinpath counted the re-locks the runtime refused, both tests judge that arm and say so;
    the refusals (three times a real lock here) are for information only."""
    row = judge(["C10"], _c10_counted(word), "cuda").iloc[0]
    assert row.verdict == word, (row.why, row.detail)
    assert common.COUNTED in row.detail and "lock calls, " + common.COUNTED in row.detail
    assert "whole replica, " + common.COUNTED in row.detail
    n = int((_c10_counted(word)["api_calls"].rc == 712).sum())
    assert f"for information, the runtime's own {n} locks of registered memory ({n} refused)" in row.detail
    assert common.REFUSED in row.detail


def test_c10_granted_relocks_are_labelled_granted():
    """A runtime that grants the re-lock itself (HSA counts it): its own arm, labelled so."""
    row = judge(["C10"], _c10(H), "hsa").iloc[0]
    assert row.verdict == H and common.GRANTED in row.detail and common.COUNTED not in row.detail


# -- the why sentence and the readings of C12 ----------------------------------------------------
def test_why_is_written_from_the_data_and_the_rule_sentence_moves_to_rule_detail():
    row = judge(["C6"], _lock_pair(("lock", "pageable"), ("query", "pageable"), 50, 2, 10)(H), "cuda").iloc[0]
    assert "a lock of pageable memory takes" in row.why and "so a register costs" in row.why
    assert f"{row.measured:.3g}"[:2] in row.why and "meets the claim's >= 10.0x" in row.why
    assert row.rule_detail == "every test holds with its whole interval on the claim's side"
    assert "interval" not in row.why.split(";")[0]


def test_c12_gives_one_verdict_per_reading_with_the_absolute_difference():
    rows = judge(["C12"], _c12(H), "cuda").set_index("id")     # the thread's id gives both readings
    assert rows.loc["C12a"].verdict == H and rows.loc["C12b"].verdict == N
    for r in rows.itertuples():
        assert r.difference == r.difference and r.difference_low <= r.difference <= r.difference_high
        assert "apart" in r.why


# -- the repeat as the unit, and the C engine's rows -------------------------------------------
def test_fewer_than_five_repeats_is_at_best_inconclusive():
    data = _lock_pair(("lock", "pageable"), ("query", "pageable"), 50, 2, 10)(H)
    lc = data["lock_cost"].assign(repeat=lambda d: d.repeat % 3)
    row = judge(["C6"], {"lock_cost": lc}, "cuda").iloc[0]
    assert row.verdict == I and row.n_repeats == 3 and "only 3 independent repeats" in row.why
    row = judge(["C6"], {"lock_cost": lc.drop(columns="repeat")}, "cuda").iloc[0]
    assert row.verdict == I and row.n_repeats == 1 and "without a repeat column" in row.why


def test_the_figure_is_taken_over_the_repeat_medians():
    """Ten lock calls per repeat: three repeats all at 100 us, three with six calls at 300 us. The
    calls' median is 100 us, the repeat medians' 200 us: the figure is the latter, and the row gives
    the spreads inside the repeats (IQR / median) and between them."""
    rows = []
    for rep in range(6):
        for i in range(10):
            lock_ns = 300_000 if rep >= 3 and i >= 4 else 100_000
            for op, ns in (("lock", lock_ns), ("query", 1000)):
                rows.append({"op": op, "state": "pageable", "kind": "heap", "nbytes": 4096, "repeat": rep, "call": op,
                             "ns": ns, "rc": 0, "error": "", "source": "native"})
    row = judge(["C6"], {"lock_cost": pd.DataFrame(rows)}, "cuda").iloc[0]
    assert row.n_repeats == 6 and row.measured == pytest.approx(200)
    assert row.low == pytest.approx(100) and row.high == pytest.approx(300)
    assert row.within_spread == pytest.approx(1 / 3) and row.between_spread == pytest.approx(1.0)


def test_a_figure_over_processes_names_them_and_the_spread_between_them():
    """Rows measured one repeat per fresh process (``repeat_unit`` process): the row's unit is the
    process, and its why and the report's claims table give the count and the between-process
    spread beside the interval; without the column the repeats are rounds; a figure of one repeat
    names none."""
    from pinpath.report.html import claims_section
    data = _lock_pair(("lock", "pageable"), ("query", "pageable"), 50, 2, 10)(H)["lock_cost"]
    row = judge(["C6"], {"lock_cost": data.assign(repeat_unit="process")}, "cuda").iloc[0]
    assert row.repeat_unit == "process" and row.n_repeats >= 5
    said = f"over {int(row.n_repeats)} processes (between-process spread {100 * row.between_spread:.0f} %)"
    assert said in row.why and row.why.index(said) < row.why.index("which meets the claim's")
    assert said in claims_section(pd.DataFrame([row]))
    rounds = judge(["C6"], {"lock_cost": data}, "cuda").iloc[0]
    assert rounds.repeat_unit == "round" and f"over {int(rounds.n_repeats)} rounds" in rounds.why
    one = judge(["C6"], {"lock_cost": data.drop(columns="repeat")}, "cuda").iloc[0]
    assert one.repeat_unit == "" and " over " not in one.why
    # C13 reads concurrency_native beside its data set (concurrency, without repeats): its unit is the C loop's
    d13 = _c13(H)
    d13["concurrency_native"] = d13["concurrency_native"].assign(repeat_unit="process")
    c13 = judge(["C13"], d13, "cuda").iloc[0]
    assert c13.repeat_unit == "process" and f"over {int(c13.n_repeats)} processes" in c13.why


def test_judged_rows_keeps_the_native_engine_rows_where_there_are_any():
    both = pd.DataFrame({"engine": ["python", "native", "python"], "total_ns": [1, 2, 3]})
    assert list(claims.judged_rows(both).total_ns) == [2]
    py = pd.DataFrame({"engine": ["python", "python"], "total_ns": [1, 3]})
    assert list(claims.judged_rows(py).total_ns) == [1, 3]
    old = pd.DataFrame({"total_ns": [5]})
    assert list(claims.judged_rows(old).total_ns) == [5]


def test_a_claim_is_judged_on_the_native_rows_only():
    """Python rows say lock_always is slower than staging, the C engine's rows that it is faster."""
    slow = _c3(N)["lock_or_stage"].assign(engine="python")
    fast = _c3(H)["lock_or_stage"].assign(engine="native")
    assert judge(["C3"], {"lock_or_stage": slow}, "cuda").iloc[0].verdict == N
    assert judge(["C3"], {"lock_or_stage": pd.concat([slow, fast])}, "cuda").iloc[0].verdict == H


def test_plugin_claims_on_amd_without_the_real_run_are_not_measured():
    row = judge(["C14"], _tracked(0.2, "tight"), "hsa").iloc[0]
    assert row.verdict == M and "real_" in row.why


def test_arms_on_different_page_backings_are_named():
    t = _c3(H)["lock_or_stage"]
    t["backing"] = np.where(t.policy == "lock_always", "thp", "4k")
    row = judge(["C3"], {"lock_or_stage": t}, "cuda").iloc[0]
    assert "different page backings: thp against 4k" in row.why


def test_c7_as_meant_counts_the_unlock_a_granted_relock_needs():
    cheap = {("relock", "locked"): 1000, ("query", "locked"): 1000}
    assert judge(["C7"], {"lock_cost": _lock_cost(cheap)}, "hsa").iloc[0].verdict == H
    row = judge(["C7"], {"lock_cost": _lock_cost({**cheap, ("unlock_after_relock", "locked"): 5000})}, "hsa").iloc[0]
    assert row.verdict == N and row.measured == pytest.approx(6, rel=0.05) and "its unlock" in row.why


def test_c13_labels_the_counted_path_and_without_it_is_not_applicable():
    row = judge(["C13"], _c13(H), "cuda").iloc[0]
    assert row.reading == claims.ANALOGUE and "counted by pinpath" in row.metric and "712" in row.why
    assert 3600 <= row.measured <= 4400      # one call's path at 16 threads (about 4 us), not three calls' sum
    row = judge(["C13"], _c13(H, counted=False), "cuda").iloc[0]
    assert row.verdict == Verdict.NOT_APPLICABLE and "no re-lock was performed" in row.why


def test_c15_on_cuda_alone_leaves_the_amd_half_not_measured():
    data = _c15(H, vendors=("nvidia",))
    row = judge(["C15"], data, "cuda").iloc[0]
    assert row.reading == claims.AS_MEANT and row.verdict == M
    assert "AMDGPU plugin's half needs an AMD GPU" in row.why and "8 stream(s) in a nowait round" in row.why
    reason = pd.DataFrame([{"not_applicable": "no offload build: build/offload/manifest.json is missing"}])
    row = judge(["C15"], {**data, "overlap_real": reason, "overlap_streams": reason}, "cuda").iloc[0]
    assert row.verdict == M and "no offload build" in row.why
    host = judge(["C15"], {**data, "overlap_real": reason, "overlap_streams": reason}, "host").iloc[0]
    assert host.verdict == Verdict.NOT_APPLICABLE and "offload plugins" in host.why and "raw queues" in host.detail


def test_measures_shared_by_tests_and_claims_are_computed_once(monkeypatch):
    """C13's two tests read one re-lock path; C6, C7 and C9 read the same lock_cost rows."""
    seen = []
    for module, name in ((concurrency, "_c13_cost_of"), (common, "_calls_of")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, _name=name: seen.append((_name, a[1:])) or _real(*a))
    judge(["C13"], _c13(H), "cuda")
    assert seen == [("_c13_cost_of", ())]
    seen.clear()
    judge(["C6", "C7", "C9"], _c9(H), "cuda")
    assert seen and len(seen) == len(set(seen))


def test_each_row_names_its_state_and_hot_and_cold_apart_where_their_verdicts_differ():
    """state: the cache state of the rows the claim read (hot where they name none) and the timing
    thread's CPU; C2 with a hot arm that holds and a cold arm that does not gives both rows; arms that
    agree give one row that says so."""
    hot = _c2(H)["staging"]
    row = judge(["C2"], {"staging": hot}, "cuda").iloc[0]
    assert row.state == "cache hot; timing thread not pinned"
    cold = _c2(N)["staging"].assign(cache="cold", thread_cpu=8)
    both = judge(["C2"], {"staging": pd.concat([hot.assign(cache="hot"), cold])}, "cuda")
    assert both.verdict.tolist() == [N, H] and both.state.tolist() == [
        "cache cold; timing thread on CPU 8", "cache hot; timing thread not pinned"]
    # a sweep whose rows say where the timing thread ran (policy_sweep's thread_cpu and thread_node)
    placed = judge(["C2"], {"staging": hot.assign(thread_cpu=[3, 5] * (len(hot) // 2) + [3] * (len(hot) % 2),
                                                  thread_node=0)}, "cuda")
    assert placed.state.tolist() == ["cache hot; timing thread on CPU 3, 5 (NUMA node 0)"]
    same = judge(["C2"], {"staging": pd.concat([hot, _c2(H)["staging"].assign(cache="cold")])}, "cuda")
    assert len(same) == 1 and same.state.iloc[0] == "cache hot; timing thread not pinned (cold: the same verdict)"
    assert same.measured.iloc[0] == judge(["C2"], {"staging": hot}, "cuda").measured.iloc[0]   # the hot rows alone


def test_a_cold_arm_data_set_is_judged_in_its_own_state_beside_the_hot_one():
    """``<name>_cold`` stands in for ``<name>`` in the cold arm: C4's query_saving measured cold with
    another verdict gives a second row (its query_cost still hot, so the state says both); a cold arm
    that could not be measured leaves the hot row, saying so."""
    hot = _c4(H)
    cold = _c4(N)["query_saving"].assign(cache="cold")
    rows = judge(["C4"], {**hot, "query_saving_cold": cold}, "cuda")
    assert rows.verdict.tolist() == [N, H] and rows.state.tolist() == [
        "cache cold and hot; timing thread not pinned", "cache hot; timing thread not pinned"]
    assert rows.measured.iloc[1] == judge(["C4"], hot, "cuda").measured.iloc[0]
    # hot: query_cost holds, query_saving inconclusive; cold: query_saving holds. The cold row holds with
    # both tests, and shows query_saving's cold figure, not query_cost's, which the two states share
    mixed = {"query_cost": _c4(H)["query_cost"], "query_saving": _c4(I)["query_saving"],
             "query_saving_cold": _c4(H)["query_saving"].assign(cache="cold")}
    rows = judge(["C4"], mixed, "cuda")
    assert rows.verdict.tolist() == [H, I]
    assert rows.metric.str.startswith("query_then_lock / lock_always").tolist() == [True, True]
    assert rows.measured.iloc[0] == pytest.approx(0.1, rel=0.2)
    lone = judge(["C4"], {**hot, "query_saving_cold": pd.DataFrame([{"not_available": "no engine"}])}, "cuda")
    assert len(lone) == 1 and lone.verdict.iloc[0] == H
    assert lone.state.iloc[0] == f"cache hot; timing thread not pinned (cold: {M})"
