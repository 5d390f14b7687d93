"""Makers of each kind of host memory the thread speaks of; each is a context manager
that yields a HostBuffer filled with random bytes (never zeros) and frees it on exit. Every
buffer's page backing is read from Linux after it is filled, never assumed."""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

import numpy as np

from . import libc, osinfo
from .errors import BadParameter, NotAvailable, RuntimeCallFailed
from .units import MiB, PAGE_NBYTES
from .vocab import Direction, MemoryKind, choose

__all__ = ["HostBuffer", "host_buffer", "fill_random", "view", "supports", "KINDS",
           "UNALIGNED_OFFSET_NBYTES", "STACK_MAX_NBYTES", "POISON"]

POISON = 0xA5                          #: written over a destination before a verified transfer
UNALIGNED_OFFSET_NBYTES = 131          #: default start offset inside a page (odd on purpose)
STACK_MAX_NBYTES = 1 << 30             #: largest buffer placed on a thread stack
HUGE_PAGE_NBYTES = 2 * MiB
_L = libc.LIBC


@dataclass(frozen=True, slots=True)
class HostBuffer:
    ptr: int
    nbytes: int
    kind: MemoryKind
    array: np.ndarray                  #: uint8 view of [ptr, ptr + nbytes)
    backing: str = ""                  #: as Linux reports it after the fill: "4k", "thp", "hugetlbfs", "file"
                                       #: (osinfo.backing); "runtime" for memory a runtime allocated
    writable: bool = True
    neighbour: "HostBuffer | None" = None   #: the other buffer on the shared page (page_sharing)
    owner: Any = field(default=None, repr=False)   #: keeps the memory alive


def view(ptr: int, nbytes: int, *, writable: bool = True) -> np.ndarray:
    """A uint8 numpy view of raw memory."""
    arr = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(ptr))
    arr.flags.writeable = writable
    return arr


def fill_random(arr: np.ndarray, seed: int = 0) -> None:
    """Fill with random non-zero-biased bytes; large buffers tile a 4 MiB random block."""
    rng = np.random.default_rng(seed)
    block = rng.integers(1, 256, size=min(arr.nbytes, 4 * MiB), dtype=np.uint8)
    if arr.nbytes <= block.nbytes:
        arr[:] = block[:arr.nbytes]
        return
    reps = arr.nbytes // block.nbytes
    arr[:reps * block.nbytes].reshape(reps, -1)[:] = block
    arr[reps * block.nbytes:] = block[:arr.nbytes - reps * block.nbytes]


def supports(kind: MemoryKind, direction: Direction) -> str:
    """'' if ``kind`` can take part in a ``direction`` transfer, else the reason it cannot."""
    if kind in (MemoryKind.READ_ONLY, MemoryKind.READ_ONLY_FILE, MemoryKind.RODATA) and direction == Direction.D2H:
        return "read-only memory is only ever a source: a D2H transfer would write into it"
    return ""


def _mmap(nbytes: int, flags: int, fd: int = -1, *, prot: int = libc.PROT_READ | libc.PROT_WRITE) -> int:
    ptr = _L.mmap(None, nbytes, prot, flags, fd, 0)
    if ptr in (None, libc.MAP_FAILED):
        err = ctypes.get_errno()
        raise RuntimeCallFailed("host", "mmap", err, libc.errno_name(err), nbytes)
    return ptr


@contextmanager
def _mapping(nbytes: int, flags: int = libc.MAP_PRIVATE | libc.MAP_ANONYMOUS, fd: int = -1) -> Iterator[int]:
    ptr = _mmap(nbytes, flags, fd)
    try:
        yield ptr
    finally:
        _L.munmap(ptr, nbytes)


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to


# -- makers (each: (stack, nbytes, rt, seed, offset) -> HostBuffer) ---------------------------
_L.malloc.restype, _L.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
_L.free.restype, _L.free.argtypes = None, (ctypes.c_void_p,)


_L.posix_memalign.restype = ctypes.c_int
_L.posix_memalign.argtypes = (ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_size_t)


def _heap(stack: ExitStack, nbytes, rt, seed, offset):
    # From the C heap, on whole pages of its own (posix_memalign to a page, the size rounded up to
    # pages): malloc alone puts a buffer on pages its neighbours share, from the heap's free chunks
    # whatever the mmap threshold, and then another buffer's lock covers it (a runtime that registers
    # pages answers "already registered"; mlock's query reads the page as locked). Sharing a page is a
    # state of its own, measured where it is meant: the unaligned and shared_page kinds, C11.
    ptr = ctypes.c_void_p()
    rc = _L.posix_memalign(ctypes.byref(ptr), PAGE_NBYTES, max(PAGE_NBYTES, -(-nbytes // PAGE_NBYTES) * PAGE_NBYTES))
    if rc != 0 or not ptr.value:
        raise RuntimeCallFailed("host", "posix_memalign", rc or 12, libc.errno_name(rc or 12), nbytes)
    ptr = ptr.value
    stack.callback(_L.free, ptr)
    arr = view(ptr, nbytes)
    fill_random(arr, seed)
    return HostBuffer(ptr, nbytes, MemoryKind.HEAP, arr)


def _numpy(stack: ExitStack, nbytes, rt, seed, offset):
    arr = np.empty(nbytes, dtype=np.uint8)
    fill_random(arr, seed)
    return HostBuffer(arr.ctypes.data, nbytes, MemoryKind.NUMPY, arr, owner=arr)


class _StackThread:
    """A thread that parks on an event; its stack's low end holds the buffer."""

    def __init__(self, stack_nbytes: int) -> None:
        self._ready, self._release = threading.Event(), threading.Event()
        self.base = self.size = 0
        self._error: str | None = None
        old = threading.stack_size()
        threading.stack_size(stack_nbytes)
        try:
            self._thread = threading.Thread(target=self._run, name="pinpath-stack", daemon=True)
            self._thread.start()
        finally:
            threading.stack_size(old)
        self._ready.wait()
        if self._error:
            raise RuntimeCallFailed("host", "pthread_getattr_np", -1, self._error)

    def _run(self) -> None:
        attr = ctypes.create_string_buffer(128)   # pthread_attr_t is 56 bytes on x86-64 glibc
        addr, size = ctypes.c_void_p(), ctypes.c_size_t()
        if _L.pthread_getattr_np(ctypes.c_ulong(_L.pthread_self()), attr) != 0:
            self._error = "pthread_getattr_np failed"
        elif _L.pthread_attr_getstack(attr, ctypes.byref(addr), ctypes.byref(size)) != 0:
            self._error = "pthread_attr_getstack failed"
        else:
            self.base, self.size = addr.value, size.value
            _L.pthread_attr_destroy(attr)
        self._ready.set()
        self._release.wait()

    def close(self) -> None:
        self._release.set()
        self._thread.join()


_L.pthread_self.restype = ctypes.c_ulong


def _stack(stack: ExitStack, nbytes, rt, seed, offset):
    if nbytes > STACK_MAX_NBYTES:
        raise BadParameter(f"stack: {nbytes} bytes is more than the {STACK_MAX_NBYTES} placed on a thread stack")
    th = _StackThread(_round_up(nbytes, PAGE_NBYTES) + 4 * MiB)
    stack.callback(th.close)
    # the low end of the stack mapping: far below the parked thread's own frames
    arr = view(th.base, nbytes)
    fill_random(arr, seed)
    return HostBuffer(th.base, nbytes, MemoryKind.STACK, arr, owner=th)


def _read_only(stack: ExitStack, nbytes, rt, seed, offset):
    span = _round_up(nbytes, PAGE_NBYTES)
    ptr = stack.enter_context(_mapping(span))
    fill_random(view(ptr, nbytes), seed)
    if _L.mprotect(ptr, span, libc.PROT_READ) != 0:
        err = ctypes.get_errno()
        raise RuntimeCallFailed("host", "mprotect", err, libc.errno_name(err), span, ptr)
    return HostBuffer(ptr, nbytes, MemoryKind.READ_ONLY, view(ptr, nbytes, writable=False),
                      writable=False)


def _random_file(stack: ExitStack, nbytes: int, seed: int, span: int) -> tuple[int, str]:
    """A temporary file of ``span`` bytes starting with ``nbytes`` random ones; (fd, path)."""
    fd, path = tempfile.mkstemp(prefix="pinpath-", suffix=".bin")
    stack.callback(os.unlink, path)
    stack.callback(os.close, fd)
    block = np.empty(nbytes, dtype=np.uint8)
    fill_random(block, seed)
    os.pwrite(fd, block.tobytes(), 0)
    os.ftruncate(fd, span)
    return fd, path


def _read_only_file(stack: ExitStack, nbytes, rt, seed, offset):
    span = _round_up(nbytes, PAGE_NBYTES)
    fd, _ = _random_file(stack, nbytes, seed, span)
    ptr = _mmap(span, libc.MAP_PRIVATE, fd, prot=libc.PROT_READ)
    stack.callback(_L.munmap, ptr, span)
    return HostBuffer(ptr, nbytes, MemoryKind.READ_ONLY_FILE, view(ptr, nbytes, writable=False), writable=False)


_RODATA_SOURCE = (
    "/* pinpath: NBYTES random bytes in .rodata, page-aligned, as a const array of a library */\n"
    '__asm__(".section .rodata\\n.balign 4096\\n.globl pinpath_rodata\\n.type pinpath_rodata, @object\\n"\n'
    '        "pinpath_rodata:\\n.incbin \\"DATA\\"\\n.size pinpath_rodata, NBYTES\\n.balign 4096\\n.previous\\n");\n')


def _rodata(stack: ExitStack, nbytes, rt, seed, offset):
    """A const array in the read-only data of a shared object compiled now and loaded with
    dlopen: what a pointer into an application's .rodata is."""
    from .nativelib import NativeUnavailable, cache_dir, compiler
    try:
        cc = compiler()
    except NativeUnavailable as e:
        raise NotAvailable(f"rodata: building a shared object needs a C compiler: {e}") from None
    block = np.empty(nbytes, dtype=np.uint8)
    fill_random(block, seed)
    key = hashlib.sha256(block.tobytes() + _RODATA_SOURCE.encode()).hexdigest()[:16]
    so = os.path.join(cache_dir(), f"rodata-{nbytes}-{key}.so")
    if not os.path.exists(so):
        with tempfile.TemporaryDirectory(prefix="pinpath-rodata-") as d:
            data, src, tmp = (os.path.join(d, n) for n in ("data.bin", "rodata.c", "lib.so"))
            with open(data, "wb") as f:
                f.write(block.tobytes())
            with open(src, "w") as f:
                f.write(_RODATA_SOURCE.replace("DATA", data).replace("NBYTES", str(nbytes)))
            r = subprocess.run([cc, "-shared", "-fPIC", "-o", tmp, src], capture_output=True, text=True)
            if r.returncode != 0:
                first = (r.stderr.strip().splitlines() or ["no output"])[0]
                raise NotAvailable(f"rodata: the shared object did not compile ({first})")
            shutil.move(tmp, so + f".{os.getpid()}")
            os.replace(so + f".{os.getpid()}", so)
    lib = ctypes.CDLL(so)
    import _ctypes
    stack.callback(_ctypes.dlclose, lib._handle)
    ptr = ctypes.addressof(ctypes.c_uint8.in_dll(lib, "pinpath_rodata"))
    arr = view(ptr, nbytes, writable=False)
    if not np.array_equal(arr, block):
        raise NotAvailable("rodata: the loaded library does not hold the bytes it was built with")
    return HostBuffer(ptr, nbytes, MemoryKind.RODATA, arr, writable=False, owner=lib)


def _file_backed(stack: ExitStack, nbytes, rt, seed, offset):
    span = _round_up(nbytes, PAGE_NBYTES)
    fd, path = _random_file(stack, 0, seed, span)
    ptr = stack.enter_context(_mapping(span, libc.MAP_SHARED, fd))
    arr = view(ptr, nbytes)
    fill_random(arr, seed)
    return HostBuffer(ptr, nbytes, MemoryKind.FILE_BACKED, arr, backing="file", owner=path)


def _huge_pages(stack: ExitStack, nbytes, rt, seed, offset):
    span = _round_up(nbytes, HUGE_PAGE_NBYTES)
    try:
        ptr = _mmap(span, libc.MAP_PRIVATE | libc.MAP_ANONYMOUS | libc.MAP_HUGETLB)
        stack.callback(_L.munmap, ptr, span)
    except RuntimeCallFailed:     # no hugetlbfs pool: ask for transparent huge pages
        whole = span + HUGE_PAGE_NBYTES
        raw = stack.enter_context(_mapping(whole))
        ptr = _round_up(raw, HUGE_PAGE_NBYTES)
        _L.madvise(ptr, span, libc.MADV_HUGEPAGE)
    arr = view(ptr, nbytes)
    fill_random(arr, seed)     # backing: what Linux granted (hugetlbfs, thp, or 4k where neither)
    return HostBuffer(ptr, nbytes, MemoryKind.HUGE_PAGES, arr)


def _pinned(stack: ExitStack, nbytes, rt, seed, offset):
    if rt is None:
        raise BadParameter("pinned memory needs a runtime to allocate it (pass rt=)")
    ptr = stack.enter_context(rt.pinned_buffer(nbytes)).ptr
    arr = view(ptr, nbytes)
    fill_random(arr, seed)
    return HostBuffer(ptr, nbytes, MemoryKind.PINNED, arr, backing="runtime")


def _unaligned(stack: ExitStack, nbytes, rt, seed, offset):
    offset = UNALIGNED_OFFSET_NBYTES if offset is None else offset
    if not 0 < offset % PAGE_NBYTES:
        raise BadParameter(f"unaligned: offset {offset} must not be a multiple of the page size")
    span = _round_up(offset + nbytes, PAGE_NBYTES)
    base = stack.enter_context(_mapping(span))
    arr = view(base + offset, nbytes)
    fill_random(arr, seed)
    return HostBuffer(base + offset, nbytes, MemoryKind.UNALIGNED, arr)


def _page_sharing(stack: ExitStack, nbytes, rt, seed, offset):
    # A = [o, o+n), B = [o+n, o+2n): A ends, and B starts, in the middle of one page
    o = (PAGE_NBYTES // 2 - nbytes) % PAGE_NBYTES
    span = _round_up(o + 2 * nbytes, PAGE_NBYTES)
    base = stack.enter_context(_mapping(span))
    a, b = view(base + o, nbytes), view(base + o + nbytes, nbytes)
    fill_random(a, seed)
    fill_random(b, seed + 1)
    nb = HostBuffer(base + o + nbytes, nbytes, MemoryKind.PAGE_SHARING, b)
    return HostBuffer(base + o, nbytes, MemoryKind.PAGE_SHARING, a, neighbour=nb)


KINDS = {
    MemoryKind.HEAP: _heap, MemoryKind.NUMPY: _numpy, MemoryKind.STACK: _stack, MemoryKind.READ_ONLY: _read_only,
    MemoryKind.READ_ONLY_FILE: _read_only_file, MemoryKind.RODATA: _rodata,
    MemoryKind.FILE_BACKED: _file_backed, MemoryKind.HUGE_PAGES: _huge_pages,
    MemoryKind.PINNED: _pinned, MemoryKind.UNALIGNED: _unaligned,
    MemoryKind.PAGE_SHARING: _page_sharing,
}


@contextmanager
def host_buffer(kind: str, nbytes: int, *, rt=None, seed: int = 0,
                offset: int | None = None) -> Iterator[HostBuffer]:
    """Make a buffer of ``kind`` holding ``nbytes`` random bytes; free it on exit.

    Parameters
    ----------
    kind : a MemoryKind value
    nbytes : size in bytes, > 0
    rt : the runtime (needed for ``pinned``)
    seed : seed of the random fill
    offset : start offset inside a page, for ``unaligned``
    """
    kind = choose(MemoryKind, kind, "memory kind")
    if nbytes <= 0:
        raise BadParameter(f"{kind}: nbytes must be positive, got {nbytes}")
    with ExitStack() as stack:
        buf = KINDS[kind](stack, nbytes, rt, seed, offset)
        if not buf.backing:
            buf = replace(buf, backing=osinfo.backing(buf.ptr, buf.nbytes))
        yield buf
