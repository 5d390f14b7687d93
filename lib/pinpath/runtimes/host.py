"""The host platform: no GPU. Locking is mlock/munlock; "device" memory is a separate
host mapping; copies complete on a worker thread. It measures the operating system's
share of pinning and runs on any Linux machine.
"""

from __future__ import annotations

import ctypes
import platform
import queue as _queue
import threading

import numpy as np

from .. import libc, osinfo
from ..errors import LockFailed, RuntimeCallFailed
from ..records import PointerInfo
from ..trace import Recorder
from ..vocab import Capability, Direction, PageableCopy, Relock
from .base import CUPTI_CUDA_ONLY, RuntimeBase

__all__ = ["HostRuntime"]

_L = libc.LIBC


def _rc_zero_ok(ret) -> int:
    return 0 if ret == 0 else ctypes.get_errno()


def _rc_mmap(ret) -> int:
    return 0 if ret not in (None, libc.MAP_FAILED) else ctypes.get_errno()


class _Worker:
    """One worker thread that runs copies in order; ``wait`` returns when all are done."""

    def __init__(self) -> None:
        self._tasks: _queue.SimpleQueue = _queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="pinpath-host-queue", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (task := self._tasks.get()) is not None:
            if isinstance(task, threading.Event):
                task.set()
            elif callable(task):
                task()
            else:
                libc.memmove(*task)

    def submit_call(self, fn) -> int:
        self._tasks.put(fn)
        return 0

    def submit(self, dst: int, src: int, nbytes: int) -> int:
        self._tasks.put((dst, src, nbytes))
        return 0

    def wait(self) -> int:
        done = threading.Event()
        self._tasks.put(done)
        done.wait()
        return 0

    def close(self) -> None:
        self._tasks.put(None)
        self._thread.join()


class HostRuntime(RuntimeBase):
    """mlock/munlock, mmap'd staging and "device" memory, copies on a worker thread."""

    name = "host"
    needs_grant = False
    pageable_copy = PageableCopy.DIRECT
    relock = Relock.UNCOUNTED    #: mlock keeps no count: one munlock undoes every mlock of a page
    unavailable = {Capability.CUPTI: CUPTI_CUDA_ONLY,
                   Capability.EVENTS: "the host has no device to time copies on: its copies are memmoves on "
                                      "worker threads, timed by the host's clock"}
    # kernels: the replica's kernel is numpy on the worker thread; latch: an event the worker waits on
    call_categories = {"mlock": "lock", "munlock": "unlock", "smaps_lookup": "query", "mmap": "alloc",
                       "munmap": "free", "memmove@worker": "copy", "worker_wait": "wait", "memcpy": "host_copy",
                       "kernel@worker": "kernel", "latch@worker": "latch", "getppid": "null"}

    def __init__(self, recorder: Recorder | None = None) -> None:
        self.recorder = recorder or Recorder()

    def describe(self) -> dict:
        soft, hard = osinfo.memlock_limit_nbytes()
        return {
            "platform": self.name,
            "device": "none: host platform (mlock/munlock, host copies on a worker thread)",
            "runtime_version": f"Linux {platform.release()}",
            "driver_version": None,
            "memlock_soft_nbytes": soft,
            "memlock_hard_nbytes": hard,
        }

    # -- helpers -----------------------------------------------------------------------
    def _call(self, name, fn, *args, exc=RuntimeCallFailed, nbytes=None, ptr=None):
        """A libc call that returns 0 on success and sets errno otherwise."""
        ret = self.recorder.call(name, fn, *args, rc_of=_rc_zero_ok)
        if ret != 0:
            err = ctypes.get_errno()
            raise exc("host", name, err, libc.errno_name(err), nbytes, ptr)
        return ret

    def _mmap(self, nbytes: int) -> int:
        ret = self.recorder.call("mmap", _L.mmap, None, nbytes, libc.PROT_READ | libc.PROT_WRITE,
                                 libc.MAP_PRIVATE | libc.MAP_ANONYMOUS, -1, 0, rc_of=_rc_mmap)
        if ret in (None, libc.MAP_FAILED):
            err = ctypes.get_errno()
            raise RuntimeCallFailed("host", "mmap", err, libc.errno_name(err), nbytes)
        return ret

    # -- locking -----------------------------------------------------------------------
    def lock(self, ptr: int, nbytes: int, *, read_only: bool = False) -> int:
        self._call("mlock", _L.mlock, ptr, nbytes, exc=LockFailed, nbytes=nbytes, ptr=ptr)
        self.recorder.acquire("lock", ptr, nbytes)
        return ptr

    def unlock(self, ptr: int, nbytes: int) -> None:
        self._call("munlock", _L.munlock, ptr, nbytes, nbytes=nbytes, ptr=ptr)
        self.recorder.release("lock", ptr)

    def query(self, ptr: int) -> PointerInfo:
        vma = self.recorder.call("smaps_lookup", osinfo.find_vma, ptr, rc_of=lambda v: 0)
        if vma is None:
            return PointerInfo(ptr, False, detail="no mapping")
        if vma.locked:
            return PointerInfo(ptr, True, ptr, vma.start, vma.end - vma.start, "VmFlags lo")
        return PointerInfo(ptr, False, detail="VmFlags without lo")

    # -- memory ------------------------------------------------------------------------
    def alloc_pinned(self, nbytes: int) -> int:
        ptr = self._mmap(nbytes)
        try:
            self._call("mlock", _L.mlock, ptr, nbytes, nbytes=nbytes, ptr=ptr)
        except RuntimeCallFailed:
            self.recorder.call("munmap", _L.munmap, ptr, nbytes, rc_of=_rc_zero_ok)
            raise
        self.recorder.acquire("pinned", ptr, nbytes)
        return ptr

    def free_pinned(self, ptr: int, nbytes: int) -> None:
        self._call("munlock", _L.munlock, ptr, nbytes, nbytes=nbytes, ptr=ptr)
        self._call("munmap", _L.munmap, ptr, nbytes, nbytes=nbytes, ptr=ptr)
        self.recorder.release("pinned", ptr)

    def alloc_device(self, nbytes: int) -> int:
        ptr = self._mmap(nbytes)
        self.recorder.acquire("device", ptr, nbytes)
        return ptr

    def free_device(self, ptr: int, nbytes: int) -> None:
        self._call("munmap", _L.munmap, ptr, nbytes, nbytes=nbytes, ptr=ptr)
        self.recorder.release("device", ptr)

    # -- queues and copies -------------------------------------------------------------
    def new_queue(self) -> _Worker:
        return _Worker()

    def free_queue(self, q: _Worker) -> None:
        q.close()

    def copy_async(self, dst: int, src: int, nbytes: int, direction: Direction, q: _Worker) -> None:
        self.recorder.call("memmove@worker", q.submit, dst, src, nbytes, rc_of=int)

    def wait(self, q: _Worker) -> None:
        self.recorder.call("worker_wait", q.wait, rc_of=int)

    # -- kernels and latches -----------------------------------------------------------
    def prepare_kernels(self) -> None:
        return None

    def kernel_handle(self) -> int:
        """No handle: the native engine's host build runs the same kernel on its queue's worker."""
        return 0

    def launch_replica(self, q: _Worker, pos_ptr: int, out_ptr: int, nw: int, nsplines: int) -> None:
        from ..kernels import VGH_DIM, replica_expected

        def kernel():
            pos = np.ctypeslib.as_array((ctypes.c_double * (3 * nw)).from_address(pos_ptr))
            out = np.ctypeslib.as_array((ctypes.c_double * (nw * VGH_DIM * nsplines)).from_address(out_ptr))
            out[:] = replica_expected(pos, nw, nsplines).ravel()
        self.recorder.call("kernel@worker", q.submit_call, kernel, rc_of=int)

    def new_latch(self) -> threading.Event:
        return threading.Event()

    def hold(self, latch: threading.Event, q: _Worker) -> None:
        """Make ``q`` wait for the latch before its next task (at most 10 s)."""
        from ..kernels import SPIN_TIMEOUT_NS
        self.recorder.call("latch@worker", q.submit_call, lambda: latch.wait(SPIN_TIMEOUT_NS / 1e9), rc_of=int)

    def release(self, latch: threading.Event) -> None:
        latch.set()

    def free_latch(self, latch) -> None:
        latch.set()

    # -- untimed helpers ---------------------------------------------------------------
    def null_native(self) -> int:
        """The cheapest real call (a syscall), unrecorded."""
        return _L.getppid()

    def read_device(self, ptr: int, nbytes: int) -> np.ndarray:
        return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(ptr)).copy()

    def write_device(self, ptr: int, src: np.ndarray) -> None:
        src = np.ascontiguousarray(src)
        libc.memmove(ptr, src.ctypes.data, src.nbytes)

    def plain_copy_ns(self, dst: int, src: int, nbytes: int, direction: Direction, repeats: int) -> list[int]:
        """memmove in a bare loop (the host's copy is synchronous: ``sync_copy_ns`` is the same loop)."""
        import time
        out = []
        for _ in range(repeats):
            t0 = time.perf_counter_ns()
            libc.memmove(dst, src, nbytes)
            out.append(time.perf_counter_ns() - t0)
        return out

    sync_copy_ns = plain_copy_ns

    def close(self) -> None:
        self.recorder.close()
