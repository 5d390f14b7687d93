"""The runtime interface every backend satisfies, and the paired helpers written once.

A backend is any object with these attributes and methods (structural typing); code
above the backends looks at capabilities (``has_events``, ``needs_grant``,
``pageable_copy``), never at ``name``.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Protocol, runtime_checkable

import numpy as np

from ..records import PointerInfo
from ..trace import Recorder
from ..vocab import Direction, PageableCopy

__all__ = ["Runtime", "pinned_alloc", "device_alloc", "queue", "event_pair"]


@runtime_checkable
class Runtime(Protocol):
    name: str                    #: "host", "cuda", "hsa", "hip"
    recorder: Recorder           #: every native call goes through it
    has_events: bool             #: device events time the DMA
    needs_grant: bool            #: pinned allocations need an explicit device-access grant
    pageable_copy: PageableCopy  #: what the copy does with pageable host memory
    has_kernels: bool            #: can launch the replica kernel (``launch_replica``)
    has_latch: bool              #: can hold a queue until released (``new_latch``/``hold``/``release``)
    call_categories: dict[str, str]   #: native call name -> lock, unlock, query, alloc, grant, free, copy, wait, ...

    def describe(self) -> dict[str, Any]:
        """Device, driver and runtime versions, for the manifest."""

    # page locking of user memory
    def lock(self, ptr: int, nbytes: int, *, read_only: bool = False) -> int:
        """Page-lock ``[ptr, ptr+nbytes)``; return the device-visible alias; raise LockFailed."""

    def unlock(self, ptr: int, nbytes: int) -> None:
        """Undo a lock of ``ptr``; raise RuntimeCallFailed when the runtime refuses."""

    def query(self, ptr: int) -> PointerInfo:
        """Ask the runtime whether ``ptr`` is page-locked."""

    # runtime-allocated memory
    def alloc_pinned(self, nbytes: int) -> int: ...
    def grant(self, ptr: int, nbytes: int) -> None:
        """Give the device access to a pinned allocation (a no-op where ``needs_grant`` is False)."""
    def free_pinned(self, ptr: int, nbytes: int) -> None: ...
    def alloc_device(self, nbytes: int) -> int: ...
    def free_device(self, ptr: int, nbytes: int) -> None: ...

    # queues, copies, events
    def new_queue(self) -> Any: ...
    def free_queue(self, q: Any) -> None: ...
    def copy_async(self, dst: int, src: int, nbytes: int, direction: Direction, q: Any) -> None: ...
    def wait(self, q: Any) -> None: ...
    def host_copy(self, dst: int, src: int, nbytes: int) -> None: ...
    def new_event(self) -> Any: ...
    def free_event(self, ev: Any) -> None: ...
    def record_event(self, ev: Any, q: Any) -> None: ...
    def elapsed_ns(self, ev0: Any, ev1: Any) -> int: ...

    # device work (where has_kernels / has_latch)
    def prepare_kernels(self) -> None:
        """Compile and load the kernels now, outside any timed region."""
    def launch_replica(self, q: Any, pos_ptr: int, out_ptr: int, nw: int, nsplines: int) -> None:
        """Enqueue the replica kernel (``pinpath.kernels``) on ``q``."""
    def new_latch(self) -> Any: ...
    def hold(self, latch: Any, q: Any) -> None:
        """Make ``q`` wait until ``release(latch)``."""
    def release(self, latch: Any) -> None: ...
    def free_latch(self, latch: Any) -> None: ...

    # untimed helpers (verification, harness)
    def null_native(self) -> Any:
        """The runtime's cheapest real call, unrecorded (harness calibration)."""
    def null_call(self) -> None:
        """The same call, recorded."""
    def fill_device(self, ptr: int, byte: int, nbytes: int) -> None: ...
    def read_device(self, ptr: int, nbytes: int) -> np.ndarray: ...
    def write_device(self, ptr: int, src: np.ndarray) -> None: ...
    def plain_copy_ns(self, dst: int, src: int, nbytes: int, direction: Direction,
                      repeats: int) -> list[int]:
        """A bare native copy loop that bypasses pinpath (reference for its own overhead)."""
    def sync_copy_ns(self, dst: int, src: int, nbytes: int, direction: Direction,
                     repeats: int) -> list[int]:
        """The runtime's synchronous copy in a bare loop (NotImplementedError where it has none)."""
    def close(self) -> None: ...


@contextmanager
def pinned_alloc(rt: Runtime, nbytes: int) -> Iterator[int]:
    """A runtime-pinned allocation (device access granted) for the block."""
    ptr = rt.alloc_pinned(nbytes)
    try:
        rt.grant(ptr, nbytes)
        yield ptr
    finally:
        rt.free_pinned(ptr, nbytes)


@contextmanager
def device_alloc(rt: Runtime, nbytes: int) -> Iterator[int]:
    ptr = rt.alloc_device(nbytes)
    try:
        yield ptr
    finally:
        rt.free_device(ptr, nbytes)


@contextmanager
def queue(rt: Runtime) -> Iterator[Any]:
    q = rt.new_queue()
    try:
        yield q
    finally:
        rt.free_queue(q)


@contextmanager
def event_pair(rt: Runtime) -> Iterator[tuple[Any, Any]]:
    """Two device events, or (None, None) where the runtime has none."""
    if not rt.has_events:
        yield None, None
        return
    e0 = rt.new_event()
    try:
        e1 = rt.new_event()
        try:
            yield e0, e1
        finally:
            rt.free_event(e1)
    finally:
        rt.free_event(e0)
