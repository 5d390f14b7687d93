"""The offload runtime's own cost per copy, measured on this node: the replay times a copy as the
native engine makes it, while an application's copy goes through the offload runtime, which adds
its own work (finding the mapping, a queue, the wait). ``updates`` (native/offload/updates.cpp,
built into the offload bundle) times `target update`s of the pattern's sizes through the real
runtime under each variant, in a few processes; the runtime term of a (variant, size, direction)
is each probed update less the replay's median copy of that class. Nothing here uses the traced
application's own times.

- ``probe_runtime(classes, variants, ...) -> (PROBE frame, why)``: the probe's rows, or why not;
  ``construct`` "region" probes a copy made by a target region's map clause instead of a
  `target update` (a trace does not say which the application used: the user does).
- ``runtime_rows(probe, rep) -> frame``: replay-shaped rows of event "runtime" for ``predict``.
"""

from __future__ import annotations

import io
import subprocess

import pandas as pd

from ..errors import BadParameter, NotAvailable
from ..experiments.offload_build import OFFLOAD_DIR, VARIANTS, app_binary, find_build, runtime_env, variant_env

__all__ = ["probe_runtime", "probe_rounds", "check_construct", "CONSTRUCTS", "runtime_rows", "PROBE_COLUMNS", "RUNTIME_EVENT", "PROBE_BUDGET_NBYTES"]

PROBE_COLUMNS = ["variant", "process", "direction", "nbytes", "round", "ns"]
RUNTIME_EVENT = "runtime"


def _empty() -> pd.DataFrame:
    return pd.DataFrame(columns=PROBE_COLUMNS)


#: bytes one probe process moves per direction at most; fewer rounds where the sizes are large
PROBE_BUDGET_NBYTES = 4 << 30
MIN_ROUNDS = 10


def probe_rounds(sizes_nbytes, rounds: int, budget_nbytes: int = PROBE_BUDGET_NBYTES) -> int:
    """``rounds``, or fewer where one round of every size moves so much that ``rounds`` of them
    would pass ``budget_nbytes`` per direction, but never below MIN_ROUNDS."""
    total = sum(int(n) for n in sizes_nbytes)
    return max(min(rounds, MIN_ROUNDS), min(rounds, budget_nbytes // max(total, 1)))


CONSTRUCTS = ("update", "region")   #: how an application's copies are made: target update, a region's map


def check_construct(construct: str) -> str:
    """``construct`` if it is one of CONSTRUCTS, else BadParameter in one sentence."""
    if construct not in CONSTRUCTS:
        raise BadParameter(f"--construct must be one of {', '.join(CONSTRUCTS)}, got {construct!r}")
    return construct


def probe_runtime(classes: pd.DataFrame, variants, *, vendor: str, construct: str = "update", offload_dir=OFFLOAD_DIR,
                  rounds: int = 100, processes: int = 3, timeout_s: int = 300) -> tuple[pd.DataFrame, str]:
    """Per variant of ``variants`` that the build's runtime has: ``processes`` runs of updates over
    every size of ``classes``, ``rounds`` timed rounds each (fewer where the sizes are large:
    ``probe_rounds``), where the offload build is for ``vendor``'s GPUs; ``construct`` "update"
    times `target update`s, "region" a copy's share of a target region (updates --construct).
    (the rows, "") or (empty, why not)."""
    check_construct(construct)
    try:
        build = find_build(offload_dir)
        if build.vendor != vendor:
            return _empty(), f"the offload build in {offload_dir} is for {build.vendor}, and {vendor} is modelled"
        exe = app_binary(build, "updates")
        env = runtime_env(build)
    except NotAvailable as e:
        return _empty(), str(e)
    sizes_nbytes = sorted(set(int(n) for n in classes.nbytes))
    sizes, rounds = ",".join(map(str, sizes_nbytes)), probe_rounds(sizes_nbytes, rounds)
    frames = []
    for variant in variants:
        mode, _, vendors = VARIANTS[variant]
        if build.vendor not in vendors:
            continue
        for proc in range(processes):
            cmd = [str(exe), "--variant", mode, "--nbytes", sizes, "--rounds", str(rounds), "--seed", str(proc + 1),
                   "--construct", construct]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, env=variant_env(env, variant),
                                   timeout=timeout_s)
            except subprocess.TimeoutExpired:
                return _empty(), f"the runtime probe ({variant}) did not finish in {timeout_s} s"
            if r.returncode != 0:
                last = (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]
                return _empty(), f"the runtime probe ({variant}) stopped: {last}"
            rows = pd.read_csv(io.StringIO("\n".join(l for l in r.stdout.splitlines() if not l.startswith("#"))))
            frames.append(rows.assign(variant=variant, process=proc))
    if not frames:
        return _empty(), f"the {build.vendor} offload build has none of the variants {', '.join(variants)}"
    return pd.concat(frames, ignore_index=True)[PROBE_COLUMNS], ""


def runtime_rows(probe: pd.DataFrame, rep: pd.DataFrame) -> pd.DataFrame:
    """Rows shaped as the replay's (variant, event "runtime", nbytes, direction, ns, repeat = the
    probe's process): each probed update less the replay's median transfer of the same variant,
    size and direction (its later uses where the class reuses a buffer, as an application's mapped
    array is used again and again). A probed class the replay lacks gives no row."""
    tr = rep[rep.event == "transfer"]
    later = tr[tr.use == tr.groupby(["variant", "nbytes", "direction"]).use.transform("max")]
    copy = later.groupby(["variant", "nbytes", "direction"]).ns.median().rename("copy_ns").reset_index()
    got = probe.merge(copy, on=["variant", "nbytes", "direction"], how="inner")
    return pd.DataFrame({"variant": got.variant, "policy": "", "event": RUNTIME_EVENT, "nbytes": got.nbytes,
                         "direction": got.direction, "reuse": -1, "use": -1, "repeat": got.process,
                         "ns": got.ns - got.copy_ns, "path": "", "error": "", "engine": "updates"})
