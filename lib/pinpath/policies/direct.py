"""Policies that hand the user's pointer straight to the runtime's copy."""

from __future__ import annotations

from ..errors import LockFailed
from ..memkinds import HostBuffer
from ..vocab import Direction, MapOutcome, Phase, Policy, TransferPath
from .base import Phases, PolicyBase

__all__ = ["Prepinned", "DriverPageable"]


class _MapTimeState(PolicyBase):
    """Remembers, per mapped buffer, whether it was pinned at map time."""

    def __init__(self, rt, **kw) -> None:
        super().__init__(rt, **kw)
        self._pinned: dict[int, bool] = {}
        self._ours: dict[int, int] = {}      # ptr -> nbytes we locked at map time

    def _transfer(self, ph: Phases, buf, hptr, dev_ptr, nbytes, direction: Direction) -> TransferPath:
        """One DMA if the buffer was pinned at map time, else the runtime's pageable copy."""
        if self._pinned.get(buf.ptr, False):
            self._dma(ph, hptr, dev_ptr, nbytes, direction)
            return TransferPath.PINNED_DIRECT
        return self._pageable(ph, hptr, dev_ptr, nbytes, direction)

    def unmap(self, buf: HostBuffer):
        def body(ph: Phases) -> MapOutcome:
            self._pinned.pop(buf.ptr, None)
            nbytes = self._ours.pop(buf.ptr, None)
            if nbytes is None:
                return MapOutcome.RELEASED
            ph.run(Phase.UNLOCK, self.rt.unlock, buf.ptr, nbytes)
            return MapOutcome.UNLOCKED
        return self._event("unmap", buf, body)

    def close(self) -> None:
        for ptr, nbytes in self._ours.items():
            self.rt.unlock(ptr, nbytes)
        self._ours.clear()
        super().close()


class Prepinned(_MapTimeState):
    """The application pinned the buffer beforehand (cudaMallocHost / hipHostMalloc, or one
    register call at map time); transfers are one DMA each (C9, C10)."""

    policy = Policy.PREPINNED

    def map(self, buf: HostBuffer):
        def body(ph: Phases) -> MapOutcome:
            if ph.run(Phase.QUERY, self.rt.query, buf.ptr).locked:
                self._pinned[buf.ptr] = True
                return MapOutcome.EXTERNAL
            try:
                ph.run(Phase.LOCK, self.rt.lock, buf.ptr, buf.nbytes, read_only=not buf.writable)
            except LockFailed as e:
                ph.error = f"{e.rc_name} ({e.rc})"
                self._pinned[buf.ptr] = False
                return MapOutcome.LOCK_FAILED
            self._ours[buf.ptr] = buf.nbytes
            self._pinned[buf.ptr] = True
            return MapOutcome.LOCKED
        return self._event("map", buf, body)


class DriverPageable(_MapTimeState):
    """Hand the pointer to the runtime's copy as it is and let the driver stage it
    (the LLVM CUDA plugin, which never pins). The map-time query only labels the path."""

    policy = Policy.DRIVER_PAGEABLE

    def map(self, buf: HostBuffer):
        def body(ph: Phases) -> MapOutcome:
            self._pinned[buf.ptr] = ph.run(Phase.QUERY, self.rt.query, buf.ptr).locked
            return MapOutcome.EXTERNAL if self._pinned[buf.ptr] else MapOutcome.UNTRACKED
        return self._event("map", buf, body)
