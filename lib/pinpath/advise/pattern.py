"""The transfer pattern of a trace: per transfer its buffer's reuse and whether it is the
buffer's first use; per buffer its size and how often it moves; the (size, direction, reuse)
classes the replay samples; the size distribution and the regions. Written as a data set.

A buffer is one host pointer (HstPtr). An array is the union of buffers whose ranges overlap:
``target update from(g[nx:nx])`` copies a row of the array ``g`` from a pointer inside it, and it
is ``g`` as a whole that an application registers and that a runtime maps (and locks, with
LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS). One-off costs are charged per array.

Every buffer has an ``owner`` (``owner_of``): "application" (heap or global memory: an array the
user can register), "stack" (a local variable: x86-64 Linux puts the main thread's stack at the top
of the address space, above every mmap) or "runtime" (the runtime's own, e.g. LLVM's
``KernelLaunchEnv``, copied at the launch of a kernel with a reduction). Only the first are arrays
a user can act on; the others are moved as the runtime moves them under every variant.

Where the trace has bit 8's map lines (``Trace.has_maps``), ``maps`` holds each map entry made and
removed with its array, and an array mapped inside the steps (``remapped``: `target enter data` /
`exit data` every step, as species.cpp does) keeps its copies' ``at`` (map, unmap): the runtime term
is probed as those directives make them and each map and unmap is charged where it happens. An
array mapped once (at setup) has its copies' ``at`` cleared: they are probed as updates."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .parse import Trace

__all__ = ["Pattern", "pattern", "reuse_bin", "pow2_floor", "write_dataset", "owner_of", "host_address", "OWNERS", "MAX_CLASSES"]

MAX_CLASSES = 64   #: beyond this many classes, sizes are binned by powers of two too
OWNERS = ("application", "stack", "runtime")
RUNTIME_NAMES = frozenset({"KernelLaunchEnv"})   #: names libomptarget gives its own copies (LLVM 19 plugins)
#: x86-64 Linux: the main thread's stack top is 2**47 less at most 16 GiB of randomisation, and every
#: mmap lies below it by at least the stack limit; small buffers at or above this address are on the stack
STACK_FLOOR = 0x7FFB_0000_0000
STACK_CEILING = 1 << 47
STACK_MAX_NBYTES = 1 << 20   #: a larger buffer up there is taken to be mapped memory (an application's)


def owner_of(ptr: str, nbytes: int, name: str) -> str:
    """Whose memory a copied host buffer is: "runtime", "stack" or "application" (see the module)."""
    if name in RUNTIME_NAMES:
        return "runtime"
    a = host_address(ptr)
    return "stack" if STACK_FLOOR <= a < STACK_CEILING and nbytes <= STACK_MAX_NBYTES else "application"


def pow2_floor(n) -> np.ndarray:
    """Each value rounded down to a power of two (values below 1 count as 1)."""
    n = np.maximum(np.asarray(n, dtype=np.int64), 1)
    return (1 << np.floor(np.log2(n)).astype(np.int64)).astype(np.int64)


def reuse_bin(reuse) -> np.ndarray:
    """A buffer's transfer count rounded down to a power of two (1, 2, 4, 8 ...): its reuse class."""
    return pow2_floor(reuse)


@dataclass
class Pattern:
    trace: Trace
    transfers: pd.DataFrame   # TRACE_COPIES + reuse, reuse_class, use (0: buffer's first transfer), class_nbytes,
                              # array, owner
    buffers: pd.DataFrame     # buffer, name, nbytes (largest copy), transfers, h2d, d2h, moved_nbytes, reuse_class, array,
                              # owner
    arrays: pd.DataFrame      # array, name, nbytes (the union's extent), buffers, transfers, h2d, d2h, moved_nbytes,
                              # first_region, last_region, owner
    classes: pd.DataFrame     # nbytes, direction, reuse: what the replay samples; transfers, buffers
    sizes: pd.DataFrame       # size distribution by power-of-two bin: bin_nbytes, direction, transfers, moved_nbytes
    regions: pd.DataFrame     # region, step, segment, transfers, h2d, d2h, moved_nbytes
    size_binned: bool = False
    maps: pd.DataFrame | None = None   # TRACE_MAPS + array ("" where no copied array holds it), owner, remapped


def pattern(trace: Trace, *, max_classes: int = MAX_CLASSES) -> Pattern:
    """The pattern of ``trace``'s copies (a trace without sizes gives empty buffers and classes)."""
    t = trace.copies.copy()
    if not trace.has_sizes:
        empty = pd.DataFrame()
        sizes = t.groupby("direction").size().rename("transfers").reset_index() if len(t) else empty
        return Pattern(trace, t, empty, empty, empty, sizes, _regions(t))
    t["nbytes"] = t.nbytes.astype(np.int64)
    # a copy without a host pointer is its own buffer
    key = t.buffer.where(t.buffer != "", "copy#" + t.seq.astype(str))
    t["buffer"] = key
    counts = t.groupby("buffer", sort=False).seq.transform("size")
    t["reuse"] = counts.astype(np.int64)
    t["reuse_class"] = reuse_bin(t.reuse)
    t["use"] = (t.groupby("buffer", sort=False).cumcount() > 0).astype(np.int64)
    size_binned = t.groupby(["nbytes", "direction", "reuse_class"]).ngroups > max_classes
    t["class_nbytes"] = pow2_floor(t.nbytes) if size_binned else t.nbytes
    g = t.groupby("buffer", sort=False)
    buffers = pd.DataFrame({"name": g.name.agg(lambda s: s.mode().iat[0] if len(s) else ""),
                            "nbytes": g.nbytes.max(), "transfers": g.size(),
                            "h2d": g.direction.agg(lambda s: int((s == "h2d").sum())),
                            "d2h": g.direction.agg(lambda s: int((s == "d2h").sum())),
                            "moved_nbytes": g.nbytes.sum(), "first_seq": g.seq.min(),
                            "first_region": g.region.first(), "last_region": g.region.last()}).reset_index()
    buffers["reuse_class"] = reuse_bin(buffers.transfers)
    buffers["array"] = _arrays_of(buffers)
    buffers["owner"] = [owner_of(b, n, nm) for b, n, nm in zip(buffers.buffer, buffers.nbytes, buffers.name)]
    t["array"] = t.buffer.map(buffers.set_index("buffer").array)
    ga = t.groupby("array", sort=False)
    arrays = pd.DataFrame({"buffers": ga.buffer.nunique(), "transfers": ga.size(),
                           "h2d": ga.direction.agg(lambda s: int((s == "h2d").sum())),
                           "d2h": ga.direction.agg(lambda s: int((s == "d2h").sum())),
                           "moved_nbytes": ga.nbytes.sum(), "first_region": ga.region.first(),
                           "last_region": ga.region.last()}).reset_index()
    ext = buffers.assign(start=buffers.buffer.map(host_address)).assign(end=lambda b: b.start + b.nbytes)
    span = ext.groupby("array").agg(start=("start", "min"), end=("end", "max"))
    arrays["nbytes"] = arrays.array.map(span.end - span.start).astype(np.int64)
    big = t.sort_values("nbytes", ascending=False, kind="stable").drop_duplicates("array").set_index("array")
    arrays["name"] = arrays.array.map(big.name)   # the name of its largest copy
    # an array is the application's only where all its buffers are
    worst = buffers.groupby("array").owner.agg(lambda s: max(s, key=OWNERS.index))
    arrays["owner"] = arrays.array.map(worst)
    t["owner"] = t.array.map(worst)
    classes = (t.groupby(["class_nbytes", "direction", "reuse_class"])
               .agg(transfers=("seq", "size"), buffers=("buffer", "nunique")).reset_index()
               .rename(columns={"class_nbytes": "nbytes", "reuse_class": "reuse"}))
    # the replay also needs every array's size for its registration and map costs
    a_nb = pow2_floor(arrays.nbytes) if size_binned else arrays.nbytes.to_numpy()
    extra = ~pd.Series(a_nb).isin(classes.nbytes).to_numpy()
    if extra.any():
        ex = pd.DataFrame({"nbytes": a_nb[extra], "direction": "h2d", "reuse": 1, "transfers": 0, "buffers": 0})
        classes = pd.concat([classes, ex.drop_duplicates("nbytes")], ignore_index=True)
    maps = _maps(trace.maps, buffers, arrays)
    remapped = set(maps.array[maps.remapped]) if len(maps) else set()
    arrays["remapped"] = arrays.array.isin(remapped)
    arrays["maps"] = arrays.array.map(maps[maps.event == "map"].groupby("array").size()).fillna(0).astype(np.int64) \
        if len(maps) else np.int64(0)
    t["at"] = t["at"].where(t.array.isin(remapped), "") if "at" in t.columns else ""
    t["bin_nbytes"] = pow2_floor(t.nbytes)
    sizes = (t.groupby(["bin_nbytes", "direction"]).agg(transfers=("seq", "size"), moved_nbytes=("nbytes", "sum"))
             .reset_index())
    return Pattern(trace, t, buffers, arrays, classes.sort_values(["nbytes", "direction", "reuse"], ignore_index=True),
                   sizes, _regions(t), size_binned, maps)


def _maps(maps: pd.DataFrame, buffers: pd.DataFrame, arrays: pd.DataFrame) -> pd.DataFrame:
    """The trace's map lines with the array that holds each one's host pointer ("" where no copied
    array does: memory mapped and never copied, which no prediction charges), its owner, and
    ``remapped``: the array has map entries made inside the steps (segment invocation), two or more
    of them where the trace has no step markers (there every line is in that segment: an array
    mapped once is mapped before its regions, not in each)."""
    m = maps.copy()
    if not len(m):
        return m.assign(array=pd.Series(dtype=str), owner=pd.Series(dtype=str), remapped=pd.Series(dtype=bool))
    start = arrays.array.map(host_address).to_numpy()
    end = start + arrays.nbytes.to_numpy()
    order = np.argsort(start, kind="stable")
    a = np.array([host_address(b) for b in m.buffer])
    i = np.searchsorted(start[order], a, side="right") - 1
    ok = (i >= 0) & (a < end[order][np.maximum(i, 0)])
    m["array"] = np.where(ok, arrays.array.to_numpy()[order][np.maximum(i, 0)], "")
    m["owner"] = m.array.map(arrays.set_index("array").owner).fillna("")
    inside = m[(m.event == "map") & (m.segment == "invocation") & (m.array != "")].array.value_counts()
    marked = bool((maps.step >= 0).any()) or bool((maps.segment != "invocation").any())
    m["remapped"] = m.array.isin(set(inside[inside >= (1 if marked else 2)].index))
    return m


def host_address(ptr: str) -> int:
    """A host pointer as a number; a copy without one (``copy#N``) a negative one of its own."""
    try:
        return int(ptr, 16)
    except ValueError:   # a copy without a host pointer: its own array, far from any other
        return -1 - int(ptr.removeprefix("copy#"))


def _arrays_of(buffers: pd.DataFrame) -> np.ndarray:
    """Each buffer's array: the lowest pointer of the run of overlapping ranges it belongs to."""
    start = buffers.buffer.map(host_address).to_numpy()
    end = start + buffers.nbytes.to_numpy()
    order = np.argsort(start, kind="stable")
    out = np.empty(len(order), dtype=object)
    head, reach = None, None
    for i in order:
        if head is None or start[i] >= reach or start[i] < 0:
            head, reach = buffers.buffer.iat[i], end[i]
        else:
            reach = max(reach, end[i])
        out[i] = head
    return out


def _regions(t: pd.DataFrame) -> pd.DataFrame:
    if not len(t):
        return pd.DataFrame(columns=["region", "step", "segment", "transfers", "h2d", "d2h", "moved_nbytes"])
    return (t.assign(h2d=(t.direction == "h2d").astype(int), d2h=(t.direction == "d2h").astype(int),
                     moved=t.nbytes.astype("float"))
            .groupby(["region", "step", "segment"], sort=False)
            .agg(transfers=("seq", "size"), h2d=("h2d", "sum"), d2h=("d2h", "sum"), moved_nbytes=("moved", "sum"))
            .reset_index())


def write_dataset(p: Pattern, out: Path | str) -> list[Path]:
    """The pattern as a small data set a user can share: ``pattern/<table>.parquet`` and ``.csv``
    for transfers, buffers, arrays, classes, sizes and regions (and maps, where the trace has them).
    The paths written."""
    d = Path(out) / "pattern"
    d.mkdir(parents=True, exist_ok=True)
    written = []
    for name in ("transfers", "buffers", "arrays", "classes", "sizes", "regions", "maps"):
        df = getattr(p, name)
        if df is None or (name == "maps" and not len(df)):
            continue
        if name == "transfers" and len(df):
            df = df.drop(columns=[c for c in ("class_nbytes", "bin_nbytes") if c in df.columns])
        df = df.reset_index(drop=True)
        df.to_parquet(d / f"{name}.parquet", index=False)
        df.to_csv(d / f"{name}.csv", index=False)
        written += [d / f"{name}.parquet", d / f"{name}.csv"]
    return written
