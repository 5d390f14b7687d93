"""The timed claims' measurements over independent processes (issue 34 item 4): the lock cost
(C6, C7, C9), carlobertolli's cases (C12) and C13's C loop, each repeat a fresh process with its
runtime started anew and its buffers made anew (``processes.run``), or, with the unit "round",
rounds inside this process. The timing stays where it is (in C where the C library builds);
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
from .threads import concurrency_native

__all__ = ["replicated", "SECTIONS", "REPEAT_UNITS", "open_for_process"]



def _native_threads(rt, *, repeats: int = 5, warmup: int = 0, **kw) -> pd.DataFrame:
    """C13's C loop (``threads.concurrency_native``, its own warm-up calls per thread) after
    ``warmup`` untimed repeats of it."""
    from ..nativelib import load
    lib = load(rt.name)
    if warmup:
        concurrency_native(rt, lib, **{**kw, "repeats": warmup})
    return concurrency_native(rt, lib, repeats=repeats, **kw)


#: the measurements a fresh process can run, by name
SECTIONS = {"lock_cost": lock_cost, "c12_cases": c12_cases, "concurrency_native": _native_threads}


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
    processes.check_unit(unit)
    if name not in SECTIONS:
        raise BadParameter(f"unknown measurement {name!r}; known: {', '.join(SECTIONS)}")
    if unit == "round":
        df = SECTIONS[name](rt, repeats=repeats, warmup=warmup, **kw)
        return df.assign(**{processes.UNIT_COLUMN: "round"}) if len(df) else df
    first_only = kw.get("verify") == "first"   # the byte check in the first process only, as in the first round
    got = processes.run(__name__, {name: kw}, platform=rt.name, device=int(getattr(rt, "device", 0) or 0),
                        repeats=repeats, warmup=warmup, timeout_s=timeout_s,
                        vary=lambda r: {"verify": "none"} if first_only and r else {})[name]
    if isinstance(got, str):
        raise NotAvailable(got)
    return got
