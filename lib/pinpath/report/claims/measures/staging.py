"""The tests of the claims about staging buffers and the plugins' models (C1, C2, C3, C14)."""

from __future__ import annotations

import pandas as pd

from ....stats import median_ci, ratio_ci, share_ci
from ....units import binary_size, fmt_ns
from ..load import _get, _rep
from ..model import Missing, Result
from .common import _exact, _model_calls, _policy_ratio, _real_note, _real_steady, _transfers


def _c1_model(data):
    """For information: the 2020 plugin's model makes one allocation per transfer by construction."""
    out, parts = [], []
    for pol in ("stage_per_copy", "nextgen_lock_mapped"):
        _, t, c = _model_calls(data, "replica", "replica_calls", pol)
        c = c[c.transfer_id.isin(t.transfer_id)]
        if len(t):
            per = float((c.category == "alloc").sum()) / len(t)
            out.append((pol, _exact(per, len(t))))
            parts.append(f"{pol} {per:.2f}")
    if not out:
        raise Missing("the replica ran neither stage_per_copy nor nextgen_lock_mapped")
    return Result(out[:1], "the models' allocations per transfer of arrays mapped once: " + ", ".join(parts)
                  + " (a model shows its own call pattern by construction)")


def _c1_real(data):
    """Allocations per transfer in the real runtime's record of its native calls (real_calls)."""
    calls, copies = _get(data, "real_calls"), _get(data, "real_copies")
    inv = copies[copies.segment == "invocation"]
    allocs = calls[(calls.segment == "invocation") & (calls.category == "alloc")]
    if not len(inv):
        raise Missing("the real runtime made no copies inside the region")
    per = len(allocs) / len(inv)
    return Result([("real runtime", _exact(per, len(inv)))], _real_note(data),
                  facts={"": f"the real runtime made {len(allocs)} allocations in {len(inv)} copies of arrays "
                                 "mapped once"})


def _c2_share(data):
    t = _transfers(data, "staging")
    f = t[(t.policy == "stage_per_copy") & (t.nbytes == t.nbytes.min())]
    if not len(f):
        raise Missing("no stage_per_copy transfers")
    groups, facts = [], {}
    for d, g in f.groupby("direction"):
        label = f"{binary_size(int(f.nbytes.iloc[0]))} {d}"
        part = g.alloc_ns + g.grant_ns + g.free_ns
        groups.append((label, share_ci(part, g.total_ns, _rep(g))))
        facts[label] = (f"a per-copy staged {label} transfer takes {fmt_ns(median_ci(g.total_ns, _rep(g)).value)}, "
                        f"of which allocate + grant + free {fmt_ns(median_ci(part, _rep(g)).value)}")
    return Result(groups, "share of allocate + grant + free in a per-copy staged transfer at the smallest size",
                  facts=facts)


def _c2_reuse(data):
    groups, facts = _policy_ratio(_transfers(data, "staging"), "stage_per_copy", "stage_pooled")
    return Result(groups, "per-copy / pooled time per transfer", facts=facts)


def _c3(data):
    t = _transfers(data, "lock_or_stage")
    groups, facts = _policy_ratio(t[t.kind == "heap"], "lock_always", "stage_per_copy")
    return Result(groups, "lock_always / stage_per_copy time per transfer, malloc'd memory", facts=facts)


_LOCKING = ("lock_always", "query_then_lock", "nextgen")


def _amortised(events: pd.DataFrame) -> pd.DataFrame:
    """Transfers of one policy with its map and unmap time spread evenly over them."""
    t = events[events.event == "transfer"]
    extra = events[events.event.isin(["map", "unmap"])].total_ns.sum()
    return t.assign(total_ns=t.total_ns + (extra / len(t) if len(t) else 0))


def _c14_model(data):
    """For information: the tracked model's locks, map events included, and its time per transfer
    with the map-time locks spread over its transfers, against the best other locking model."""
    every = _get(data, "tracked")
    ev, t, calls = _model_calls(data, "tracked", "tracked_calls", "nextgen_lock_mapped")
    if not len(t):
        raise Missing("no nextgen_lock_mapped transfers")
    kinds = ev.set_index("transfer_id").event
    lock_events = kinds.reindex(calls[calls.category == "lock"].transfer_id).value_counts()
    locks = int(lock_events.sum())
    others = [p for p in _LOCKING if (every.policy == p).any()]
    if not others:
        raise Missing("no locking policies to compare")
    amort = {p: _amortised(every[every.policy == p]) for p in others + ["nextgen_lock_mapped"]}
    best = min(others, key=lambda p: amort[p].total_ns.median())
    groups = []
    for nw in sorted(set(t.nw)) if "nw" in t else [None]:
        a = amort["nextgen_lock_mapped"] if nw is None else amort["nextgen_lock_mapped"].query("nw == @nw")
        b = amort[best] if nw is None else amort[best].query("nw == @nw")
        groups.append((f"nw={nw} vs {best}", ratio_ci(a.total_ns, b.total_ns, _rep(a), _rep(b))))
    detail = (f"{locks} lock calls for {len(t)} tracked transfers ("
              + ", ".join(f"{n} in {e} events" for e, n in lock_events.items()) + "); median per transfer with map and "
              "unmap spread over the transfers: " + ", ".join(f"{p} {fmt_ns(v.total_ns.median())}" for p, v in amort.items()))
    if (every.policy == "driver_pageable").any():
        detail += (f"; what LLVM's CUDA plugin really does (driver_pageable, it registers nothing): "
                   f"{fmt_ns(every[(every.policy == 'driver_pageable') & (every.event == 'transfer')].total_ns.median())}")
    return Result(groups, detail)


def _c14_real(data):
    """The real runtime with LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS=1 against its plain variant."""
    inv = _real_steady(data)
    groups, facts = [], {}
    for nw, g in inv.groupby("nw"):
        a, b = g[g.variant == "lock_mapped"], g[g.variant == "plain"]
        if len(a) and len(b):
            label = f"nw={nw}"
            groups.append((label, ratio_ci(a.ns, b.ns, _rep(a), _rep(b))))
            facts[label] = (f"the real runtime takes {fmt_ns(a.ns.median())} per region invocation with mapped buffers "
                            f"locked and tracked, {fmt_ns(b.ns.median())} without (nw={nw})")
    if not groups:
        raise Missing("the real runtime ran no lock_mapped and plain variants")
    return Result(groups, _real_note(data), facts=facts)
