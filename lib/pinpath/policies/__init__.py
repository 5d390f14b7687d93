"""The 8 transfer policies (``vocab.Policy``; what each models: ``CLAIMS.md``) and C11's pinned allocator, each written once
against the runtime interface."""

from __future__ import annotations

from ..vocab import Policy, choose
from .base import DEFAULT_THRESHOLD_NBYTES, PolicyBase, StagingPool
from .direct import DriverPageable, Prepinned
from .locking import LockAlways, QueryThenLock
from .nextgen import Nextgen, NextgenLockMapped, PinnedAllocator, PinnedEntry, PinnedMap
from .staging import StagePerCopy, StagePooled

__all__ = ["POLICIES", "make_policy", "PolicyBase", "PinnedMap", "PinnedEntry", "StagingPool",
           "DEFAULT_THRESHOLD_NBYTES"]

POLICIES: dict[Policy, type[PolicyBase]] = {
    Policy.STAGE_PER_COPY: StagePerCopy,
    Policy.LOCK_ALWAYS: LockAlways,
    Policy.QUERY_THEN_LOCK: QueryThenLock,
    Policy.NEXTGEN: Nextgen,
    Policy.NEXTGEN_LOCK_MAPPED: NextgenLockMapped,
    Policy.STAGE_POOLED: StagePooled,
    Policy.PREPINNED: Prepinned,
    Policy.DRIVER_PAGEABLE: DriverPageable,
    Policy.PINNED_ALLOCATOR: PinnedAllocator,
}


def make_policy(name: str, rt, **kw) -> PolicyBase:
    """Build the policy ``name`` on runtime ``rt`` (keyword arguments: see PolicyBase)."""
    return POLICIES[choose(Policy, name, "policy")](rt, **kw)
