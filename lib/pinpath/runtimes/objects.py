"""Buffers and queues as objects: a runtime's allocation or queue with the calls that belong to it.

``RuntimeBase`` makes them (``pinned_buffer``, ``device_buffer``, ``queue``) from the handle calls
a backend writes (``alloc_pinned``/``free_pinned``, ``alloc_device``/``free_device``,
``new_queue``/``free_queue``, ``copy_async``, ``wait``), so a backend calls its native library
as before. ``close()`` frees once; ``with`` closes. ``ptr`` and ``handle`` stay plain values for
the C libraries and for calls that take a handle (events, kernels, latches). Code that times the
runtime's calls one by one (the policies' phases) calls the handle layer itself, so no method
call of these objects sits inside a timed phase.
"""

from __future__ import annotations

from typing import Any

from ..closing import Closing
from ..units import fmt_nbytes
from ..vocab import Direction

__all__ = ["PinnedBuffer", "DeviceBuffer", "Queue"]


class _Owned(Closing):
    """A runtime resource that ``close()`` gives back once (a second close does nothing)."""

    def __init__(self, rt) -> None:
        self.rt = rt
        self.closed = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True     # first: a free that raises is not tried again
            self._free()

    def _free(self) -> None:  # pragma: no cover - every subclass defines its own
        raise NotImplementedError


class _Buffer(_Owned):
    def __init__(self, rt, ptr: int, nbytes: int) -> None:
        super().__init__(rt)
        self.ptr, self.nbytes = ptr, nbytes

    def __repr__(self) -> str:
        state = ", closed" if self.closed else ""
        return f"{type(self).__name__}({self.rt.name}, {fmt_nbytes(self.nbytes)} at {self.ptr:#x}{state})"


class PinnedBuffer(_Buffer):
    """Runtime-allocated page-locked host memory (``alloc_pinned``), freed by ``free_pinned``."""

    def _free(self) -> None:
        self.rt.free_pinned(self.ptr, self.nbytes)


class DeviceBuffer(_Buffer):
    """Device memory (``alloc_device``), freed by ``free_device``."""

    def _free(self) -> None:
        self.rt.free_device(self.ptr, self.nbytes)


class Queue(_Owned):
    """A runtime queue (CUDA/HIP stream, HSA signal chain, host worker); ``handle`` is the
    backend's own value, for the calls that take one (``record_event``, ``launch_replica``,
    ``hold``) and for the C libraries."""

    def __init__(self, rt, handle: Any) -> None:
        super().__init__(rt)
        self.handle = handle

    def copy_async(self, dst: int, src: int, nbytes: int, direction: Direction) -> None:
        """Enqueue a copy of ``nbytes`` from ``src`` to ``dst``."""
        self.rt.copy_async(dst, src, nbytes, direction, self.handle)

    def wait(self) -> None:
        """Wait for everything enqueued so far."""
        self.rt.wait(self.handle)

    def _free(self) -> None:
        self.rt.free_queue(self.handle)

    def __repr__(self) -> str:
        state = ", closed" if self.closed else ""
        return f"Queue({self.rt.name}, {self.handle!r}{state})"
