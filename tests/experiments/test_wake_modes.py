"""Model / real by wake mode (issue 33 item 2): the split of both sides' copies parts into modes and
the per-mode comparison, on synthetic frames shaped like notebook 13's (the numbers are inputs of the
tests, not measurements)."""

import numpy as np
import pandas as pd
import pytest

from pinpath.experiments import real_runtime as rr
from pinpath.experiments import wake_modes as wm
from pinpath.schema import REAL_MODES, REAL_PRESENT, WAIT_MODEL, check_frame, frame

US = 1_000


def test_split_finds_two_modes_only_across_a_gap_wider_than_the_spread_inside_them():
    cut, gap, spread = wm.split([6 * US, 10 * US, 11 * US, 12 * US, 28 * US, 33 * US, 34 * US, 36 * US])
    assert (cut, gap, spread) == (20 * US, 16 * US, 8 * US)
    # the same gap against a spread more than half of it: one mode
    assert np.isnan(wm.split([2 * US, 10 * US, 11 * US, 12 * US, 28 * US, 33 * US, 34 * US, 36 * US])[0])
    # a gap twice the spread but shorter than GAP_MIN_NS: one mode
    assert np.isnan(wm.split([1_000, 1_100, 1_200, 4_000, 4_100])[0])
    # one gap, no spread (two values each side) still splits; fewer than three processes never do
    assert wm.split([10 * US, 10 * US, 40 * US, 40 * US])[0] == 25 * US
    assert np.isnan(wm.split([10 * US, 40 * US])[0]) and np.isnan(wm.split([])[0])


def _present(copies_us, present_us=25):
    """REAL_PRESENT rows, one process per copies part (us), 3 invocations: full = present-only + copies."""
    return frame([{"variant": "plain", "nw": 16, "process": p, "traced": False, "step": 0, "invocation": i,
                   "ns": (present_us + c) * US, "verified": True, "vendor": "nvidia", "arch": "sm_90",
                   "kernel_ns": present_us * US, "transfer_ns": c * US, "paired": True}
                  for p, c in enumerate(copies_us) for i in range(3)], REAL_PRESENT)


def _blocking(copies_us, auto_us=(9,)):
    """WAIT_MODEL rows: per process its transfer part (us) over a kernel alone of 20 us, 3 invocations;
    the auto processes' own figure beside them (they take no part)."""
    per = [("blocking", c) for c in copies_us] + [("auto", a) for a in auto_us]
    return frame([{"variant": "plain", "policy": "driver_pageable", "user_pinned": False, "threshold_nbytes": None,
                   "nw": 16, "step": 0, "invocation": i, "ns": (20 + c) * US, "h2d_ns": 0, "kernel_ns": 0,
                   "d2h_ns": c * US, "sync_ns": 0, "kernel_only_ns": 20 * US, "repeat": p, "platform": "cuda",
                   "wait": mode, "wait_in_force": mode, "repeat_unit": "process", "section_order": 0, "pid": 100 + p}
                  for p, (mode, c) in enumerate(per) for i in range(3)], WAIT_MODEL)


def _terms(bookkeeping_ns=1_000):
    return pd.DataFrame([{"variant": "plain", "nw": 16, "step": 2, "measured_ns": bookkeeping_ns}])


def _ran(present):
    return rr.RealRun(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), "nvidia", "sm_90", present)


def test_each_mode_is_compared_with_the_same_mode_of_the_other_side():
    """Three real processes soon (11, 12, 10 us), two late (34, 36 us); the replica one soon (6 us) and
    two late (28, 33 us): pooled, the median of each side lands in another mode."""
    m = check_frame(wm.mode_terms(_terms(), _ran(_present([11, 12, 34, 10, 36])), _blocking([28, 6, 33])), REAL_MODES)
    m = m.set_index("mode")
    assert list(m.index) == ["soon", "late"] and (m.modes == 2).all() and (m.cut_ns == 20 * US).all()
    soon, late = m.loc["soon"], m.loc["late"]
    assert (soon.real_processes, soon.model_processes, late.real_processes, late.model_processes) == (3, 1, 2, 2)
    # soon: 25 us present-only + 1 us bookkeeping + 6 us copies against 25 + 11 us
    assert (soon.real_copies_ns, soon.model_copies_ns, soon.model_ns, soon.real_ns) == (11 * US, 6 * US, 32 * US, 36 * US)
    assert soon.ratio == pytest.approx(32 / 36) and soon.within and np.isnan(soon.ratio_lo)   # one replica process
    # late: 25 + 1 + 30.5 against 25 + 35
    assert late.model_ns == 56_500 and late.real_ns == 60 * US and late.ratio == pytest.approx(56.5 / 60)
    assert late.ratio_lo <= late.ratio <= late.ratio_hi and late.within and m.compared.all()
    text = wm.modes_explanation(m.reset_index())
    assert text.startswith("**Like with like, by wake mode: 1 of 1 points within 1 ± 0.15")
    assert "two wake modes, cut at 20 us of copies (the gap, 16 us" in text
    assert "soon: copies 11 us real (3 processes) against 6 us replica (1); model 32 us / real 36 us = 0.89 " \
           "(one process on a side: no interval)" in text


def test_a_mode_with_one_side_only_is_named_not_compared():
    m = wm.mode_terms(_terms(), _ran(_present([33, 34, 35, 36, 58])), _blocking([35, 36, 31])).set_index("mode")
    assert m.loc["soon", "compared"] and m.loc["soon", "within"]
    late = m.loc["late"]
    assert not late.compared and not late.within and np.isnan(late.ratio) and late.model_processes == 0
    text = wm.modes_explanation(m.reset_index())
    assert "late: 1 of the real runtime's processes only, not compared" in text
    assert "1 of 1 points within" in text


def test_one_mode_and_a_gap_the_model_does_not_share_are_told_apart():
    # one mode: all copies within a spread wider than half the largest gap
    one = wm.mode_terms(_terms(), _ran(_present([30, 34, 38, 31])), _blocking([33, 36, 29]))
    assert list(one["mode"]) == ["one"] and one.compared.all() and one.within.all()
    assert "one wake mode" in wm.modes_explanation(one)
    # a replica whose copies are all far from the real runtime's: two modes of one side each, nothing compared,
    # no point within
    apart = wm.mode_terms(_terms(), _ran(_present([30, 31, 32])), _blocking([60, 61, 62]))
    assert not apart.compared.any() and not apart.within.any()
    assert "0 of 1 points within" in wm.modes_explanation(apart)


def test_without_a_side_the_frame_says_why():
    host = pd.DataFrame([{"not_applicable": "host: the wait mode is not applicable (test input)"}])
    got = wm.mode_terms(_terms(), _ran(_present([10, 11, 12])), host)
    assert got.not_applicable.iloc[0].startswith("host:") and wm.modes_explanation(got) == ""
    none = wm.mode_terms(_terms(), _ran(pd.DataFrame([{"not_applicable": "no run"}])), _blocking([10, 11]))
    assert none.not_applicable.iloc[0] == "no --paired process of the real runtime"
    # no bookkeeping measured: it adds nothing
    m = wm.mode_terms(_terms(np.nan), _ran(_present([30, 31, 32])), _blocking([30, 31, 32]))
    assert m.bookkeeping_ns.iloc[0] == 0 and m.model_ns.iloc[0] == m.real_ns.iloc[0]
