"""Every policy x memory kind x direction on a real runtime, every transfer byte-verified,
and the path each took is what that runtime observably did."""

from dataclasses import replace

import pytest

from pinpath.experiments.sweep import DeviceBuffers, transfer
from pinpath.memkinds import KINDS, host_buffer, supports
from pinpath.policies import POLICIES, make_policy
from pinpath.vocab import Direction, MapOutcome, TransferPath

SIZES = [100, 5000, 2 << 20]   # sub-page, a few pages, above nextgen's 1 MiB threshold


@pytest.mark.parametrize("policy", list(POLICIES))
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("direction", list(Direction))
def test_policy_kind_direction(any_rt, policy, kind, direction):
    if reason := supports(kind, direction):
        pytest.skip(reason)
    with make_policy(policy, any_rt) as pol, DeviceBuffers(any_rt) as dev:
        for n in SIZES:
            with host_buffer(kind, n, rt=any_rt, seed=n) as buf:
                dptr = dev.get(n)
                m = pol.map(buf)
                assert m.event == "map" and m.path in set(MapOutcome)
                recs = [transfer(pol, buf, dev, dptr, direction, verify=True) for _ in range(3)]
                for r in recs:
                    assert r.path in set(TransferPath)
                    if r.moved:
                        assert r.verified is True, r
                    else:
                        assert r.error, r
                    assert r.calls and all(c.thread_id == r.thread_id for c in r.calls)
                    assert r.total_ns >= sum(getattr(r, f"{p}_ns") for p in ("lock", "dma", "wait", "unlock"))
                pol.unmap(buf)


EXPECTED_HOST = {   # on host every lock is granted (mlock), pageable memory is copied directly
    "stage_per_copy": {"heap": "staged_fresh", "pinned": "staged_fresh"},
    "stage_pooled": {"heap": "staged_pooled_hit"},
    "lock_always": {"heap": "locked", "pinned": "locked"},
    "query_then_lock": {"heap": "locked", "pinned": "already_locked"},
    "prepinned": {"heap": "pinned_direct", "pinned": "pinned_direct"},
    "driver_pageable": {"heap": "pageable_direct", "pinned": "pageable_direct"},   # LLVM's CUDA plugin never asks
    "nextgen_lock_mapped": {"heap": "map_hit", "pinned": "external_pinned"},
}


@pytest.mark.parametrize("policy", list(EXPECTED_HOST))
def test_host_paths(host_rt, policy):
    with make_policy(policy, host_rt) as pol, DeviceBuffers(host_rt) as dev:
        for kind, path in EXPECTED_HOST[policy].items():
            with host_buffer(kind, 8192, rt=host_rt) as buf:
                dptr = dev.get(8192)
                pol.map(buf)
                transfer(pol, buf, dev, dptr, "h2d", verify=True)
                r = transfer(pol, buf, dev, dptr, "h2d", verify=True)
                assert r.path == path, (kind, r)
                pol.unmap(buf)


def test_stage_per_copy_calls(host_rt):
    """C1's signature: every transfer allocates, (grants,) and frees a staging buffer."""
    with make_policy("stage_per_copy", host_rt) as pol, DeviceBuffers(host_rt) as dev, \
            host_buffer("heap", 15360) as buf:
        dptr = dev.get(buf.nbytes)
        r = pol.transfer(buf, dptr, "d2h")
        names = [c.call for c in r.calls]
        assert names == ["mmap", "mlock", "memmove@worker", "worker_wait", "memcpy", "munlock", "munmap"]
        assert r.alloc_ns > 0 and r.free_ns > 0 and r.copy_out_ns > 0 and r.copy_in_ns == 0


def test_query_first_is_a_step_any_policy_can_take(host_rt):
    """query_first is a flag of a policy's row, not code of one policy: stage_pooled's steps with it
    copy locked memory as one DMA after the query (no staging), and the rest through the pool."""
    with make_policy("stage_pooled", host_rt) as pol, DeviceBuffers(host_rt) as dev:
        pol.steps = replace(pol.steps, query_first=True)
        for kind, path, first in (("pinned", "already_locked", ["smaps_lookup", "memmove@worker", "worker_wait"]),
                                  ("heap", "staged_pooled_miss", ["smaps_lookup", "mmap", "mlock", "memcpy"])):
            with host_buffer(kind, 8192, rt=host_rt) as buf:
                r = transfer(pol, buf, dev, dev.get(8192), "h2d", verify=True)
                assert r.path == path and [c.call for c in r.calls][:len(first)] == first, r


def test_a_row_runs_only_on_the_class_of_its_maps(host_rt):
    """A row's transfer step is a method of the class its maps name; built on another class it is
    refused in one sentence, before any queue is made."""
    from pinpath.errors import PinpathError
    from pinpath.policies import MAPS, PolicyBase
    from pinpath.vocab import POLICY_STEPS
    assert {s.maps for s in POLICY_STEPS.values()} <= set(MAPS)
    with pytest.raises(PinpathError, match="PolicyBase has no transfer step 'nextgen'"):
        PolicyBase(host_rt, "nextgen")
