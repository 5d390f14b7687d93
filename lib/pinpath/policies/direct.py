"""The maps "prepinned": the application registers its array at map time (``vocab.POLICY_STEPS``)."""

from __future__ import annotations

from ..errors import LockFailed
from ..memkinds import HostBuffer
from ..vocab import Direction, MapOutcome, Phase, Policy, TransferPath
from .base import Phases, PolicyBase

__all__ = ["Prepinned"]


class Prepinned(PolicyBase):
    """The application pinned its buffer beforehand: one register call of its own array at
    map time (as QMCPACK does with hipHostRegister), or memory that the runtime's query says
    is pinned already (hipHostMalloc / cudaMallocHost). Transfers are one DMA each (C9, C10);
    the application unregisters what it registered at unmap."""

    def __init__(self, rt, policy=Policy.PREPINNED, **kw) -> None:
        super().__init__(rt, policy, **kw)
        self._pinned: dict[int, bool] = {}
        self._ours: dict[int, int] = {}      # ptr -> nbytes the application registered at map time

    def map(self, buf: HostBuffer):
        def body(ph: Phases) -> MapOutcome:
            if ph.run(Phase.QUERY, self.rt.query, buf.ptr).locked:
                self._pinned[buf.ptr] = True
                return MapOutcome.EXTERNAL
            try:
                ph.run(Phase.LOCK, self.rt.lock, buf.ptr, buf.nbytes)
            except LockFailed as e:
                ph.error = e.answer
                self._pinned[buf.ptr] = e.already_pinned
                return MapOutcome.EXTERNAL if e.already_pinned else MapOutcome.LOCK_FAILED
            self._ours[buf.ptr] = buf.nbytes
            self._pinned[buf.ptr] = True
            return MapOutcome.LOCKED
        return self._event("map", buf, body)

    def _step_pinned_or_pageable(self, ph: Phases, buf, hptr, dev_ptr, nbytes, direction: Direction) -> TransferPath:
        if self._pinned.get(buf.ptr, False):
            self._dma(ph, hptr, dev_ptr, nbytes, direction, wait=False)
            return TransferPath.PINNED_DIRECT
        return self._step_pageable(ph, buf, hptr, dev_ptr, nbytes, direction)

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
