"""Policies that lock the user's pointer for the transfer."""

from __future__ import annotations

from ..errors import LockFailed
from ..vocab import Direction, Phase, Policy, TransferPath
from .base import Phases, PolicyBase

__all__ = ["LockAlways", "QueryThenLock"]


class LockAlways(PolicyBase):
    """Lock the user pointer, DMA from the locked alias, wait, unlock; if the lock is
    refused, stage through a freshly allocated buffer.

    ROCm amd-llvm-project PR #174 (``locking_async_memcpy``), C3 and C5.
    """

    policy = Policy.LOCK_ALWAYS

    def _lock_copy_unlock(self, ph: Phases, buf, hptr, dev_ptr, nbytes, direction) -> TransferPath:
        try:
            self._lock_dma_unlock(ph, buf, hptr, dev_ptr, nbytes, direction)
        except LockFailed as e:   # rodata and the like: stage through a fresh buffer instead
            ph.error = f"{e.rc_name} ({e.rc})"
            self._stage_fresh(ph, hptr, dev_ptr, nbytes, direction)
            return TransferPath.LOCK_FAILED_STAGED
        return TransferPath.LOCKED

    def _transfer(self, ph: Phases, buf, hptr, dev_ptr, nbytes, direction: Direction) -> TransferPath:
        return self._lock_copy_unlock(ph, buf, hptr, dev_ptr, nbytes, direction)


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
        return self._lock_copy_unlock(ph, buf, hptr, dev_ptr, nbytes, direction)
