"""The maps "nextgen" (``vocab.POLICY_STEPS``): today's LLVM offload plugin (plugin-nextgen), its
lock-mapped-buffers mode, and C11's pinned allocator.

The map of pinned ranges is exact under concurrency: map, unmap and the map's part of a
transfer run under one mutex; a map takes a reference only when it says so (``refcounted``,
``locked``, ``external``), and its unmap drops only that reference; a transfer that hits an
entry holds a reference for the length of its copy; memory pinned by someone else is never
unlocked. The runtime calls that lock or unlock are made under the mutex, copies outside it.
"""

from __future__ import annotations

import bisect
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..errors import LockFailed, PinpathError
from ..memkinds import HostBuffer, host_buffer
from ..units import PAGE_NBYTES
from ..vocab import Direction, MapOutcome, MemoryKind, Phase, Policy, Relock, TransferPath
from .base import Phases, PolicyBase

__all__ = ["PinnedMap", "PinnedEntry", "LockUnits", "Nextgen", "OverlapRefused"]


class OverlapRefused(PinpathError):
    """A range partly overlaps an entry of the pinned map (LLVM: "partial overlapping not allowed")."""


@dataclass(slots=True, eq=False)
class PinnedEntry:
    """One pinned range; entries compare by identity (two maps of one range share one entry)."""
    host_ptr: int
    dev_ptr: int
    nbytes: int
    external: bool     #: pinned by someone else: never unlock it
    refs: int = 1

    def contains(self, ptr: int, nbytes: int) -> bool:
        return self.host_ptr <= ptr and ptr + nbytes <= self.host_ptr + self.nbytes

    @property
    def end(self) -> int:
        return self.host_ptr + self.nbytes


class PinnedMap:
    """The map of pinned host ranges (LLVM's ``PinnedAllocationMapTy``): entries ordered by
    start, never overlapping; a lookup tests the start address, as ``findIntersecting`` does.
    Not locked itself: its owner serialises every use."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._entries: list[PinnedEntry] = []

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[PinnedEntry]:
        return list(self._entries)

    def find(self, ptr: int) -> PinnedEntry | None:
        """The entry holding address ``ptr``, if any."""
        i = bisect.bisect_right(self._starts, ptr) - 1
        if i >= 0 and ptr < self._entries[i].end:
            return self._entries[i]
        return None

    def holding(self, ptr: int, nbytes: int) -> tuple[PinnedEntry | None, str]:
        """The entry holding ``[ptr, ptr+nbytes)`` (None if none holds its start), or None and
        why not where the range starts in an entry and runs past it."""
        e = self.find(ptr)
        if e is not None and not e.contains(ptr, nbytes):
            return None, f"[{ptr:#x}, +{nbytes}) runs past the pinned entry [{e.host_ptr:#x}, +{e.nbytes})"
        return e, ""

    def fits(self, ptr: int, nbytes: int) -> bool:
        """Whether ``[ptr, ptr+nbytes)`` can be inserted: it intersects no entry."""
        return not self.overlap(ptr, nbytes)

    def overlap(self, ptr: int, nbytes: int) -> str:
        """Why ``[ptr, ptr+nbytes)`` cannot be inserted (it intersects an entry), or "" if it can."""
        i = bisect.bisect_right(self._starts, ptr)
        before = self._entries[i - 1] if i > 0 else None
        after = self._entries[i] if i < len(self._entries) else None
        if (before and before.end > ptr) or (after and after.host_ptr < ptr + nbytes):
            return f"[{ptr:#x}, +{nbytes}) intersects an entry of the pinned map"
        return ""

    def insert(self, entry: PinnedEntry) -> None:
        why = self.overlap(entry.host_ptr, entry.nbytes)
        if why:
            raise OverlapRefused(why)
        i = bisect.bisect_right(self._starts, entry.host_ptr)
        self._starts.insert(i, entry.host_ptr)
        self._entries.insert(i, entry)

    def remove(self, entry: PinnedEntry) -> None:
        i = self._entries.index(entry)
        del self._starts[i], self._entries[i]


@dataclass(slots=True)
class _Unit:
    lo: int
    hi: int
    users: set = field(default_factory=set)


class LockUnits:
    """Page-granular locks on a runtime that does not count them (mlock): one unlock undoes
    every lock of a page, so a range is locked as units of pages no other range holds, and a
    unit is unlocked only when no range that touches it is left. Each unit is one lock call
    and one unlock call of exactly its pages (the recorder's balance stays exact)."""

    def __init__(self, rt) -> None:
        self.rt = rt
        self._units: list[_Unit] = []

    @staticmethod
    def _pages(ptr: int, nbytes: int) -> tuple[int, int]:
        return ptr - ptr % PAGE_NBYTES, -(-(ptr + nbytes) // PAGE_NBYTES) * PAGE_NBYTES

    def _gaps(self, lo: int, hi: int) -> list[tuple[int, int]]:
        gaps, at = [], lo
        for u in sorted((u for u in self._units if u.lo < hi and u.hi > lo), key=lambda u: u.lo):
            if u.lo > at:
                gaps.append((at, u.lo))
            at = max(at, u.hi)
        if at < hi:
            gaps.append((at, hi))
        return gaps

    def lock(self, owner, ptr: int, nbytes: int, ph: Phases) -> None:
        """Lock ``[ptr, ptr+nbytes)`` for ``owner`` (any hashable token); LockFailed leaves
        nothing new locked. Pages another owner holds are locked already: no call for them."""
        lo, hi = self._pages(ptr, nbytes)
        made: list[_Unit] = []
        try:
            for a, b in self._gaps(lo, hi):
                ph.run(Phase.LOCK, self.rt.lock, a, b - a)
                made.append(_Unit(a, b))
        except LockFailed:
            for u in made:
                ph.run(Phase.UNLOCK, self.rt.unlock, u.lo, u.hi - u.lo)
            raise
        self._units += made
        for u in self._units:
            if u.lo < hi and u.hi > lo:
                u.users.add(owner)

    def unlock(self, owner, ph: Phases) -> None:
        """Drop ``owner``'s hold; unlock the units nobody holds any more."""
        for u in [u for u in self._units if owner in u.users]:
            u.users.discard(owner)
            if not u.users:
                self._units.remove(u)
                ph.run(Phase.UNLOCK, self.rt.unlock, u.lo, u.hi - u.lo)


class Nextgen(PolicyBase):
    """LLVM's AMDGPU plugin (``dataSubmitImpl`` / ``dataRetrieveImpl``): a hit in the map of
    pinned ranges is one asynchronous DMA; else a transfer of ``threshold_nbytes`` or more is
    locked, copied, waited for and unlocked, a refused lock being an error; else it is staged
    through a pooled buffer of exactly the same size. At map time a pointer that the runtime
    says is pinned is entered as external (``notifyDataMapped`` -> ``isPinnedPtrImpl``).

    ``lock_mapped`` (``nextgen_lock_mapped``, ``LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS=on``,
    reviews.llvm.org/D142514): host buffers are locked once when mapped, refcounted, unlocked at
    unmap; a refused lock is ignored; memory already pinned by someone else is external, never
    unlocked. ``allocates`` (``pinned_allocator``, JonChesterfield's idea in the thread, C11:
    "hand out locked memory in omp allocate and keep track of the pointers thus handed out"):
    memory the application takes from ``host_buffer`` is runtime-pinned and entered in the map,
    so its transfers are one DMA with no lock and no query; anything else goes as in ``nextgen``.
    """

    def __init__(self, rt, policy=Policy.NEXTGEN, **kw) -> None:
        super().__init__(rt, policy, **kw)
        self.lock_mapped = self.steps.lock_mapped
        self.pinned = PinnedMap()
        self._mutex = threading.RLock()
        self._refs: dict[tuple[int, int], list[PinnedEntry]] = {}   # (ptr, nbytes) -> entries its maps hold
        self.units = LockUnits(rt) if rt.relock == Relock.UNCOUNTED else None

    # -- locks this policy makes itself (under the mutex, which is reentrant) -----------------
    def _lock_own(self, owner, ptr: int, nbytes: int, ph: Phases) -> int:
        with self._mutex:
            if self.units is not None:
                self.units.lock(owner, ptr, nbytes, ph)
                return ptr
            return super()._lock_own(owner, ptr, nbytes, ph)

    def _unlock_own(self, owner, ptr: int, nbytes: int, ph: Phases) -> None:
        with self._mutex:
            if self.units is not None:
                self.units.unlock(owner, ph)
            else:
                super()._unlock_own(owner, ptr, nbytes, ph)

    def _drop(self, entry: PinnedEntry, ph: Phases) -> bool:
        """One reference less; the last one removes the entry and unlocks it if it is ours."""
        entry.refs -= 1
        if entry.refs > 0:
            return False
        self.pinned.remove(entry)
        if not entry.external:
            self._unlock_own(entry, entry.host_ptr, entry.nbytes, ph)
        return True

    # -- map / unmap ---------------------------------------------------------------------
    def map(self, buf: HostBuffer):
        return self._event("map", buf, lambda ph: self._map(ph, buf))

    def _map(self, ph: Phases, buf: HostBuffer) -> MapOutcome:
        with self._mutex:
            entry, outcome = self._enter(ph, buf.ptr, buf.nbytes)
            if entry is not None:
                self._refs.setdefault((buf.ptr, buf.nbytes), []).append(entry)
            return outcome

    def _enter(self, ph: Phases, ptr: int, nbytes: int) -> tuple[PinnedEntry | None, MapOutcome]:
        """The map's decision (caller holds the mutex): the entry it took a reference on, if any."""
        e, why = self.pinned.holding(ptr, nbytes)
        if why:
            return self._refused(ph, why)
        if e is not None:
            e.refs += 1
            return e, MapOutcome.REFCOUNTED
        info = ph.run(Phase.QUERY, self.rt.query, ptr)
        if info.locked:
            base = info.base if info.base is not None else ptr
            size = info.nbytes if info.nbytes is not None else ptr + nbytes - base
            alias = info.dev_ptr - (ptr - base) if info.dev_ptr is not None else base
            return self._insert(ph, PinnedEntry(base, alias, size, external=True), MapOutcome.EXTERNAL)
        if not self.lock_mapped:
            return None, MapOutcome.UNTRACKED
        why = self.pinned.overlap(ptr, nbytes)
        if why:
            return self._refused(ph, why)
        entry = PinnedEntry(ptr, ptr, nbytes, external=False)
        try:
            entry.dev_ptr = self._lock_own(entry, ptr, nbytes, ph)
        except LockFailed as e:
            ph.error = e.answer
            if e.already_pinned:   # someone else registered it: track it, never unlock it
                entry.external = True
                return self._insert(ph, entry, MapOutcome.EXTERNAL)
            return None, MapOutcome.LOCK_FAILED   # mode "on": a refused lock is ignored
        self.pinned.insert(entry)
        return entry, MapOutcome.LOCKED

    def _insert(self, ph: Phases, entry: PinnedEntry, outcome: MapOutcome):
        why = self.pinned.overlap(entry.host_ptr, entry.nbytes)
        if why:
            return self._refused(ph, why)
        self.pinned.insert(entry)
        return entry, outcome

    @staticmethod
    def _refused(ph: Phases, why: str) -> tuple[None, MapOutcome]:
        ph.error = why
        return None, MapOutcome.OVERLAP_REFUSED

    def unmap(self, buf: HostBuffer):
        return self._event("unmap", buf, lambda ph: self._unmap(ph, buf.ptr, buf.nbytes))

    def _unmap(self, ph: Phases, ptr: int, nbytes: int) -> MapOutcome:
        with self._mutex:
            held = self._refs.get((ptr, nbytes))
            if not held:
                return MapOutcome.UNTRACKED     # no map of this buffer took a reference
            entry = held.pop()
            if not held:
                del self._refs[(ptr, nbytes)]
            last = self._drop(entry, ph)
            return MapOutcome.UNLOCKED if last and not entry.external else MapOutcome.RELEASED

    # -- transfers -------------------------------------------------------------------------
    def _step_nextgen(self, ph: Phases, buf, hptr, dev_ptr, nbytes, direction: Direction) -> TransferPath:
        with self._mutex:
            entry, ph.error = self.pinned.holding(hptr, nbytes)   # a range running past its entry misses
            if entry is not None:
                entry.refs += 1          # held for the copy: an unmap meanwhile cannot unlock it
        if entry is not None:
            try:
                self._dma(ph, entry.dev_ptr + (hptr - entry.host_ptr), dev_ptr, nbytes, direction, wait=False)
            finally:
                with self._mutex:
                    self._drop(entry, ph)
            return TransferPath.EXTERNAL_PINNED if entry.external else TransferPath.MAP_HIT
        if nbytes >= self.threshold_nbytes:
            return self._locked_copy(ph, hptr, dev_ptr, nbytes, direction)
        return self._step_stage_pooled(ph, buf, hptr, dev_ptr, nbytes, direction)

    def _locked_copy(self, ph: Phases, hptr, dev_ptr, nbytes, direction: Direction) -> TransferPath:
        """The plugin's synchronous path: a raw lock (the map is not consulted), copy, wait,
        unlock; a refused lock is an error, "already registered" means copy as it is."""
        try:
            return self._lock_dma_unlock(ph, hptr, dev_ptr, nbytes, direction)
        except LockFailed as e:
            ph.error = e.answer
            return TransferPath.LOCK_FAILED_ERROR   # no fallback on this path

    def references(self) -> dict[int, int]:
        """Entry start -> references held by live maps (for checking the map's counts)."""
        with self._mutex:
            out: dict[int, int] = {}
            for held in self._refs.values():
                for e in held:
                    out[e.host_ptr] = out.get(e.host_ptr, 0) + 1
            return out

    def close(self) -> None:
        ph = Phases()
        with self._mutex:
            for held in list(self._refs.values()):   # buffers still mapped at close: drop their references
                for e in held:
                    if e in self.pinned.entries():
                        self._drop(e, ph)
            self._refs.clear()
            for e in self.pinned.entries():          # what is left is held by no map: undo our own
                self.pinned.remove(e)
                if not e.external:
                    self._unlock_own(e, e.host_ptr, e.nbytes, ph)
        super().close()

    def host_buffer(self, kind, nbytes: int, *, seed: int = 0):
        """``allocates``: runtime-pinned memory entered in the map, whatever ``kind`` asked for."""
        return self._allocated(nbytes, seed) if self.steps.allocates else super().host_buffer(kind, nbytes, seed=seed)

    @contextmanager
    def _allocated(self, nbytes: int, seed: int):
        with host_buffer(MemoryKind.PINNED, nbytes, rt=self.rt, seed=seed) as buf:
            entry = PinnedEntry(buf.ptr, buf.ptr, buf.nbytes, external=True)   # freed by its maker, never unlocked
            with self._mutex:
                self.pinned.insert(entry)
            try:
                yield buf
            finally:   # the allocator's own reference and any a map without its unmap left behind
                with self._mutex:
                    for key in [k for k, held in self._refs.items() if entry in held]:
                        self._refs[key] = [e for e in self._refs[key] if e is not entry]
                        if not self._refs[key]:
                            del self._refs[key]
                    if entry in self.pinned.entries():
                        self.pinned.remove(entry)
