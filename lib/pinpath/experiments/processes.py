"""The process as the unit of repeat (issue 34): each repeat of a measurement in a fresh process
(``python -m pinpath.experiments.processes``), the runtime started anew and every buffer made anew,
so that the interval of a figure is over independent processes, not over rounds of one.

A *target* is a module that names its measurements (``SECTIONS``: name -> function taking what
``open_for_process(platform, device)`` yields first) and how a fresh process opens what they
need: ``pinpath.experiments.state`` (state.c, notebook 14), ``pinpath.experiments.replicate``
(a runtime: the lock cost, C12's cases, C13's C loop, the policy sweeps of C2, C3 and C4, C10's
replica) and ``pinpath.experiments.wait_mode`` (the replica model in a CUDA wait mode, each process
its own: ``vary_env``). Each process runs ``warmup`` untimed rounds and one timed round of every
named measurement, in an order of its own (shuffled with the repeat's seed, ``section_order`` in
its rows), with the seed ``SEED + repeat``; ``repeat`` in the rows is the process's number, ``pid``
its process id and ``repeat_unit`` "process". A name "SECTION:LABEL" runs ``SECTIONS[SECTION]``
once more under a name of its own (the same sweep at other points in the same processes)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

import pandas as pd

from .. import progress
from ..errors import BadParameter, PinpathError
from .sweep import SEED

__all__ = ["run", "Failed", "check_unit", "section_of", "UNIT_COLUMN", "REPEAT_UNITS"]

#: what a repeat can be: a fresh process, or a round inside one process
REPEAT_UNITS = ("process", "round")

#: the column that names what a repeat was ("process" or "round") in data sets measured either way
UNIT_COLUMN = "repeat_unit"


def check_unit(unit: str) -> None:
    """BadParameter (one sentence) unless ``unit`` is one of REPEAT_UNITS."""
    if unit not in REPEAT_UNITS:
        raise BadParameter(f"the unit of repeat is one of {', '.join(REPEAT_UNITS)}, not {unit!r}")


def section_of(name: str) -> str:
    """The SECTIONS name a measurement ``name`` ("SECTION" or "SECTION:LABEL") runs."""
    return name.partition(":")[0]


class Failed(PinpathError):
    """A process failed as a whole or did not finish (one sentence)."""


def run(target: str, specs: dict, *, platform: str, device: int = 0, repeats: int, warmup: int,
        timeout_s: int = 600, vary: Callable[[int, str], dict] | None = None,
        vary_env: Callable[[int], dict] | None = None, first: int = 0) -> dict:
    """Each of ``repeats`` a fresh process that runs every measurement of ``specs`` ({name: its
    keyword arguments}) of ``target``'s ``SECTIONS``; {name: its rows over the processes (a
    ``repeat`` column numbering the process), or the sentence why it could not run}. ``vary(r, name)``:
    keyword arguments of measurement ``name`` that differ in process r (e.g. a byte check in the
    first only); ``vary_env(r)``:
    environment variables of process r (e.g. the CUDA wait mode, read when it opens). Failed where
    a process fails as a whole (its last line of stderr) or runs past ``timeout_s``. ``first``: the
    number of the first process (a caller that starts its processes one at a time, between others)."""
    pkg_parent = str(Path(__file__).resolve().parents[2])
    env = {k: v for k, v in os.environ.items() if k != progress.ENV}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [pkg_parent, env.get("PYTHONPATH")]))
    frames: dict = {name: [] for name in specs}
    label = " + ".join(name.replace("_", " ").replace(":", ", ") for name in specs)
    with tempfile.TemporaryDirectory(prefix="pinpath-processes-") as d:
        for r in range(int(first), int(first) + int(repeats)):
            args = json.dumps({name: {**kw, **(vary(r, name) if vary else {}), "repeats": 1, "warmup": warmup,
                                      "seed": SEED + r} for name, kw in specs.items()})
            cmd = [sys.executable, "-m", "pinpath.experiments.processes", target, platform, str(device), args, d, str(r)]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                                   env={**env, **(vary_env(r) if vary_env else {})})
            except subprocess.TimeoutExpired:
                raise Failed(f"{platform}: a process of {label} did not finish in {timeout_s} s") from None
            if p.returncode != 0:
                last = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
                raise Failed(f"{platform}: a process of {label} failed ({last})")
            for name in specs:
                out, why = Path(d) / f"{r}.{name}.parquet", Path(d) / f"{r}.{name}.txt"
                if isinstance(frames[name], str):
                    continue
                if why.is_file():
                    frames[name] = why.read_text().strip()
                elif out.is_file():
                    frames[name].append(pd.read_parquet(out).assign(repeat=r))
                else:
                    frames[name] = f"{platform}: a process of {name} wrote nothing"
            progress.step(label, r + 1 - int(first), int(repeats))
        attrs = {name: _attrs(Path(d), name, range(int(first), int(first) + int(repeats))) for name in specs}
    out = {}
    for name, f in frames.items():
        if isinstance(f, str):
            out[name] = f
            continue
        df = pd.concat(f, ignore_index=True).assign(**{UNIT_COLUMN: "process"})
        df.attrs.update(attrs[name])
        out[name] = df
    return out


def _attrs(d: Path, name: str, numbers: range) -> dict:
    """The frames' ``attrs`` the processes ``numbers`` wrote (lists joined without repeats)."""
    got: dict = {}
    for r in numbers:
        p = d / f"{r}.{name}.attrs.json"
        if p.is_file():
            for k, v in json.loads(p.read_text()).items():
                got[k] = list(dict.fromkeys([*got.get(k, []), *v])) if isinstance(v, list) else v
    return got


def _main(argv) -> int:
    """``python -m pinpath.experiments.processes TARGET PLATFORM DEVICE JSON_SPECS DIR REPEAT``: one
    process's rounds of each measurement in JSON_SPECS, in an order shuffled with the repeat, each
    written to DIR/REPEAT.NAME.parquet (its attrs to .attrs.json), or why it could not run to
    DIR/REPEAT.NAME.txt (what ``run`` starts)."""
    import importlib

    from ..errors import NotAvailable, RuntimeUnavailable
    from ..nativelib import NativeUnavailable
    target, platform, device, specs, d, r = argv
    mod, specs = importlib.import_module(target), json.loads(specs)
    names = sorted(specs)
    random.Random(SEED + int(r)).shuffle(names)
    with mod.open_for_process(platform, int(device)) as first:
        for name in names:
            try:
                df = mod.SECTIONS[section_of(name)](first, **specs[name])
            except (NativeUnavailable, NotAvailable, RuntimeUnavailable) as e:
                (Path(d) / f"{r}.{name}.txt").write_text(str(e))
                continue
            if df.attrs:
                (Path(d) / f"{r}.{name}.attrs.json").write_text(json.dumps(df.attrs, default=str))
            df = df.assign(section_order=names.index(name), pid=os.getpid())
            df.attrs = {}
            df.to_parquet(Path(d) / f"{r}.{name}.parquet")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
