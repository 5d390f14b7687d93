"""The lines LLVM's libomptarget prints under ``LIBOMPTARGET_INFO`` (and pinpath's own region
markers), read once for notebook 13 (experiments.real_runtime) and ``pinpath advise``.

Bit 32 (0x20) prints every copy (LLVM 19: offload/src/OpenMP/Mapping.cpp printCopyInfoImpl; the
plugin layer prints the same words for its kernel launch environment):

  omptarget device 0 info: Copying data from host to device, HstPtr=0x..., TgtPtr=0x..., Size=384, Name=pos[0:pos_len]
  omptarget device 0 info: Copying data from device to host, TgtPtr=0x..., HstPtr=0x..., Size=245760, Name=out[0:out_len]

(older releases: "Libomptarget device 0 info: ..."). LLVM 18's Mapping.cpp printed a device-to-host
copy's two pointers the wrong way round (printCopyInfo passed the host pointer as the source
whatever the direction; fixed by llvm-project pull request 85444, March 2024, before LLVM 19): its
"TgtPtr=" is the host pointer and its "HstPtr=" the device's. ``unswap_d2h`` recognises such a
trace by the pointers its other lines give and reads it as meant. Bit 16 (0x10) prints each kernel launch
(llvm-project offload/test/offloading/small_trip_count.c, run with LIBOMPTARGET_INFO=16):

  PluginInterface device 0 info: Launching kernel __omp_offloading_..._main_l12 with 4 blocks and 32 threads in SPMD mode
  CUDA device 0 info: Launching kernel ... with 4 blocks and 32 threads in Generic mode   (older releases)

The same bit makes LLVM's CUDA plugin say, once per device it starts, how it found the primary
context (offload/plugins-nextgen/cuda/src/rtl.cpp, CUDADeviceTy::initImpl): inactive, and it sets
the context's wait mode to CU_CTX_SCHED_BLOCKING_SYNC, or already active, flags kept, with a warning
where they are not blocking sync:

  CUDA device 0 info: The primary context is inactive, set its flags to CU_CTX_SCHED_BLOCKING_SYNC
  CUDA device 0 info: The primary context is active, no change to its flags
  CUDA device 0 info: Warning: The current flags are not CU_CTX_SCHED_BLOCKING_SYNC

Bit 8 (0x08, OMP_INFOTYPE_MAPPING_CHANGED) prints each map entry made and removed (LLVM 19:
offload/src/OpenMP/Mapping.cpp getTargetPointer and eraseMapEntry; releases before 17 print no
TgtAllocBegin): a `target enter data`, a region's map or a `target exit data` that creates or
removes the entry, with the copy (bit 32) between them where the map copies:

  omptarget device 0 info: Creating new map entry with HstPtrBase=0x..., HstPtrBegin=0x..., TgtAllocBegin=0x..., TgtPtrBegin=0x..., Size=64, DynRefCount=1, HoldRefCount=0, Name=p[0:m]
  omptarget device 0 info: Removing map entry with HstPtrBegin=0x..., TgtPtrBegin=0x..., Size=64, Name=p[0:m]
"""

from __future__ import annotations

import re
from typing import Iterator

from .units import bounded_int

MAX_STEP, MAX_INVOCATION = (1 << 31) - 1, 999_999      #: a region is numbered step * 1e6 + invocation
MAX_NBYTES, MAX_DEVICE = 1 << 50, 1 << 16             #: a petabyte; devices of one node

__all__ = ["DIRECTION", "MARK_RE", "COPY_RE", "MAP_RE", "LAUNCH_RE", "CONTEXT_RE", "events", "unswap_d2h",
           "context_wait"]

DIRECTION = {"host": "h2d", "device": "d2h"}   # by where the copy starts
MARK_RE = re.compile(r"^pinpath-region: (?:invocation step=(\d+) invocation=(\d+)|(teardown))$")
COPY_RE = re.compile(r"^(?P<source>.+?) device (?P<device>\d+) info: Copying data from (?P<src>host|device) to "
                     r"(?P<dst>host|device), (?P<l1>Hst|Tgt)Ptr=(?P<p1>0x[0-9a-fA-F]+), (?P<l2>Hst|Tgt)Ptr="
                     r"(?P<p2>0x[0-9a-fA-F]+), Size=(?P<nbytes>\d+)(?:, Name=(?P<name>.*))?$")
MAP_RE = re.compile(r"^(?P<source>.+?) device (?P<device>\d+) info: (?P<what>Creating new|Removing) map entry with "
                    r"(?:HstPtrBase=0x[0-9a-fA-F]+, )?HstPtrBegin=(?P<host_ptr>0x[0-9a-fA-F]+), .*?Size=(?P<nbytes>\d+)"
                    r"(?:, DynRefCount=[^,]*, HoldRefCount=[^,]*)?(?:, Name=(?P<name>.*))?$")
LAUNCH_RE = re.compile(r"^(?P<source>.+?) device (?P<device>\d+) info: Launching kernel (?P<kernel>\S+) with ")
_TGT_BEGIN_RE = re.compile(r"TgtPtrBegin=(0x[0-9a-fA-F]+)")
CONTEXT_RE = re.compile(r"^(?P<source>.+?) device (?P<device>\d+) info: (?:The primary context is (?P<state>active|inactive)"
                        r"|Warning: The current flags are not (?P<not_flags>\S+))")


def events(text: str) -> Iterator[tuple[str, dict]]:
    """("marker", {segment, step, invocation}), ("copy", {direction, nbytes, name, source, device,
    host_ptr, tgt_ptr}), ("map" or "unmap", {nbytes, name, device, host_ptr}: a map entry created or
    removed), ("launch", {kernel, device}) for each line that is one, in order, and ("unreadable",
    {line, text}) for a line that says "Copying data from" or "map entry with" but cannot be read."""
    for number, line in enumerate(text.splitlines(), 1):
        line = line.rstrip("\r")
        if line.startswith("pinpath-region: "):
            m = MARK_RE.match(line)
            if m:
                yield "marker", ({"segment": "teardown", "step": -1, "invocation": -1} if m.group(3) else
                                 {"segment": "invocation", "step": bounded_int(m.group(1), f"line {number}: step", MAX_STEP),
                                  "invocation": bounded_int(m.group(2), f"line {number}: invocation", MAX_INVOCATION)})
            continue
        if " info: " not in line:
            continue
        c = COPY_RE.match(line)
        if c:
            ptrs = {c.group("l1"): c.group("p1"), c.group("l2"): c.group("p2")}
            yield "copy", {"direction": DIRECTION[c.group("src")],
                           "nbytes": bounded_int(c.group("nbytes"), f"line {number}: Size", MAX_NBYTES),
                           "name": c.group("name") or "", "source": c.group("source").strip('"'),
                           "device": bounded_int(c.group("device"), f"line {number}: device", MAX_DEVICE), "host_ptr": ptrs.get("Hst", ""),
                           "tgt_ptr": ptrs.get("Tgt", "")}
            continue
        if " map entry with " in line:
            m = MAP_RE.match(line)
            if m:
                tgt = _TGT_BEGIN_RE.search(line)
                yield ("map" if m.group("what") == "Creating new" else "unmap"), {
                    "nbytes": bounded_int(m.group("nbytes"), f"line {number}: Size", MAX_NBYTES),
                    "name": m.group("name") or "", "host_ptr": m.group("host_ptr"), "tgt_ptr": tgt.group(1) if tgt else "",
                    "device": bounded_int(m.group("device"), f"line {number}: device", MAX_DEVICE)}
            else:
                yield "unreadable", {"line": number, "text": line}
            continue
        if "primary context" in line or "current flags are not" in line:
            c = CONTEXT_RE.match(line)
            if c:
                yield "context", {"device": bounded_int(c.group("device"), f"line {number}: device", MAX_DEVICE),
                                  "state": c.group("state") or "", "not_flags": c.group("not_flags") or ""}
                continue
        k = LAUNCH_RE.match(line)
        if k:
            yield "launch", {"kernel": k.group("kernel"),
                             "device": bounded_int(k.group("device"), f"line {number}: device", MAX_DEVICE)}
        elif "info: Copying data from" in line:
            yield "unreadable", {"line": number, "text": line}


def unswap_d2h(found: list) -> bool:
    """Whether ``found`` (``events``' list) is a trace whose device-to-host lines name their pointers
    the wrong way round (LLVM 18), judged by the pointers its host-to-device copies and map entries
    give: more device-to-host copies whose printed "TgtPtr" is a known host pointer (or "HstPtr" a
    known device pointer) than ones that read straight. Where it is, each device-to-host copy's two
    pointers are swapped back in place. False, nothing changed, where the trace does not tell."""
    host, device = set(), set()
    for kind, ev in found:
        if kind in ("map", "unmap") or (kind == "copy" and ev["direction"] == "h2d"):
            host.add(ev["host_ptr"])
            device.add(ev.get("tgt_ptr", ""))
    host.discard("")
    device.discard("")
    d2h = [ev for kind, ev in found if kind == "copy" and ev["direction"] == "d2h"]
    straight = sum(ev["host_ptr"] in host or ev["tgt_ptr"] in device for ev in d2h)
    swapped = sum(ev["tgt_ptr"] in host or ev["host_ptr"] in device for ev in d2h)
    if swapped <= straight:
        return False
    for ev in d2h:
        ev["host_ptr"], ev["tgt_ptr"] = ev["tgt_ptr"], ev["host_ptr"]
    return True


def context_wait(text: str) -> str:
    """How the CUDA plugin left the primary context's wait mode, from its bit-16 lines (``events``):
    "blocking sync, set by the plugin", "blocking sync, the context already active",
    "not blocking sync: the context was active before the plugin started, its flags kept", or ""
    where the runtime said nothing of it (another plugin, another release, bit 16 off)."""
    said = [ev for kind, ev in events(text) if kind == "context"]
    states = {ev["state"] for ev in said} - {""}
    if not states:
        return ""
    if states == {"inactive"}:
        return "blocking sync, set by the plugin"
    if any(ev["not_flags"] for ev in said):
        return "not blocking sync: the context was active before the plugin started, its flags kept"
    return "blocking sync, the context already active" if states == {"active"} else "mixed: " + ", ".join(sorted(states))
