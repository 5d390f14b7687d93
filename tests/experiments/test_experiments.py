"""Each experiment on a real runtime, small: declared columns, verified bytes, sane figures."""

import pytest

from pinpath import experiments as ex
from pinpath.report import claims
from pinpath.schema import BANDWIDTH, C12, HARNESS, LOCK_COST, TRANSFERS, check_frame


def test_harness(any_rt):
    df = check_frame(ex.harness(any_rt, loops=200, rounds=5), HARNESS)
    m = dict(zip(df.metric, df.ns))
    assert m["trace_overhead_ns"] > 0 and m["null_call_ns"] > 0 and m["resolution_ns"] >= 1


def test_bandwidth(any_rt):
    df = check_frame(ex.bandwidth(any_rt, sizes_nbytes=[1 << 16, 1 << 20], repeats=2, warmup=1, verify="all"), BANDWIDTH)
    assert set(df.case) == {"pinned", "pageable", "plain_loop"}
    assert df[df.case != "plain_loop"].verified.all()
    assert (df.gb_per_s > 0).all()
    assert set(df[df.case == "pinned"].path) == {"pinned_direct"}
    table = claims.bandwidth_table(df)
    assert "pinned / plain loop" in table.columns and len(table) == 4


def test_lock_cost(any_rt):
    df = check_frame(ex.lock_cost(any_rt, sizes_nbytes=[4096, 1 << 20], repeats=2, warmup=1), LOCK_COST)
    ops = set(zip(df.op, df.state))
    assert {("lock", "pageable"), ("unlock", "locked"), ("relock", "locked"), ("query", "locked"),
            ("query", "pageable"), ("lock", "pinned"), ("query", "pinned")} <= ops
    assert (df.ns > 0).all()
    refused = df[df.error != ""]
    assert (refused.rc != 0).all()
    assert len(claims.lock_table(df))


def test_c12_cases(any_rt):
    df = check_frame(ex.c12_cases(any_rt, nbytes=1 << 22, repeats=2, warmup=1, verify="all"), C12)
    assert set(df.case) == {"1_lock_copy", "2_prelocked_copy", "3_relock_copy", "pageable_copy"}
    assert df.verified.all()
    one = df[df.case == "1_lock_copy"]
    assert (one.lock_ns > 0).all() and (one.unlock_ns > 0).all()
    assert (df[df.case == "2_prelocked_copy"].lock_ns == 0).all()
    assert (df.inside_ns >= df.lock_ns + df.wait_ns).all()
    assert len(claims.c12_table(df)) == 4


@pytest.mark.parametrize("direction", ["h2d", "d2h"])
def test_policy_sweep_staging(any_rt, direction):
    df = check_frame(ex.policy_sweep(any_rt, sizes_nbytes=[4096, 1 << 18], directions=[direction], repeats=3),
                     TRANSFERS)
    fresh, pooled = df[df.policy == "stage_per_copy"], df[df.policy == "stage_pooled"]
    assert (fresh.alloc_ns > 0).all() and (fresh.free_ns > 0).all()
    assert (pooled.alloc_ns == 0).all() and set(pooled.path) == {"staged_pooled_hit"}
    assert df.verified.sum() == 4    # the first timed transfer of each point
    assert len(claims.c2_table(df)) == 2
