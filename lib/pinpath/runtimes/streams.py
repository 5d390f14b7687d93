"""What CUDA's and HIP's runtime APIs share call for call (HIP mirrors CUDA's names with
another prefix): status checks, device memory, streams, async and sync copies, events, the
untimed helpers. ``cuda_`` and ``hip_`` add what differs: start-up, locking, pointer
queries, pinned allocation, kernels."""

from __future__ import annotations

import time

import numpy as np

from ..errors import LockFailed, RuntimeCallFailed
from ..trace import Recorder
from ..vocab import Direction, PageableCopy, Relock
from .base import RuntimeBase

__all__ = ["StreamRuntime", "rc_of", "stream_categories"]


def rc_of(out) -> int:
    """The status of a binding's ``(status, value...)`` tuple, or of a bare status."""
    return int(out[0]) if isinstance(out, tuple) else int(out)


def stream_categories(p: str, alloc: str, free: str, **more: str) -> dict[str, str]:
    """``call_categories`` of the API with prefix ``p`` ("cuda", "hip"): the calls made here, its
    pinned allocation calls ``p + alloc`` and ``p + free``, and ``more`` (its kernel calls)."""
    return {f"{p}HostRegister": "lock", f"{p}HostUnregister": "unlock", f"{p}PointerGetAttributes": "query",
            p + alloc: "alloc", p + free: "free", f"{p}Malloc": "device_alloc", f"{p}Free": "device_free",
            f"{p}MemcpyAsync": "copy", f"{p}StreamSynchronize": "wait", "memcpy": "host_copy",
            f"{p}EventRecord": "event", f"{p}EventElapsedTime": "event", **more}


class StreamRuntime(RuntimeBase):
    """Subclasses set ``name``, ``_api`` (the bindings module), ``_p`` (the API's prefix,
    "cuda" or "hip"), ``_H2D`` / ``_D2H`` (its memcpy kinds), ``recorder``, ``_name(err)`` and
    ``call_categories`` (``stream_categories``)."""

    name: str
    _p: str
    needs_grant = False
    pageable_copy = PageableCopy.STAGED
    relock = Relock.REFUSED      #: a second register answers <prefix>ErrorHostMemoryAlreadyRegistered (712)

    def _fn(self, suffix: str):
        return getattr(self._api, self._p + suffix)

    def _open(self, api, recorder: Recorder | None) -> None:
        """The bindings module (its functions are ``<name><suffix>``) and the call recorder."""
        self._api, self._p = api, self.name
        self.recorder = recorder or Recorder()

    def _start_device(self, device: int) -> None:
        """Make ``device`` current and create its context now, not in a timed call; the memcpy
        kinds and an empty kernel cache."""
        self.device = device
        self._call_checked("SetDevice", device)
        self._call_checked("Free", 0)
        kinds = self._fn("MemcpyKind")
        self._H2D = getattr(kinds, self._p + "MemcpyHostToDevice")
        self._D2H = getattr(kinds, self._p + "MemcpyDeviceToHost")
        self._functions: dict[str, object] = {}

    def _call_checked(self, suffix: str, *args):
        """``_check`` of the API function ``<prefix><suffix>``, not recorded (set-up calls)."""
        return self._check(self._p + suffix, self._fn(suffix)(*args))

    def _name(self, err) -> str:
        raise NotImplementedError

    def _check(self, call: str, out, *, exc=RuntimeCallFailed, nbytes=None, ptr=None):
        """The value of a binding's result, or ``exc`` with the API's error name."""
        rc = rc_of(out)
        if rc != 0:
            raise exc(self.name, call, rc, self._name(out[0] if isinstance(out, tuple) else out), nbytes, ptr)
        return out[1] if isinstance(out, tuple) and len(out) == 2 else out

    def _do(self, call: str, fn, *args, exc=RuntimeCallFailed, nbytes=None, ptr=None):
        """A recorded, checked call."""
        return self._check(call, self.recorder.call(call, fn, *args, rc_of=rc_of), exc=exc, nbytes=nbytes, ptr=ptr)

    def _call(self, suffix: str, *args, nbytes=None, ptr=None):
        """``_do`` of the API function ``<prefix><suffix>`` under its own name."""
        return self._do(self._p + suffix, self._fn(suffix), *args, nbytes=nbytes, ptr=ptr)

    #: the error code of "this memory is already registered" (712 in both CUDA and HIP)
    ALREADY_REGISTERED = 712

    def _register(self, ptr: int, nbytes: int, flags) -> int:
        """``<prefix>HostRegister``: LockFailed on refusal, marked ``already_pinned`` for 712."""
        self._do(self._p + "HostRegister", self._fn("HostRegister"), ptr, nbytes, flags,
                 exc=self._lock_refused, nbytes=nbytes, ptr=ptr)
        self.recorder.acquire("lock", ptr, nbytes)
        return ptr

    def _lock_refused(self, runtime, call, rc, *args) -> LockFailed:
        return LockFailed(runtime, call, rc, *args, already_pinned=rc == self.ALREADY_REGISTERED)

    def _kind(self, direction: Direction):
        return self._H2D if direction == Direction.H2D else self._D2H

    # -- device memory ------------------------------------------------------------------
    def alloc_device(self, nbytes: int) -> int:
        ptr = int(self._call("Malloc", nbytes, nbytes=nbytes))
        self.recorder.acquire("device", ptr, nbytes)
        return ptr

    def free_device(self, ptr: int, nbytes: int) -> None:
        self._call("Free", ptr, ptr=ptr)
        self.recorder.release("device", ptr)

    # -- queues, copies, events --------------------------------------------------------
    # runtime-pinned memory, portable to every device already: no grant
    _PINNED_ALLOC, _PINNED_FREE = "MallocHost", "FreeHost"

    def _pinned_alloc_args(self) -> tuple:
        return ()

    def alloc_pinned(self, nbytes: int) -> int:
        call = self._p + self._PINNED_ALLOC
        ptr = int(self._do(call, self._fn(self._PINNED_ALLOC), nbytes, *self._pinned_alloc_args(), nbytes=nbytes))
        self.recorder.acquire("pinned", ptr, nbytes)
        return ptr

    def free_pinned(self, ptr: int, nbytes: int) -> None:
        self._do(self._p + self._PINNED_FREE, self._fn(self._PINNED_FREE), ptr, ptr=ptr)
        self.recorder.release("pinned", ptr)

    def new_queue(self):
        return self._call("StreamCreateWithFlags", self._fn("StreamNonBlocking"))

    def free_queue(self, q) -> None:
        self._call("StreamDestroy", q)

    def copy_async(self, dst: int, src: int, nbytes: int, direction: Direction, q) -> None:
        self._call("MemcpyAsync", dst, src, nbytes, self._kind(direction), q, nbytes=nbytes)

    def wait(self, q) -> None:
        self._call("StreamSynchronize", q)

    def new_event(self):
        return self._call("EventCreate")

    def free_event(self, ev) -> None:
        self._call("EventDestroy", ev)

    def record_event(self, ev, q) -> None:
        self._call("EventRecord", ev, q)

    def elapsed_ns(self, ev0, ev1) -> int:
        return int(round(self._call("EventElapsedTime", ev0, ev1) * 1e6))   # the API answers in ms

    # -- untimed helpers ---------------------------------------------------------------
    def null_native(self):
        """The cheapest real runtime call, unrecorded."""
        return self._fn("GetDevice")()

    def fill_device(self, ptr: int, byte: int, nbytes: int) -> None:
        self._check(self._p + "Memset", self._fn("Memset")(ptr, byte, nbytes))
        self._check(self._p + "DeviceSynchronize", self._fn("DeviceSynchronize")())

    def read_device(self, ptr: int, nbytes: int) -> np.ndarray:
        out = np.empty(nbytes, dtype=np.uint8)
        self._check(self._p + "Memcpy", self._fn("Memcpy")(out.ctypes.data, ptr, nbytes, self._D2H))
        return out

    def write_device(self, ptr: int, src: np.ndarray) -> None:
        src = np.ascontiguousarray(src)
        self._check(self._p + "Memcpy", self._fn("Memcpy")(ptr, src.ctypes.data, src.nbytes, self._H2D))

    def plain_copy_ns(self, dst: int, src: int, nbytes: int, direction: Direction, repeats: int) -> list[int]:
        """MemcpyAsync + StreamSynchronize in a bare loop, host-timed, unrecorded."""
        copy, sync, kind = self._fn("MemcpyAsync"), self._fn("StreamSynchronize"), self._kind(direction)
        q = self._check(self._p + "StreamCreateWithFlags", self._fn("StreamCreateWithFlags")(self._fn("StreamNonBlocking")))
        out = []
        try:
            for _ in range(repeats):
                t0 = time.perf_counter_ns()
                err, = copy(dst, src, nbytes, kind, q)
                err2, = sync(q)
                out.append(time.perf_counter_ns() - t0)
                self._check(self._p + "MemcpyAsync", err)
                self._check(self._p + "StreamSynchronize", err2)
        finally:
            self._fn("StreamDestroy")(q)
        return out

    def sync_copy_ns(self, dst: int, src: int, nbytes: int, direction: Direction, repeats: int) -> list[int]:
        """The synchronous Memcpy in a bare loop, host-timed, unrecorded."""
        copy, kind = self._fn("Memcpy"), self._kind(direction)
        out = []
        for _ in range(repeats):
            t0 = time.perf_counter_ns()
            err, = copy(dst, src, nbytes, kind)
            out.append(time.perf_counter_ns() - t0)
            self._check(self._p + "Memcpy", err)
        return out
