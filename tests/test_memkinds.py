"""Each memory kind is what it says, checked against the kernel's view of the mapping."""

import threading

import numpy as np
import pytest

from pinpath import osinfo
from pinpath.errors import BadParameter, UnknownName
from pinpath.memkinds import KINDS, host_buffer, supports
from pinpath.units import PAGE_NBYTES
from pinpath.vocab import Direction, MemoryKind


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("nbytes", [1, 100, PAGE_NBYTES, 3 * PAGE_NBYTES + 7, 2 << 20])
def test_every_kind_is_random_and_readable(host_rt, kind, nbytes):
    with host_buffer(kind, nbytes, rt=host_rt, seed=11) as b:
        assert b.kind == kind and b.nbytes == nbytes and b.array.nbytes == nbytes
        assert b.array.ctypes.data == b.ptr
        assert osinfo.find_vma(b.ptr) is not None and osinfo.find_vma(b.ptr + nbytes - 1) is not None
        if nbytes >= 64:
            assert np.count_nonzero(b.array) == nbytes   # never zeros


def test_stack_is_a_thread_stack():
    with host_buffer("stack", 64 << 10) as b:
        vma = osinfo.find_vma(b.ptr)
        assert vma.pathname == "" and "rw" in vma.perms
        assert b.owner._thread.is_alive() and b.owner._thread is not threading.current_thread()
        assert b.owner.base <= b.ptr < b.owner.base + b.owner.size


def test_read_only_is_read_only():
    with host_buffer("read_only", PAGE_NBYTES) as b:
        assert osinfo.find_vma(b.ptr).perms.startswith("r-")
        assert not b.writable and not b.array.flags.writeable
    assert supports(MemoryKind.READ_ONLY, Direction.D2H)
    assert supports(MemoryKind.READ_ONLY, Direction.H2D) == ""


def test_file_backed_maps_a_file():
    with host_buffer("file_backed", 3 * PAGE_NBYTES) as b:
        vma = osinfo.find_vma(b.ptr)
        assert "pinpath-" in vma.pathname and vma.perms[3] == "s"


def test_huge_pages_report_their_backing():
    with host_buffer("huge_pages", 4 << 20) as b:
        vma = osinfo.find_vma(b.ptr)
        assert b.backing in ("hugetlbfs", "thp", "4k")
        if b.backing == "thp":
            assert vma.anon_huge_nbytes > 0
        if b.backing == "hugetlbfs":
            assert vma.kernel_page_nbytes >= 2 << 20


@pytest.mark.parametrize("offset", [1, 131, PAGE_NBYTES - 1, PAGE_NBYTES + 5])
def test_unaligned_starts_inside_a_page(offset):
    with host_buffer("unaligned", 1000, offset=offset) as b:
        assert b.ptr % PAGE_NBYTES == offset % PAGE_NBYTES


def test_unaligned_rejects_page_multiple():
    with pytest.raises(BadParameter, match="offset"):
        with host_buffer("unaligned", 100, offset=PAGE_NBYTES):
            pass


@pytest.mark.parametrize("nbytes", [1, 64, PAGE_NBYTES // 2, PAGE_NBYTES, 5 * PAGE_NBYTES + 3])
def test_page_sharing_buffers_share_one_page(nbytes):
    with host_buffer("page_sharing", nbytes) as a:
        b = a.neighbour
        assert b.ptr == a.ptr + nbytes
        assert (a.ptr + nbytes - 1) // PAGE_NBYTES == b.ptr // PAGE_NBYTES
        if nbytes <= PAGE_NBYTES // 2:
            assert a.ptr // PAGE_NBYTES == (b.ptr + nbytes - 1) // PAGE_NBYTES


def test_pinned_needs_a_runtime_and_is_locked(host_rt):
    with pytest.raises(BadParameter, match="runtime"):
        with host_buffer("pinned", 100):
            pass
    with host_buffer("pinned", 100, rt=host_rt) as b:
        assert host_rt.query(b.ptr).locked


def test_bad_kind_and_size():
    with pytest.raises(UnknownName, match="unknown memory kind 'heep'"):
        with host_buffer("heep", 10):
            pass
    with pytest.raises(BadParameter, match="positive"):
        with host_buffer("heap", 0):
            pass
