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

__all__ = ["layout_of", "probe_runtime", "probe_rounds", "check_construct", "CONSTRUCTS", "runtime_rows", "PROBE_COLUMNS",
           "RUNTIME_EVENT", "RUNTIME_EVENTS", "NO_COPY", "PROBE_BUDGET_NBYTES"]

PROBE_COLUMNS = ["variant", "process", "direction", "nbytes", "round", "ns", "at"]
RUNTIME_EVENT = "runtime"
#: the runtime term's event by what made the copy (updates' column at): a target update (or a region's
#: map), a map entry made with it (`target enter data`), its removal after it (`target exit data`)
RUNTIME_EVENTS = {"update": RUNTIME_EVENT, "map": "runtime_map", "unmap": "runtime_unmap"}
NO_COPY = "none"   #: the direction of a map or unmap that copies nothing


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


def _events(p, per_step: bool = True) -> pd.DataFrame:
    """The copies and, of an array mapped every step (``remapped``), the maps and unmaps that copy
    nothing (direction "none"), in trace order: buffer, array, nbytes, direction, at, step, region,
    segment. Without ``per_step``: the copies alone, every one an update's."""
    cols = ["buffer", "array", "nbytes", "direction", "at", "step", "region", "segment"]
    t = p.transfers.assign(order=p.transfers.seq * 2 + 1)
    at = t["at"] if "at" in t.columns and per_step else ""
    ev = [t.assign(at=at)[cols + ["order"]]]
    m = p.maps
    if per_step and m is not None and len(m):
        bare = m[m.remapped & ~m.copied.fillna(False).astype(bool)]
        ev.append(bare.assign(direction="none", at=bare.event, order=bare.seq * 2)[cols + ["order"]])
    return pd.concat(ev, ignore_index=True).sort_values("order", kind="stable", ignore_index=True)


def layout_of(p, rounds: int, per_step: bool = True) -> str:
    """updates' --layout for pattern ``p``: its arrays (size, owner, ``per_step`` where the trace maps
    it every step) and its distinct copies in trace order (with the map or unmap that made them,
    and the maps and unmaps that copy nothing, of a per-step array), each made every k-th round
    where the trace makes it in one step of k (regions where the trace has no steps; setup and
    teardown count as one each), at least MIN_SAMPLES times in ``rounds``: every copy the prediction
    charges has its term. A per-step array's lines all take the rounds of its maps. Without
    ``per_step``: every array mapped once and every copy an update (the layout an updates built
    before it could map per step reads)."""
    t = _events(p, per_step)
    group = (t.step.astype(str) + t.segment) if (t.step >= 0).any() else t.region.astype(str)
    t = t.assign(group=group)
    n_groups = max(int(group[t.segment == "invocation"].nunique()), 1)
    arrays = p.arrays.reset_index(drop=True)
    index = pd.Series(range(len(arrays)), index=arrays.array)
    base = arrays.array.map(host_address)
    per_step = arrays.remapped.to_numpy() & per_step if "remapped" in arrays.columns else [False] * len(arrays)
    lines = [f"array {int(a.nbytes)} {a.owner}" + (" per_step" if ps else "")
             for a, ps in zip(arrays.itertuples(), per_step)]
    every_max = max(rounds // MIN_SAMPLES, 1)
    every_of = lambda k: min(max(math.floor(n_groups / k), 1), every_max)   # noqa: E731
    maps = t[t["at"] == "map"].groupby("array").group.nunique()   # a per-step array: the rounds of its maps
    seen = t.groupby(["buffer", "nbytes", "direction", "at"], sort=False).agg(group=("group", "nunique"),
                                                                          array=("array", "first"))
    for (buf, nb, d, at), r in seen.iterrows():
        a = int(index[r["array"]])
        offset = host_address(buf) - int(base.iat[a]) if host_address(buf) >= 0 else 0
        every = every_of(maps.get(r["array"], r["group"]) if per_step[a] else r["group"])
        lines.append(f"copy {a} {offset} {int(nb)} {d} {every}" + (f" {at}" if at else ""))
    return "\n".join(lines) + "\n"


def probe_runtime(classes: pd.DataFrame, variants, *, vendor: str, construct: str = "update", offload_dir=OFFLOAD_DIR,
                  rounds: int = 100, processes: int = 3, timeout_s: int = 300, layout=None,
                  per_step: bool = True) -> tuple[pd.DataFrame, str]:
    """Per variant of ``variants`` that the build's runtime has: ``processes`` runs of updates over
    every size of ``classes``, ``rounds`` timed rounds each (fewer where the sizes are large:
    ``probe_rounds``), where the offload build is for ``vendor``'s GPUs; ``construct`` "update"
    times `target update`s, "region" a copy's share of a target region (updates --construct).
    ``layout``: a pattern, probed as its own arrays and copies (``layout_of``) instead of slices of
    one array; the rows' nbytes are then the classes' (powers of two where the pattern bins sizes);
    ``per_step`` False: its arrays mapped once and every copy an update, though the trace maps some
    every step (``layout_of``).
    (the rows, "") or (empty, why not). Where this build's updates cannot read a layout that maps
    per step (one built before it could), the layout is probed again with every copy an update, and
    ``probe.attrs["note"]`` says so."""
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
        path.write_text(layout_of(layout, rounds, per_step))
        where = ["--layout", str(path)]
    with tmp:
        probe, why = _probe(exe, env, build.vendor, variants, where, rounds, construct, processes, timeout_s)
        if why and "cannot be read" in why and layout is not None and " per_step" in path.read_text():
            path.write_text(layout_of(layout, rounds, per_step=False))
            probe, why = _probe(exe, env, build.vendor, variants, where, rounds, construct, processes, timeout_s)
            probe.attrs["note"] = ("this build's updates cannot map per step (built before it could: make "
                                   "offload-bundle): the copies of arrays mapped every step were probed as updates")
    if len(probe) and layout is not None and layout.size_binned:
        probe["nbytes"] = pow2_floor(probe.nbytes)
    return probe, why


def turn_order(items: list, turn: int) -> list:
    """The order of ``items`` in turn ``turn`` (0, 1, ...): a rotation on even turns, the same rotation
    reversed on odd ones (a, b, c; c, b, a; b, c, a; a, c, b; ...): each item takes every place, and
    follows each other item, over the turns, where a rotation alone keeps every item's neighbours."""
    if not items:
        return []
    k = (turn // 2) % len(items)
    order = items[k:] + items[:k]
    return order if turn % 2 == 0 else order[::-1]


def _probe(exe, env, vendor, variants, where, rounds, construct, processes, timeout_s) -> tuple[pd.DataFrame, str]:
    """``processes`` runs of updates per variant, the variants interleaved (process 0 of each, then 1
    ...): a node whose state drifts over the probe gives every variant the same share of each state;
    in ``turn_order``, so that no variant is always first nor always the one after the same other."""
    frames = []
    mine = [v for v in variants if vendor in VARIANTS[v][2]]
    for proc in range(processes):
        for variant in turn_order(mine, proc):
            mode = VARIANTS[variant][0]
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
            if "at" not in rows.columns:   # without --layout every row is an update
                rows["at"] = "update"
            frames.append(rows.assign(variant=variant, process=proc))
    if not frames:
        return _empty(), f"the {vendor} offload build has none of the variants {', '.join(variants)}"
    return pd.concat(frames, ignore_index=True)[PROBE_COLUMNS], ""


def runtime_rows(probe: pd.DataFrame, rep: pd.DataFrame) -> pd.DataFrame:
    """Rows shaped as the replay's (variant, event, nbytes, direction, ns, repeat = the probe's
    process): each probed update (event "runtime") less the replay's median transfer of the same
    variant, size and direction (its later uses where the class reuses a buffer, as an application's
    mapped array is used again and again); each probed map or unmap (events "runtime_map",
    "runtime_unmap", ``RUNTIME_EVENTS``) less the same copy where it copies and less the replay's
    own map or unmap event of that size (the policy's lock or unlock there), so that the charges of
    all three add up to the directive's time. A probed class the replay lacks gives no row."""
    at = probe["at"] if "at" in probe.columns else pd.Series("update", index=probe.index)
    tr = rep[rep.event == "transfer"]
    key = ["variant", "nbytes", "direction"]
    later = tr[tr.use == tr.groupby(key).use.transform("max")]
    copy_later = later.groupby(key).ns.median().rename("copy_ns").reset_index()
    frames = [probe[at == "update"].merge(copy_later, on=key, how="inner").assign(event=RUNTIME_EVENT)]
    for what in ("map", "unmap"):
        own = rep[rep.event == what].groupby(["variant", "nbytes"]).ns.median().rename("own_ns").reset_index()
        p = probe[at == what].merge(own, on=["variant", "nbytes"], how="inner")
        moved = p[p.direction != NO_COPY].merge(copy_later, on=key, how="inner")
        bare = p[p.direction == NO_COPY].assign(copy_ns=0.0)
        frames.append(pd.concat([moved, bare]).assign(event=RUNTIME_EVENTS[what], copy_ns=lambda d: d.copy_ns + d.own_ns))
    got = pd.concat(frames, ignore_index=True)
    return pd.DataFrame({"variant": got.variant, "policy": "", "event": got.event, "nbytes": got.nbytes,
                         "direction": got.direction, "reuse": -1, "use": -1, "repeat": got.process,
                         "ns": got.ns - got.copy_ns, "path": "", "error": "", "engine": "updates"})
