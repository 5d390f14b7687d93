"""The few libc calls pinpath makes through ctypes: mmap family, mlock family, memmove."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os

__all__ = ["LIBC", "PROT_READ", "PROT_WRITE", "MAP_PRIVATE", "MAP_SHARED", "MAP_ANONYMOUS",
           "MAP_HUGETLB", "MAP_FAILED", "MADV_HUGEPAGE", "errno_name", "memmove"]

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
):
    _fn = getattr(LIBC, _name)
    _fn.restype, _fn.argtypes = _res, _args

PROT_READ, PROT_WRITE = 0x1, 0x2
MAP_SHARED, MAP_PRIVATE, MAP_ANONYMOUS, MAP_HUGETLB = 0x01, 0x02, 0x20, 0x40000
MAP_FAILED = ctypes.c_void_p(-1).value
MADV_HUGEPAGE = 14
memmove = ctypes.memmove


def errno_name(code: int) -> str:
    """``12`` -> ``'ENOMEM (Cannot allocate memory)'``."""
    return f"{errno.errorcode.get(code, 'E?')} ({os.strerror(code)})"
