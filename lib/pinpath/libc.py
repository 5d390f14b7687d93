"""The few libc calls pinpath makes through ctypes: mmap family, mlock family, memmove."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os

__all__ = ["LIBC", "PROT_READ", "PROT_WRITE", "MAP_PRIVATE", "MAP_SHARED", "MAP_ANONYMOUS",
           "MAP_HUGETLB", "MAP_FAILED", "MADV_HUGEPAGE", "MMAP_THRESHOLD_NBYTES", "errno_name", "memmove",
           "fix_mmap_threshold", "mmap_threshold_nbytes"]

LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_vp, _sz, _int = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
for _name, _res, _args in (
    ("mmap", _vp, (_vp, _sz, _int, _int, _int, ctypes.c_long)),
    ("munmap", _int, (_vp, _sz)),
    ("mprotect", _int, (_vp, _sz, _int)),
    ("madvise", _int, (_vp, _sz, _int)),
    ("mlock", _int, (_vp, _sz)),
    ("munlock", _int, (_vp, _sz)),
    ("getppid", _int, ()),
    ("mallopt", _int, (_int, _int)),
):
    _fn = getattr(LIBC, _name)
    _fn.restype, _fn.argtypes = _res, _args

PROT_READ, PROT_WRITE = 0x1, 0x2
MAP_SHARED, MAP_PRIVATE, MAP_ANONYMOUS, MAP_HUGETLB = 0x01, 0x02, 0x20, 0x40000
MAP_FAILED = ctypes.c_void_p(-1).value
MADV_HUGEPAGE = 14
memmove = ctypes.memmove
M_MMAP_THRESHOLD = -3
#: glibc's initial mmap threshold. Fixed (mallopt), every allocation of this size or more is a
#: mapping of its own, made fresh and unmapped on free: glibc's dynamic threshold would otherwise
#: rise after a large free and hand later buffers recycled heap pages, some of them backed by huge
#: pages that numpy asked for (madvise) - a page backing that differs from one buffer to the next.
MMAP_THRESHOLD_NBYTES = 128 * 1024
_fixed: list[int] = []


def fix_mmap_threshold(nbytes: int = MMAP_THRESHOLD_NBYTES) -> int:
    """Fix glibc's mmap threshold at ``nbytes`` for this process (the allocator state every
    buffer of a run is made in); the threshold in force (0 where mallopt refused)."""
    if not _fixed or _fixed[-1] != nbytes:
        _fixed.append(nbytes if LIBC.mallopt(M_MMAP_THRESHOLD, nbytes) == 1 else 0)
    return _fixed[-1]


def mmap_threshold_nbytes() -> int | None:
    """The threshold fix_mmap_threshold set in this process; None: glibc's dynamic threshold."""
    return _fixed[-1] if _fixed and _fixed[-1] else None


def errno_name(code: int) -> str:
    """``12`` -> ``'ENOMEM (Cannot allocate memory)'``."""
    return f"{errno.errorcode.get(code, 'E?')} ({os.strerror(code)})"
