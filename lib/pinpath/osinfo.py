"""What Linux says about this process's memory: VMAs and their flags, locked bytes, limits."""

from __future__ import annotations

import resource
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Vma", "find_vma", "vmlck_nbytes", "memlock_limit_nbytes", "thp_mode", "meminfo_nbytes"]


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


def find_vma(ptr: int) -> Vma | None:
    """The VMA of this process that holds ``ptr``, read from /proc/self/smaps."""
    with open("/proc/self/smaps", "rb") as f:
        lines = f.read().split(b"\n")
    i, n = 0, len(lines)
    while i < n:
        head = lines[i]
        i += 1
        if not head or b"-" not in head.split(b" ", 1)[0]:
            continue
        rng, rest = head.split(b" ", 1)
        lo, hi = (int(x, 16) for x in rng.split(b"-"))
        if not lo <= ptr < hi:
            continue
        fields: dict[bytes, bytes] = {}
        while i < n and lines[i] and b":" in lines[i].split(b" ", 1)[0]:
            key, _, val = lines[i].partition(b":")
            fields[key] = val.strip()
            i += 1
        parts = rest.split(None, 4)

        def kib(key: bytes) -> int:
            return int(fields.get(key, b"0 kB").split()[0]) * 1024

        return Vma(lo, hi, parts[0].decode(), tuple(fields.get(b"VmFlags", b"").decode().split()),
                   kib(b"AnonHugePages"), kib(b"Locked"), kib(b"KernelPageSize"),
                   parts[4].decode().strip() if len(parts) > 4 else "")
    return None


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
