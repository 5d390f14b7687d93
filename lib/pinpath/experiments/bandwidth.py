"""Pinned against pageable copy bandwidth, and pinpath against a bare native copy loop."""

from __future__ import annotations

import pandas as pd

from ..memkinds import host_buffer
from ..policies import make_policy
from ..schema import BANDWIDTH, frame
from ..vocab import MemoryKind, Policy
from .sweep import DeviceBuffers, grid, repeat_transfers

__all__ = ["bandwidth", "link_peak", "PCIE_LANE_GB_PER_S"]

#: raw data rate of one PCIe lane per direction, decimal GB/s, after line coding
#: (8b/10b up to Gen2, 128b/130b from Gen3): 2.5, 5, 8, 16, 32 GT/s
PCIE_LANE_GB_PER_S = {1: 0.25, 2: 0.5, 3: 8 * 128 / 130 / 8, 4: 16 * 128 / 130 / 8, 5: 32 * 128 / 130 / 8}

_CASES = {"pinned": (Policy.PREPINNED, MemoryKind.PINNED), "pageable": (Policy.DRIVER_PAGEABLE, MemoryKind.HEAP)}


def bandwidth(rt, *, sizes_nbytes, directions=("h2d", "d2h"), repeats: int = 10, warmup: int = 2,
              verify: str = "first") -> pd.DataFrame:
    """Copy bandwidth per size and direction of: pinned memory through the ``prepinned``
    policy, pageable memory through ``driver_pageable``, and two bare native loops over the
    same pinned buffer that bypass pinpath: the async copy + wait (``plain_loop``) and the
    runtime's synchronous copy (``sync_loop``, where it has one), all in one run."""
    rows = []
    with DeviceBuffers(rt) as dev:
        for pt in grid(nbytes=sizes_nbytes, direction=directions):
            n, d = pt["nbytes"], pt["direction"]
            dptr = dev.get(n)
            for case, (policy, kind) in _CASES.items():
                with host_buffer(kind, n, rt=rt) as buf, make_policy(policy, rt, events=True) as pol:
                    pol.map(buf)
                    for i, r in repeat_transfers(pol, buf, dev, dptr, d, repeats=repeats, warmup=warmup,
                                                 verify=verify):
                        rows.append({"case": case, "path": r.path, "direction": d, "nbytes": n, "repeat": i,
                                     "total_ns": r.dma_ns + r.wait_ns, "dma_event_ns": r.dma_event_ns,
                                     "verified": r.verified})
                    pol.unmap(buf)
                    if case == "pinned":
                        src, dst = (buf.ptr, dptr) if d == "h2d" else (dptr, buf.ptr)
                        for loop, fn in (("plain_loop", rt.plain_copy_ns), ("sync_loop", rt.sync_copy_ns)):
                            try:
                                ns = fn(dst, src, n, d, repeats + warmup)[warmup:]
                            except NotImplementedError:   # the runtime has no such copy: no rows
                                continue
                            rows += [{"case": loop, "path": "", "direction": d, "nbytes": n, "repeat": i,
                                      "total_ns": t, "dma_event_ns": None, "verified": None}
                                     for i, t in enumerate(ns)]
    for r in rows:
        r["gb_per_s"] = r["nbytes"] / r["total_ns"]
        r["platform"] = rt.name
    return frame(rows, BANDWIDTH)


def link_peak(rt) -> pd.DataFrame:
    """One row: the host link the runtime reports (PCIe generation and width, where it tells)
    and its raw peak per direction; NaN where the runtime says nothing (the host platform)."""
    d = rt.describe()
    gen, width = d.get("pcie_gen"), d.get("pcie_width")
    peak = PCIE_LANE_GB_PER_S.get(gen, float("nan")) * width if isinstance(width, int) else float("nan")
    return pd.DataFrame([{"link": f"PCIe Gen{gen} x{width}" if gen else "unknown", "peak_gb_per_s": peak,
                          "platform": rt.name}])
