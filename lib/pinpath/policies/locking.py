"""Policies that lock the user's pointer for the transfer (synchronous: they wait on each copy)."""

from __future__ import annotations

from ..errors import LockFailed
from ..vocab import Direction, Phase, Policy, TransferPath
from .base import Phases, PolicyBase

__all__ = ["LockAlways", "QueryThenLock"]


class LockAlways(PolicyBase):
    """Lock the user pointer, DMA from the locked alias, wait, unlock; if the lock is
    refused, stage through a freshly allocated buffer; if it is answered "already
    registered", copy from the pointer and leave it locked.

    ROCm amd-llvm-project PR #174 (``locking_async_memcpy``), C3 and C5.
    """

    policy = Policy.LOCK_ALWAYS

    def _lock_copy_unlock(self, ph: Phases, hptr, dev_ptr, nbytes, direction) -> TransferPath:
        try:
            return self._lock_dma_unlock(ph, hptr, dev_ptr, nbytes, direction)
        except LockFailed as e:   # rodata and the like: stage through a fresh buffer instead
            ph.error = e.answer
            self._stage_fresh(ph, hptr, dev_ptr, nbytes, direction)
            return TransferPath.LOCK_FAILED_STAGED

    def _transfer(self, ph: Phases, buf, hptr, dev_ptr, nbytes, direction: Direction) -> TransferPath:
        return self._lock_copy_unlock(ph, hptr, dev_ptr, nbytes, direction)


class QueryThenLock(LockAlways):
    """Query the pointer first; if the runtime says it is locked, DMA from it directly and
    skip both lock and unlock; else as ``lock_always``.

    The 2021-22 plugin (``hsa_amd_pointer_info`` / ``is_locked``), C4, C6, C7.
    """

    policy = Policy.QUERY_THEN_LOCK

    def _transfer(self, ph: Phases, buf, hptr, dev_ptr, nbytes, direction: Direction) -> TransferPath:
        info = ph.run(Phase.QUERY, self.rt.query, hptr)
        if info.locked:
            self._dma(ph, info.dev_ptr if info.dev_ptr is not None else hptr, dev_ptr, nbytes, direction)
            return TransferPath.ALREADY_LOCKED
        return self._lock_copy_unlock(ph, hptr, dev_ptr, nbytes, direction)
