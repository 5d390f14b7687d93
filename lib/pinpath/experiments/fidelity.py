"""The engine against a yardstick (C against C): every policy's per-transfer median from the
native engine beside the same policy written by hand in plain C (tools/plain_policies.c), both
on this node in one job, with independent repeats as the unit on both sides."""

from __future__ import annotations

import subprocess

import pandas as pd

from .. import nativelib
from ..errors import NotAvailable
from ..paths import PROJECT_ROOT
from ..schema import ENGINE_FIDELITY, frame
from ..stats import ratio_ci
from .native import ROUNDS, native_policy_sweep, native_why_not

__all__ = ["engine_fidelity", "plain_policies", "YARDSTICK_POLICIES", "YARDSTICK_SOURCE"]

YARDSTICK_SOURCE = PROJECT_ROOT / "tools" / "plain_policies.c"
#: the policies the plain program writes by hand (the pinned allocator is left out: it needs the
#: runtime's allocator in the application, which a plain program of one policy does not have)
YARDSTICK_POLICIES = ("stage_per_copy", "stage_pooled", "lock_always", "query_then_lock", "prepinned",
                      "driver_pageable", "nextgen", "nextgen_lock_mapped")


def plain_policies(platform: str, specs, *, repeats: int, rounds: int = ROUNDS, timeout_s: int = 600) -> pd.DataFrame:
    """Run the plain program (built against the same headers as the engine) on ``specs``
    ((policy, direction, nbytes), ...): one row per timed transfer."""
    if platform not in ("cuda", "host"):
        raise NotAvailable(f"{platform}: the plain yardstick is written for cuda and host only")
    if not YARDSTICK_SOURCE.exists():
        raise NotAvailable(f"the yardstick's source {YARDSTICK_SOURCE.name} is not in this checkout's tools/")
    exe = nativelib.build_program(platform, YARDSTICK_SOURCE)
    args = [str(exe), str(repeats), str(rounds), *(f"{p}:{d}:{n}" for p, d, n in specs)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s)
    if r.returncode != 0:
        raise NotAvailable(f"{platform}: the plain yardstick failed ({(r.stderr.strip() or 'no output')[:200]})")
    rows = [dict(zip(("policy", "direction", "nbytes", "repeat", "round", "ns"), ln.split(",")))
            for ln in r.stdout.splitlines() if ln.count(",") == 5]
    df = pd.DataFrame(rows)
    for c in ("nbytes", "repeat", "round", "ns"):
        df[c] = df[c].astype("int64")
    return df


def engine_fidelity(rt, *, sizes_nbytes, policies=YARDSTICK_POLICIES, directions=("h2d", "d2h"),
                    repeats: int = 5, rounds: int = ROUNDS) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(ENGINE_FIDELITY rows, the engine's transfer rows): per policy, direction and size, the
    median of the repeat medians of each side, and their ratio (engine / plain) with a 95 %
    interval over the repeats."""
    if native_why_not(rt):
        raise NotAvailable(f"{rt.name}: the native engine is not available: {native_why_not(rt)}")
    specs = [(p, d, n) for p in policies for d in directions for n in sizes_nbytes]
    plain = plain_policies(rt.name, specs, repeats=repeats, rounds=rounds)
    eng = native_policy_sweep(rt, policies=policies, sizes_nbytes=sizes_nbytes, directions=directions,
                              repeats=repeats, rounds=rounds, label="engine against the yardstick")
    keys = ["policy", "direction", "nbytes"]
    e_rep = eng[eng.event == "transfer"].groupby([*keys, "repeat"]).total_ns.median()
    p_rep = plain.groupby([*keys, "repeat"]).ns.median()
    rows = []
    for key, e in e_rep.groupby(level=[0, 1, 2]):
        p = p_rep.get(key)
        if p is None:
            continue
        est = ratio_ci(e.values, p.values)
        rows.append({**dict(zip(keys, key)), "engine_ns": float(e.median()), "plain_ns": float(p.median()),
                     "ratio": est.value, "low": est.low, "high": est.high, "repeats": len(e),
                     "platform": rt.name})
    return frame(rows, ENGINE_FIDELITY), eng
