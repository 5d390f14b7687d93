"""What Linux says about this process's memory: VMAs and their flags, locked bytes, limits."""

from __future__ import annotations

import resource
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Vma", "vmas", "find_vma", "backing", "locked_ranges", "vmlck_nbytes", "memlock_limit_nbytes",
           "lockable_nbytes", "has_cap_ipc_lock", "thp_mode", "meminfo_nbytes"]

HUGE_PAGE_NBYTES = 2 << 20


@dataclass(frozen=True, slots=True)
class Vma:
    start: int
    end: int
    perms: str
    flags: tuple[str, ...]       #: VmFlags, e.g. ("rd", "wr", "lo") - "lo" means mlocked
    anon_huge_nbytes: int        #: AnonHugePages (THP) inside the VMA
    locked_nbytes: int           #: Locked: inside the VMA
    kernel_page_nbytes: int      #: KernelPageSize (2 MiB on hugetlbfs mappings)
    pathname: str

    @property
    def locked(self) -> bool:
        return "lo" in self.flags


def vmas(ptr: int | None = None):
    """The VMAs of this process from /proc/self/smaps, in address order; with ``ptr`` only the
    one that holds it (the file is read up to there: the kernel walks each VMA's pages as its
    lines are read, and a process with a GPU runtime has thousands of them)."""
    with open("/proc/self/smaps", "rb") as f:
        head = f.readline()
        while head:
            rng, _, rest = head.partition(b" ")
            lo, hi = (int(x, 16) for x in rng.split(b"-"))
            fields: dict[bytes, bytes] = {}
            head = f.readline()
            while head and b"-" not in head.partition(b" ")[0]:
                key, _, val = head.partition(b":")
                fields[key] = val.strip()
                head = f.readline()
            if ptr is not None and not lo <= ptr < hi:
                continue
            parts = rest.split(None, 4)

            def kib(key: bytes) -> int:
                return int(fields.get(key, b"0 kB").split()[0]) * 1024

            yield Vma(lo, hi, parts[0].decode(), tuple(fields.get(b"VmFlags", b"").decode().split()),
                      kib(b"AnonHugePages"), kib(b"Locked"), kib(b"KernelPageSize"),
                      parts[4].decode().strip() if len(parts) > 4 else "")
            if ptr is not None:
                return


def find_vma(ptr: int) -> Vma | None:
    """The VMA of this process that holds ``ptr``."""
    return next(vmas(ptr), None)


def backing(ptr: int, nbytes: int) -> str:
    """What backs ``[ptr, ptr+nbytes)`` as Linux reports it: "hugetlbfs" (2 MiB pages of a
    hugetlbfs mapping), "thp" (transparent huge pages make up at least half of the buffer's
    size in its VMA), "file", "4k", or "unknown"."""
    vma = find_vma(ptr)
    if vma is None:
        return "unknown"
    if vma.kernel_page_nbytes >= HUGE_PAGE_NBYTES:
        return "hugetlbfs"
    if vma.anon_huge_nbytes * 2 >= min(nbytes, vma.end - vma.start):
        return "thp"
    if vma.pathname.startswith("/") and not vma.pathname.startswith("/dev/"):
        return "file"
    return "4k"


def locked_ranges() -> list[tuple[int, int]]:
    """[start, end) of every VMA Linux has locked (VmFlags ``lo``): mlock splits VMAs at the
    lock's page boundaries, so this is page-exact."""
    return [(v.start, v.end) for v in vmas() if v.locked]


def _status_kib(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def vmlck_nbytes() -> int:
    """Bytes this process has locked (VmLck of /proc/self/status)."""
    return _status_kib("VmLck")


def memlock_limit_nbytes() -> tuple[int, int]:
    """RLIMIT_MEMLOCK (soft, hard) in bytes; -1 means unlimited."""
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    inf = resource.RLIM_INFINITY
    return (-1 if soft == inf else soft, -1 if hard == inf else hard)


def has_cap_ipc_lock() -> bool:
    """Whether this process may lock memory beyond RLIMIT_MEMLOCK (CAP_IPC_LOCK, bit 14)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> 14 & 1)
    return False


def lockable_nbytes() -> int:
    """How much more memory this process may lock with mlock: -1 without a limit (no
    RLIMIT_MEMLOCK, or CAP_IPC_LOCK), else the soft limit minus what is locked already."""
    soft, _ = memlock_limit_nbytes()
    if soft < 0 or has_cap_ipc_lock():
        return -1
    return max(0, soft - vmlck_nbytes())


def thp_mode() -> str:
    """The bracketed word of /sys/kernel/mm/transparent_hugepage/enabled, or 'unavailable'."""
    try:
        text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return "unavailable"
    return text[text.find("[") + 1:text.find("]")] if "[" in text else text.strip()


def meminfo_nbytes(key: str = "MemTotal") -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0
