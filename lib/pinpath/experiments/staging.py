"""A fresh staging buffer per copy against a pooled one, split by phase (C2)."""

from __future__ import annotations

import pandas as pd

from ..memkinds import host_buffer
from ..policies import make_policy
from ..vocab import MemoryKind, Policy
from .sweep import DeviceBuffers, grid, repeat_transfers, transfers_frame

__all__ = ["staging_cost"]


def staging_cost(rt, *, sizes_nbytes, directions=("h2d", "d2h"),
                 policies=(Policy.STAGE_PER_COPY, Policy.STAGE_POOLED), repeats: int = 10,
                 warmup: int = 1, verify: str = "first") -> pd.DataFrame:
    """TRANSFERS rows (with ``repeat``) of each staging policy over sizes and directions,
    from heap memory; the phases alloc / grant / copy_in / dma / wait / copy_out / free
    say where the time goes."""
    rows = []
    with DeviceBuffers(rt) as dev:
        for pt in grid(nbytes=sizes_nbytes, direction=directions, policy=policies):
            n = pt["nbytes"]
            dptr = dev.get(n)
            with host_buffer(MemoryKind.HEAP, n) as buf, make_policy(pt["policy"], rt) as pol:
                for i, r in repeat_transfers(pol, buf, dev, dptr, pt["direction"], repeats=repeats,
                                             warmup=warmup, verify=verify):
                    rows.append((r, {"repeat": i}))
    return transfers_frame(rows, rt.name)
