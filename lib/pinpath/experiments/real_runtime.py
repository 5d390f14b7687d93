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
``LIBOMPTARGET_INFO=32`` (every copy: direction, size, variable) and ``LIBOMPTARGET_PROFILE``
(the runtime's phases, Chrome-trace JSON, 1 us resolution). The process is the unit of repeat:
a figure is the median of the per-process medians, with its interval over the processes, since
the runtime's per-invocation time moves from one process to the next far beyond the spread of
one process's invocations (issue #17). Beside it the replica runs under the policy that models
that runtime (``MODELS``, one call: ``replica_model``), and ``model_real_ratio`` says how far the
model's per-invocation cost is from the real one, with the real side's interval over processes.

With ``paired_processes`` the region also runs ``--paired`` in as many more fresh processes per point
(in the same shuffled rounds; each invocation beside the same region over present arrays, which
moves nothing: ``kernel_ns`` is the runtime's lookup, launch, kernel and synchronize of one region)
and, where traced, once more traced, so the profile holds both regions (``segment`` "present" for
the present-only one): ``real_terms`` puts these measured terms into the model.
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

import numpy as np
import pandas as pd

from .. import ompinfo
from ..errors import NotAvailable, PinpathError, VerificationFailed
from ..kernels import out_nbytes, pos_nbytes
from ..stats import median_ci, ratio_ci
from ..units import fmt_ns
from ..schema import (MODEL_INVOCATIONS, PHASE_COMPARE, RATIO, REAL_COPIES, REAL_INVOCATIONS, REAL_PHASES, REAL_PRESENT,
                      REAL_RUNS, SUMMARY, frame)
from .offload_build import (OFFLOAD_DIR, RUNTIME_DIR, VARIANTS, Build, app_binary, build_host_region,
                            device_reason, find_build, runtime_env, variant_env)
from .repeats import spreads
from .sweep import Sweep

__all__ = ["VARIANTS", "MODELS", "OFFLOAD_DIR", "RUNTIME_DIR", "Build", "RealRun", "find_build", "runtime_env",
           "variant_env", "app_binary",
           "build_host_region", "run_region", "parse_facts", "parse_info", "parse_profile", "real_runtime",
           "real_runtime_or_reason", "model_plan", "replica_model", "summary", "copies_table", "phase_table",
           "model_real_ratio", "phase_compare", "phase_explanation", "beside", "describe", "plan_vendor",
           "RATIO_TOLERANCE"]

# -- the policies that model the variants (offload_build.VARIANTS) --------------------------------------------------
MODELS = {   # (vendor, variant) -> (policy, user_pinned, threshold_nbytes or None for the default)
    ("nvidia", "plain"): ("driver_pageable", False, None),       # the CUDA plugin never pins
    ("nvidia", "app_pinned"): ("prepinned", True, None),
    ("nvidia", "lock_mapped"): ("driver_pageable", False, None),  # its dataLockImpl returns the pointer
    ("amd", "plain"): ("nextgen", False, None),
    ("amd", "app_pinned"): ("nextgen", True, None),              # pinned before the map: an external entry
    ("amd", "lock_mapped"): ("nextgen_lock_mapped", False, None),
    ("amd", "async_threshold0"): ("nextgen", False, 0),
    ("host", "plain"): ("driver_pageable", False, None),         # the x86_64 plugin: memcpy
    ("host", "app_pinned"): ("prepinned", True, None),
    ("host", "lock_mapped"): ("driver_pageable", False, None),
}


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
    """REAL_COPIES rows from the binary's stderr: LIBOMPTARGET_INFO=32 lines (``ompinfo``),
    assigned to the invocation whose ``pinpath-region:`` marker (``--markers``) precedes them."""
    context = {"variant": variant, "nw": nw}
    rows, where = [], {"segment": "setup", "step": -1, "invocation": -1}
    for kind, ev in ompinfo.events(text):
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
            run_env.update(LIBOMPTARGET_INFO="32", LIBOMPTARGET_PROFILE=str(profile),
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
    facts.update(wall_ns=wall, env=" ".join(f"{k}={v}" for k, v in VARIANTS[variant][1].items()), traced=trace, mode=mode,
                 process=process, paired=paired)
    return {"facts": facts, "invocations": frame(inv.to_dict("records"), REAL_INVOCATIONS),
            "copies": copies, "phases": phases}


def _run_row(facts: dict, variant: str, build: Build) -> dict:
    return {"variant": variant, "mode": facts["mode"], "env": facts["env"], "nw": facts["nw"],
            "process": facts["process"], "traced": facts["traced"], "paired": facts["paired"], "steps": facts["steps"],
            "invocations": facts["invocations"],
            "offload_devices": facts["offload_devices"], "on_device": bool(facts["on_device"]),
            "register": facts["register"], "register_rc": facts["register_rc"], "register_ns": facts["register_ns"],
            "unregister_ns": facts["unregister_ns"], "enter_ns": facts["enter_ns"], "exit_ns": facts["exit_ns"],
            "wrong": facts["wrong"], "wall_ns": facts["wall_ns"], "vendor": build.vendor, "arch": build.arch}


def real_runtime(*, variants=("plain", "app_pinned"), nw_values=(16,), steps: int = 5, invocations: int = 384,
                 trace_steps: int = 1, verify: str = "all", seed: int = 1, processes: int = 5,
                 paired_processes: int = 0, paired_steps: int = 1,
                 build: Build | None = None, offload_dir: Path | str | None = None, timeout_s: int = 600) -> RealRun:
    """Run the real region for every variant the build's vendor knows and every walker count:
    ``processes`` timed runs of ``steps`` x ``invocations``, each a fresh process, in rounds that
    visit the points in a shuffled order (seeded), then, if ``trace_steps``, one traced run of
    ``trace_steps`` steps per point. With ``paired_processes``, the rounds also visit each point in
    that many ``--paired`` processes of ``paired_steps`` steps (``present``), and one of them per
    point is traced (``present_phases``) if ``trace_steps``. The build is ``build``, else the one
    in ``offload_dir`` (default build/offload). NotAvailable (one sentence) where it cannot run."""
    if int(processes) < 1 or int(paired_processes) < 0:
        raise NotAvailable(f"processes must be at least 1 (not {processes}) and paired processes at least 0 "
                           f"(not {paired_processes})")
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
    order = [(v, nw, p, False, paired_steps if paired else steps, paired)
             for p, rnd in Sweep(repeats=max(int(processes), int(paired_processes)), seed=seed).independent(timed)
             for v, nw, paired in rnd if p < (paired_processes if paired else processes)]
    order += [(v, nw, 0, True, trace_steps, paired) for paired in ((False, True) if paired_processes else (False,))
              for v, nw in points if trace_steps]
    runs, got = [], {False: ([], [], []), True: ([], [], [])}   # paired -> invocations, copies, phases
    for variant, nw, p, traced, n_steps, paired in order:
        res = run_region(build, env, variant=variant, nw=nw, steps=n_steps, invocations=invocations, verify=verify,
                         trace=traced, seed=seed + p, timeout_s=timeout_s, process=p, paired=paired)
        runs.append(_run_row(res["facts"], variant, build))
        for part, key in zip(got[paired], ("invocations", "copies", "phases")):
            part.append(res[key])
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


def plan_vendor(vendor: str, ran: RealRun | None = None) -> str:
    """The vendor whose runtime the model plays: ``vendor`` unless "auto"; then the real run's,
    the build's, or nvidia (the project's H200) where there is neither."""
    if vendor != "auto":
        return vendor
    if ran is not None and ran.vendor:
        return ran.vendor
    try:
        return find_build().vendor
    except NotAvailable:
        return "nvidia"


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


# -- the model beside it ------------------------------------------------------------------------
def model_plan(vendor: str, variants) -> pd.DataFrame:
    """Which replica run models each variant on this vendor's runtime (MODELS); a variant the
    vendor's runtime does not have gets a ``note``."""
    rows = []
    for v in variants:
        key = (vendor, v)
        if key in MODELS:
            policy, pinned, thr = MODELS[key]
            rows.append({"variant": v, "policy": policy, "user_pinned": pinned, "threshold_nbytes": thr, "note": ""})
        else:
            rows.append({"variant": v, "policy": "", "user_pinned": None, "threshold_nbytes": None,
                         "note": f"no such switch in the {vendor} runtime"})
    return pd.DataFrame(rows).astype({"threshold_nbytes": "Int64", "user_pinned": "boolean"})


def replica_model(rt, plan: pd.DataFrame, *, nw_values, steps: int, invocations: int,
                  verify: str = "first", kernel_only: bool = True) -> pd.DataFrame:
    """Run pinpath's replica once per distinct (policy, user_pinned, threshold) of ``plan`` and
    return MODEL_INVOCATIONS: per invocation the host time of its H2D, kernel, D2H (and any other
    event of the invocation, e.g. the region's wait), each variant labelled. ``kernel_only``: each
    invocation also runs without its copies beside it (on the engine, timed in C), its time
    ``kernel_only_ns`` (NA where it did not run), so that ``ns - kernel_only_ns`` is the copies' part."""
    from .replica import replica
    rows = []
    plan = plan[plan.policy != ""]
    for (policy, pinned, thr), group in plan.groupby(["policy", "user_pinned", "threshold_nbytes"], dropna=False):
        kw = {} if pd.isna(thr) else {"threshold_nbytes": int(thr)}
        transfers, _ = replica(rt, policies=[policy], nw_values=list(nw_values), steps=steps,
                               invocations_per_step=invocations, user_pinned=[bool(pinned)], verify=verify,
                               kernel_only=kernel_only, **kw)
        t = transfers[(transfers.invocation >= 0) & (transfers.step >= 0) & transfers.event.isin(_MODEL_EVENTS)]
        alone = t.kernel_only.eq(True) if "kernel_only" in t.columns else pd.Series(False, index=t.index)
        key = ["nw", "step", "invocation"]
        only = t[alone].groupby(key).total_ns.sum()
        t = t[~alone]
        t = t.assign(phase=np.where(t.event == "transfer", t.direction, t.event))
        per = t.pivot_table(index=key, columns="phase", values="total_ns", aggfunc="sum",
                            fill_value=0).reset_index()
        per["kernel_only_ns"] = pd.Series(only.reindex(pd.MultiIndex.from_frame(per[key])).to_numpy(),
                                          index=per.index).astype("Int64") if len(only) else pd.NA
        for variant in group.variant:
            rows += [{"variant": variant, "policy": policy, "user_pinned": bool(pinned),
                      "threshold_nbytes": None if pd.isna(thr) else int(thr), "nw": int(r["nw"]), "step": int(r["step"]),
                      "invocation": int(r["invocation"]), "repeat": int(r["step"]),
                      **{f"{p}_ns": int(r.get(p, 0)) for p in ("h2d", "kernel", "d2h", "sync")},
                      "ns": int(sum(r.get(p, 0) for p in ("h2d", "kernel", "d2h", "sync"))),
                      "kernel_only_ns": r["kernel_only_ns"], "platform": rt.name}
                     for _, r in per.iterrows()]
    return frame(rows, MODEL_INVOCATIONS)


#: the events of one invocation of the replica (maps, unmaps and the application's own pins are outside)
_MODEL_EVENTS = ("transfer", "kernel", "sync")
#: the model's phase -> the LIBOMPTARGET_PROFILE events of an invocation that do the same work
_REAL_PHASES = {"h2d": ("HostToDev",), "kernel": ("Kernel Target",), "d2h": ("DevToHost",),
                "sync": ("Runtime: syncronize",), "region": ("Runtime: target exe",)}


def phase_compare(model: pd.DataFrame, phases: pd.DataFrame, *, skip_first: int = 1) -> pd.DataFrame:
    """Where the model and the real runtime differ, phase by phase: per variant and nw, the median
    per invocation of the model's H2D, kernel, D2H, wait and whole invocation beside the real
    runtime's LIBOMPTARGET_PROFILE events of the same work (the traced process; the profile counts
    whole microseconds). A phase the real runtime spends more in explains a ratio below 1."""
    if "not_applicable" in phases.columns or not len(phases) or not len(model):
        return frame([], PHASE_COMPARE)
    p = _steady(phases[phases.segment == "invocation"], skip_first)
    m = _steady(model, skip_first)
    rows = []
    for (variant, nw), g in p.groupby(["variant", "nw"]):
        mg = m[(m.variant == variant) & (m.nw == nw)]
        if not len(mg):
            continue
        for phase, names in _REAL_PHASES.items():
            per = g[g.phase.isin(names)].groupby(["step", "invocation"]).dur_ns.sum()
            model_ns = float(mg.ns.median() if phase == "region" else mg[f"{phase}_ns"].median())
            real_ns = float(per.median()) if len(per) else float("nan")
            rows.append({"variant": variant, "nw": int(nw), "phase": phase, "model_ns": model_ns, "real_ns": real_ns,
                         "difference_ns": real_ns - model_ns, "real_events": ", ".join(names)})
    return frame(rows, PHASE_COMPARE)


#: how far model / real may be from 1 before the difference is explained phase by phase (issue 16)
RATIO_TOLERANCE = 0.15


def phase_explanation(ratio: pd.DataFrame, compare: pd.DataFrame, *, tolerance: float = RATIO_TOLERANCE) -> str:
    """Markdown, one line per variant and nw: model / real with its interval, and where it is
    further than ``tolerance`` from 1, which phases of the real runtime's profile hold the
    difference (largest first) and what is left outside them (the runtime's bookkeeping of the
    region: finding the mappings, argument set-up, its events). From model_real_ratio's and
    phase_compare's frames; "" where there is no ratio (no real run here: the frame says why)."""
    if not len(ratio) or "ratio" not in ratio.columns:
        return ""
    lines = []
    for r in ratio.itertuples():
        head = (f"- **{r.variant}, nw={r.nw}**: model / real {r.ratio:.2f} (95 % CI {r.ratio_lo:.2f}-{r.ratio_hi:.2f}, "
                f"over {r.interval_over})")
        if abs(r.ratio - 1) <= tolerance:
            lines.append(head + f": within 1 ± {tolerance:g}.")
            continue
        c = compare[(compare.variant == r.variant) & (compare.nw == r.nw)].set_index("phase")
        if "region" not in c.index or not np.isfinite(c.loc["region", "real_ns"]):
            lines.append(head + ": outside; the traced run has no profile to say where.")
            continue
        parts = c.drop(index="region").dropna(subset=["difference_ns"]).sort_values("difference_ns", ascending=False)
        total = float(c.loc["region", "difference_ns"])
        named = ", ".join(f"{row.real_events} {'+' if row.difference_ns >= 0 else '-'}{fmt_ns(abs(row.difference_ns))}"
                          for row in parts.itertuples())
        rest = total - float(parts.difference_ns.sum())
        lines.append(head + f": outside. In the traced run the real invocation (`Runtime: target exe`) took "
                     f"{fmt_ns(c.loc['region', 'real_ns'])} against the model's {fmt_ns(c.loc['region', 'model_ns'])} "
                     f"({'+' if total >= 0 else '-'}{fmt_ns(abs(total))}); by phase: {named}; outside the profiled phases "
                     f"{'+' if rest >= 0 else '-'}{fmt_ns(abs(rest))} (the runtime's own bookkeeping of the region).")
    return "\n".join(lines)


def _steady(df: pd.DataFrame, skip_first: int) -> pd.DataFrame:
    """Without the first ``skip_first`` invocations of step 0 (first-touch and warm-up)."""
    return df[~((df.step == 0) & (df.invocation < skip_first))]


def _repeat_samples(df: pd.DataFrame) -> tuple[np.ndarray, list[np.ndarray], str]:
    """What a figure's interval is taken over, the per-repeat samples, and the word for it: the
    per-process medians where the frame holds two or more processes (``process`` column), else
    the invocations of its one process."""
    unit = next((c for c in ("process", "repeat") if c in df.columns), None)
    per = [g.ns.to_numpy(dtype=float) for _, g in df.groupby(unit)] if unit else [df.ns.to_numpy(dtype=float)]
    per = [x for x in per if len(x)]
    if len(per) >= 2:
        return np.array([np.median(x) for x in per]), per, "processes" if unit == "process" else "repeats"
    return (per[0] if per else np.array([])), per, "invocations"


def summary(model: pd.DataFrame, real: RealRun | pd.DataFrame, *, skip_first: int = 1) -> pd.DataFrame:
    """Median per-invocation time per source (model, real, real_traced), variant and nw, with a
    bootstrap 95 % interval (``stats.median_ci``) over the repeats: the median of the per-process
    medians and its interval over the processes where two or more ran, else over the invocations
    of the one process (``interval_over`` says which); the spread within a process and between
    processes beside it."""
    parts = [("model", model)]
    inv = real.invocations if isinstance(real, RealRun) else real
    if "not_applicable" not in inv.columns and len(inv):
        parts += [("real", inv[~inv.traced.astype(bool)]), ("real_traced", inv[inv.traced.astype(bool)])]
    rows = []
    for source, df in parts:
        for (variant, nw), g in _steady(df, skip_first).groupby(["variant", "nw"]):
            values, per, over = _repeat_samples(g)
            e = median_ci(values)
            if e.n:
                within, between = spreads(per)
                rows.append({"source": source, "variant": variant, "nw": nw, "n": int(sum(map(len, per))),
                             "median_ns": e.value, "lo_ns": e.low, "hi_ns": e.high, "repeats": len(per),
                             "interval_over": over, "within_spread": within, "between_spread": between})
    return frame(rows, SUMMARY)


def model_real_ratio(model: pd.DataFrame, real: RealRun | pd.DataFrame, *, skip_first: int = 1) -> pd.DataFrame:
    """Model / real per variant and nw, with a bootstrap 95 % interval (``stats.ratio_ci``, both
    sides resampled): on each side the samples are the per-process medians where two or more
    processes ran, else the invocations of the one process, so the ratio carries the real
    runtime's interval over processes. Only the untraced real runs count. Where the real runtime
    could not run, its one-row reason frame."""
    inv = real.invocations if isinstance(real, RealRun) else real
    if "not_applicable" in inv.columns:
        return inv
    inv = _steady(inv[~inv.traced.astype(bool)], skip_first)
    model = _steady(model, skip_first)
    rows = []
    for (variant, nw), r in inv.groupby(["variant", "nw"]):
        m = model[(model.variant == variant) & (model.nw == nw)]
        if not len(m) or not len(r):
            continue
        (mv, mper, _), (rv, rper, over) = _repeat_samples(m), _repeat_samples(r)
        e, er = ratio_ci(mv, rv), median_ci(rv)
        rows.append({"variant": variant, "nw": nw, "policy": m.policy.iloc[0], "user_pinned": bool(m.user_pinned.iloc[0]),
                     "model_median_ns": float(np.median(mv)), "real_median_ns": er.value,
                     "real_lo_ns": er.low, "real_hi_ns": er.high, "real_processes": len(rper),
                     "interval_over": over, "ratio": e.value, "ratio_lo": e.low, "ratio_hi": e.high,
                     "n_model": int(sum(map(len, mper))), "n_real": int(sum(map(len, rper)))})
    return frame(rows, RATIO)


def copies_table(copies: pd.DataFrame) -> pd.DataFrame:
    """Copies per region invocation by direction, beside what the replica moves (one H2D of
    24 nw bytes, one D2H of 15,360 nw bytes); ``as_replica`` says whether they agree."""
    if "not_applicable" in copies.columns:
        return copies
    c = copies[copies.segment == "invocation"]
    cols = ["variant", "nw", "h2d_per_invocation", "h2d_nbytes", "d2h_per_invocation", "d2h_nbytes",
            "replica_h2d_nbytes", "replica_d2h_nbytes", "as_replica", "names"]
    if not len(c):
        return pd.DataFrame(columns=cols)
    rows = []
    for (variant, nw), g in c.groupby(["variant", "nw"]):
        n_inv = g[["step", "invocation"]].drop_duplicates().shape[0]
        h, d = g[g.direction == "h2d"], g[g.direction == "d2h"]
        want_h, want_d = pos_nbytes(nw), out_nbytes(nw)
        per_h, per_d = len(h) / n_inv, len(d) / n_inv
        rows.append({"variant": variant, "nw": nw, "h2d_per_invocation": per_h, "h2d_nbytes": sorted(set(h.nbytes)),
                     "d2h_per_invocation": per_d, "d2h_nbytes": sorted(set(d.nbytes)),
                     "replica_h2d_nbytes": want_h, "replica_d2h_nbytes": want_d,
                     "as_replica": bool(per_h == 1 and per_d == 1 and set(h.nbytes) == {want_h}
                                        and set(d.nbytes) == {want_d}),
                     "names": " ".join(sorted(set(g.name)))})
    return pd.DataFrame(rows, columns=cols)


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


def beside(model: pd.DataFrame, real: RealRun | pd.DataFrame) -> pd.DataFrame:
    """Model and (untraced) real per-invocation rows in one frame for a figure: columns
    source, variant, nw, label ("variant, nw=N"), ns."""
    inv = real.invocations if isinstance(real, RealRun) else real
    parts = [model.assign(source="model")[["source", "variant", "nw", "ns"]]]
    if "not_applicable" not in inv.columns and len(inv):
        parts.append(inv[~inv.traced.astype(bool)].assign(source="real")[["source", "variant", "nw", "ns"]])
    df = pd.concat(parts, ignore_index=True)
    df["label"] = df.variant + ", nw=" + df.nw.astype(str)
    return df
