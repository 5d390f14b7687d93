"""Which policy pays at which size: from a run's policy sweep (``engine_transfers``, else
``plain_transfers``: every policy, size and direction, repeated), the cheapest policy per
direction and size with its interval over repeats, the runner-up, and the sizes where the
cheapest changes (break-even, interpolated between measured sizes on log-log axes).

Policies the application must prepare (``prepinned``: it pinned the buffer; ``nextgen_lock_mapped``:
the runtime locked it at map time) are shown beside, not ranked: their one-off cost is not in a
transfer's time."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..stats import median_ci, ratio_ci
from .fmt import binary_size, format_measured

__all__ = ["Pick", "cheapest", "break_evens", "POLICY_WORDS", "PREPARED", "SOURCES"]

#: what each policy does, for a reader (CATALOGUE.md's nine)
POLICY_WORDS = {
    "stage_per_copy": "copies through a pinned staging buffer allocated and freed for each copy (ATMI, 2020)",
    "stage_pooled": "copies through staging buffers that are reused (C2's suggestion)",
    "lock_always": "locks (pins) the user's memory, copies, unlocks; stages if the lock is refused (PR #174)",
    "query_then_lock": "asks first whether the memory is locked and skips the lock if it is (2021-22 plugin)",
    "nextgen": "today's LLVM offload plugin's order of decisions (small copies staged, large ones locked)",
    "nextgen_lock_mapped": "nextgen with LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS on: memory is locked once when "
                           "mapped, each copy is one DMA",
    "prepinned": "the application pinned the buffer beforehand: each copy is one DMA",
    "driver_pageable": "hands the pageable pointer to the runtime's own copy (the driver stages it)",
    "pinned_allocator": "hands out locked memory and tracks it (C11's idea)",
}
#: policies whose memory is prepared before the transfers: their cost is paid once, outside them
PREPARED = ("prepinned", "nextgen_lock_mapped")
#: the data sets that hold a policy sweep, preferred first
SOURCES = ("engine_transfers", "plain_transfers")


class Pick(NamedTuple):
    direction: str
    nbytes: int
    policy: str                 #: the cheapest policy the runtime can choose on pageable memory
    ns: tuple                   #: its per-transfer time: (median, low, high) over repeats
    runner_up: str
    ratio: tuple                #: runner-up / cheapest: (value, low, high); low > 1: the cheapest surely pays
    prepared: dict              #: policy -> (median, low, high) for PREPARED policies measured here

    @property
    def sure(self) -> bool:
        return bool(self.ratio[1] > 1)

    def words(self) -> dict:
        """The pick in words; intervals as "(low–high)" after the value (a table's header says 95 % CI)."""
        short = lambda *v: format_measured(*v).replace("(95 % CI ", "(")   # noqa: E731
        return {"direction": self.direction, "size": binary_size(self.nbytes), "policy": self.policy,
                "time": short(*self.ns, "ns"), "runner_up": self.runner_up,
                "ratio": short(*self.ratio, "x"), "sure": self.sure,
                "prepared": {p: short(*v, "ns") for p, v in self.prepared.items()}}


def _frame(df: pd.DataFrame) -> pd.DataFrame:
    """Transfers of one engine (the native one where there are two), as policy, direction,
    nbytes, repeat, ns."""
    if "event" in df.columns:
        df = df[df.event == "transfer"]
    if "engine" in df.columns and df.engine.nunique() > 1:
        df = df[df.engine == ("native" if (df.engine == "native").any() else df.engine.iloc[0])]
    if "process" in df.columns:               # plain_transfers: the notebook's own process
        df = df[df.process == "notebook"]
    ns = df["total_ns"] if "total_ns" in df.columns else df["ns"]
    return pd.DataFrame({"policy": df.policy.astype(str), "direction": df.direction.astype(str),
                         "nbytes": df.nbytes.astype(int), "repeat": df["repeat"], "ns": ns.astype(float)})


def cheapest(df: pd.DataFrame | None) -> list[Pick]:
    """One Pick per direction and size measured in ``df`` (a policy sweep), sizes ascending."""
    if df is None or not len(df) or not {"policy", "direction", "nbytes"} <= set(df.columns):
        return []
    t = _frame(df)
    out = []
    for (d, n), g in t.groupby(["direction", "nbytes"], sort=True):
        est = {p: median_ci(s.ns, s.repeat) for p, s in g.groupby("policy")}
        ranked = sorted((p for p in est if p not in PREPARED and math.isfinite(est[p].value)), key=lambda p: est[p].value)
        if len(ranked) < 2:
            continue
        best, second = ranked[0], ranked[1]
        r = ratio_ci(g.ns[g.policy == second], g.ns[g.policy == best],
                     g.repeat[g.policy == second], g.repeat[g.policy == best])
        out.append(Pick(d, int(n), best, tuple(est[best][:3]), second, tuple(r[:3]),
                        {p: tuple(est[p][:3]) for p in PREPARED if p in est}))
    return out


def break_evens(df: pd.DataFrame | None, picks: list[Pick]) -> list[tuple[str, str, str, float]]:
    """(direction, cheaper below, cheaper above, nbytes) where the cheapest policy changes between
    two measured sizes: the size where the two policies' median times cross, on log-log axes."""
    if not picks:
        return []
    t = _frame(df)
    med = t.groupby(["direction", "policy", "nbytes"]).ns.median()
    out = []
    for d in sorted({p.direction for p in picks}):
        row = [p for p in picks if p.direction == d]
        for a, b in zip(row, row[1:]):
            if a.policy == b.policy:
                continue
            try:
                pa = [med[(d, a.policy, a.nbytes)], med[(d, a.policy, b.nbytes)]]
                pb = [med[(d, b.policy, a.nbytes)], med[(d, b.policy, b.nbytes)]]
            except KeyError:
                continue
            x = np.log([a.nbytes, b.nbytes])
            fa, fb = np.log(pa), np.log(pb)
            da, db = fa[1] - fa[0], fb[1] - fb[0]
            if da == db:
                continue
            cross = x[0] + (fb[0] - fa[0]) * (x[1] - x[0]) / (da - db)
            out.append((d, a.policy, b.policy, float(np.exp(np.clip(cross, x[0], x[1])))))
    return out
