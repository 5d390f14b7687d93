"""The real offload runtime as ground truth (issue #11).

The miniqmc region of the replica (``native/offload/region.cpp``), compiled with OpenMP offload
(``tools/offload-bundle``), runs through LLVM's libomptarget under each variant: ``plain``,
``app_pinned`` (the application registers its two arrays before ``target enter data``, as QMCPACK
does), and the runtime's own switches set in the environment (``lock_mapped``:
``LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS=1``; on AMD ``async_threshold0``:
``LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES=0``). Always with ``OMP_TARGET_OFFLOAD=MANDATORY``,
so a silent host fallback stops the run.

Each point runs in ``processes`` (>= 5) timed runs, each a fresh process (nothing but the
region's own clock; the points visited in a shuffled order per round), and once traced with
``LIBOMPTARGET_INFO=48`` (every copy: direction, size, variable; each kernel launch and how the CUDA
plugin found the context: one line per invocation that the full and the present-only region both
print, so the bookkeeping's difference is free of it) and ``LIBOMPTARGET_PROFILE``
(the runtime's phases, Chrome-trace JSON, 1 us resolution). The process is the unit of repeat:
a figure is the median of the per-process medians, with its interval over the processes, since
the runtime's per-invocation time moves from one process to the next far beyond the spread of
one process's invocations (issue #17). The replica beside it, the model of that runtime:
``replica_compare``.

With ``paired_processes`` the region also runs ``--paired`` in as many more fresh processes per point
(in the same shuffled rounds; each invocation beside the same region over present arrays, which
moves nothing: ``kernel_ns`` is the runtime's lookup, launch, kernel and synchronize of one region)
and, where traced, once more traced, so the profile holds both regions (``segment`` "present" for
the present-only one): ``real_terms`` puts these measured terms into the model.

Every run inherits the CPUs of the process that starts it: ``placement`` names them against the
GPU's interrupt CPU (``machine_state.place_process``; notebook 13 places itself first, its model too),
and each row of ``runs`` records the word and the CPUs (``cpus``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from .. import machine_state, ompinfo
from ..errors import NotAvailable, PinpathError, VerificationFailed
from ..schema import REAL_COPIES, REAL_INVOCATIONS, REAL_PHASES, REAL_PRESENT, REAL_RUNS, frame
from .offload_build import (OFFLOAD_DIR, RUNTIME_DIR, VARIANTS, Build, app_binary, build_host_region,
                            device_reason, find_build, runtime_env, variant_env)
from .sweep import Sweep

__all__ = ["VARIANTS", "OFFLOAD_DIR", "RUNTIME_DIR", "Build", "RealRun", "find_build", "runtime_env",
           "variant_env", "app_binary", "build_host_region", "run_region", "parse_facts", "parse_info",
           "parse_profile", "real_runtime", "real_runtime_or_reason", "describe", "phase_table"]


@dataclass
class RealRun:
    """The frames of one ``real_runtime`` call; where it could not run, each is the same one-row
    frame whose ``not_applicable`` column says why."""
    runs: pd.DataFrame
    invocations: pd.DataFrame
    copies: pd.DataFrame
    phases: pd.DataFrame
    vendor: str = ""
    arch: str = ""
    #: the ``--paired`` processes' invocations (REAL_PRESENT) and their traced run's profile
    #: (REAL_PHASES, segments "invocation" and "present"); empty where none ran
    present: pd.DataFrame = field(default_factory=lambda: frame([], REAL_PRESENT))
    present_phases: pd.DataFrame = field(default_factory=lambda: frame([], REAL_PHASES))

    @property
    def reason(self) -> str:
        return str(self.runs.not_applicable.iloc[0]) if "not_applicable" in self.runs.columns else ""


# -- one run of the binary and what it leaves ---------------------------------------------------
def parse_facts(lines) -> dict:
    """The binary's '#' lines (key=value words) as one dict; numbers as int."""
    facts = {}
    for line in lines:
        for word in line.lstrip("#").split():
            k, _, v = word.partition("=")
            facts[k] = int(v) if re.fullmatch(r"-?\d+", v) else v
    return facts


def parse_info(text: str, *, variant: str = "", nw: int = 0) -> pd.DataFrame:
    """REAL_COPIES rows from the binary's stderr: LIBOMPTARGET_INFO=32 (or 48) lines (``ompinfo``),
    assigned to the invocation whose ``pinpath-region:`` marker (``--markers``) precedes them."""
    context = {"variant": variant, "nw": nw}
    rows, where = [], {"segment": "setup", "step": -1, "invocation": -1}
    found = list(ompinfo.events(text))
    ompinfo.unswap_d2h(found)
    for kind, ev in found:
        if kind == "marker":
            where = ev
        elif kind == "copy":
            rows.append({**context, **where, **ev})
    return frame(rows, REAL_COPIES)


def parse_profile(doc: dict | str | Path, *, invocations_per_step: int, variant: str = "",
                  nw: int = 0, paired: bool = False) -> pd.DataFrame:
    """REAL_PHASES rows from a LIBOMPTARGET_PROFILE file (Chrome trace: ``traceEvents`` of
    ``ph: X`` events with ``ts``/``dur`` in us and ``args.detail`` ";file;function;line;col;;k=v;..."),
    without the "Total ..." summary events. The region's invocations are the "Runtime: target exe"
    events at the construct that has most of them, in time order; events inside one belong to it.
    ``paired`` (a ``--paired`` run): the "Runtime: target exe" events at other constructs from the
    first invocation on are the present-only regions, one per invocation in time order; they and
    the events inside them get ``segment`` "present" and that invocation's step and number."""
    if not isinstance(doc, dict):
        doc = json.loads(Path(doc).read_text())
    ev = [e for e in doc.get("traceEvents", []) if e.get("ph") == "X" and not str(e.get("name", "")).startswith("Total ")]
    rows = []
    for e in ev:
        detail = str((e.get("args") or {}).get("detail", ""))
        parts = detail.split(";")
        loc = f"{os.path.basename(parts[1])}:{parts[3]}" if len(parts) > 4 and parts[1] else ""
        size = re.search(r"(?:^|;)Size=(\d+)B", detail)
        rows.append({"phase": e["name"], "location": loc, "start_us": int(e.get("ts", 0)),
                     "dur_ns": int(round(float(e.get("dur", 0)) * 1000)), "tid": e.get("tid"),
                     "nbytes": int(size.group(1)) if size else None})
    df = pd.DataFrame(rows, columns=["phase", "location", "start_us", "dur_ns", "tid", "nbytes"])
    df["segment"], df["step"], df["invocation"] = "setup", -1, -1
    exe = df[df.phase == "Runtime: target exe"]
    if len(exe):
        region_loc = exe.location.value_counts().index[0]
        full = exe[exe.location == region_loc].sort_values("start_us", kind="stable")
        regions = [full.assign(segment="invocation", k=np.arange(len(full)))]
        if paired:
            present = exe[(exe.location != region_loc) & (exe.start_us >= full.start_us.iloc[0])]
            present = present.sort_values("start_us", kind="stable").iloc[:len(full)]
            regions.append(present.assign(segment="present", k=np.arange(len(present))))
        _label_inside(df, pd.concat(regions).sort_values("start_us", kind="stable"), invocations_per_step)
    df["variant"], df["nw"] = variant, nw
    df = df.drop(columns="tid").sort_values("start_us", kind="stable")
    return frame(df.to_dict("records"), REAL_PHASES)


def _label_inside(df: pd.DataFrame, regions: pd.DataFrame, invocations_per_step: int) -> None:
    """Each event inside a region (target exe rows in time order, with their ``segment`` and
    invocation number ``k``; an event belongs to the latest region begun by its start) gets that
    segment, step and invocation; events after the last region are the teardown. In place."""
    starts = regions.start_us.to_numpy()
    ends = starts + regions.dur_ns.to_numpy() // 1000
    j = np.searchsorted(starts, df.start_us.to_numpy(), side="right") - 1
    inside = (j >= 0) & (df.start_us.to_numpy() <= ends[np.maximum(j, 0)])
    k = regions.k.to_numpy()[j[inside]]
    df.loc[inside, "segment"] = regions.segment.to_numpy()[j[inside]]
    df.loc[inside, "step"] = k // invocations_per_step
    df.loc[inside, "invocation"] = k % invocations_per_step
    df.loc[~inside & (df.start_us.to_numpy() > ends.max()), "segment"] = "teardown"


def _failure(rc: int, stderr: str) -> str:
    """The most telling lines of a failed run's stderr, in one sentence."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip() and not l.startswith("pinpath-region:")]
    telling = [l for l in lines if re.search(r"error|fatal|No images|fallback|region:", l, re.I)
               and "Consult https" not in l] or lines[-2:]
    return "; ".join(dict.fromkeys(telling[:3])) or f"exit status {rc}, no message"


def run_region(build: Build, env: dict[str, str], *, variant: str, nw: int, steps: int, invocations: int,
               verify: str = "all", trace: bool = False, seed: int = 1, timeout_s: int = 600,
               process: int = 0, paired: bool = False) -> dict:
    """Run the binary once; returns ``facts`` (dict), ``invocations``, ``copies`` and ``phases``
    (frames; the last two empty unless ``trace``). ``paired``: ``--paired`` (the invocations gain
    ``kernel_ns``, the same region over present arrays, and ``transfer_ns``). A run the runtime
    refused (host fallback under MANDATORY, no image for this GPU ...) raises NotAvailable; wrong
    bytes VerificationFailed."""
    mode = VARIANTS[variant][0]
    cmd = [str(build.binary), "--variant", mode, "--nw", str(nw), "--steps", str(steps),
           "--invocations", str(invocations), "--verify", verify, "--seed", str(seed)] + (["--paired"] if paired else [])
    run_env = variant_env(env, variant)
    ctx = {"variant": variant, "nw": nw}
    with tempfile.TemporaryDirectory(prefix="pinpath-offload-") as d:
        profile = Path(d) / "profile.json"
        if trace:
            cmd.append("--markers")
            # 32: every copy; 16: kernel launches and how the CUDA plugin found the context (its wait mode)
            run_env.update(LIBOMPTARGET_INFO="48", LIBOMPTARGET_PROFILE=str(profile),
                           LIBOMPTARGET_PROFILE_GRANULARITY="0")
        t0 = time.perf_counter_ns()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, env=run_env, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise PinpathError(f"the offload region ({variant}, nw={nw}) did not finish in {timeout_s} s") from None
        wall = time.perf_counter_ns() - t0
        if r.returncode == 4:
            raise VerificationFailed(f"the offload region ({variant}, nw={nw}): {_failure(4, r.stderr)}")
        if r.returncode != 0:
            why = _failure(r.returncode, r.stderr)
            if r.returncode == 5:
                raise PinpathError(f"the offload region ({variant}, nw={nw}): {why}")
            raise NotAvailable(f"the {build.arch} region stopped under OMP_TARGET_OFFLOAD=MANDATORY "
                               f"(exit status {r.returncode}): {why}")
        out_lines = r.stdout.splitlines()
        facts = parse_facts(l for l in out_lines if l.startswith("#"))
        csv = "\n".join(l for l in out_lines if not l.startswith("#"))
        inv = pd.read_csv(pd.io.common.StringIO(csv), keep_default_na=False, dtype={"verified": str})
        inv["verified"] = inv.verified.map({"true": True, "false": False, "": None})
        inv = inv.assign(variant=variant, traced=trace, vendor=build.vendor, arch=build.arch, process=process,
                         paired=paired)
        copies = parse_info(r.stderr, **ctx) if trace else frame([], REAL_COPIES)
        phases = parse_profile(profile, invocations_per_step=invocations, paired=paired, **ctx) \
            if trace and profile.is_file() else frame([], REAL_PHASES)
    facts.update(context_wait=ompinfo.context_wait(r.stderr) if trace else "", wall_ns=wall, env=" ".join(f"{k}={v}" for k, v in VARIANTS[variant][1].items()), traced=trace, mode=mode,
                 process=process, paired=paired)
    return {"facts": facts, "invocations": frame(inv.to_dict("records"), REAL_INVOCATIONS),
            "copies": copies, "phases": phases}


def _run_row(facts: dict, variant: str, build: Build, placement: str) -> dict:
    return {"variant": variant, "mode": facts["mode"], "env": facts["env"], "nw": facts["nw"],
            "process": facts["process"], "traced": facts["traced"], "paired": facts["paired"], "steps": facts["steps"],
            "invocations": facts["invocations"],
            "offload_devices": facts["offload_devices"], "on_device": bool(facts["on_device"]),
            "register": facts["register"], "register_rc": facts["register_rc"], "register_ns": facts["register_ns"],
            "unregister_ns": facts["unregister_ns"], "enter_ns": facts["enter_ns"], "exit_ns": facts["exit_ns"],
            "wrong": facts["wrong"], "wall_ns": facts["wall_ns"], "context_wait": facts["context_wait"],
            "placement": placement, "cpus": machine_state.cpuspan(os.sched_getaffinity(0)),   # the child's, inherited
            "vendor": build.vendor, "arch": build.arch}


def real_runtime(*, variants=("plain", "app_pinned"), nw_values=(16,), steps: int = 5, invocations: int = 384,
                 trace_steps: int = 1, verify: str = "all", seed: int = 1, processes: int = 5,
                 paired_processes: int = 0, paired_steps: int = 1, placement: str | None = None,
                 build: Build | None = None, offload_dir: Path | str | None = None, timeout_s: int = 600,
                 between_rounds: Callable[[int], None] | None = None) -> RealRun:
    """Run the real region for every variant the build's vendor knows and every walker count:
    ``processes`` timed runs of ``steps`` x ``invocations``, each a fresh process, in rounds that
    visit the points in a shuffled order (seeded), then, if ``trace_steps``, one traced run of
    ``trace_steps`` steps per point. With ``paired_processes``, the rounds also visit each point in
    that many ``--paired`` processes of ``paired_steps`` steps (``present``), and one of them per
    point is traced (``present_phases``) if ``trace_steps``. The build is ``build``, else the one
    in ``offload_dir`` (default build/offload). ``placement``: the word of this process's placement
    (``machine_state.place_process``); None: "unpinned" where the process runs on the CPUs it
    started with, else "set by the caller"; recorded in ``runs`` beside its CPUs. ``between_rounds(k)``
    is called after round k's processes (e.g. ``wait_mode.Interleaved``: other processes in the same
    stretch of the run). NotAvailable (one sentence) where it cannot run."""
    if int(processes) < 1 or int(paired_processes) < 0:
        raise NotAvailable(f"processes must be at least 1 (not {processes}) and paired processes at least 0 "
                           f"(not {paired_processes})")
    if placement is None:
        placement = "unpinned" if machine_state.unplaced() else "set by the caller"
    build = build or find_build(offload_dir or OFFLOAD_DIR)
    why = device_reason(build)
    if why:
        raise NotAvailable(why)
    env = runtime_env(build)
    for variant in variants:
        if variant not in VARIANTS:
            raise NotAvailable(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
    # e.g. an AMD switch on an NVIDIA build is left out: model_plan says so
    points = [(v, nw) for v in variants if build.vendor in VARIANTS[v][2] for nw in nw_values]
    # every round visits the points (timed and paired) in its own shuffled order; then one traced run of each
    timed = [(v, nw, False) for v, nw in points] + [(v, nw, True) for v, nw in points if paired_processes]
    rounds = [[(v, nw, p, False, paired_steps if paired else steps, paired)
               for v, nw, paired in rnd if p < (paired_processes if paired else processes)]
              for p, rnd in Sweep(repeats=max(int(processes), int(paired_processes)), seed=seed).independent(timed)]
    traced = [(v, nw, 0, True, trace_steps, paired) for paired in ((False, True) if paired_processes else (False,))
              for v, nw in points if trace_steps]
    runs, got = [], {False: ([], [], []), True: ([], [], [])}   # paired -> invocations, copies, phases
    for k, batch in enumerate(rounds + [traced]):
        for variant, nw, p, trace, n_steps, paired in batch:
            res = run_region(build, env, variant=variant, nw=nw, steps=n_steps, invocations=invocations, verify=verify,
                             trace=trace, seed=seed + p, timeout_s=timeout_s, process=p, paired=paired)
            runs.append(_run_row(res["facts"], variant, build, placement))
            for part, key in zip(got[paired], ("invocations", "copies", "phases")):
                part.append(res[key])
        if between_rounds is not None and k < len(rounds):
            between_rounds(k)
    cat = lambda fs, table: frame(pd.concat(fs, ignore_index=True).to_dict("records") if fs else [], table)  # noqa: E731
    (invs, copies, phases), (present, _, present_phases) = got[False], got[True]
    return RealRun(frame(runs, REAL_RUNS), cat(invs, REAL_INVOCATIONS), cat(copies, REAL_COPIES),
                   cat(phases, REAL_PHASES), build.vendor, build.arch, cat(present, REAL_PRESENT),
                   cat(present_phases, REAL_PHASES))


def real_runtime_or_reason(**kw) -> RealRun:
    """``real_runtime``, or where it cannot run a RealRun whose frames are one row with a
    ``not_applicable`` column saying why in one sentence."""
    try:
        return real_runtime(**kw)
    except NotAvailable as e:
        reason = pd.DataFrame([{"not_applicable": str(e)}])
        b = kw.get("build")
        return RealRun(reason, reason, reason, reason, getattr(b, "vendor", ""), getattr(b, "arch", ""), reason, reason)


def describe(build: Build | None = None) -> pd.DataFrame:
    """One row: what the build is (vendor, arch, compiler, CUDA ptxas, device image, bundle)."""
    try:
        build = build or find_build()
    except NotAvailable as e:
        return pd.DataFrame([{"not_applicable": str(e)}])
    m = build.manifest
    img, bun = m.get("image") or {}, m.get("bundle") or {}
    return pd.DataFrame([{"vendor": build.vendor, "arch": build.arch, "binary": build.binary.name,
                          "compiler": m.get("compiler_version", m.get("compiler", "")),
                          "ptxas": (m.get("cuda_toolkit") or {}).get("ptxas_release", ""),
                          "image_elf_abi": img.get("ei_abiversion"), "runtime": m.get("runtime", ""),
                          "bundle_nbytes": bun.get("nbytes"),
                          "standins": " ".join(s["soname"] for s in bun.get("standins", []))}])


def phase_table(phases: pd.DataFrame) -> pd.DataFrame:
    """The runtime's phases inside the region's invocations: events per invocation and their
    median duration, per variant and nw."""
    if "not_applicable" in phases.columns:
        return phases
    p = phases[phases.segment == "invocation"]
    cols = ["variant", "nw", "phase", "per_invocation", "median_ns", "p90_ns"]
    if not len(p):
        return pd.DataFrame(columns=cols)
    n_inv = p.groupby(["variant", "nw"])[["step", "invocation"]].apply(lambda g: len(g.drop_duplicates()))
    out = p.groupby(["variant", "nw", "phase"]).dur_ns.agg(events="size", median_ns="median",
                                                            p90_ns=lambda s: s.quantile(0.9)).reset_index()
    out["per_invocation"] = out.events / out.set_index(["variant", "nw"]).index.map(n_inv)
    return out.sort_values(["variant", "nw", "median_ns"], ascending=[True, True, False])[cols]


