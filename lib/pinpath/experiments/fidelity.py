"""The engine against a yardstick (C against C): every policy's per-transfer median from the
native engine beside the same policy written by hand in plain C (tools/plain_policies.c).

The yardstick runs inside the notebook's process (its shared object, on the same CUDA runtime
as the engine), interleaved with the engine policy by policy in every repeat, so both sides
meet the same process, allocator and registration state; ``plain_ns``. The same program as a
process of its own gives ``plain_process_ns``: how much the notebook's process state itself
changes a figure (a state effect, named, not the engine's cost)."""

from __future__ import annotations

import ctypes
import os
import subprocess
import tempfile
from contextlib import nullcontext

import pandas as pd

from .. import machine_state, nativelib
from ..errors import NotAvailable
from ..paths import PROJECT_ROOT
from ..runtimes.base import has
from ..schema import ENGINE_FIDELITY, PLAIN_TRANSFERS, frame
from ..stats import median_ci, paired_ratio_ci
from ..vocab import Capability
from .native import ROUNDS, cache_state, native_policy_sweep, native_why_not
from .sweep import SEED, Sweep

__all__ = ["engine_fidelity", "engine_fidelity_or_reason", "plain_policies", "YARDSTICK_POLICIES", "YARDSTICK_SOURCE"]

YARDSTICK_SOURCE = PROJECT_ROOT / "tools" / "plain_policies.c"
#: the policies the plain program writes by hand (the pinned allocator is left out: it needs the
#: runtime's allocator in the application, which a plain program of one policy does not have)
YARDSTICK_POLICIES = ("stage_per_copy", "stage_pooled", "lock_always", "query_then_lock", "prepinned",
                      "driver_pageable", "nextgen", "nextgen_lock_mapped")
_COLUMNS = ("policy", "direction", "nbytes", "repeat", "round", "ns")
#: transfers of each point per repeat and side: a repeat's figure is their median, and the
#: benchmark's margin at 4 KiB (1 us of about 8) is narrower than two transfers' spread
FIDELITY_ROUNDS = 8
#: the tiers of sizes that get more transfers per repeat and side, and more repeats: (largest
#: nbytes, transfers, repeats), each tier a group of its own (a caller's ``rounds`` and ``repeats``
#: where more); the sizes above the last tier get the caller's. Up to 1 MiB a transfer takes at
#: most about a millisecond; on a machine whose register and pinned-allocation costs spread up to
#: 1.9x (third quartile / first) inside a repeat, the medians of 8 left a repeat's ratio 20 % off,
#: and a pageable 1 MiB copy out of a pool (a CPU memcpy, 41-90 us) spread so between repeats that
#: the median of 5 repeats' ratios missed the benchmark (h200 at 4f7b5da: stage_pooled D2H, ratios
#: 0.69-1.00 by repeat); a repeat of this tier takes about 1.6 s on the H200. Up to 16 MiB (1-10 ms
#: a transfer): a register or cudaMallocHost of 16 MiB per transfer spread so widely that the
#: medians of 8 missed the benchmark (h200-b at 0f842ef: stage_per_copy 95 % CI 0.69-1.39; a run
#: at 9340f86: nextgen D2H 0.99-1.25)
ROUND_TIERS = ((1 << 20, 32, 9), (16 << 20, 32, 5))


def _parse(text: str) -> pd.DataFrame:
    df = pd.DataFrame([dict(zip(_COLUMNS, ln.split(","))) for ln in text.splitlines() if ln.count(",") == 5],
                      columns=list(_COLUMNS))
    for c in ("nbytes", "repeat", "round", "ns"):
        df[c] = df[c].astype("int64")
    return df


def _source(platform: str):
    if platform not in ("cuda", "host"):
        raise NotAvailable(f"{platform}: the plain yardstick is written for cuda and host only")
    if not YARDSTICK_SOURCE.exists():
        raise NotAvailable(f"the yardstick's source {YARDSTICK_SOURCE.name} is not in this checkout's tools/")
    return YARDSTICK_SOURCE


def plain_policies(platform: str, specs, *, repeats: int, rounds: int = ROUNDS, seed: int = SEED,
                   in_process: bool = False, timeout_s: int = 600, evict_nbytes: int = 0) -> pd.DataFrame:
    """Run the plain program on ``specs`` ((policy, direction, nbytes), ...), as a process of its
    own or (``in_process``) inside this one: one row per timed transfer. ``seed`` seeds its
    shuffles of policies and of the specs in each round; ``evict_nbytes`` > 0 writes that much other
    memory before each timed transfer, untimed (the cache state "cold"; 0: "hot", as before)."""
    src = _source(platform)
    spec_args = [f"{p}:{d}:{n}" for p, d, n in specs]
    opts = ["-e", str(int(evict_nbytes))] if evict_nbytes else []   # the cache state (none: hot, as before)
    if not in_process:
        exe = nativelib.build_program(platform, src)
        r = subprocess.run([str(exe), *opts, "-", str(repeats), str(rounds), str(seed), *spec_args], capture_output=True,
                           text=True,
                           timeout=timeout_s)
        if r.returncode != 0:
            raise NotAvailable(f"{platform}: the plain yardstick failed ({(r.stderr.strip() or 'no output')[:200]})")
        return _parse(r.stdout)
    lib = ctypes.CDLL(str(nativelib.build_program(platform, src, shared=True)))
    fd, path = tempfile.mkstemp(prefix="pinpath-plain-", suffix=".csv")
    os.close(fd)
    try:
        argv = [b"plain_policies", *(o.encode() for o in opts), path.encode(), str(repeats).encode(),
                str(rounds).encode(), str(seed).encode(), *(a.encode() for a in spec_args)]
        rc = lib.plain_main(len(argv), (ctypes.c_char_p * len(argv))(*argv))
        if rc != 0:
            raise NotAvailable(f"{platform}: the plain yardstick refused its arguments (rc {rc})")
        with open(path) as f:
            return _parse(f.read())
    finally:
        os.unlink(path)


def engine_fidelity(rt, *, sizes_nbytes, policies=YARDSTICK_POLICIES, directions=("h2d", "d2h"),
                    repeats: int = 5, rounds: int = FIDELITY_ROUNDS,
                    evict_nbytes: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(ENGINE_FIDELITY rows, the engine's transfer rows, the yardstick's PLAIN_TRANSFERS rows). Every repeat visits the policies in a
    shuffled order; for each and each group of sizes (``size_groups``: the sizes up to 16 MiB get
    more transfers, those up to 1 MiB more repeats), the engine's plan and the in-process yardstick run back to back
    (which goes first alternates), each with fresh buffers. Per policy, direction and size: the
    median of each side's repeat medians, and the ratio engine / plain paired by repeat (the
    median of the repeats' own ratios, with a 95 % interval over the repeats: the two sides of a
    repeat ran seconds apart, in one state of the machine, while repeats may fall in different
    ones); then the yardstick once more as a process of its own. The timing thread
    is pinned to one CPU throughout (``timing_cpu``; ``thread_cpu`` in the rows, -1 unpinned). Both
    sides meet one cache state (``evict_nbytes``: 0 hot, as the thread's benchmark loops; N cold, N
    bytes of other memory written before each timed transfer, untimed; ``cache`` in the rows)."""
    if native_why_not(rt):
        raise NotAvailable(f"{rt.name}: the native engine is not available: {native_why_not(rt)}")
    cpu = timing_cpu(rt)
    with machine_state.pinned_to(cpu) if cpu is not None else nullcontext():
        eng, plain, apart = _both_sides(rt, sizes_nbytes, policies, directions, repeats, rounds, evict_nbytes)
    keys = ["policy", "direction", "nbytes"]
    moved = eng[eng.event == "transfer"]
    plain_by = {k: g for k, g in plain.groupby(keys)}
    apart_by = {k: g for k, g in apart.groupby(keys)}
    rows = []
    for key, e in moved.groupby(keys):
        p = plain_by.get(key)
        if p is None:
            continue
        est = paired_ratio_ci(e.total_ns, p.ns, e.repeat, p.repeat)
        a = apart_by.get(key)
        rows.append({**dict(zip(keys, key)), "engine_ns": median_ci(e.total_ns, e.repeat).value,
                     "plain_ns": median_ci(p.ns, p.repeat).value,
                     "ratio": est.value, "low": est.low, "high": est.high, "repeats": est.n_repeats,
                     "plain_process_ns": median_ci(a.ns, a.repeat).value if a is not None else float("nan"),
                     "thread_cpu": -1 if cpu is None else cpu, "cache": cache_state(evict_nbytes),
                     "evict_nbytes": int(evict_nbytes), "platform": rt.name})
    return frame(rows, ENGINE_FIDELITY), eng, frame(pd.concat([plain, apart], ignore_index=True).assign(
        platform=rt.name, cache=cache_state(evict_nbytes), evict_nbytes=int(evict_nbytes)).to_dict("records"),
        PLAIN_TRANSFERS)


def timing_cpu(rt) -> int | None:
    """The CPU the timing thread is pinned to while both sides run, so that neither meets a CPU or
    NUMA node the other did not: the CPU it runs on now where that is on the GPU's NUMA node (or the
    node is unknown), else the first CPU of that node this process may use. None for a runtime
    without device events (host): its copies are done by worker threads that a pinned thread
    would start on its one CPU."""
    if not has(rt, Capability.EVENTS):
        return None
    now = max(machine_state.thread_cpu(), 0)
    local = machine_state.cpus_by_node().get(machine_state.gpu_node()[0], [])
    return now if not local or now in local else local[0]


def size_groups(sizes_nbytes, rounds: int, repeats: int) -> list[tuple[list[int], int, int]]:
    """(sizes, rounds, repeats) of the groups run side by side: one per tier of ROUND_TIERS, with
    that tier's rounds and repeats (at least ``rounds`` and ``repeats``), then the sizes above the
    last tier with ``rounds`` and ``repeats``; empty groups left out."""
    groups, low = [], 0
    for high, tier_rounds, tier_repeats in ROUND_TIERS:
        groups.append(([n for n in sizes_nbytes if low < n <= high], max(rounds, tier_rounds), max(repeats, tier_repeats)))
        low = high
    groups.append(([n for n in sizes_nbytes if n > low], rounds, repeats))
    return [grp for grp in groups if grp[0]]


def _both_sides(rt, sizes_nbytes, policies, directions, repeats, rounds, evict_nbytes=0):
    """The engine's and the in-process yardstick's rows, interleaved group by group (which side
    goes first alternates), then the yardstick apart."""
    groups = size_groups(sizes_nbytes, rounds, repeats)
    sweep = Sweep(repeats=max(n for *_, n in groups), verify="first", seed=SEED + 16)
    eng_frames, plain_frames = [], []
    for r, order in sweep.independent(policies):
        for k, policy in enumerate(order):
            for g, (sizes, n_rounds, n_repeats) in enumerate(groups):
                if r >= n_repeats:   # this tier's repeats are done
                    continue
                specs = [(policy, d, n) for d in directions for n in sizes]
                sides = [("engine", lambda: native_policy_sweep(rt, policies=[policy], sizes_nbytes=sizes,
                                                                  directions=directions, repeats=1, rounds=n_rounds,
                                                                  verify="all" if sweep.checks(r) else "none",
                                                                  seed=SEED + r, label="", evict_nbytes=evict_nbytes)),
                         ("plain", lambda: plain_policies(rt.name, specs, repeats=1, rounds=n_rounds,
                                                          seed=SEED + 1000 * r + 10 * k + g, in_process=True,
                                                          evict_nbytes=evict_nbytes))]
                ordered = sides if (r + k + g) % 2 == 0 else sides[::-1]
                for side, run in ordered:
                    got = run().assign(repeat=r)
                    if side == "plain":
                        got = got.assign(process="notebook", first=ordered[0][0])
                    (eng_frames if side == "engine" else plain_frames).append(got)
    apart = plain_policies(rt.name, [(p, d, n) for p in policies for d in directions for n in sizes_nbytes],
                           repeats=repeats, rounds=rounds, evict_nbytes=evict_nbytes).assign(process="own", first="")
    return pd.concat(eng_frames, ignore_index=True), pd.concat(plain_frames, ignore_index=True), apart


def engine_fidelity_or_reason(rt, **kw) -> tuple[pd.DataFrame | None, pd.DataFrame | None, pd.DataFrame | None, str]:
    """engine_fidelity's three frames and "", or (None, None, None, why) where the engine or the
    yardstick cannot run here."""
    try:
        return (*engine_fidelity(rt, **kw), "")
    except NotAvailable as e:
        return None, None, None, str(e)
