"""The timed claims' measurements over independent processes (issue 34 item 4): the lock cost
(C4's query cost, C6, C7, C9), carlobertolli's cases (C12), C13's C loop, the policy sweeps of
C2, C3 and C4 (their cold arms too) and C10's replica, each repeat a fresh process with its runtime
started anew and its buffers made anew (``processes.run``), or, with the unit "round", rounds inside
this process. The timing stays where it is (in C where the C library or the engine builds);
``repeat`` numbers the process (or round) and ``repeat_unit`` says which it was."""

from __future__ import annotations

from contextlib import contextmanager

import pandas as pd

from ..errors import BadParameter, NotAvailable
from ..runtimes import open_runtime
from . import processes
from .processes import REPEAT_UNITS
from .c12 import c12_cases
from .lock_cost import lock_cost
from .policy_sweep import policy_sweep
from .replica import api_calls, replica
from .threads import concurrency_native

__all__ = ["replicated", "replicated_all", "SECTIONS", "REPEAT_UNITS", "open_for_process"]


def _native_threads(rt, *, repeats: int = 5, warmup: int = 0, **kw) -> pd.DataFrame:
    """C13's C loop (``threads.concurrency_native``, its own warm-up calls per thread) after
    ``warmup`` untimed repeats of it."""
    from ..nativelib import load
    lib = load(rt.name)
    if warmup:
        concurrency_native(rt, lib, **{**kw, "repeats": warmup})
    return concurrency_native(rt, lib, repeats=repeats, **kw)


def _replica_calls(rt, *, repeats: int = 5, warmup: int = 0, **kw) -> pd.DataFrame:
    """C10's replica (``replica``: ``repeats`` steps, each an independent repeat of every region on
    the engine) after ``warmup`` untimed steps of it (bytes unchecked), as ``api_calls``'s rows."""
    if warmup:
        replica(rt, **{**kw, "steps": warmup, "verify": "none"})
    return api_calls(*replica(rt, steps=repeats, **kw))


#: the measurements a fresh process can run, by name
SECTIONS = {"lock_cost": lock_cost, "c12_cases": c12_cases, "concurrency_native": _native_threads,
            "policy_sweep": policy_sweep, "api_calls": _replica_calls}


@contextmanager
def open_for_process(platform: str, device: int):
    """What a fresh process of ``processes.run`` opens first: the runtime ``platform``."""
    rt = open_runtime(platform)
    try:
        yield rt
    finally:
        rt.close()


def replicated(rt, name: str, *, unit: str = "process", repeats: int = 5, warmup: int = 1,
               timeout_s: int = 600, **kw) -> pd.DataFrame:
    """``SECTIONS[name]`` with ``repeats`` independent repeats and ``kw``: with ``unit`` "process"
    each repeat a fresh process of ``rt``'s platform (``warmup`` untimed rounds, then one timed
    round; its seed its own), with "round" ``repeats`` rounds in this process on ``rt``. The
    rows' ``repeat`` numbers the process (or round), ``repeat_unit`` names the unit. NotAvailable
    where the measurement cannot run here, processes.Failed where a process fails."""
    return replicated_all(rt, {name: kw}, unit=unit, repeats=repeats, warmup=warmup, timeout_s=timeout_s)[name]


def replicated_all(rt, specs: dict, *, unit: str = "process", repeats: int = 5, warmup: int = 1,
                   timeout_s: int = 600) -> dict:
    """``replicated`` of several measurements ({name: its keyword arguments}; a name
    "SECTION:LABEL" runs ``SECTIONS[SECTION]`` again, e.g. a sweep's cold arm) in the same
    repeats: with ``unit`` "process" every fresh process runs each of them (in an order of its
    own), with "round" each runs its rounds here in turn. {name: its rows}; a byte check asked
    for the first repeat only (``verify`` "first") is made in the first process only."""
    processes.check_unit(unit)
    unknown = [n for n in specs if processes.section_of(n) not in SECTIONS]
    if unknown:
        raise BadParameter(f"unknown measurement {unknown[0]!r}; known: {', '.join(SECTIONS)}")
    if unit == "round":
        out = {}
        for name, kw in specs.items():
            df = SECTIONS[processes.section_of(name)](rt, repeats=repeats, warmup=warmup, **kw)
            out[name] = df.assign(**{processes.UNIT_COLUMN: "round"}) if len(df) else df
        return out
    first_only = {n for n, kw in specs.items() if kw.get("verify") == "first"}   # as in the first round
    got = processes.run(__name__, specs, platform=rt.name, device=int(getattr(rt, "device", 0) or 0),
                        repeats=repeats, warmup=warmup, timeout_s=timeout_s,
                        vary=lambda r, name: {"verify": "none"} if name in first_only and r else {})
    why = next((g for g in got.values() if isinstance(g, str)), None)
    if why is not None:
        raise NotAvailable(why)
    return got
