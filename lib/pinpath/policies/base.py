"""Mechanics shared by every policy: phase timing, the DMA step, staging, records, and the
transfer steps a policy's row in ``vocab.POLICY_STEPS`` names (``_step_<name>``).

A policy is written once against the runtime interface; nothing here or in a policy
looks at which runtime it is.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ..closing import Closing
from ..errors import LockFailed, PinpathError, RuntimeCallFailed
from ..memkinds import HostBuffer, host_buffer
from ..records import TransferRecord
from ..runtimes.base import Backend, has
from ..runtimes.objects import PinnedBuffer, Queue
from ..trace import records
from ..units import MiB
from ..vocab import POLICY_STEPS, Capability, Direction, MapOutcome, PageableCopy, Phase, Policy, TransferPath

__all__ = ["PolicyBase", "Phases", "StagingPool", "DEFAULT_THRESHOLD_NBYTES"]

DEFAULT_THRESHOLD_NBYTES = 1 * MiB   #: LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES default
_now = time.perf_counter_ns

#: what a pageable pointer handed to the runtime's copy is, before anything observed it: the host
#: platform copies it itself; a GPU runtime's driver decides, and only CUPTI can tell what it did
_PAGEABLE_PATH = {PageableCopy.STAGED: TransferPath.DRIVER_UNOBSERVED,
                  PageableCopy.DIRECT: TransferPath.PAGEABLE_DIRECT,
                  PageableCopy.UNSUPPORTED: TransferPath.DRIVER_UNOBSERVED}  # only if it did not refuse


class Phases:
    """Accumulates the host time of each phase of one transfer."""

    __slots__ = ("ns", "dma_event_ns", "error")

    def __init__(self) -> None:
        self.ns: dict[str, int] = {}
        self.dma_event_ns: int | None = None
        self.error = ""

    def run(self, phase: Phase, fn, *args, **kw):
        t0 = _now()
        try:
            return fn(*args, **kw)
        finally:
            self.ns[phase.value] = self.ns.get(phase.value, 0) + _now() - t0


class StagingPool:
    """Pinned staging buffers kept for reuse.

    ``exact=True`` reuses only a buffer of exactly the requested size (LLVM's
    MemoryManagerTy compares sizes for equality); otherwise sizes are rounded up to
    a power of two (at least 4 KiB) and any buffer of that class is reused.
    """

    def __init__(self, rt: Backend, *, exact: bool) -> None:
        self.rt, self.exact = rt, exact
        self._free: dict[int, list[int]] = {}
        self._pending: dict[int, list[tuple[int, int]]] = {}   # id(queue) -> buffers in flight on it
        self._all: list[PinnedBuffer] = []
        self._lock = threading.Lock()

    def _class_nbytes(self, nbytes: int) -> int:
        return nbytes if self.exact else max(4096, 1 << (nbytes - 1).bit_length())

    def get(self, nbytes: int, ph: Phases) -> tuple[int, int, bool]:
        """(ptr, class_nbytes, hit); a miss allocates (alloc and grant phases)."""
        cls = self._class_nbytes(nbytes)
        with self._lock:
            free = self._free.get(cls)
            if free:
                return free.pop(), cls, True
        ptr = ph.run(Phase.ALLOC, self.rt.alloc_pinned, cls)   # the handle call: the phase times it alone
        with self._lock:
            self._all.append(PinnedBuffer(self.rt, ptr, cls))
        if self.rt.needs_grant:
            ph.run(Phase.GRANT, self.rt.grant, ptr, cls)
        return ptr, cls, False

    def put(self, ptr: int, cls: int, *, after_sync: bool = False, q=None) -> None:
        """Give a buffer back; with ``after_sync`` only once queue ``q`` has been waited for."""
        with self._lock:
            if after_sync:
                self._pending.setdefault(id(q), []).append((ptr, cls))
            else:
                self._free.setdefault(cls, []).append(ptr)

    def synced(self, q) -> None:
        """Queue ``q`` has been waited for: its buffers are free again."""
        with self._lock:
            for ptr, cls in self._pending.pop(id(q), []):
                self._free.setdefault(cls, []).append(ptr)

    def close(self) -> None:
        with self._lock:
            held, self._all, self._free, self._pending = self._all, [], {}, {}
        for buf in held:
            buf.close()


class PolicyBase(Closing):
    """The shared shape of a policy: ``map``, ``transfer``, ``unmap``, ``close``; a policy whose
    maps keep nothing (``PolicySteps.maps`` "none") is this class with its row's steps.

    Parameters
    ----------
    rt : the runtime
    policy : the policy's name; its row of ``vocab.POLICY_STEPS`` says what it does
    q : the queue transfers go on (the policy makes its own if None)
    threshold_nbytes : the size at and above which nextgen locks instead of staging
    events : time each DMA with device events too, where the runtime has them
    per_thread_queues : give each calling thread its own queue (libomptarget's per-thread
        async info), for transfers from several threads at once
    """

    def __init__(self, rt: Backend, policy: Policy | str, *, q: Any = None,
                 threshold_nbytes: int = DEFAULT_THRESHOLD_NBYTES, events: bool = False,
                 per_thread_queues: bool = False) -> None:
        self.policy = Policy(policy)
        self.steps = POLICY_STEPS[self.policy]
        #: the runtime this policy models runs its copies asynchronously on one stream and waits once
        #: per target region (``sync``); a synchronous one waits after every copy
        self.asynchronous = self.steps.asynchronous
        self._step = getattr(self, f"_step_{self.steps.transfer}", None)
        if self._step is None:
            raise PinpathError(f"policy {self.policy}: {type(self).__name__} has no transfer step "
                               f"{self.steps.transfer!r} (its maps are {self.steps.maps!r})")
        self.rt = rt
        self.threshold_nbytes = threshold_nbytes
        self._own: list[Queue] = []               # queues this policy made and must free
        self._own_lock = threading.Lock()
        self._tls = threading.local()
        self._per_thread = per_thread_queues
        self._q = q if q is not None or per_thread_queues else self._new_queue()
        self._events = None
        self.pool = None if self.steps.pool == "none" else StagingPool(rt, exact=self.steps.pool == "exact")
        self._pending: set[int] = set()        # ids of queues holding work not waited for yet
        if events and has(rt, Capability.EVENTS):
            self._events = (rt.new_event(), rt.new_event())

    def _new_queue(self) -> Any:
        """A queue this policy owns; its handle, which the timed calls take."""
        q = self.rt.queue()
        with self._own_lock:
            self._own.append(q)
        return q.handle

    @property
    def q(self) -> Any:
        """The queue of the calling thread."""
        if not self._per_thread:
            return self._q
        q = getattr(self._tls, "q", None)
        if q is None:
            q = self._tls.q = self._new_queue()
        return q

    def host_buffer(self, kind, nbytes: int, *, seed: int = 0):
        """Host memory for the application's arrays (``omp_alloc``); most policies take it
        from the memory kind's maker, a pinned allocator hands out its own."""
        return host_buffer(kind, nbytes, rt=self.rt, seed=seed)

    # -- the three events of an offload runtime ----------------------------------------------
    def map(self, buf: HostBuffer) -> TransferRecord:
        """``target enter data``: most policies keep no state."""
        return self._event("map", buf, lambda ph: MapOutcome.UNTRACKED)

    def unmap(self, buf: HostBuffer) -> TransferRecord:
        """``target exit data``."""
        return self._event("unmap", buf, lambda ph: MapOutcome.UNTRACKED)

    def transfer(self, buf: HostBuffer, dev_ptr: int, direction: Direction, *,
                 nbytes: int | None = None, offset: int = 0) -> TransferRecord:
        """Move ``nbytes`` (default: the whole buffer) between ``buf + offset`` and ``dev_ptr``."""
        nbytes = buf.nbytes - offset if nbytes is None else nbytes
        ph = Phases()
        with self.rt.recorder.span() as calls:
            t0 = _now()
            path = self._transfer(ph, buf, buf.ptr + offset, dev_ptr, nbytes, Direction(direction))
            t1 = _now()
        return self._record("transfer", path, buf, direction, nbytes, t0, t1, ph, calls)

    def enqueued(self) -> None:
        """The application put work of its own (a kernel) on this thread's queue: ``sync``
        waits for it."""
        self._pending.add(id(self.q))

    def sync(self) -> TransferRecord:
        """The end of a target region: wait for every copy this thread's queue holds (a
        synchronous policy has nothing left to wait for; nor has a queue that was waited for
        after its last copy, as a staged D2H is: LLVM's AMDGPU plugin makes no call then)."""
        ph = Phases()
        with self.rt.recorder.span() as calls:
            t0 = _now()
            if self.asynchronous:
                if id(self.q) in self._pending:
                    ph.run(Phase.WAIT, self.rt.wait, self.q)
                    self._pending.discard(id(self.q))
                if self.pool is not None:
                    self.pool.synced(self.q)
            t1 = _now()
        return TransferRecord(event="sync", policy=self.policy, path="sync", kind="", direction="", nbytes=0,
                              thread_id=self.rt.recorder.thread_id, start_ns=t0, end_ns=t1,
                              calls=tuple(records(calls)), **{f"{k}_ns": v for k, v in ph.ns.items()})

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
        if self._events:
            for ev in self._events:
                self.rt.free_event(ev)
            self._events = None
        with self._own_lock:
            own, self._own = self._own, []
        for q in own:
            if self.asynchronous:       # copies still in flight finish before their queue goes
                q.wait()
            q.close()
        self._q = None

    # -- the steps ---------------------------------------------------------------------------
    def _transfer(self, ph: Phases, buf: HostBuffer, hptr: int, dev_ptr: int, nbytes: int,
                  direction: Direction) -> TransferPath:
        """``query_first`` (the 2021-22 plugin's ``hsa_amd_pointer_info`` / ``is_locked``: memory
        the runtime says is locked goes as one DMA, no lock, no unlock), then the transfer step."""
        if self.steps.query_first:
            info = ph.run(Phase.QUERY, self.rt.query, hptr)
            if info.locked:
                self._dma(ph, info.dev_ptr if info.dev_ptr is not None else hptr, dev_ptr, nbytes, direction)
                return TransferPath.ALREADY_LOCKED
        return self._step(ph, buf, hptr, dev_ptr, nbytes, direction)

    def _step_stage_fresh(self, ph: Phases, buf, hptr, dev_ptr, nbytes, direction: Direction) -> TransferPath:
        """A pinned staging buffer for every copy: allocate, grant, host copy, DMA, wait, (host
        copy out for D2H), free. The 2020 ATMI plugin (``core::Runtime::Memcpy``): what ye-luo's
        trace showed (C1, C2)."""
        self._stage_fresh(ph, hptr, dev_ptr, nbytes, direction)
        return TransferPath.STAGED_FRESH

    def _step_lock_copy_unlock(self, ph: Phases, buf, hptr, dev_ptr, nbytes, direction: Direction) -> TransferPath:
        """Lock the user pointer, DMA from the locked alias, wait, unlock; a refused lock stages
        through a fresh buffer; "already registered" copies from the pointer and leaves it
        locked. ROCm amd-llvm-project PR #174 (``locking_async_memcpy``), C3 and C5."""
        try:
            return self._lock_dma_unlock(ph, hptr, dev_ptr, nbytes, direction)
        except LockFailed as e:   # rodata and the like: stage through a fresh buffer instead
            ph.error = e.answer
            self._stage_fresh(ph, hptr, dev_ptr, nbytes, direction)
            return TransferPath.LOCK_FAILED_STAGED

    # -- for the steps ---------------------------------------------------------------------

    def _event(self, event: str, buf: HostBuffer, body) -> TransferRecord:
        ph = Phases()
        with self.rt.recorder.span() as calls:
            t0 = _now()
            outcome = body(ph)
            t1 = _now()
        return self._record(event, outcome, buf, "", buf.nbytes, t0, t1, ph, calls)

    def _record(self, event, path, buf, direction, nbytes, t0, t1, ph, calls) -> TransferRecord:
        return TransferRecord(
            event=event, policy=self.policy, path=str(path), kind=str(buf.kind), direction=str(direction),
            nbytes=nbytes, thread_id=self.rt.recorder.thread_id, start_ns=t0, end_ns=t1,
            dma_event_ns=ph.dma_event_ns, error=ph.error, calls=tuple(records(calls)),
            **{f"{k}_ns": v for k, v in ph.ns.items()})

    def _dma(self, ph: Phases, host_side: int, dev_ptr: int, nbytes: int, direction: Direction, *,
             wait: bool = True) -> None:
        """One asynchronous copy between a device-visible host pointer and device memory; then
        wait, unless ``wait`` is False and the policy is asynchronous (``sync`` waits later).
        A policy made with ``events`` times every copy with device events, which needs the wait."""
        dst, src = (dev_ptr, host_side) if direction == Direction.H2D else (host_side, dev_ptr)
        wait = wait or not self.asynchronous or self._events is not None
        ev, q = (self._events if wait else None), self.q
        if ev:
            self.rt.record_event(ev[0], q)
        ph.run(Phase.DMA, self.rt.copy_async, dst, src, nbytes, direction, q)
        if ev:
            self.rt.record_event(ev[1], q)
        if wait:
            ph.run(Phase.WAIT, self.rt.wait, q)
            self._pending.discard(id(q))
        else:
            self._pending.add(id(q))
        if ev:
            ph.dma_event_ns = self.rt.elapsed_ns(ev[0], ev[1])

    def _staged_through(self, ph: Phases, staging: int, hptr: int, dev_ptr: int, nbytes: int,
                        direction: Direction, *, wait: bool = True) -> None:
        """Host copy into the staging buffer, DMA, (host copy out for D2H, which needs the copy
        done: a D2H always waits)."""
        if direction == Direction.H2D:
            ph.run(Phase.COPY_IN, self.rt.host_copy, staging, hptr, nbytes)
            self._dma(ph, staging, dev_ptr, nbytes, direction, wait=wait)
        else:
            self._dma(ph, staging, dev_ptr, nbytes, direction)
            ph.run(Phase.COPY_OUT, self.rt.host_copy, hptr, staging, nbytes)

    def _stage_fresh(self, ph: Phases, hptr: int, dev_ptr: int, nbytes: int, direction: Direction) -> None:
        """Allocate a staging buffer for this copy only, grant, stage, free."""
        staging = ph.run(Phase.ALLOC, self.rt.alloc_pinned, nbytes)
        try:
            if self.rt.needs_grant:
                ph.run(Phase.GRANT, self.rt.grant, staging, nbytes)
            self._staged_through(ph, staging, hptr, dev_ptr, nbytes, direction)
        finally:
            ph.run(Phase.FREE, self.rt.free_pinned, staging, nbytes)

    def _step_stage_pooled(self, ph: Phases, buf, hptr: int, dev_ptr: int, nbytes: int,
                           direction: Direction) -> TransferPath:
        """Stage through a buffer of the policy's pool; the path says whether the pool had one
        (JonChesterfield in the thread: "we should do some buffer reuse instead", C2). An H2D on
        an asynchronous policy does not wait: the pool takes the buffer back only at ``sync``, as
        LLVM's stream releases it when the stream completes."""
        pool = self.pool
        staging, cls, hit = pool.get(nbytes, ph)
        deferred = self.asynchronous and direction == Direction.H2D
        try:
            self._staged_through(ph, staging, hptr, dev_ptr, nbytes, direction, wait=not deferred)
        finally:
            pool.put(staging, cls, after_sync=deferred, q=self.q if deferred else None)
        return TransferPath.STAGED_POOLED_HIT if hit else TransferPath.STAGED_POOLED_MISS

    def _lock_own(self, owner, ptr: int, nbytes: int, ph: Phases) -> int:
        """Lock a range for this policy's own use (``owner``: any token naming the user), the
        locked alias back; a policy that keeps books of its locks overrides this and ``_unlock_own``."""
        return ph.run(Phase.LOCK, self.rt.lock, ptr, nbytes)

    def _unlock_own(self, owner, ptr: int, nbytes: int, ph: Phases) -> None:
        ph.run(Phase.UNLOCK, self.rt.unlock, ptr, nbytes)

    def _lock_dma_unlock(self, ph: Phases, hptr: int, dev_ptr: int, nbytes: int,
                         direction: Direction) -> TransferPath:
        """Lock the user range with the flags a runtime passes, DMA from the locked alias, wait,
        unlock. A lock answered "already registered" is memory pinned by someone else: copy
        from it directly and leave it locked (``already_locked``). Other refusals propagate."""
        owner = object()
        try:
            alias = self._lock_own(owner, hptr, nbytes, ph)
        except LockFailed as e:
            if not e.already_pinned:
                raise
            ph.error = e.answer
            self._dma(ph, hptr, dev_ptr, nbytes, direction, wait=True)
            return TransferPath.ALREADY_LOCKED
        try:
            self._dma(ph, alias, dev_ptr, nbytes, direction, wait=True)
        finally:
            self._unlock_own(owner, hptr, nbytes, ph)
        return TransferPath.LOCKED

    def _step_pageable(self, ph: Phases, buf, hptr: int, dev_ptr: int, nbytes: int,
                       direction: Direction) -> TransferPath:
        """Hand the pointer to the runtime's copy as it is; the runtime decides what happens
        (what it did is observed later where the runtime can be watched: CUPTI). Maps cost
        nothing: LLVM's CUDA plugin, which never registers host memory and whose pinned-pointer
        check always answers no."""
        try:
            self._dma(ph, hptr, dev_ptr, nbytes, direction, wait=False)
        except RuntimeCallFailed as e:
            ph.error = f"{e.rc_name} ({e.rc})"
            return TransferPath.COPY_FAILED
        return _PAGEABLE_PATH[self.rt.pageable_copy]
