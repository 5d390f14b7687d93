"""The HSA backend's pure parts (no runtime needed; unit-tested): what a status, a pointer
answer and a pool's facts mean, and the Python side of its copy queues, latches and events."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from ..records import PointerInfo
from .hsa_abi import POINTER_TYPE_NAMES, PointerInfoStruct, Signal, valid_pointer_fields
from .hsa_abi import K as _K

__all__ = ["rc_status", "rc_signal", "pointer_answer", "ticks_to_ns", "PoolInfo", "pick_pool", "SignalQueue", "HsaLatch", "CopyEvent",
           "event_ticks"]


def rc_status(status) -> int:
    return int(status)


def rc_signal(value) -> int:
    """A wait's value is the trace's rc: 0 once the copy is done, negative when it failed."""
    return 0 if value >= 0 else int(value)


def pointer_answer(ptr: int, info: PointerInfoStruct, cpu_agents: frozenset[int]) -> PointerInfo:
    """Turn a filled hsa_amd_pointer_info_t into pinpath's answer for ``ptr``.

    LOCKED (user memory locked by anyone) and HSA memory owned by a CPU agent (pool
    allocations: pinned) count as locked; HSA memory owned by a GPU is device memory.
    """
    f = valid_pointer_fields(info)
    kind = f.get("type", _K.HSA_EXT_POINTER_TYPE_UNKNOWN)
    detail = POINTER_TYPE_NAMES.get(kind, f"HSA_EXT_POINTER_TYPE_{kind}")
    locked = kind == _K.HSA_EXT_POINTER_TYPE_LOCKED or (
        kind == _K.HSA_EXT_POINTER_TYPE_HSA and f.get("agentOwner") in cpu_agents)
    if not locked:
        return PointerInfo(ptr, False, detail=detail)
    host_base = f.get("hostBaseAddress") or 0
    agent_base = f.get("agentBaseAddress")
    dev_ptr = agent_base + (ptr - host_base) if agent_base else None
    return PointerInfo(ptr, True, dev_ptr, host_base or None, f.get("sizeInBytes"), detail)


def ticks_to_ns(ticks: int, frequency_hz: int) -> int:
    """System timestamp ticks -> ns, in integers (no float rounding on long spans)."""
    return ticks * 1_000_000_000 // frequency_hz


class PoolInfo(NamedTuple):
    pool: int                #: hsa_amd_memory_pool_t handle
    segment: int
    global_flags: int
    alloc_allowed: bool
    nbytes: int              #: pool size
    granule_nbytes: int      #: allocations are rounded up to this
    alignment_nbytes: int


def pick_pool(pools: list[PoolInfo], flag: int) -> PoolInfo | None:
    """The first GLOBAL pool that allows runtime allocation and has ``flag``; for fine grain
    a pool without KERNARG_INIT is preferred (the plugin keeps kernarg pools for kernargs)."""
    ok = [p for p in pools if p.segment == _K.HSA_AMD_SEGMENT_GLOBAL and p.alloc_allowed
          and p.global_flags & flag]
    ok.sort(key=lambda p: bool(p.global_flags & _K.HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT))
    return ok[0] if ok else None


# -- queues and events ----------------------------------------------------------------------
@dataclass(eq=False)
class SignalQueue:
    """An in-order queue of async copies: each copy waits on the previous one's completion
    signal (as the plugin's stream slots do). ``times`` holds, per copy index, its
    (start, end) profiling ticks once waited for, or None where profiling was off."""
    pending: list            # [(copy index, Signal)], oldest first
    submitted: int = 0       # copies issued so far
    times: list | None = None
    holds: list = field(default_factory=list)   # HsaLatch objects the next copy also waits on

    def last_signal(self):
        return self.pending[-1][1] if self.pending else None


@dataclass(eq=False)
class HsaLatch:
    """A signal at 1 that held copies list among their dependencies; 0 releases them.
    ``users``: (queue, copy index) of each copy that depends on it; ``held``: queues
    whose next copy will."""
    signal: Signal
    users: list = field(default_factory=list)
    held: list = field(default_factory=list)


@dataclass(eq=False)
class CopyEvent:
    """A point in a SignalQueue: the number of copies issued before it."""
    q: SignalQueue | None = None
    index: int = -1


def event_ticks(ev: CopyEvent) -> int | None:
    """When the queue reached ``ev``: the end of the copy before it, else the start of the
    copy after it (the first point a device clock saw), else None."""
    times = ev.q.times if ev.q is not None else None
    if not times:
        return None
    if 0 < ev.index <= len(times) and times[ev.index - 1] is not None:
        return times[ev.index - 1][1]
    if 0 <= ev.index < len(times) and times[ev.index] is not None:
        return times[ev.index][0]
    return None
