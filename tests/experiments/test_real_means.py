"""The model with the terms by trimmed means against the same --paired processes (issue 33 item 2):
the arithmetic and the words on synthetic frames shaped like notebook 13's (the numbers are inputs of
the tests, not measurements)."""

import numpy as np
import pandas as pd
import pytest

from pinpath.experiments import real_means
from pinpath.experiments.real_runtime import RealRun
from pinpath.schema import REAL_INVOCATIONS, REAL_MEANS, REAL_PRESENT, REAL_REGIONS, WAIT_MODEL, check_frame, frame

SOON_NS, LATE_NS, KERNEL_NS = 8_000, 35_000, 30_000
N = 41   # invocations a process (the first, a warm-up, left out)


def _late(i: int, share: float) -> bool:
    return 1 <= i <= round(share * (N - 1))


def _present(shares, *, copies_scale: float = 1.0, jitter_ns: int = 0) -> pd.DataFrame:
    """--paired processes: the present-only region KERNEL_NS, the full one that + 1 us bookkeeping + a copy
    that wakes late in ``share`` of the invocations."""
    return frame([{"variant": "plain", "nw": 16, "process": p, "traced": False, "step": 0, "invocation": i,
                   "ns": KERNEL_NS + 1_000 + copies_scale * (LATE_NS if _late(i, s) else SOON_NS) + jitter_ns * (i % 7),
                   "kernel_ns": KERNEL_NS, "transfer_ns": 0, "verified": True, "vendor": "nvidia", "arch": "sm_90",
                   "paired": True} for p, s in enumerate(shares) for i in range(N)], REAL_PRESENT)


def _blocking(shares, jitter_ns: int = 0, copies_scale: float = 1.0) -> pd.DataFrame:
    """The replica's blocking processes (and as many auto ones): copies in the same two groups."""
    rows = []
    for r, s in enumerate(shares):
        for mode in ("auto", "blocking"):
            rows += [{"variant": "plain", "policy": "driver_pageable", "user_pinned": False, "threshold_nbytes": None,
                      "nw": 16, "step": 0, "invocation": i, "ns": 20_000 + copies_scale * (LATE_NS if _late(i, s) else SOON_NS) + jitter_ns * (i % 7),
                      "h2d_ns": 0, "kernel_ns": 0, "d2h_ns": 0, "sync_ns": 0, "kernel_only_ns": 20_000,
                      "repeat": 2 * r + (mode == "blocking"), "platform": "cuda", "wait": mode, "wait_in_force": mode,
                      "repeat_unit": "process", "section_order": 0, "pid": 1} for i in range(N)]
    return frame(rows, WAIT_MODEL)


def _regions() -> pd.DataFrame:
    """A traced --paired process: the full region's bookkeeping 1.5 us, the present-only one's 0.5 us."""
    return frame([{"variant": "plain", "nw": 16, "region": region, "step": 0, "invocation": i, "region_ns": 50_000,
                   "events_ns": 50_000 - bk, "bookkeeping_ns": bk}
                  for i in range(N) for region, bk in (("full", 1_500), ("present_only", 500))], REAL_REGIONS)


def _run(present: pd.DataFrame, unpaired_ns: float = 50_000) -> RealRun:
    inv = frame([{"variant": "plain", "nw": 16, "process": p, "traced": False, "step": 0, "invocation": i,
                  "ns": unpaired_ns, "verified": True, "vendor": "nvidia", "arch": "sm_90"}
                 for p in range(5) for i in range(N)], REAL_INVOCATIONS)
    return RealRun(pd.DataFrame(), inv, pd.DataFrame(), pd.DataFrame(), present=present)


def test_a_late_share_near_one_half_on_both_sides_adds_up_by_means():
    """Late shares around one half on both sides (where medians fall either way): the sum of trimmed
    means is the real region of the same processes, and each side's share is reported."""
    shares_real, shares_replica = [0.45, 0.55, 0.5, 0.4, 0.6], [0.55, 0.45]
    m = check_frame(real_means.model_means(_run(_present(shares_real), unpaired_ns=70_000), _blocking(shares_replica),
                                           _regions()),
                    REAL_MEANS).iloc[0]
    late = lambda s: np.mean([round(x * (N - 1)) / (N - 1) for x in s])  # noqa: E731
    copies = SOON_NS + late(shares_replica) * (LATE_NS - SOON_NS)
    assert m.present_ns == KERNEL_NS and m.bookkeeping_ns == pytest.approx(1_000) and m.copies_ns == pytest.approx(copies)
    assert m.real_ns == pytest.approx(KERNEL_NS + 1_000 + SOON_NS + late(shares_real) * (LATE_NS - SOON_NS))
    assert m.ratio == pytest.approx(m.model_ns / m.real_ns) and abs(m.ratio - 1) < 0.01 and m.within
    assert m.ratio_lo <= m.ratio <= m.ratio_hi and m.model_lo_ns <= m.model_ns <= m.model_hi_ns
    assert m.late_real == pytest.approx(0.5) and m.late_replica == pytest.approx(0.5)
    assert (m.late_real_min, m.late_real_max) == (0.4, 0.6) and SOON_NS < m.cut_ns < LATE_NS
    assert m.ratio_unpaired == pytest.approx(m.model_ns / 70_000)   # another time of the run, another state
    assert (m.paired_processes, m.wait_processes, m.unpaired_processes, m.traced_invocations) == (5, 2, 5, 40)
    text = real_means.means_explanation(pd.DataFrame([m]))
    assert text.startswith("**Within 1 ± 0.15 by trimmed means, against the region of the same --paired processes: "
                           "1 of 1 points with the replica's copies in the real processes' wake state (put there at 1, "
                           "where both sides split into soon and late wakes that pair up), 1 of 1 in the wake state "
                           "the replica's own processes drew; 0 of 1 against the unpaired processes'")
    assert m.in_real_state and m.ratio_state == pytest.approx(1.0, abs=0.01)
    assert "late share real 0.50 (its processes 0.40-0.60), replica 0.50 (its processes 0.45-0.55)" in text


def test_a_model_whose_copies_are_wrong_is_outside():
    """The real copies several times the replica's: outside, whatever the mix, in either wake state."""
    m = real_means.model_means(_run(_present([0.2] * 5, copies_scale=4.0)), _blocking([0.2, 0.2]), _regions()).iloc[0]
    assert m.ratio < 0.85 and not m.within and m.ratio_hi < 0.85
    assert "outside" in real_means.means_explanation(pd.DataFrame([m]))
    # the sides' own cuts differ, so the replica's copies stay as drawn (and outside)
    assert not m.in_real_state and m.ratio_state == m.ratio
    assert m.note.startswith("as the replica drew them: the sides' own cuts differ (real 87 us, replica 21.5 us")
    # 1.5 times, half of them late: outside in either state
    m = real_means.model_means(_run(_present([0.5] * 5, copies_scale=1.5)), _blocking([0.5, 0.5]), _regions()).iloc[0]
    assert m.ratio_state < 0.85 and not m.within_state and m.ratio_state_hi < 0.85


def test_sides_in_different_wake_states_are_compared_in_the_real_one():
    """The replica's processes drew a late share of 0.7, the real ones 0.2: the mix is outside, the
    replica's groups weighted by the real share are the real region; both said."""
    shares_real, shares_replica = [0.1, 0.3, 0.2, 0.15, 0.25], [0.7, 0.7]
    m = check_frame(real_means.model_means(_run(_present(shares_real)), _blocking(shares_replica), _regions()),
                    REAL_MEANS).iloc[0]
    assert m.ratio > 1.15 and not m.within
    late = np.mean([round(x * (N - 1)) / (N - 1) for x in shares_real])
    assert m.soon_replica_ns == SOON_NS and m.late_replica_ns == LATE_NS and m.in_real_state
    assert m.copies_state_ns == pytest.approx(SOON_NS + late * (LATE_NS - SOON_NS))
    assert m.ratio_state == pytest.approx(1.0, abs=0.01) and m.within_state
    assert m.ratio_state_lo <= m.ratio_state <= m.ratio_state_hi
    text = real_means.means_explanation(pd.DataFrame([m]))
    assert text.startswith("**Within 1 ± 0.15 by trimmed means, against the region of the same --paired processes: "
                           "1 of 1 points with the replica's copies in the real processes' wake state (put there at 1, "
                           "where both sides split into soon and late wakes that pair up), 0 of 1 in the wake state "
                           "the replica's own processes drew")
    assert "weighted by the real late share): model" in text and ", within." in text


def test_a_wake_the_replica_never_drew_leaves_its_copies_as_drawn():
    m = real_means.model_means(_run(_present([0.3] * 3)), _blocking([0.0, 0.0]), _regions()).iloc[0]
    assert not m.in_real_state and m.ratio_state == m.ratio and np.isfinite(m.ratio_state)
    assert m.note.startswith("as the replica drew them: replica copies make one group on their own side")
    text = real_means.means_explanation(pd.DataFrame([m]))
    assert "; not put in the real processes' wake state" in text
    assert ("0 of 1 points with the replica's copies in the real processes' wake state (put there at 0, where both "
            "sides split into soon and late wakes that pair up; at 1 as the replica drew them, the line says why)") in text
    # two late copies of one process (a stall, not a wake group): as drawn too
    m = real_means.model_means(_run(_present([0.3] * 3)), _blocking([0.05, 0.0]), _regions()).iloc[0]
    assert not m.in_real_state and m.ratio_state == m.ratio


def test_a_replica_off_by_a_shift_is_not_put_in_the_real_state():
    """Every copy on both sides in one group, the replica's at twice the real ones': pooled they make two
    groups, but the cut splits the sides, not the wakes: the copies stay as drawn, outside."""
    m = real_means.model_means(_run(_present([0.0] * 3, jitter_ns=300)), _blocking([0.0, 0.0], jitter_ns=300,
                                                                                    copies_scale=2.0),
                               _regions()).iloc[0]
    assert np.isfinite(m.cut_ns) and m.ratio > 1.15 and m.ratio_state == m.ratio and not m.in_real_state
    assert m.note.startswith("as the replica drew them: real and replica copies make one group on their own side")


def test_a_group_too_small_to_time_leaves_the_copies_as_drawn():
    """Late wakes in 20 % of the real invocations, in one replica process of two: 8 late copies, fewer
    than MIN_GROUP, so no group time."""
    m = real_means.model_means(_run(_present([0.2] * 3)), _blocking([0.2, 0.0]), _regions()).iloc[0]
    assert not m.in_real_state and m.ratio_state == m.ratio
    assert m.note == ("as the replica drew them: the replica has 8 late copies (cut 22 us) from 1 process(es), where "
                      "20% of the real ones' are late: too few to time its late group (at least 20 from 2 processes)")


def test_no_interval_where_many_resamples_lack_a_group():
    """The replica's late wakes in two of five processes: enough copies for a group time, but a
    resample of the five misses both in some 8 % of draws (7 % with this seed), so no interval."""
    m = real_means.model_means(_run(_present([0.3] * 3)), _blocking([0.6, 0.6, 0.0, 0.0, 0.0]), _regions()).iloc[0]
    assert m.in_real_state and np.isfinite(m.ratio_state) and np.isnan(m.ratio_state_lo) and np.isnan(m.ratio_state_hi)
    assert m.note.startswith("no interval in the real state: 7% of the resamples")
    assert "(no interval), within" in real_means.means_explanation(pd.DataFrame([m]))


def test_a_copy_without_a_time_counts_in_neither_group():
    rng = np.random.default_rng(3)
    wakes = lambda n_late: np.r_[8e3 + rng.normal(0, 300, 60 - n_late), 35e3 + rng.normal(0, 300, n_late)]  # noqa: E731
    real = [np.r_[wakes(20), [np.nan]], wakes(20)]
    replica = [wakes(30), wakes(30)]
    got = real_means._in_real_state(real, replica, 20e3, (float(np.mean(np.concatenate(replica))), np.zeros(3)))
    assert got["matched"] and got["copies"] == pytest.approx(got["soon"] + (40 / 120) * (got["late"] - got["soon"]))


def test_what_was_not_measured_is_said():
    present, blocking = _present([0.2] * 3), _blocking([0.2])
    # no traced --paired run: the bookkeeping left out, said so
    m = real_means.model_means(_run(present), blocking, frame([], REAL_REGIONS)).iloc[0]
    assert m.bookkeeping_ns == 0 and m.note.startswith("no traced --paired run: the bookkeeping is left out; ") and np.isfinite(m.ratio)
    # no wait mode (the host): no figure, the reason in note
    why = "host: the wait mode is not applicable"
    m = real_means.model_means(_run(present), pd.DataFrame([{"not_applicable": why}]), _regions()).iloc[0]
    assert np.isnan(m.ratio) and m.note == why
    assert real_means.means_explanation(pd.DataFrame([m])).splitlines()[1] == f"- **plain, nw=16**: no figure ({why})."
    # no --paired process
    m = real_means.model_means(_run(present.iloc[:0]), blocking, _regions()).iloc[0]
    assert np.isnan(m.ratio) and m.note == "no --paired process ran at this point"
    # one group of copies (the real side's includes the bookkeeping): no cut, no shares
    m = real_means.model_means(_run(_present([0.0] * 3, jitter_ns=500)), _blocking([0.0], jitter_ns=500), _regions()).iloc[0]
    assert np.isnan(m.cut_ns) and np.isnan(m.late_real) and "make one group" in real_means.means_explanation(pd.DataFrame([m]))
    assert pd.isna(m.in_real_state) and m.ratio_state == m.ratio          # no wake state to match
    # where the real runtime could not run: its reason frame
    reason = pd.DataFrame([{"not_applicable": "no build"}])
    got = real_means.model_means(RealRun(reason, reason, reason, reason, present=reason), blocking)
    assert "not_applicable" in got and real_means.means_explanation(got) == ""
