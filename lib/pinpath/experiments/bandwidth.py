"""Pinned against pageable copy bandwidth, and pinpath against a bare native copy loop."""

from __future__ import annotations

from contextlib import ExitStack

import pandas as pd

from ..memkinds import host_buffer
from ..policies import make_policy
from ..runtimes.base import has
from ..schema import BANDWIDTH, LINK, frame
from ..vocab import Capability, MemoryKind, Policy
from .native import native_policy_sweep, rounds_for, use_native
from .sweep import SEED, DeviceBuffers, Sweep, grid, transfer

__all__ = ["bandwidth", "link_peak", "PCIE_LANE_GB_PER_S"]

#: raw data rate of one PCIe lane per direction, decimal GB/s, after line coding
#: (8b/10b up to Gen2, 128b/130b from Gen3): 2.5, 5, 8, 16, 32 GT/s
PCIE_LANE_GB_PER_S = {1: 0.25, 2: 0.5, 3: 8 * 128 / 130 / 8, 4: 16 * 128 / 130 / 8, 5: 32 * 128 / 130 / 8}

_CASES = {"pinned": (Policy.PREPINNED, MemoryKind.PINNED), "pageable": (Policy.DRIVER_PAGEABLE, MemoryKind.HEAP)}
_LOOPS = {"plain_loop": (Capability.COPY_LOOP, "plain_copy_ns"), "sync_loop": (Capability.SYNC_COPY, "sync_copy_ns")}
#: copies of every size and direction per repeat and case (native.rounds_for: one from 256 MiB):
#: a 1 MiB copy takes about 25 us, and with two a repeat's median moved by 20 % between repeats
ROUNDS = 8


def bandwidth(rt, *, sizes_nbytes, directions=("h2d", "d2h"), repeats: int = 10, warmup: int = 2,
              verify: str = "first", engine: str = "auto") -> pd.DataFrame:
    """Copy bandwidth per size and direction of: pinned memory through the ``prepinned``
    policy, pageable memory (malloc) through ``driver_pageable``, and the bare native loops
    over pinned buffers that bypass pinpath, where the runtime has them: the async copy + wait
    (``plain_loop``) and the synchronous copy (``sync_loop``).

    Where the native engine runs (``engine`` "auto" or "native"), the two policies run on it, so
    no interpreter time is in their rows: every repeat visits the cases in a shuffled order, each
    with fresh buffers, ``ROUNDS`` copies of every size and direction, one from 256 MiB
    (``dma_event_ns`` is then
    empty: the engine times on the host). Else (``engine`` "python") every point once per round
    through the Python policies, in a shuffled order, with each copy's device-event time where
    the runtime has events."""
    if use_native(rt, engine):
        return _native_bandwidth(rt, sizes_nbytes, directions, repeats, verify)
    sweep = Sweep(repeats=repeats, warmup=warmup, verify=verify, label="bandwidth", platform=rt.name)
    loops = [name for name, (cap, _) in _LOOPS.items() if has(rt, cap)]
    with ExitStack() as stack:
        dev = stack.enter_context(DeviceBuffers(rt))
        dptrs = {n: dev.get(n) for n in sizes_nbytes}
        pols = {c: stack.enter_context(make_policy(p, rt, events=True)) for c, (p, _) in _CASES.items()}
        bufs = {}
        for case, n in (tuple(pt.values()) for pt in grid(case=_CASES, nbytes=sizes_nbytes)):
            bufs[(case, n)] = stack.enter_context(host_buffer(_CASES[case][1], n, rt=rt))
            pols[case].map(bufs[(case, n)])
            stack.callback(pols[case].unmap, bufs[(case, n)])
        points = list(grid(case=[*_CASES, *loops], nbytes=sizes_nbytes, direction=directions))
        for i, pt in sweep.rounds(points):
            case, n, d = pt["case"], pt["nbytes"], pt["direction"]
            if case in _CASES:
                r = transfer(pols[case], bufs[(case, n)], dev, dptrs[n], d, verify=sweep.checks(i))
                row = {"path": r.path, "total_ns": r.dma_ns + r.wait_ns, "dma_event_ns": r.dma_event_ns,
                       "verified": r.verified}
            else:
                row = _loop_row(rt, case, dptrs[n], bufs[("pinned", n)].ptr, n, d)
            sweep.add(i, {"case": case, "direction": d, "nbytes": n, **row, "gb_per_s": n / row["total_ns"]})
    return sweep.frame(BANDWIDTH)


def _loop_row(rt, case: str, dev_ptr: int, host_ptr: int, nbytes: int, direction: str) -> dict:
    """One bare-loop copy: two copies, the second timed (each call starts on a new stream, whose
    first copy pays for its creation)."""
    dst, src = (dev_ptr, host_ptr) if direction == "h2d" else (host_ptr, dev_ptr)
    return {"path": "", "total_ns": getattr(rt, _LOOPS[case][1])(dst, src, nbytes, direction, 2)[-1],
            "dma_event_ns": None, "verified": None}


def _native_bandwidth(rt, sizes_nbytes, directions, repeats: int, verify: str) -> pd.DataFrame:
    """bandwidth's rows with the two policies executed by the native engine (see bandwidth)."""
    sweep = Sweep(repeats=repeats, verify=verify, label="bandwidth", seed=SEED + 2, platform=rt.name)
    loops = [name for name, (cap, _) in _LOOPS.items() if has(rt, cap)]
    for r, order in sweep.independent([*_CASES, *loops]):
        for case in order:
            if case in _CASES:
                policy, kind = _CASES[case]
                got = native_policy_sweep(rt, policies=[policy], kinds=(kind,), sizes_nbytes=sizes_nbytes,
                                          directions=directions, repeats=1, rounds=ROUNDS,
                                          verify="all" if sweep.checks(r) else "none", seed=SEED + 2 + r, label="")
                for t in got[got.event == "transfer"].itertuples():
                    sweep.add(r, {"case": case, "direction": t.direction, "nbytes": int(t.nbytes), "path": t.path,
                                  "total_ns": int(t.total_ns), "dma_event_ns": None, "verified": t.verified,
                                  "gb_per_s": t.nbytes / t.total_ns})
                continue
            with ExitStack() as stack:
                dev = stack.enter_context(DeviceBuffers(rt))
                hosts = {n: stack.enter_context(host_buffer(MemoryKind.PINNED, n, rt=rt, seed=r)) for n in sizes_nbytes}
                dptrs = {n: dev.get(n) for n in sizes_nbytes}
                points = list(grid(nbytes=sizes_nbytes, direction=directions))
                for i in range(ROUNDS):
                    for pt in sweep.shuffled(p for p in points if i < rounds_for(p["nbytes"], ROUNDS)):
                        n, d = pt["nbytes"], pt["direction"]
                        row = _loop_row(rt, case, dptrs[n], hosts[n].ptr, n, d)
                        sweep.add(r, {"case": case, "direction": d, "nbytes": n, **row, "gb_per_s": n / row["total_ns"]})
    return sweep.frame(BANDWIDTH)


def link_peak(rt) -> pd.DataFrame:
    """One row: the host link the runtime reports (PCIe generation and width, where it tells)
    and its raw peak per direction; NaN where the runtime says nothing (the host platform)."""
    d = rt.describe()
    gen, width = d.get("pcie_gen"), d.get("pcie_width")
    peak = PCIE_LANE_GB_PER_S.get(gen, float("nan")) * width if isinstance(width, int) else float("nan")
    return frame([{"link": f"PCIe Gen{gen} x{width}" if gen else "unknown", "peak_gb_per_s": peak,
                   "platform": rt.name}], LINK)
