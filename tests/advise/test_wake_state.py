"""The runtime probe's waits in two states (advise.wake_state) and prediction.csv's rows per state
(advise.validate.state_rows), on synthetic probes and real figures shaped as the H100's of 2026-12-07:
a 240 KiB pinned D2H about 8 us soon and 37 us late, the region's copies 12 us soon and 37 us late."""

from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest

from pinpath.advise.validate import real_rows, state_rows
from pinpath.advise.wake_state import late_cut, single_wait, split_probe, state_lines


def _mix(rng, n, late_share, soon_ns=8000.0, late_ns=37000.0):
    late = rng.random(n) < late_share
    return np.where(late, rng.normal(late_ns, 1500, n), rng.normal(soon_ns, 600, n))


def test_a_class_splits_only_into_two_well_apart_states():
    rng = np.random.default_rng(1)
    cut = late_cut(_mix(rng, 300, 0.25))
    assert cut is not None and 10000 < cut < 30000
    assert late_cut(rng.normal(20000, 2000, 300)) is None                          # one group
    assert late_cut(_mix(rng, 12, 0.25)) is None                                   # too few copies
    assert late_cut(_mix(rng, 300, 0.25, soon_ns=18000, late_ns=21000)) is None    # apart, but under 2x
    assert late_cut(np.r_[rng.normal(8000, 600, 291), rng.normal(37000, 500, 9)]) is None   # 3 % late: a tail


def _probe(rng, late_processes=(0, 1, 2)):
    rows = []
    for v, share in (("app_pinned", 0.25), ("plain", 0.0)):
        soon = 8000.0 if v == "app_pinned" else 47000.0
        for proc in range(3):
            mine = share if proc in late_processes else 0.0
            for ns in _mix(rng, 100, mine, soon_ns=soon):
                rows.append({"variant": v, "process": proc, "direction": "d2h", "nbytes": 245760, "round": 0, "ns": ns,
                             "at": "update"})
            for ns in rng.normal(3300, 300, 100):
                rows.append({"variant": v, "process": proc, "direction": "h2d", "nbytes": 384, "round": 0, "ns": ns,
                             "at": "update"})
    return pd.DataFrame(rows)


def test_the_probe_splits_per_class_and_keeps_a_class_that_does_not_split_whole():
    probe = _probe(np.random.default_rng(2))
    frames, table = split_probe(probe)
    assert list(table.variant) == ["app_pinned"] and table.late_share.iat[0] == pytest.approx(0.25, abs=0.07)
    for s, f in frames.items():
        assert (f.direction == "h2d").sum() == 600                                 # unsplit classes: all rows in both
        plain = f[(f.variant == "plain") & (f.direction == "d2h")]
        assert len(plain) == 300
    soon = frames["soon"].query("variant == 'app_pinned' and direction == 'd2h'").ns
    late = frames["late"].query("variant == 'app_pinned' and direction == 'd2h'").ns
    assert soon.max() < late.min() and len(soon) + len(late) == 300
    assert split_probe(probe[probe.direction == "h2d"]) is None


def test_late_copies_of_one_probe_process_are_an_episode_not_a_state():
    rng = np.random.default_rng(4)
    assert split_probe(_probe(rng, late_processes=(1,))) is None
    assert split_probe(_probe(rng, late_processes=(0, 2))) is not None


def _pred(typ: dict) -> types.SimpleNamespace:
    t = pd.DataFrame([{"variant": v, "by": "region", "group": 1, "n_groups": 10, "predicted_ns": ns,
                       "low": 0.9 * ns, "high": 1.1 * ns} for v, ns in typ.items()])
    draws = {(v, "region"): np.full(200, ns) for v, ns in typ.items()}
    totals = pd.DataFrame({"variant": list(typ), "same_as": list(typ)})
    return types.SimpleNamespace(typical=t, typical_draws=draws, totals=totals)


def _real(rng, shares):
    rows = []
    for proc, share in enumerate(shares, start=1):
        for v in ("plain", "app_pinned"):
            x = _mix(rng, 400, share, 12000, 37000) if v == "app_pinned" else rng.normal(75000, 2000, 400)
            rows += [{"variant": v, "invocation": i, "ns": ns, "process": proc, "placement": "other_cpu"}
                     for i, ns in enumerate(x)]
    return pd.DataFrame(rows)


def test_each_state_is_checked_against_the_real_copies_in_that_state():
    rng = np.random.default_rng(3)
    preds = {"soon": _pred({"plain": 66000.0, "app_pinned": 11300.0}),
             "late": _pred({"plain": 66000.0, "app_pinned": 40500.0})}
    split = pd.DataFrame([{"variant": "app_pinned", "direction": "d2h", "nbytes": 245760, "at": "update", "n": 300,
                           "cut_ns": 25000.0, "soon_ns": 8000.0, "late_ns": 37000.0, "late_share": 0.2}])
    real = _real(rng, [0.65, 0.6, 0.35, 0.5, 0.48])                                 # the second H100's processes
    rows = pd.DataFrame(state_rows("region", preds, split, real, "other_cpu", ["app_pinned"]))
    v = rows[rows.kind == "variant"].set_index("state")
    assert set(v.variant) == {"app_pinned"}                                         # plain does not split
    assert v.loc["soon", "real_ns"] == pytest.approx(12000, rel=0.03)
    assert v.loc["late", "real_ns"] == pytest.approx(37000, rel=0.03)
    assert (v.verdict == "within 20 %").all()
    assert v.real_late_share.iat[0] == pytest.approx(0.5, abs=0.06) and v.probe_late_share.iat[0] == 0.2
    d = rows[rows.kind == "difference"].set_index("state")
    assert d.loc["late", "predicted_ns"] == pytest.approx(40500 - 66000)
    assert d.loc["soon", "real_ns"] == pytest.approx(12000 - 75000, rel=0.03)
    # the mixture's median, as real_rows compares it, falls between the states: no state's prediction meets it
    mixed = {r["variant"]: r for r in real_rows("region", preds["soon"], real) if r["kind"] == "variant"}
    assert mixed["app_pinned"]["verdict"] == "outside"


def test_the_advice_names_the_split_classes_and_each_states_prediction():
    preds = {"soon": _pred({"plain": 66000.0, "app_pinned": 11300.0}),
             "late": _pred({"plain": 66000.0, "app_pinned": 40500.0})}
    split = pd.DataFrame([{"variant": "app_pinned", "direction": "d2h", "nbytes": 245760, "at": "update", "n": 300,
                           "cut_ns": 25000.0, "soon_ns": 8000.0, "late_ns": 37000.0, "late_share": 0.2}])
    (line,) = state_lines(preds, split, "region", ["app_pinned"])
    assert "D2H of 245760 B" in line and "20 % late" in line
    assert "`app_pinned` 11.3 us soon, 40.5 us late" in line and "`plain`" not in line
    (none,) = state_lines(preds, split, "region", [])
    assert "No median region holds just one such wait" in none


def test_real_steps_that_do_not_split_get_no_state_figure_however_close_the_predictions():
    """The real steps are split by their own times, not by the predictions: one group of real steps
    between two close predictions gives neither state a real figure (no verdict to be had for free)."""
    rng = np.random.default_rng(5)
    preds = {"soon": _pred({"plain": 66000.0, "app_pinned": 50000.0}),
             "late": _pred({"plain": 66000.0, "app_pinned": 51000.0})}
    split = pd.DataFrame([{"variant": "app_pinned", "direction": "d2h", "nbytes": 245760, "at": "update", "n": 300,
                           "cut_ns": 25000.0, "soon_ns": 8000.0, "late_ns": 37000.0, "late_share": 0.2}])
    real = pd.DataFrame([{"variant": v, "ns": ns, "process": k % 5, "placement": "other_cpu", "invocation": k}
                         for v, mu in (("plain", 66000.0), ("app_pinned", 50500.0))
                         for k, ns in enumerate(rng.normal(mu, 2000, 500))])
    rows = pd.DataFrame(state_rows("region", preds, split, real, "other_cpu", ["app_pinned"]))
    assert len(rows) == 4 and rows.real_ns.isna().all() and (rows.verdict == "").all()


def _pattern(counts: dict):
    """Transfers of one step per region: ``counts`` region -> number of 240 KiB D2H (a split class)
    beside one 384 B H2D each."""
    rows = []
    for region, n in counts.items():
        rows += [{"region": region, "step": 0, "direction": "d2h", "class_nbytes": 245760, "at": "", "owner": "application"}] * n
        rows += [{"region": region, "step": 0, "direction": "h2d", "class_nbytes": 384, "at": "", "owner": "application"}]
    return types.SimpleNamespace(transfers=pd.DataFrame(rows))


def test_only_a_median_group_of_one_split_wait_is_in_one_state():
    from pinpath.advise.main import policies_for
    pols = policies_for("nvidia")
    split = pd.DataFrame([{"variant": v, "direction": "d2h", "nbytes": 245760, "at": "update", "n": 300,
                           "cut_ns": 25000.0, "soon_ns": 8000.0, "late_ns": 37000.0, "late_share": 0.2}
                          for v in ("plain", "app_pinned")])
    preds = {"soon": _pred({"plain": 66000.0, "app_pinned": 11300.0}),
             "late": _pred({"plain": 95000.0, "app_pinned": 40500.0})}   # each median region is region 1
    one = single_wait(preds, _pattern({1: 1, 2: 1}), pols, split, "region")
    assert set(one) == {"plain", "app_pinned", "lock_mapped"} & set(preds["soon"].typical.variant)
    assert single_wait(preds, _pattern({1: 2}), pols, split, "region") == []    # two halos: a mix of states
    # a stack variable under app_pinned is charged as plain: its split class is plain's
    stack = _pattern({1: 1})
    stack.transfers["owner"] = "stack"
    only_plain = split[split.variant == "plain"]
    assert single_wait(preds, stack, pols, only_plain, "region") == ["app_pinned", "plain"]
