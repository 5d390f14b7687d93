"""Every word of pinpath's data and reports (platforms, policies, paths, verdicts ...), once, as a string enum;
data keeps the plain value."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Platform", "Policy", "PolicySteps", "POLICY_STEPS", "TransferPath", "MapOutcome", "MemoryKind", "Direction", "Phase",
           "PageableCopy", "Relock", "Capability", "Verdict", "choose"]


class Platform(StrEnum):
    AUTO = "auto"      #: the best runtime that starts: cuda, hsa, hip, then host
    CUDA = "cuda"      #: NVIDIA GPUs through cuda-python (cuda.bindings)
    HSA = "hsa"        #: AMD GPUs through ctypes over libhsa-runtime64
    HIP = "hip"        #: AMD GPUs through hip-python
    HOST = "host"      #: no GPU: mlock/munlock and host copies (the OS's share of pinning)


class Policy(StrEnum):
    STAGE_PER_COPY = "stage_per_copy"            #: fresh pinned staging buffer per copy (ATMI, 2020)
    LOCK_ALWAYS = "lock_always"                  #: lock, copy, unlock; stage if the lock fails (PR #174)
    QUERY_THEN_LOCK = "query_then_lock"          #: query first, skip lock if locked (2021-22 plugin)
    NEXTGEN = "nextgen"                          #: today's LLVM AMDGPU plugin decision order
    NEXTGEN_LOCK_MAPPED = "nextgen_lock_mapped"  #: nextgen with LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS=on
    STAGE_POOLED = "stage_pooled"                #: staging through reused buffers for every size (C2)
    PREPINNED = "prepinned"                      #: the application pinned the buffer beforehand
    DRIVER_PAGEABLE = "driver_pageable"          #: hand the pageable pointer to the runtime's copy
    PINNED_ALLOCATOR = "pinned_allocator"        #: hand out locked memory and track it (C11's idea)


@dataclass(frozen=True, slots=True)
class PolicySteps:
    """What a policy does, in the words of engine.c's table ``POLICIES`` (``engine.py`` checks the
    two row by row when it loads the engine). A new policy made of existing steps is a ``Policy``
    value, its row here and its row there."""
    transfer: str              #: stage_fresh, stage_pooled, lock_copy_unlock, pinned_or_pageable, pageable, nextgen
    maps: str = "none"         #: what map/unmap keep: none; prepinned (the application registers at map);
                               #: nextgen (the map of pinned ranges, LLVM's PinnedAllocationMapTy)
    query_first: bool = False  #: ask the runtime first: memory it says is locked goes as one DMA
    pool: str = "none"         #: the staging pool: none, exact (sizes, LLVM's MemoryManagerTy), classes (2^k >= 4 KiB)
    asynchronous: bool = False   #: copies wait once per target region (sync), not after each copy
    lock_mapped: bool = False  #: nextgen's map locks what it maps (LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS=on)
    allocates: bool = False    #: Python only: host_buffer hands out runtime-pinned memory, entered in the map
                               #: (an engine plan enters it with its adopt op)


#: the policies as their steps, one row each (engine.c's POLICIES holds the same rows)
POLICY_STEPS: dict[Policy, PolicySteps] = {
    Policy.STAGE_PER_COPY: PolicySteps("stage_fresh"),
    Policy.LOCK_ALWAYS: PolicySteps("lock_copy_unlock"),
    Policy.QUERY_THEN_LOCK: PolicySteps("lock_copy_unlock", query_first=True),
    Policy.NEXTGEN: PolicySteps("nextgen", "nextgen", pool="exact", asynchronous=True),
    Policy.NEXTGEN_LOCK_MAPPED: PolicySteps("nextgen", "nextgen", pool="exact", asynchronous=True, lock_mapped=True),
    Policy.STAGE_POOLED: PolicySteps("stage_pooled", pool="classes"),
    Policy.PREPINNED: PolicySteps("pinned_or_pageable", "prepinned", asynchronous=True),
    Policy.DRIVER_PAGEABLE: PolicySteps("pageable", asynchronous=True),
    Policy.PINNED_ALLOCATOR: PolicySteps("nextgen", "nextgen", pool="exact", asynchronous=True, allocates=True),
}


class TransferPath(StrEnum):
    """What the runtime observably did with one transfer."""
    PINNED_DIRECT = "pinned_direct"            #: one DMA from memory pinned before the transfer
    ALREADY_LOCKED = "already_locked"          #: the query said locked, or the lock answered "already
                                               #: registered": one DMA, no unlock
    LOCKED = "locked"                          #: lock succeeded, DMA from the locked alias, unlock
    STAGED_FRESH = "staged_fresh"              #: through a staging buffer allocated for this copy
    STAGED_POOLED_HIT = "staged_pooled_hit"    #: through a reused staging buffer
    STAGED_POOLED_MISS = "staged_pooled_miss"  #: the pool allocated a new staging buffer
    LOCK_FAILED_STAGED = "lock_failed_staged"  #: lock refused, staged through a fresh buffer
    LOCK_FAILED_ERROR = "lock_failed_error"    #: lock refused and the policy has no fallback
    MAP_HIT = "map_hit"                        #: found in the map of ranges locked at map time
    EXTERNAL_PINNED = "external_pinned"        #: found in the map, pinned by someone else
    DRIVER_STAGED = "driver_staged"            #: pageable pointer handed over; the driver was seen staging it
    DRIVER_PINNED = "driver_pinned"            #: pointer handed over as is; the driver was seen copying it as pinned
    DRIVER_UNOBSERVED = "driver_unobserved"    #: pointer handed to the runtime's copy; what it did was not observed
    PAGEABLE_DIRECT = "pageable_direct"        #: pageable pointer copied directly (host platform)
    COPY_FAILED = "copy_failed"                #: the runtime refused the copy itself


class MapOutcome(StrEnum):
    """What a policy's map (target enter data) or unmap (target exit data) did."""
    UNTRACKED = "untracked"            #: nothing: the policy keeps no state for mapped buffers
    LOCKED = "locked"                  #: locked now and entered in the map
    EXTERNAL = "external"              #: already pinned by someone else: entered, never unlocked
    REFCOUNTED = "refcounted"          #: already in the map: its reference count went up
    LOCK_FAILED = "lock_failed"        #: the lock was refused; transfers will not find it
    OVERLAP_REFUSED = "overlap_refused"  #: partly overlaps an entry (LLVM refuses that)
    UNLOCKED = "unlocked"              #: last user gone: unlocked and removed
    RELEASED = "released"              #: a reference dropped; still in the map or external


class MemoryKind(StrEnum):
    HEAP = "heap"                  #: the C heap, as a C or C++ application has it, on pages of its own
    NUMPY = "numpy"                #: a numpy array (numpy asks for transparent huge pages on large ones)
    STACK = "stack"                #: a real pthread stack
    READ_ONLY = "read_only"        #: a private anonymous mapping made read-only
    READ_ONLY_FILE = "read_only_file"  #: a private read-only mapping of a file
    RODATA = "rodata"              #: a const array in the .rodata of a shared object built at run time
    FILE_BACKED = "file_backed"    #: a shared mapping of a file
    HUGE_PAGES = "huge_pages"      #: hugetlbfs or THP backed, whichever the OS grants
    PINNED = "pinned"              #: memory the runtime allocated page-locked
    UNALIGNED = "unaligned"        #: a buffer that starts inside a page
    PAGE_SHARING = "page_sharing"  #: one of two buffers that share a page


class Direction(StrEnum):
    H2D = "h2d"
    D2H = "d2h"


class Phase(StrEnum):
    """Phases of a transfer; each becomes a ``<phase>_ns`` column."""
    QUERY = "query"
    LOCK = "lock"
    ALLOC = "alloc"
    GRANT = "grant"
    COPY_IN = "copy_in"
    DMA = "dma"
    WAIT = "wait"
    COPY_OUT = "copy_out"
    UNLOCK = "unlock"
    FREE = "free"


class PageableCopy(StrEnum):
    """What a runtime's copy does when handed pageable host memory."""
    STAGED = "staged"            #: the driver stages it (CUDA, HIP)
    DIRECT = "direct"            #: copied as is (host platform)
    UNSUPPORTED = "unsupported"  #: refused (HSA needs locked or pool memory)


class Relock(StrEnum):
    """What a runtime answers when asked to lock memory that is already locked."""
    COUNTED = "counted"      #: granted and counted: each lock needs its unlock (HSA/ROCT)
    REFUSED = "refused"      #: refused with "already registered" (CUDA, HIP: 712)
    UNCOUNTED = "uncounted"  #: granted, not counted: one unlock undoes every lock (mlock)


class Capability(StrEnum):
    """What a runtime may or may not offer beyond the core interface; each answers
    "not available: <reason>" where it is missing."""
    EVENTS = "events"          #: time a copy on the device (new_event, free_event, record_event, elapsed_ns)
    KERNELS = "kernels"        #: launch the replica kernel (prepare_kernels, launch_replica)
    LATCH = "latch"            #: hold a queue until released (new_latch, hold, release, free_latch)
    COPY_LOOP = "copy_loop"    #: a bare native async copy loop that bypasses pinpath (plain_copy_ns)
    SYNC_COPY = "sync_copy"    #: the runtime's synchronous copy in a bare loop (sync_copy_ns)
    NATIVE = "native"          #: pinpath's C timing library built for this runtime (pinpath.nativelib)
    CUPTI = "cupti"            #: the driver's own record of each copy (CUDA's CUPTI activity API)


class Verdict(StrEnum):
    HOLDS = "holds"
    DOES_NOT_HOLD = "does not hold"
    INCONCLUSIVE = "inconclusive"            #: the interval straddles the threshold
    NOT_APPLICABLE = "not applicable"        #: the claim is not about this platform (reason given)
    NOT_MEASURED = "not measured"            #: its notebook failed, leaked or did not run


def choose(enum: type[StrEnum], name: str, what: str) -> StrEnum:
    """Return the member of ``enum`` named ``name`` or raise UnknownName listing the known ones."""
    from .errors import UnknownName
    try:
        return enum(name)
    except ValueError:
        raise UnknownName(what, name, [m.value for m in enum]) from None
