"""The runtime probe's waits in two states (advise.wake_state) and prediction.csv's rows per state
(advise.validate.state_rows), on synthetic probes and real figures shaped as the H100's of 2026-12-07:
a 240 KiB pinned D2H about 8 us soon and 37 us late, the region's copies 12 us soon and 37 us late."""

from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest

from pinpath.advise.validate import real_rows, state_rows
from pinpath.advise.wake_state import late_cut, split_probe, state_lines


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
    assert late_cut(np.r_[rng.normal(8000, 600, 297), [37000.0] * 3]) is None      # 1 % late: a tail, not a state


def _probe(rng):
    rows = []
    for v, share in (("app_pinned", 0.25), ("plain", 0.0)):
        soon = 8000.0 if v == "app_pinned" else 47000.0
        for ns in _mix(rng, 300, share, soon_ns=soon):
            rows.append({"variant": v, "process": 0, "direction": "d2h", "nbytes": 245760, "round": 0, "ns": ns, "at": "update"})
        for ns in rng.normal(3300, 300, 300):
            rows.append({"variant": v, "process": 0, "direction": "h2d", "nbytes": 384, "round": 0, "ns": ns, "at": "update"})
    return pd.DataFrame(rows)


def test_the_probe_splits_per_class_and_keeps_a_class_that_does_not_split_whole():
    probe = _probe(np.random.default_rng(2))
    frames, table = split_probe(probe)
    assert list(table.variant) == ["app_pinned"] and table.late_share.iat[0] == pytest.approx(0.25, abs=0.06)
    for s, f in frames.items():
        assert (f.direction == "h2d").sum() == 600                                 # unsplit classes: all rows in both
        plain = f[(f.variant == "plain") & (f.direction == "d2h")]
        assert len(plain) == 300
    soon = frames["soon"].query("variant == 'app_pinned' and direction == 'd2h'").ns
    late = frames["late"].query("variant == 'app_pinned' and direction == 'd2h'").ns
    assert soon.max() < late.min() and len(soon) + len(late) == 300
    assert split_probe(probe[probe.direction == "h2d"]) is None


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
    rows = pd.DataFrame(state_rows("region", preds, split, real, "other_cpu"))
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
    (line,) = state_lines(preds, split)
    assert "D2H of 245760 B" in line and "20 % late" in line
    assert "`app_pinned` 11.3 us soon, 40.5 us late" in line and "`plain`" not in line


def test_the_late_state_is_one_late_wait_in_a_group_of_several_split_copies():
    from pinpath.advise.predict import Prediction
    from pinpath.advise.wake_state import one_late
    # a step of the stencil's four halos: two D2H and two H2D of 32 KiB, the H2D split in the probe
    t = pd.DataFrame({"step": [0, 0, 0, 0], "region": [0, 0, 0, 0], "direction": ["d2h", "d2h", "h2d", "h2d"],
                      "nbytes": 32768, "class_nbytes": 32768, "at": ""})
    split = pd.DataFrame([{"variant": "plain", "direction": "h2d", "nbytes": 32768, "at": "update", "n": 600,
                           "cut_ns": 35000.0, "soon_ns": 22000.0, "late_ns": 49700.0, "late_share": 0.14}])

    def pred(ns):
        typ = pd.DataFrame([{"variant": v, "by": "step", "group": 0, "n_groups": 1, "predicted_ns": ns,
                             "low": ns - 1000, "high": ns + 1000} for v in ("plain", "lock_mapped")])
        empty = pd.DataFrame()
        tot = pd.DataFrame({"variant": ["plain", "lock_mapped"], "same_as": ["plain", "plain"]})
        return Prediction(tot, empty, empty, empty, empty, typ, empty,
                          {(v, "step"): np.full(10, ns) for v in ("plain", "lock_mapped")})

    got = one_late({"soon": pred(92500.0), "late": pred(147800.0)}, types.SimpleNamespace(transfers=t), split)
    late = got["late"].typical.set_index("variant")
    assert late.loc["plain", "predicted_ns"] == pytest.approx(92500 + (147800 - 92500) / 2)
    assert late.loc["lock_mapped", "predicted_ns"] == late.loc["plain", "predicted_ns"]   # charged as plain
    assert got["late"].typical_draws[("plain", "step")][0] == pytest.approx(120150)
    assert got["soon"].typical.predicted_ns.iat[0] == 92500.0
