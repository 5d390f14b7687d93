"""What each notebook will hold and lock at its peak, from its parameters, so that a run is
checked against the machine before it starts: host memory against what Linux says is
available, locked memory (the host platform's mlock) against RLIMIT_MEMLOCK.

A size that came from a preset file and does not fit is left out (lists lose their largest
sizes, single sizes are halved) with a notice; a size the user gave explicitly is refused."""

from __future__ import annotations

from typing import Any, Callable

from . import osinfo
from .errors import BadParameter
from .kernels import out_nbytes
from .units import KiB, binary_size, fmt_nbytes

__all__ = ["NEEDS", "needs", "fit", "SHRINKABLE"]

_MIN_NBYTES = 4 * KiB


def _s(p, name, default=0):
    v = p.get(name, default)
    return v if isinstance(v, list) else [v]


def _peak(p, name, default=0):
    return max(_s(p, name, default) or [0])


# Locked bytes of the replica on the host platform, in multiples of its D2H (out_nbytes), from
# VmLck measured after every lock (tests/test_budget.py keeps these above what is measured):
# all policies at one nw hold about 5.2 of them; the policies that keep mapped buffers locked,
# about 2 per walker count they map at once; _SLACK covers the small H2D buffers.
_MAIN, _MAPPED, _SLACK = 6, 2.2, 64 * KiB


def _mapped(nws) -> int:
    return int(_MAPPED * sum(out_nbytes(nw) for nw in nws)) + _SLACK


def _replica_locked(p) -> int:
    return _mapped(_s(p, "NW_VALUES"))


#: notebook -> parameters (its defaults, the preset's values over them) -> (host bytes held at the peak,
#: bytes locked at the peak on the host platform)
NEEDS: dict[str, Callable[[dict], tuple[int, int]]] = {
    "00_platform": lambda p: (2 * sum(_s(p, "SIZES_NBYTES")), sum(_s(p, "SIZES_NBYTES"))),
    "01_c12_lock_copy": lambda p: (2 * p.get("NBYTES", 0), p.get("NBYTES", 0)),
    # the cold arm's memory written between transfers (02, 05, 06: EVICT_NBYTES) is held after the hot sweep's buffers went
    "02_c2_staging": lambda p: (3 * sum(_s(p, "SIZES_NBYTES")) + p.get("EVICT_NBYTES", 0),
                                sum(_s(p, "SIZES_NBYTES")) + _peak(p, "SIZES_NBYTES")),
    "03_c6_c7_c9_lock_cost": lambda p: ((len(_s(p, "KINDS")) + 1) * sum(_s(p, "SIZES_NBYTES")),
                                       sum(_s(p, "SIZES_NBYTES")) + _peak(p, "SIZES_NBYTES")),
    "04_c1_offload_region": lambda p: (40 * out_nbytes(max(_s(p, "NW") + _s(p, "SWEEP_NW"))),
                                      max(_MAIN * out_nbytes(_peak(p, "NW")),
                                          _mapped([_peak(p, "SWEEP_NW")]))),
    "05_c3_c5_lock_or_stage": lambda p: (3 * sum(_s(p, "SIZES_NBYTES")) + 20 * sum(_s(p, "KIND_NBYTES"))
                                         + p.get("EVICT_NBYTES", 0),
                                        2 * _peak(p, "SIZES_NBYTES") + 4 * sum(_s(p, "KIND_NBYTES"))),
    "06_c4_query_vs_lock": lambda p: (5 * sum(_s(p, "SIZES_NBYTES")) + p.get("EVICT_NBYTES", 0),
                                      3 * sum(_s(p, "SIZES_NBYTES")) + _peak(p, "SIZES_NBYTES")),
    "07_c8_semantics": lambda p: (64 * KiB, 64 * KiB),
    "08_c10_api_stats": lambda p: (8 * out_nbytes(p.get("NW", 0)), _mapped([p.get("NW", 0)])),
    "09_c11_hazard_limits": lambda p: (3 * max(p.get("HAZARD_NBYTES", 0), p.get("RACE_NBYTES", 0))
                                       + 8 * out_nbytes(p.get("NW", 0)),
                                       max(2 * p.get("HAZARD_NBYTES", 0), p.get("RACE_NBYTES", 0),
                                           _mapped([p.get("NW", 0)]))),
    "10_c13_concurrency": lambda p: (4 * _peak(p, "THREADS") * p.get("NBYTES", 0),
                                     2 * _peak(p, "THREADS") * p.get("NBYTES", 0)),
    "11_c14_tracked_locking": lambda p: (3 * sum(_s(p, "COPY_NBYTES")) + 40 * out_nbytes(_peak(p, "NW_VALUES")),
                                         max(_peak(p, "COPY_NBYTES"), _replica_locked(p))),
    "13_real_runtime": lambda p: (40 * out_nbytes(_peak(p, "NW_VALUES")), _replica_locked(p)),
    "12_c15_overlap": lambda p: (4 * p.get("CHAINS", 0) * p.get("NBYTES", 0), 2 * p.get("CHAINS", 0) * p.get("NBYTES", 0)),
    # one buffer (and a copy destination) at a time; the allocator's N allocations held, and N 4 KiB registrations;
    # the cache section's buffer, its pinned copy or staging buffer and destination, and the memory written to evict it
    "14_state_effects": lambda p: (_peak(p, "AGE_NBYTES") + 2 * max(_peak(p, "BACKING_NBYTES"), _peak(p, "COPY_NBYTES"))
                                   + (_peak(p, "LIVE_COUNTS") + 1) * _peak(p, "ALLOC_NBYTES")
                                   + 3 * _peak(p, "CACHE_NBYTES") + p.get("EVICT_NBYTES", 0),
                                   max(_peak(p, "AGE_NBYTES"), _peak(p, "BACKING_NBYTES"), _peak(p, "COPY_NBYTES"),
                                       2 * _peak(p, "CACHE_NBYTES"),
                                       (_peak(p, "LIVE_COUNTS") + 1) * max(_peak(p, "ALLOC_NBYTES"), 4 * KiB))),
}
#: the size parameters that may be shrunk to fit, per notebook
SHRINKABLE = ("SIZES_NBYTES", "KIND_NBYTES", "COPY_NBYTES", "NBYTES", "HAZARD_NBYTES", "AGE_NBYTES", "ALLOC_NBYTES",
              "BACKING_NBYTES", "RACE_NBYTES", "CACHE_NBYTES", "COLD_NBYTES")


def _any_notebook(p: dict) -> tuple[int, int]:
    """A notebook not in NEEDS: at least every size it names, held at once; the largest locked."""
    sizes = [v for n, val in p.items() if n.endswith("NBYTES") for v in _s(p, n)]
    return sum(sizes), max(sizes, default=0)


def needs(stem: str, params: dict[str, Any]) -> tuple[int, int]:
    """(host bytes, locked bytes) notebook ``stem`` holds at its peak."""
    return NEEDS.get(stem, _any_notebook)(params)


def _shrink(params: dict[str, Any], explicit: set[str]) -> tuple[str, Any] | None:
    """One step smaller: the largest size of a size list, or half a single size; None if nothing
    the preset set may shrink further."""
    for name in SHRINKABLE:
        v = params.get(name)
        if name in explicit or v is None:
            continue
        if isinstance(v, list) and len(v) > 1:
            return name, v[:-1]
        if isinstance(v, int) and v // 2 >= _MIN_NBYTES:
            return name, v // 2
    return None


def fit(stem: str, params: dict[str, Any], *, lock_checked: bool, explicit: set[str], where: str,
        set_where: str | None = None) -> tuple[dict, list[str]]:
    """``params`` shrunk until the notebook fits in available memory (and, where
    ``lock_checked``, in what this process may lock); the notices saying what was left out.
    BadParameter when a size given explicitly (on the command line: ``set_where``) does not fit,
    or nothing more can be left out (``where``: the preset file's section)."""
    avail = osinfo.meminfo_nbytes("MemAvailable") or osinfo.meminfo_nbytes("MemTotal")
    lockable = osinfo.lockable_nbytes() if lock_checked else -1
    p, first_why = dict(params), ""
    while True:
        host, locked = needs(stem, p)
        over_mem = avail and host > avail
        over_lock = lockable >= 0 and locked > lockable
        if not (over_mem or over_lock):
            break
        why = (f"needs about {binary_size(host)} of memory, {binary_size(avail)} is available" if over_mem else
               f"would lock about {binary_size(locked)}, and this user may lock {binary_size(lockable)} more "
               "(RLIMIT_MEMLOCK; raise it with `ulimit -l` or in /etc/security/limits.conf)")
        first_why = first_why or why
        step = _shrink(p, explicit)
        if step is None:
            named = sorted(explicit & set(SHRINKABLE))
            raise BadParameter(f"{set_where if named and set_where else where}: {', '.join(named or ['its sizes'])} "
                               f"cannot run here: the notebook {why}")
        p[step[0]] = step[1]
    if not first_why:
        return p, []

    def shown(v):
        return "[" + ", ".join(fmt_nbytes(x) for x in v) + "]" if isinstance(v, list) else fmt_nbytes(v)
    changed = "; ".join(f"{n} {shown(params[n])} -> {shown(p[n])}" for n in SHRINKABLE if p.get(n) != params.get(n))
    return p, [f"{stem}: left out {changed}, because with them the notebook {first_why}"]
