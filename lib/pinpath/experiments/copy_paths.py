"""What the driver did with each kind of copy, as CUPTI saw it (CUDA): the memory kind it read
and wrote (PAGEABLE or PINNED host memory) and the copy's device-side duration. A pass of its
own, untimed on the host side (CUPTI's records cost time); its answers label the timed runs'
copies that were handed to the driver as they are."""

from __future__ import annotations

from contextlib import ExitStack

import pandas as pd

from ..memkinds import host_buffer
from ..policies import make_policy
from ..runtimes.base import has
from ..schema import COPY_PATHS, frame
from ..vocab import Capability, MemoryKind, Policy, TransferPath
from .sweep import DeviceBuffers, grid, transfer

__all__ = ["copy_paths", "observed_path", "label_paths"]

_CASES = ((Policy.DRIVER_PAGEABLE, MemoryKind.HEAP), (Policy.DRIVER_PAGEABLE, MemoryKind.PINNED),
          (Policy.PREPINNED, MemoryKind.HEAP), (Policy.NEXTGEN, MemoryKind.HEAP),
          (Policy.NEXTGEN_LOCK_MAPPED, MemoryKind.HEAP))


def observed_path(pinpath_path: str, src_kind: str, dst_kind: str, direction: str) -> str:
    """The path a copy took, from what CUPTI saw of its host side."""
    host = src_kind if direction == "h2d" else dst_kind
    if pinpath_path not in (TransferPath.DRIVER_UNOBSERVED, TransferPath.DRIVER_STAGED, TransferPath.DRIVER_PINNED):
        return pinpath_path
    return {"PAGEABLE": TransferPath.DRIVER_STAGED, "PINNED": TransferPath.DRIVER_PINNED}.get(
        host, TransferPath.DRIVER_UNOBSERVED)


def copy_paths(rt, *, sizes_nbytes, directions=("h2d", "d2h"), cases=_CASES) -> pd.DataFrame:
    """One observed transfer per (policy, kind, size, direction); COPY_PATHS rows, or a one-row
    frame whose ``not_available`` column says why nothing can be observed here."""
    if not has(rt, Capability.CUPTI):
        return pd.DataFrame([{"not_available": rt.capabilities()["cupti"], "platform": rt.name}])
    from ..runtimes.cupti_ import CopyObserver
    rows, meta = [], {}
    with ExitStack() as stack:
        obs = stack.enter_context(CopyObserver())
        dev = stack.enter_context(DeviceBuffers(rt))
        for i, pt in enumerate(grid(case=cases, nbytes=sizes_nbytes, direction=directions)):
            (policy, kind), n, d = pt["case"], pt["nbytes"], pt["direction"]
            with host_buffer(kind, n, rt=rt) as buf, make_policy(policy, rt) as pol:
                pol.map(buf)
                dptr = dev.get(n)
                r = transfer(pol, buf, dev, dptr, d, verify=True, around=obs.tag(i))
                pol.unmap(buf)
            meta[i] = {"policy": str(policy), "kind": str(kind), "nbytes": n, "direction": d, "path": r.path,
                       "host_ns": r.dma_ns + r.wait_ns}
        seen = obs.flush()
    for i, m in meta.items():
        mine = seen[seen.transfer_id == i]
        ours = mine[mine.copy_kind == m["direction"].upper()]
        src = "+".join(sorted(set(ours.src_kind))) or "none"
        dst = "+".join(sorted(set(ours.dst_kind))) or "none"
        rows.append({**m, "copies_seen": len(ours), "src_kind": src, "dst_kind": dst,
                     "device_ns": int(ours.device_ns.sum()) if len(ours) else 0,
                     "observed_path": observed_path(m["path"], src, dst, m["direction"]), "platform": rt.name})
    return frame(rows, COPY_PATHS)


def label_paths(transfers: pd.DataFrame, paths: pd.DataFrame | None) -> pd.DataFrame:
    """Timed transfers whose copy was handed to the driver as it was get the path CUPTI saw for
    the same policy, kind and direction (the largest observed size not above theirs); others,
    and every row where nothing was observed, keep theirs."""
    if paths is None or "observed_path" not in paths or not len(paths):
        return transfers
    out = transfers.copy()
    mask = out.path == TransferPath.DRIVER_UNOBSERVED
    for idx in out.index[mask]:
        r = out.loc[idx]           # r["nbytes"], not r.nbytes: a Series' .nbytes is its own memory size
        cand = paths[(paths.policy == r["policy"]) & (paths.kind == r["kind"]) & (paths.direction == r["direction"])
                     & (paths.nbytes <= r["nbytes"])]
        if len(cand):
            out.at[idx, "path"] = cand.sort_values("nbytes").observed_path.iloc[-1]
    return out
