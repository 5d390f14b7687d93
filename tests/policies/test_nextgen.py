"""nextgen's decision order and its refcounted map of pinned ranges."""


import pytest
from hypothesis import given, settings, strategies as st

from pinpath.errors import LockFailed
from pinpath.experiments.sweep import DeviceBuffers
from pinpath.memkinds import host_buffer
from pinpath.policies import PinnedEntry, PinnedMap, make_policy
from pinpath.policies.nextgen import OverlapRefused
from pinpath.units import MiB


def test_threshold_splits_locking_from_pooled_staging(host_rt):
    with make_policy("nextgen", host_rt, threshold_nbytes=1 * MiB) as pol, DeviceBuffers(host_rt) as dev:
        with host_buffer("heap", 2 * MiB) as big, host_buffer("heap", MiB - 1) as small:
            d_big, d_small = dev.get(big.nbytes), dev.get(small.nbytes)
            assert pol.map(big).path == "untracked"
            assert pol.transfer(big, d_big, "h2d").path == "locked"
            assert pol.transfer(small, d_small, "h2d").path == "staged_pooled_miss"
            # an asynchronous H2D keeps its staging buffer until the region's wait (LLVM's stream
            # releases it when it completes): before that a second copy of the size misses
            assert pol.transfer(small, d_small, "d2h").path == "staged_pooled_miss"
            pol.sync()
            assert pol.transfer(small, d_small, "d2h").path == "staged_pooled_hit"
            # exact-size reuse only: one byte less is a new buffer
            assert pol.transfer(small, d_small, "h2d", nbytes=small.nbytes - 1).path == "staged_pooled_miss"
            pol.sync()                     # the region's end: nothing in flight when the buffers go
            pol.unmap(big)


class _RefusingLock:
    """Wraps a runtime so that every lock is refused: exercises control flow only."""

    def __init__(self, rt):
        self._rt = rt

    def __getattr__(self, name):
        return getattr(self._rt, name)

    def lock(self, ptr, nbytes, *, read_only=False):
        raise LockFailed("fake", "lock", 1, "REFUSED", nbytes, ptr)


def test_refused_lock_above_threshold_is_an_error_not_a_fallback(host_rt):
    rt = _RefusingLock(host_rt)
    with make_policy("nextgen", rt) as pol, make_policy("lock_always", rt) as la, DeviceBuffers(host_rt) as dev, \
            host_buffer("heap", 2 * MiB) as buf:
        d = dev.get(buf.nbytes)
        r = pol.transfer(buf, d, "h2d")
        assert r.path == "lock_failed_error" and not r.moved and r.error == "REFUSED (1)"
        assert la.transfer(buf, d, "h2d").path == "lock_failed_staged"
    with make_policy("nextgen_lock_mapped", rt) as pol, host_buffer("heap", 4096) as buf:
        m = pol.map(buf)
        assert m.path == "lock_failed" and m.error
        assert pol.unmap(buf).path == "untracked"


def test_lock_mapped_refcounts_and_unlocks_at_last_unmap(host_rt):
    with make_policy("nextgen_lock_mapped", host_rt) as pol, host_buffer("heap", 64 << 10) as buf:
        assert pol.map(buf).path == "locked"
        assert pol.map(buf).path == "refcounted"
        assert host_rt.query(buf.ptr).locked
        assert pol.unmap(buf).path == "released"
        assert host_rt.query(buf.ptr).locked
        u = pol.unmap(buf)
        assert u.path == "unlocked" and [c.call for c in u.calls] == ["munlock"]
        assert not host_rt.query(buf.ptr).locked and len(pol.pinned) == 0


def test_externally_pinned_is_never_unlocked(host_rt):
    with make_policy("nextgen", host_rt) as pol, host_buffer("pinned", 8192, rt=host_rt) as buf:
        assert pol.map(buf).path == "external"
        u = pol.unmap(buf)
        assert u.path == "released" and not [c for c in u.calls if c.call == "munlock"]
        assert host_rt.query(buf.ptr).locked


def test_map_refuses_overlap():
    m = PinnedMap()
    m.insert(PinnedEntry(1000, 1000, 100, external=False))
    for start in (1050, 950):
        assert not m.fits(start, 100)
        with pytest.raises(OverlapRefused):
            m.insert(PinnedEntry(start, start, 100, external=False))
    assert m.find(1010).host_ptr == 1000 and m.find(1100) is None and m.fits(1100, 10)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 63), st.integers(1, 8)), min_size=1, max_size=40))
def test_map_invariants(ops):
    """Entries never overlap and stay sorted; everything inserted can be removed."""
    m = PinnedMap()
    inserted = []
    for start, length in ops:
        e = PinnedEntry(start * 16, start * 16, length * 16, external=False)
        if m.fits(e.host_ptr, e.nbytes):
            m.insert(e)
            inserted.append(e)
        es = m.entries()
        assert all(a.host_ptr + a.nbytes <= b.host_ptr for a, b in zip(es, es[1:]))
    for e in inserted:
        assert m.find(e.host_ptr) is e
        m.remove(e)
    assert len(m) == 0
