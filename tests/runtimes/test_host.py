"""The host runtime: every answer is what Linux did, checked through /proc."""

import numpy as np
import pytest

from pinpath import libc, osinfo
from pinpath.errors import LockFailed
from pinpath.memkinds import host_buffer
from pinpath.units import PAGE_NBYTES


def test_lock_is_seen_by_the_kernel(host_rt):
    with host_buffer("heap", 8 * PAGE_NBYTES) as b:
        before = osinfo.vmlck_nbytes()
        assert host_rt.lock(b.ptr, b.nbytes) == b.ptr
        assert osinfo.vmlck_nbytes() - before >= b.nbytes
        info = host_rt.query(b.ptr)
        assert info.locked and info.base <= b.ptr < info.base + info.nbytes and info.detail == "VmFlags lo"
        host_rt.unlock(b.ptr, b.nbytes)
        assert osinfo.vmlck_nbytes() == before
        assert not host_rt.query(b.ptr).locked


def test_mlock_does_not_count(host_rt):
    """Lock twice, unlock once: Linux's mlock keeps no count, so the pages are unlocked."""
    with host_buffer("heap", 4 * PAGE_NBYTES) as b:
        host_rt.lock(b.ptr, b.nbytes)
        host_rt.lock(b.ptr, b.nbytes)
        host_rt.unlock(b.ptr, b.nbytes)
        assert not host_rt.query(b.ptr).locked
        host_rt.unlock(b.ptr, b.nbytes)   # a second munlock is harmless; keeps calls balanced


def test_lock_of_unmapped_memory_is_refused_by_the_kernel(host_rt):
    span = 4 * PAGE_NBYTES
    ptr = libc.LIBC.mmap(None, span, libc.PROT_READ | libc.PROT_WRITE, libc.MAP_PRIVATE | libc.MAP_ANONYMOUS, -1, 0)
    libc.LIBC.munmap(ptr, span)
    with pytest.raises(LockFailed, match=r"host: mlock\(ptr=0x[0-9a-f]+, nbytes=16384\) returned ENOMEM") as e:
        host_rt.lock(ptr, span)
    assert e.value.rc == 12
    assert host_rt.recorder.calls[-1].rc == 12


def test_pinned_allocation_is_locked_and_freed(host_rt):
    with host_rt.pinned_buffer(3 * PAGE_NBYTES) as buf:
        vma = osinfo.find_vma(buf.ptr)
        assert vma.locked and vma.locked_nbytes >= 3 * PAGE_NBYTES
    assert osinfo.find_vma(buf.ptr) is None or not osinfo.find_vma(buf.ptr).locked


def test_copy_on_worker_queue_moves_bytes(host_rt):
    n = 1 << 20
    with host_buffer("heap", n) as b, host_rt.device_buffer(n) as dev, host_rt.queue() as q:
        q.copy_async(dev.ptr, b.ptr, n, "h2d")
        q.wait()
        assert np.array_equal(host_rt.read_device(dev.ptr, n), b.array)
    names = [c.call for c in host_rt.recorder.calls]
    assert names == ["mmap", "memmove@worker", "worker_wait", "munmap"]


def test_describe_names_the_platform(host_rt):
    d = host_rt.describe()
    assert d["platform"] == "host" and "host platform" in d["device"]
