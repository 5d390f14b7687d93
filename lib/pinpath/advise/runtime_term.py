"""The offload runtime's own cost per copy, measured on this node: the replay times a copy as the
native engine makes it, while an application's copy goes through the offload runtime, which adds
its own work (finding the mapping, a queue, the wait). ``updates`` (native/offload/updates.cpp,
built into the offload bundle) times `target update`s of the pattern's sizes through the real
runtime under each variant, in a few processes; the runtime term of a (variant, size, direction)
is each probed update less the replay's median copy of that class. Nothing here uses the traced
application's own times.

The probe runs in the state the traced application is in (``layout_of``): the trace's own arrays,
each its size and mapped alone (not slices of one large array), a stack variable on the probe's
stack, and one round making the copies of one step in the trace's order, a rare copy (a checkpoint)
only as often as the trace makes it. The runtime's own ``KernelLaunchEnv`` is moved there as the
update of a stack buffer of its size: a stand-in (the plugin copies it at a kernel launch, without a
mapping to look up), charged alike under every variant.

- ``probe_runtime(classes, variants, ...) -> (PROBE frame, why)``: the probe's rows, or why not;
  ``construct`` "region" probes a copy made by a target region's map clause instead of a
  `target update` (a trace does not say which the application used: the user does).
- ``layout_of(pattern, rounds) -> str``: the probe's --layout file for a pattern.
- ``runtime_rows(probe, rep) -> frame``: replay-shaped rows of event "runtime" for ``predict``.
"""

from __future__ import annotations

import io
import math
import subprocess
import tempfile
from pathlib import Path

import pandas as pd

from ..errors import BadParameter, NotAvailable
from .pattern import host_address, pow2_floor
from ..experiments.offload_build import OFFLOAD_DIR, VARIANTS, app_binary, find_build, runtime_env, variant_env

__all__ = ["layout_of", "probe_runtime", "probe_rounds", "check_construct", "CONSTRUCTS", "runtime_rows", "PROBE_COLUMNS", "RUNTIME_EVENT", "PROBE_BUDGET_NBYTES"]

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


MIN_SAMPLES = 3   #: a rare copy is still probed at least this many times


def layout_of(p, rounds: int) -> str:
    """updates' --layout for pattern ``p``: its arrays (size and owner) and its distinct copies in
    trace order, each made every k-th round where the trace makes it in one step of k (regions where
    the trace has no steps; setup and teardown count as one each), at least MIN_SAMPLES times in
    ``rounds``: every copy the prediction charges has its term."""
    t = p.transfers
    group = (t.step.astype(str) + t.segment) if (t.step >= 0).any() else t.region.astype(str)
    n_groups = max(int(group[t.segment == "invocation"].nunique()), 1)
    arrays = p.arrays.reset_index(drop=True)
    index = pd.Series(range(len(arrays)), index=arrays.array)
    base = arrays.array.map(host_address)
    lines = [f"array {int(a.nbytes)} {a.owner}" for a in arrays.itertuples()]
    every_max = max(rounds // MIN_SAMPLES, 1)
    seen = t.assign(group=group).groupby(["buffer", "nbytes", "direction"], sort=False).group.nunique()
    for (buf, nb, d), k in seen.items():
        a = int(index[t.array[t.buffer == buf].iat[0]])
        offset = host_address(buf) - int(base.iat[a]) if host_address(buf) >= 0 else 0
        every = min(max(math.floor(n_groups / k), 1), every_max)
        lines.append(f"copy {a} {offset} {int(nb)} {d} {every}")
    return "\n".join(lines) + "\n"


def probe_runtime(classes: pd.DataFrame, variants, *, vendor: str, construct: str = "update", offload_dir=OFFLOAD_DIR,
                  rounds: int = 100, processes: int = 3, timeout_s: int = 300, layout=None) -> tuple[pd.DataFrame, str]:
    """Per variant of ``variants`` that the build's runtime has: ``processes`` runs of updates over
    every size of ``classes``, ``rounds`` timed rounds each (fewer where the sizes are large:
    ``probe_rounds``), where the offload build is for ``vendor``'s GPUs; ``construct`` "update"
    times `target update`s, "region" a copy's share of a target region (updates --construct).
    ``layout``: a pattern, probed as its own arrays and copies (``layout_of``) instead of slices of
    one array; the rows' nbytes are then the classes' (powers of two where the pattern bins sizes).
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
    tmp = tempfile.TemporaryDirectory(prefix="pinpath-layout-")
    where = ["--nbytes", sizes]
    if layout is not None:
        path = Path(tmp.name) / "layout.txt"
        path.write_text(layout_of(layout, rounds))
        where = ["--layout", str(path)]
    with tmp:
        probe, why = _probe(exe, env, build.vendor, variants, where, rounds, construct, processes, timeout_s)
    if len(probe) and layout is not None and layout.size_binned:
        probe["nbytes"] = pow2_floor(probe.nbytes)
    return probe, why


def _probe(exe, env, vendor, variants, where, rounds, construct, processes, timeout_s) -> tuple[pd.DataFrame, str]:
    frames = []
    for variant in variants:
        mode, _, vendors = VARIANTS[variant]
        if vendor not in vendors:
            continue
        for proc in range(processes):
            cmd = [str(exe), "--variant", mode, *where, "--rounds", str(rounds), "--seed", str(proc + 1),
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
        return _empty(), f"the {vendor} offload build has none of the variants {', '.join(variants)}"
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
