"""Today's LLVM offload plugin (plugin-nextgen) and its lock-mapped-buffers mode."""

from __future__ import annotations

import bisect
import threading
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import LockFailed, PinpathError
from ..memkinds import HostBuffer, host_buffer
from ..vocab import Direction, MapOutcome, MemoryKind, Phase, Policy, TransferPath
from .base import Phases, PolicyBase, StagingPool

__all__ = ["PinnedMap", "PinnedEntry", "Nextgen", "NextgenLockMapped", "PinnedAllocator", "OverlapRefused"]


class OverlapRefused(PinpathError):
    """A range partly overlaps an entry of the pinned map (LLVM: "partial overlapping not allowed")."""


@dataclass(slots=True)
class PinnedEntry:
    host_ptr: int
    dev_ptr: int
    nbytes: int
    external: bool     #: pinned by someone else: never unlock it
    refs: int = 1

    def contains(self, ptr: int, nbytes: int) -> bool:
        return self.host_ptr <= ptr and ptr + nbytes <= self.host_ptr + self.nbytes


class PinnedMap:
    """The refcounted map of pinned host ranges (LLVM's ``PinnedAllocationMapTy``).

    Entries are ordered by start and never overlap; a lookup tests only the start
    address, as LLVM's ``findIntersecting`` does. Thread safe.
    """

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._entries: list[PinnedEntry] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[PinnedEntry]:
        with self._lock:
            return list(self._entries)

    def _find(self, ptr: int) -> int:
        i = bisect.bisect_right(self._starts, ptr) - 1
        if i >= 0 and ptr < self._entries[i].host_ptr + self._entries[i].nbytes:
            return i
        return -1

    def lookup(self, ptr: int, nbytes: int, *, add_ref: bool = False) -> PinnedEntry | None:
        """The entry holding ``[ptr, ptr+nbytes)`` (one more reference with ``add_ref``);
        None if no entry holds ``ptr``; OverlapRefused if the range runs past the entry."""
        with self._lock:
            i = self._find(ptr)
            if i < 0:
                return None
            e = self._entries[i]
            if not e.contains(ptr, nbytes):
                raise OverlapRefused(f"[{ptr:#x}, +{nbytes}) runs past the pinned entry [{e.host_ptr:#x}, +{e.nbytes})")
            e.refs += add_ref
            return e

    def use(self, ptr: int, nbytes: int) -> PinnedEntry | None:
        """Add one reference to the entry holding the range (LLVM's ``registerEntryUse``)."""
        return self.lookup(ptr, nbytes, add_ref=True)

    def insert(self, entry: PinnedEntry) -> None:
        """Insert a new entry; refuse one that intersects a neighbour."""
        with self._lock:
            i = bisect.bisect_right(self._starts, entry.host_ptr)
            end = entry.host_ptr + entry.nbytes
            prev_ = self._entries[i - 1] if i > 0 else None
            next_ = self._entries[i] if i < len(self._entries) else None
            if (prev_ and prev_.host_ptr + prev_.nbytes > entry.host_ptr) or (next_ and next_.host_ptr < end):
                raise OverlapRefused(f"[{entry.host_ptr:#x}, +{entry.nbytes}) intersects an entry of the pinned map")
            self._starts.insert(i, entry.host_ptr)
            self._entries.insert(i, entry)

    def release(self, ptr: int) -> PinnedEntry | None:
        """Drop one reference of the entry holding ``ptr``; return it if that was the last
        (it is then removed), else None. Raises KeyError if no entry holds ``ptr``."""
        with self._lock:
            i = self._find(ptr)
            if i < 0:
                raise KeyError(ptr)
            e = self._entries[i]
            e.refs -= 1
            if e.refs > 0:
                return None
            del self._starts[i], self._entries[i]
            return e


class Nextgen(PolicyBase):
    """LLVM's AMDGPU plugin (``dataSubmitImpl`` / ``dataRetrieveImpl``): a hit in the map of
    pinned ranges is one DMA; else a transfer of ``threshold_nbytes`` or more is locked,
    copied and unlocked, a refused lock being an error; else it is staged through a pooled
    buffer of exactly the same size. At map time a pointer that the runtime says is pinned
    is entered as external (``notifyDataMapped`` -> ``isPinnedPtrImpl``).
    """

    policy = Policy.NEXTGEN
    lock_mapped = False

    def __init__(self, rt, **kw) -> None:
        super().__init__(rt, **kw)
        self.pinned = PinnedMap()
        self.pool = StagingPool(rt, exact=True)

    def map(self, buf: HostBuffer):
        return self._event("map", buf, lambda ph: self._map(ph, buf))

    def _map(self, ph: Phases, buf: HostBuffer) -> MapOutcome:
        try:
            if self.pinned.use(buf.ptr, buf.nbytes) is not None:
                return MapOutcome.REFCOUNTED
            info = ph.run(Phase.QUERY, self.rt.query, buf.ptr)
            if info.locked:
                base = info.base if info.base is not None else buf.ptr
                nbytes = info.nbytes if info.nbytes is not None else buf.ptr + buf.nbytes - base
                alias = info.dev_ptr - (buf.ptr - base) if info.dev_ptr is not None else base
                self.pinned.insert(PinnedEntry(base, alias, nbytes, external=True))
                return MapOutcome.EXTERNAL
            if not self.lock_mapped:
                return MapOutcome.UNTRACKED
            try:
                alias = ph.run(Phase.LOCK, self.rt.lock, buf.ptr, buf.nbytes, read_only=not buf.writable)
            except LockFailed as e:   # mode "on": a refused lock is ignored
                ph.error = f"{e.rc_name} ({e.rc})"
                return MapOutcome.LOCK_FAILED
            self.pinned.insert(PinnedEntry(buf.ptr, alias, buf.nbytes, external=False))
            return MapOutcome.LOCKED
        except OverlapRefused as e:
            ph.error = str(e)
            return MapOutcome.OVERLAP_REFUSED

    def unmap(self, buf: HostBuffer):
        return self._event("unmap", buf, lambda ph: self._unmap(ph, buf))

    def _unmap(self, ph: Phases, buf: HostBuffer) -> MapOutcome:
        try:
            last = self.pinned.release(buf.ptr)
        except KeyError:
            return MapOutcome.UNTRACKED
        if last is None or last.external:
            return MapOutcome.RELEASED
        ph.run(Phase.UNLOCK, self.rt.unlock, last.host_ptr, last.nbytes)
        return MapOutcome.UNLOCKED

    def _transfer(self, ph: Phases, buf, hptr, dev_ptr, nbytes, direction: Direction) -> TransferPath:
        entry = self.pinned.lookup(hptr, nbytes)
        if entry is not None:
            self._dma(ph, entry.dev_ptr + (hptr - entry.host_ptr), dev_ptr, nbytes, direction)
            return TransferPath.EXTERNAL_PINNED if entry.external else TransferPath.MAP_HIT
        if nbytes >= self.threshold_nbytes:
            try:
                self._lock_dma_unlock(ph, buf, hptr, dev_ptr, nbytes, direction)
            except LockFailed as e:   # no fallback on this path: the transfer is an error
                ph.error = f"{e.rc_name} ({e.rc})"
                return TransferPath.LOCK_FAILED_ERROR
            return TransferPath.LOCKED
        return self._stage_pooled(ph, self.pool, hptr, dev_ptr, nbytes, direction)

    def close(self) -> None:
        for e in self.pinned.entries():   # buffers still mapped at close: undo our locks
            if not e.external:
                self.rt.unlock(e.host_ptr, e.nbytes)
        self.pinned = PinnedMap()
        self.pool.close()
        super().close()


class NextgenLockMapped(Nextgen):
    """``nextgen`` with ``LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS=on`` (reviews.llvm.org/D142514):
    host buffers are locked once when mapped, refcounted, unlocked at unmap; a refused
    lock is ignored; memory already pinned by someone else is external, never unlocked.
    """

    policy = Policy.NEXTGEN_LOCK_MAPPED
    lock_mapped = True


class PinnedAllocator(Nextgen):
    """JonChesterfield's idea in the thread (C11): "hand out locked memory in omp allocate
    and keep track of the pointers thus handed out". Memory the application takes from
    ``host_buffer`` is runtime-pinned and entered in the map, so its transfers are one
    DMA with no lock and no query; anything else goes as in ``nextgen``.
    """

    policy = Policy.PINNED_ALLOCATOR

    @contextmanager
    def host_buffer(self, kind, nbytes: int, *, seed: int = 0):
        with host_buffer(MemoryKind.PINNED, nbytes, rt=self.rt, seed=seed) as buf:
            entry = PinnedEntry(buf.ptr, buf.ptr, buf.nbytes, external=True)   # freed by its maker, never unlocked
            self.pinned.insert(entry)
            try:
                yield buf
            finally:   # drop this reference and any a map without its unmap left behind
                while self.pinned.release(buf.ptr) is None:
                    pass
