"""Frozen records: one native call, one pointer query answer, one transfer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from .vocab import Phase

__all__ = ["CallRecord", "PointerInfo", "TransferRecord", "PHASE_FIELDS"]

PHASE_FIELDS = tuple(f"{p.value}_ns" for p in Phase)


class CallRecord(NamedTuple):
    """One native call. A NamedTuple rather than a frozen dataclass: it is built on the
    hot path of every call, and a frozen dataclass's __init__ costs about 1 us."""
    call: str        #: native symbol, e.g. "cudaHostRegister", "hsa_amd_memory_lock", "mlock"
    start_ns: int
    end_ns: int
    rc: int          #: the call's return code (0 = success); -1 where the call has none
    thread_id: int   #: native thread id

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(frozen=True, slots=True)
class PointerInfo:
    """What a runtime answers when asked about a host pointer."""
    ptr: int
    locked: bool                 #: page-locked for the device (registered, locked or pinned)
    dev_ptr: int | None = None   #: device-visible alias, where the runtime gives one
    base: int | None = None      #: start of the locked range, where the runtime tells it
    nbytes: int | None = None    #: size of the locked range, where the runtime tells it
    detail: str = ""             #: the runtime's own word, e.g. "cudaMemoryTypeHost", "VmFlags lo"


@dataclass(frozen=True, slots=True)
class TransferRecord:
    """One event of a policy: a transfer, or a map / unmap of a host buffer."""
    event: str        #: "transfer", "map" or "unmap"
    policy: str
    path: str
    kind: str
    direction: str
    nbytes: int
    thread_id: int
    start_ns: int
    end_ns: int
    query_ns: int = 0
    lock_ns: int = 0
    alloc_ns: int = 0
    grant_ns: int = 0
    copy_in_ns: int = 0
    dma_ns: int = 0
    wait_ns: int = 0
    copy_out_ns: int = 0
    unlock_ns: int = 0
    free_ns: int = 0
    dma_event_ns: int | None = None   #: device-event time of the DMA, where the runtime has events
    error: str = ""                   #: the runtime's answer that decided the path, e.g. "cudaErrorHostMemoryAlreadyRegistered (712)"
    hazard: str = ""                  #: what went wrong for someone else, seen by the harness (e.g. memory the
                                      #: application had pinned was unlocked by this transfer)
    verified: bool | None = None      #: bytes compared after the transfer; None = not checked
    calls: tuple[CallRecord, ...] = field(default=())

    @property
    def total_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def moved(self) -> bool:
        """Whether bytes were moved (a refused lock without fallback or a refused copy moves none)."""
        return self.event == "transfer" and self.path not in ("lock_failed_error", "copy_failed")

    @property
    def waited(self) -> bool:
        """Whether the transfer waited for its copy (asynchronous paths leave that to ``sync``)."""
        return self.wait_ns > 0
