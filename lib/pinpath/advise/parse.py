"""An application's transfer trace, read from one of three files, into one frame of copies.

* the stderr of a run with ``LIBOMPTARGET_INFO=32`` (or 48, which adds kernel launches): every
  copy with direction, size and host pointer (``pinpath.ompinfo``); with bit 8 too (40 or 56), every
  map entry made and removed, hence which copies a map or an unmap made (``at``) and how often each
  buffer is mapped (``Trace.maps``);
* a rocprofv3 ``--memory-copy-trace`` CSV. Its columns, as rocprofiler-sdk writes them
  (source/lib/output/generateCSV.cpp at 00f9d2cbd4f7fb25412efa0ad8ba1ef94415d292, and
  source/docs/data/memory_copy_trace.csv at a6af0d409217775fda5ae3ec46df5120ab9d794a):
  Kind, Direction, Stream_Id, Source_Agent_Id, Destination_Agent_Id, Correlation_Id,
  Start_Timestamp, End_Timestamp; the older documentation (docs/rocprofv3.md) shows the same
  without Stream_Id and with directions written HOST_TO_DEVICE. No size and no host pointer;
* rocprof's summary ``hsa_stats.csv`` (``report.rocprof.read_stats``): calls per HSA function.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .. import ompinfo
from ..errors import BadParameter
from ..safeio import read_text
from ..report.rocprof import V1_HEADER, read_stats
from ..schema import frame

__all__ = ["TRACE_COPIES", "TRACE_MAPS", "Trace", "read_trace", "FORMATS"]

FORMATS = ("libomptarget-info", "rocprofv3-memory-copy", "rocprof-hsa-stats")
TRACE_COPIES = {
    "seq": "int",            # order in the trace
    "segment": "str",        # setup, invocation, teardown (pinpath markers); "invocation" otherwise
    "region": "int",         # the offload region (invocation) the copy belongs to; -1 outside any
    "step": "int",           # the step where the trace says (pinpath markers), else -1
    "direction": "str",      # h2d, d2h (d2d and others from rocprofv3 are kept)
    "nbytes": "Int",         # <NA> where the trace has no sizes (rocprofv3)
    "buffer": "str",         # the host pointer (HstPtr): the same pointer is the same buffer; "" unknown
    "name": "str",           # the mapped variable as the compiler wrote it
    "duration_ns": "float",  # measured copy time where the trace has it (rocprofv3), else NaN
    "at": "str",             # "map": the copy of a map entry just made; "unmap": the last before its removal; else ""
}
TRACE_MAPS = {               # bit 8's lines: a map entry made (event map) or removed (unmap)
    "seq": "int",            # the number of copies before it: it comes before copy ``seq``
    "segment": "str", "region": "int", "step": "int",
    "event": "str",          # map, unmap
    "buffer": "str",         # HstPtrBegin
    "nbytes": "int",
    "name": "str",
    "copied": "bool?",       # the map (unmap) made a copy: the copy marked ``at`` map (unmap)
}
_V3_COLUMNS = ("Kind", "Direction", "Source_Agent_Id", "Destination_Agent_Id", "Correlation_Id",
               "Start_Timestamp", "End_Timestamp")
_V3_DIRECTIONS = {"HOST_TO_DEVICE": "h2d", "DEVICE_TO_HOST": "d2h", "DEVICE_TO_DEVICE": "d2d",
                  "HOST_TO_HOST": "h2h"}


@dataclass
class Trace:
    """What a trace file holds: its format, its copies (TRACE_COPIES), rocprof's call counts
    (hsa_stats only) and what can and cannot be inferred from it, in sentences."""
    path: str
    format: str
    copies: pd.DataFrame
    stats: pd.DataFrame | None = None
    maps: pd.DataFrame = field(default_factory=lambda: frame([], TRACE_MAPS))
    knows: list[str] = field(default_factory=list)
    lacks: list[str] = field(default_factory=list)

    @property
    def has_maps(self) -> bool:
        """Whether the trace says when buffers were mapped and unmapped (bit 8's lines)."""
        return bool(len(self.maps))

    @property
    def has_sizes(self) -> bool:
        return bool(len(self.copies)) and not self.copies.nbytes.isna().any()


MAX_TRACE_NBYTES = 1 << 30     #: a trace of 100,000 copies is 15 MB


def read_trace(path: str | Path) -> Trace:
    """The trace in ``path``, its format recognised from its content; BadParameter (one
    sentence naming the file) for a missing, empty, unknown or malformed file."""
    p = Path(path)
    if not p.is_file():
        raise BadParameter(f"{path}: no such trace file")
    text = read_text(p, MAX_TRACE_NBYTES, errors="replace")     # a regular file, not past the cap
    first = next((l.strip() for l in text.splitlines() if l.strip()), "")
    if not first:
        raise BadParameter(f"{path}: the trace file is empty")
    header = [c.strip().strip('"') for c in next(csv.reader([first]))]
    if header[:2] == ["Kind", "Direction"]:
        return _rocprofv3(str(path), text, header)
    if header[:len(V1_HEADER)] == list(V1_HEADER) or (len(header) in (5, 8) and _numeric(header[1:])):
        return _hsa_stats(str(path))
    return _libomptarget(str(path), text)


def _numeric(fields) -> bool:
    try:
        [float(f) for f in fields]
        return True
    except ValueError:
        return False


def _libomptarget(path: str, text: str) -> Trace:
    rows, maps, where, region, launches, marked = [], [], {"segment": "invocation", "step": -1}, 0, 0, False
    last = {}   # host pointer -> its latest event: ("map", maps row) or ("copy", rows row)
    try:
        found = list(ompinfo.events(text))
    except BadParameter as e:          # a number no int64 column holds (units.bounded_int)
        raise BadParameter(f"{path}: {e}") from None
    swapped = ompinfo.unswap_d2h(found)
    for kind, ev in found:
        if kind == "unreadable":
            what = "copy" if "Copying data" in ev["text"] else "map"
            raise BadParameter(f"{path}: line {ev['line']} is a libomptarget {what} line that cannot be read "
                               f"({ev['text'][:80]!r})")
        if kind == "marker":
            if not marked:   # pinpath markers delimit invocations: what came before is setup
                marked = True
                for r in rows + maps:
                    r.update(segment="setup", region=-1)
            where = {"segment": ev["segment"], "step": ev["step"]}
            region = ev["step"] * 1_000_000 + ev["invocation"] if ev["segment"] == "invocation" else -1
            last.clear()     # one directive never spans a marker
        elif kind == "launch":
            launches += 0 if marked else 1
            last.clear()     # a copy before a kernel and a map entry's removal after it are two directives
        elif kind == "copy":
            if not marked:   # an H2D belongs to the kernel launched next, a D2H to the one launched last
                region = launches if ev["direction"] == "h2d" else max(launches - 1, 0)
            row = {"seq": len(rows), **where, "region": region, "direction": ev["direction"],
                   "nbytes": ev["nbytes"], "buffer": ev["host_ptr"], "name": ev["name"],
                   "duration_ns": float("nan"), "at": ""}
            kind_before, before = last.get(ev["host_ptr"], ("", None))
            if kind_before == "map" and ev["direction"] == "h2d":   # the entry just made: its copy
                row["at"], before["copied"] = "map", True
            rows.append(row)
            last[ev["host_ptr"]] = ("copy", row)
        elif kind in ("map", "unmap"):
            if not marked:
                region = launches if kind == "map" else max(launches - 1, 0)
            row = {"seq": len(rows), **where, "region": region, "event": kind, "buffer": ev["host_ptr"],
                   "nbytes": ev["nbytes"], "name": ev["name"], "copied": False}
            kind_before, before = last.pop(ev["host_ptr"], ("", None))
            if kind == "unmap" and kind_before == "copy" and before["direction"] == "d2h" and not before["at"]:
                before["at"], row["copied"] = "unmap", True   # the copy back just before its removal
            maps.append(row)
            if kind == "map":
                last[ev["host_ptr"]] = ("map", row)
    if not rows:
        raise BadParameter(f"{path}: not a trace pinpath reads (no libomptarget 'Copying data' line of "
                           f"LIBOMPTARGET_INFO=32 or 40, no rocprofv3 memory-copy header, no rocprof stats header)")
    df, mp = frame(rows, TRACE_COPIES), frame(maps, TRACE_MAPS)
    if marked:   # invocations numbered 0.. in order of appearance (a map's by its copies' numbering)
        inv = df.region >= 0
        codes, uniques = pd.factorize(df.region[inv])
        number = dict(zip(uniques, range(len(uniques))))
        df.loc[inv, "region"] = codes
        mp["region"] = [number.get(r, -1) if r >= 0 else -1 for r in mp.region]
    regions = ("pinpath's region markers (one region per invocation, steps from the markers)" if marked
               else f"kernel launches ({launches} seen: an H2D belongs to the next launch, a D2H to the last)"
               if launches else "")
    knows = ["direction, size and host pointer of every copy (the same HstPtr is the same buffer)",
             "the mapped variable's name"]
    lacks = ["the time each copy took (LIBOMPTARGET_INFO prints no times)"]
    if len(mp):
        knows.append(f"when each buffer was mapped and unmapped ({int((mp.event == 'map').sum())} map entries made, "
                     f"{int((mp.event == 'unmap').sum())} removed), so which copies a map or an unmap made")
    else:
        lacks.append("when a buffer was mapped or unmapped (bit 32 prints copies only; LIBOMPTARGET_INFO=40 adds "
                     "bit 8's map entries): each array is charged one map and one unmap")
    if swapped:
        knows.append("that this libomptarget printed each device-to-host copy's pointers the wrong way round "
                     "(LLVM 18; fixed in LLVM 19): they are read as meant, as its other lines show")
    if regions:
        knows.append(f"regions, from {regions}")
    else:
        lacks.append("regions: no kernel launch line (run with LIBOMPTARGET_INFO=48 to get them), so the "
                     "whole trace is one region")
    return Trace(path, FORMATS[0], df, maps=mp, knows=knows, lacks=lacks)


def _rocprofv3(path: str, text: str, header: list[str]) -> Trace:
    missing = [c for c in _V3_COLUMNS if c not in header]
    if missing:
        raise BadParameter(f"{path}: a rocprofv3 memory-copy CSV needs the column(s) {', '.join(missing)}")
    try:
        df = pd.read_csv(io.StringIO(text), dtype={"Direction": str, "Kind": str}, keep_default_na=False)
        start = pd.to_numeric(df.Start_Timestamp, errors="raise")
        end = pd.to_numeric(df.End_Timestamp, errors="raise")
    except (ValueError, pd.errors.ParserError) as e:
        raise BadParameter(f"{path}: a rocprofv3 memory-copy CSV with a row that cannot be read "
                           f"({str(e).splitlines()[0][:80]})") from None
    copy = df.Kind.str.strip() == "MEMORY_COPY"
    direction = df.Direction.str.strip().str.removeprefix("MEMORY_COPY_").map(_V3_DIRECTIONS)
    bad = copy & direction.isna()
    if bad.any():
        raise BadParameter(f"{path}: row {int(bad.idxmax()) + 2} has the unknown copy direction "
                           f"{df.Direction[bad.idxmax()]!r}")
    if ((end - start) < 0).any():
        raise BadParameter(f"{path}: row {int(((end - start) < 0).idxmax()) + 2} ends before it starts")
    if not copy.any():
        raise BadParameter(f"{path}: a rocprofv3 CSV without a MEMORY_COPY row")
    order = start[copy].sort_values(kind="stable").index
    rows = pd.DataFrame({"seq": range(len(order)), "segment": "invocation", "region": 0, "step": -1,
                         "direction": direction[order].to_numpy(), "nbytes": pd.NA, "buffer": "", "name": "",
                         "duration_ns": (end - start)[order].to_numpy(dtype=float), "at": ""})
    return Trace(path, FORMATS[1], frame(rows.to_dict("records"), TRACE_COPIES),
                 knows=["direction and measured duration of every copy the GPU's engines ran (on the node traced)"],
                 lacks=["sizes: rocprofv3's memory-copy CSV has no size column, so no copy can be replayed",
                        "host buffers: no host pointer, so reuse per buffer is unknown",
                        "regions: no kernel launches in this file"])


def _hsa_stats(path: str) -> Trace:
    stats = read_stats(path)
    return Trace(path, FORMATS[2], frame([], TRACE_COPIES), stats=stats,
                 knows=["how many times each HSA function was called and their total time: copies "
                        "(hsa_amd_memory_async_copy*), locks and unlocks (hsa_amd_memory_lock*/unlock), "
                        "pointer queries (hsa_amd_pointer_info), hence locks per copy"],
                 lacks=["sizes, directions, host buffers and regions: a summary has counts and times only, "
                        "so nothing can be replayed"])
