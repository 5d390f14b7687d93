"""Policies that always stage through a pinned bounce buffer."""

from __future__ import annotations

from ..vocab import Direction, Policy, TransferPath
from .base import Phases, PolicyBase, StagingPool

__all__ = ["StagePerCopy", "StagePooled"]


class StagePerCopy(PolicyBase):
    """Allocate a pinned staging buffer, grant the device access, host copy, DMA, wait,
    (host copy out for D2H), free - for every transfer.

    The 2020 ATMI plugin (``core::Runtime::Memcpy``): what ye-luo's trace showed (C1, C2).
    """

    policy = Policy.STAGE_PER_COPY

    def _transfer(self, ph: Phases, buf, hptr, dev_ptr, nbytes, direction: Direction) -> TransferPath:
        self._stage_fresh(ph, hptr, dev_ptr, nbytes, direction)
        return TransferPath.STAGED_FRESH


class StagePooled(PolicyBase):
    """Stage every transfer through reused pinned buffers (power-of-two size classes).

    JonChesterfield's proposal in the thread: "we should do some buffer reuse instead" (C2).
    """

    policy = Policy.STAGE_POOLED

    def __init__(self, rt, **kw) -> None:
        super().__init__(rt, **kw)
        self.pool = StagingPool(rt, exact=False)
        self._pools.append(self.pool)

    def _transfer(self, ph: Phases, buf, hptr, dev_ptr, nbytes, direction: Direction) -> TransferPath:
        return self._stage_pooled(ph, self.pool, hptr, dev_ptr, nbytes, direction)

    def close(self) -> None:
        self.pool.close()
        super().close()
