"""The runtime interface: a small core every backend fills, the per-call layer, and declared
capabilities.

A backend is any object with the members of ``Runtime`` and ``RuntimeCalls`` (structural
typing). ``Runtime`` is the core (12 calls): the runtime started (the constructor), what it
declares, buffers, verification and capabilities. ``RuntimeCalls`` is the per-call layer: the
calls of the C table in ``native/platform.h`` (lock, unlock, query, queues, async copy, wait,
host copy), made one at a time from Python; the Python reference policies and the Python-timed
experiments use it (ARCHITECTURE.md, "A runtime", says why it stays). Beyond both, a backend may
offer capabilities (``vocab.Capability``: device events, kernels, a latch, bare copy loops, the C
timing library, CUPTI); ``capabilities()`` says for each one "" (available) or why not, and
``need(rt, cap)`` raises NotAvailable with that reason. Code above the backends asks for
capabilities, never looks at ``name``. ``RuntimeBase`` writes what every backend shares
(``capabilities``, ``reason``, ``host_copy``, ``fill_device`` over ``write_device``, a ``grant``
that does nothing where ``needs_grant`` is False) and makes buffers and queues as objects
(``pinned_buffer``, ``device_buffer``, ``queue``: ``runtimes/objects.py``) from the backend's
handle calls; code above the backends holds those objects rather than pairing alloc and free.
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager
from typing import Any, Iterator, Protocol, runtime_checkable

import numpy as np

from ..closing import Closing
from ..errors import NotAvailable, RuntimeUnavailable
from ..records import PointerInfo
from ..trace import Recorder
from ..vocab import Capability, Direction, PageableCopy, Relock
from .objects import DeviceBuffer, PinnedBuffer, Queue

__all__ = ["Runtime", "RuntimeCalls", "Backend", "RuntimeBase", "CORE_MEMBERS", "CALL_MEMBERS", "CAPABILITY_MEMBERS", "has",
           "need", "event_pair", "PinnedBuffer", "DeviceBuffer", "Queue", "WAIT_ENV", "WAIT_MODES", "WAIT_NOT_APPLICABLE"]

#: the environment variable a CUDA runtime reads at open: how the host waits for the device
WAIT_ENV = "PINPATH_CUDA_WAIT"
#: "auto": pinpath sets nothing (CUDA's default heuristic: spin while contexts <= logical CPUs);
#: "blocking": the primary context in CU_CTX_SCHED_BLOCKING_SYNC, as LLVM's CUDA plugin sets it
WAIT_MODES = ("auto", "blocking")
#: ``wait_mode`` of a backend whose context pinpath does not put in a wait mode
WAIT_NOT_APPLICABLE = "not applicable"


@runtime_checkable
class Runtime(Protocol):
    """The core: start (the constructor), declared behaviour, buffers, verification, capabilities."""
    name: str                    #: "host", "cuda", "hsa", "hip"
    recorder: Recorder           #: every native call goes through it
    needs_grant: bool            #: pinned allocations need an explicit device-access grant
    pageable_copy: PageableCopy  #: what the copy does with pageable host memory
    relock: Relock               #: what a lock of already locked memory answers
    call_categories: dict[str, str]   #: native call name -> lock, unlock, query, alloc, grant, free, copy, wait, ...

    def describe(self) -> dict[str, Any]:
        """Device, driver and runtime versions, for the manifest."""

    def capabilities(self) -> dict[str, str]:
        """Capability value -> "" where available, else the reason it is not."""

    def reason(self, cap: Capability | str) -> str:
        """"" where ``cap`` is available, else the reason it is not."""

    # runtime-allocated memory
    def alloc_pinned(self, nbytes: int) -> int: ...
    def grant(self, ptr: int, nbytes: int) -> None:
        """Give the device access to a pinned allocation (a no-op where ``needs_grant`` is False)."""
    def free_pinned(self, ptr: int, nbytes: int) -> None: ...
    def alloc_device(self, nbytes: int) -> int: ...
    def free_device(self, ptr: int, nbytes: int) -> None: ...

    # untimed helpers (verification, harness; ``fill_device`` is RuntimeBase's, over ``write_device``)
    def null_native(self) -> Any:
        """The runtime's cheapest real call, unrecorded (harness calibration)."""
    def read_device(self, ptr: int, nbytes: int) -> np.ndarray: ...
    def write_device(self, ptr: int, src: np.ndarray) -> None: ...
    def close(self) -> None: ...


@runtime_checkable
class RuntimeCalls(Protocol):
    """The per-call layer: ``native/platform.h``'s table made from Python one call at a time
    (do_lock, do_unlock, do_query, queue_new, queue_close, copy_async, queue_wait, memcpy; the
    last is RuntimeBase's). Each call is recorded (``recorder``), so Python-side timing and the
    call trace see it. Device events are a capability (``Capability.EVENTS``)."""

    # page locking of user memory
    def lock(self, ptr: int, nbytes: int, *, read_only: bool = False) -> int:
        """Page-lock ``[ptr, ptr+nbytes)`` with the flags an offload runtime passes (``read_only``
        adds the runtime's read-only flag where it has one: a labelled experiment, never a
        policy's choice); return the device-visible alias; raise LockFailed."""

    def unlock(self, ptr: int, nbytes: int) -> None:
        """Undo a lock of ``ptr``; raise RuntimeCallFailed when the runtime refuses."""

    def query(self, ptr: int) -> PointerInfo:
        """Ask the runtime whether ``ptr`` is page-locked."""

    # queues, copies, the timer
    def new_queue(self) -> Any: ...
    def free_queue(self, q: Any) -> None: ...
    def copy_async(self, dst: int, src: int, nbytes: int, direction: Direction, q: Any) -> None: ...
    def wait(self, q: Any) -> None: ...
    def host_copy(self, dst: int, src: int, nbytes: int) -> None: ...


@runtime_checkable
class Backend(Runtime, RuntimeCalls, Protocol):
    """Both layers: what every backend class is today, and what the Python reference policies drive."""


def _members(proto) -> tuple[str, ...]:
    return tuple(proto.__dict__.get("__annotations__", {})) + tuple(
        n for n, v in vars(proto).items() if callable(v) and not n.startswith("_"))


#: the members every backend has (the conformance test checks each backend class)
CORE_MEMBERS = _members(Runtime)
#: the per-call members every backend has too, while Python callers need them
CALL_MEMBERS = _members(RuntimeCalls)

#: capability -> the members a backend offering it has
CAPABILITY_MEMBERS: dict[Capability, tuple[str, ...]] = {
    Capability.EVENTS: ("new_event", "free_event", "record_event", "elapsed_ns"),   # (ev, q), (ev0, ev1) -> ns
    Capability.KERNELS: ("prepare_kernels", "launch_replica", "kernel_handle"),
    Capability.LATCH: ("new_latch", "hold", "release", "free_latch"),
    Capability.COPY_LOOP: ("plain_copy_ns",),
    Capability.SYNC_COPY: ("sync_copy_ns",),
    Capability.NATIVE: (),   # pinpath.nativelib builds it; the runtime only says whether it can
    Capability.CUPTI: (),    # pinpath.runtimes.cupti_ observes copies; CUDA only
}


CUPTI_CUDA_ONLY = "CUPTI observes CUDA copies only"   #: the reason every other backend gives


class RuntimeBase(Closing):
    """What every backend shares: the capability answers, the host copy, a fill of device memory,
    the no-op grant, and buffers and queues as objects.

    ``unavailable`` (class attribute): capability -> the reason a backend never offers it.
    The C timing library and CUPTI are looked up when first asked for.
    """

    name = "?"
    unavailable: dict[Capability, str] = {}
    #: how the host waits for the device, as read back at open (CUDA: ``WAIT_ENV``); elsewhere not applicable
    wait_mode = WAIT_NOT_APPLICABLE

    def capabilities(self) -> dict[str, str]:
        """Capability -> "" where offered, else why not (every capability looked up)."""
        return {c.value: self.reason(c) for c in Capability}

    def reason(self, cap: Capability | str) -> str:
        """Why ``cap`` is not offered ("" where it is); looked up when first asked for, so asking
        for a latch builds no C library and loads no CUPTI."""
        cap = Capability(cap)
        known = self.__dict__.setdefault("_reasons", {})
        if cap not in known:
            known[cap] = self.unavailable.get(cap) or self._dynamic_reason(cap)
        return known[cap]

    def grant(self, ptr: int, nbytes: int) -> None:
        """Nothing to do where ``needs_grant`` is False; a backend that needs a grant writes its own."""
        return None

    # -- buffers and queues as objects, made from the handle calls ---------------------------
    def pinned_buffer(self, nbytes: int, *, grant: bool = True) -> PinnedBuffer:
        """Runtime-pinned host memory, device access granted unless ``grant`` is False."""
        buf = PinnedBuffer(self, self.alloc_pinned(nbytes), nbytes)
        if grant:
            try:
                self.grant(buf.ptr, nbytes)
            except BaseException:
                buf.close()
                raise
        return buf

    def device_buffer(self, nbytes: int) -> DeviceBuffer:
        """Device memory."""
        return DeviceBuffer(self, self.alloc_device(nbytes), nbytes)

    def queue(self) -> Queue:
        """A new queue."""
        return Queue(self, self.new_queue())

    def host_copy(self, dst: int, src: int, nbytes: int) -> None:
        """memcpy, recorded: the host side of staging (no runtime's own call on any platform)."""
        self.recorder.call("memcpy", ctypes.memmove, dst, src, nbytes)

    def fill_device(self, ptr: int, byte: int, nbytes: int) -> None:
        """Set ``nbytes`` of device memory to ``byte`` (untimed; a backend may use its own memset)."""
        self.write_device(ptr, np.full(nbytes, byte, dtype=np.uint8))

    def _dynamic_reason(self, cap: Capability) -> str:
        if cap == Capability.NATIVE:
            try:
                from .. import nativelib
            except ImportError as e:   # the module is optional at import time
                return f"the C timing library module cannot be imported ({e})"
            return nativelib.why_not(self.name)
        if cap == Capability.CUPTI:
            try:
                from . import cupti_
            except ImportError as e:
                return f"the CUPTI module cannot be imported ({e})"
            return cupti_.why_not()
        return ""


def binding(platform: str, package: str, name: str, dist: str, install: str):
    """``from package import name``: a runtime's Python binding, or RuntimeUnavailable saying
    which distribution to install."""
    try:
        return getattr(__import__(package, fromlist=[name]), name)
    except (ImportError, AttributeError) as e:
        raise RuntimeUnavailable(f"{platform} runtime unavailable: {dist} is not installed "
                                 f"({getattr(e, 'name', None) or package} cannot be imported; {install})") from None


def has(rt, cap: Capability | str) -> bool:
    """Whether ``rt`` offers the capability."""
    return not rt.reason(cap)


def need(rt, cap: Capability | str) -> None:
    """Raise NotAvailable naming the runtime, the capability and the reason, if ``rt`` lacks it."""
    reason = rt.reason(cap)
    if reason:
        raise NotAvailable(f"{rt.name}: {Capability(cap).value} not available: {reason}")


@contextmanager
def event_pair(rt: Runtime) -> Iterator[tuple[Any, Any]]:
    """Two device events, or (None, None) where the runtime has none."""
    if not has(rt, Capability.EVENTS):
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
