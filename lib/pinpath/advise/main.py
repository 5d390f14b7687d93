"""``pinpath advise <trace>``: read the trace, extract and write its pattern, replay it on this
node under every variant the vendor's runtime has, predict, advise, write the pages."""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

import pandas as pd

from .. import runfolder as rf
from ..atomic import replacing_folder
from ..errors import BadParameter, WaitModeRefused
from ..experiments.offload_build import VARIANTS
from ..experiments.replica_compare import MODELS
from .. import paths
from ..report.fmt import format_measured
from ..runtimes import WAIT_ENV, WAIT_NOT_APPLICABLE, open_runtime
from .advice import advice
from .designs import DESIGNS, design_rows, design_runtime_rows, design_table
from .parse import read_trace
from .pattern import pattern, write_dataset
from .map_once import map_once_lines, mapped_once, remapped_arrays
from .placement import here, of_cpus, placement_lines
from .predict import predict, same_as
from .replay import ENGINES, replay
from .runtime_term import check_construct, probe_runtime, runtime_rows
from .report import write_pages, write_prediction
from .validate import grain, measured_apart, read_real, real_rows, state_rows
from .wake_state import single_wait, split_probe, state_lines, write_states

__all__ = ["advise", "policies_for", "VENDORS"]

VENDORS = {"cuda": "nvidia", "hsa": "amd", "hip": "amd", "host": "host"}


def policies_for(vendor: str) -> dict[str, tuple]:
    """variant -> (policy, user_pinned, threshold_nbytes or None): the policies that model the
    vendor's runtime under each variant it has (``replica_compare.MODELS``)."""
    return {v: MODELS[(vendor, v)] for v in VARIANTS if (vendor, v) in MODELS}


_STATS_GROUPS = (("copies", "hsa_amd_memory_async_copy"), ("locks", "hsa_amd_memory_lock"),
                 ("unlocks", "hsa_amd_memory_unlock"), ("pointer queries", "hsa_amd_pointer_info"))


def _stats_advice(stats: pd.DataFrame) -> list[str]:
    """What rocprof's call counts say on their own: locks per copy and what they cost. A function
    the file has no row for is said to be absent, never counted as zero (the thread's tables are
    grep'd summaries)."""
    got = {}
    for what, prefix in _STATS_GROUPS:
        s = stats[stats.Name.str.startswith(prefix)]
        got[what] = (int(s.Calls.sum()), int(s.TotalDurationNs.sum())) if len(s) else None
    said = [f"{n} {what} ({format_measured(ns, unit='ns')})" for what, v in got.items() if v for n, ns in [v]]
    absent = [f"{prefix}*" for what, prefix in _STATS_GROUPS if got[what] is None]
    out = ["rocprof counted " + (", ".join(said) or "none of the copy, lock or query functions") + "."
           + (f" The file has no row for {', '.join(absent)}: those are unknown, not zero." if absent else "")]
    copies, locks, unlocks = got["copies"], got["locks"], got["unlocks"]
    if copies and locks and copies[0]:
        per = locks[0] / copies[0]
        if per >= 0.5:
            out.append(f"About {per:.2f} locks per copy: the runtime locks and unlocks per copy. Registering the arrays "
                       "that are copied (or LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS=1 on AMD) would remove up to "
                       f"{locks[0]} locks and {unlocks[0] if unlocks else 'their'} unlocks, whose measured time is above; "
                       "what the registrations cost instead cannot be told without sizes (trace with "
                       "LIBOMPTARGET_INFO=40 for a replay).")
        else:
            out.append(f"{per:.2f} locks per copy: most copies did not lock per copy (memory already pinned or "
                       "staged), so pinning would save little of the lock cost counted here.")
    elif locks:
        out.append("Locks per copy cannot be told without the copy rows; what registering would save cannot be told "
                   "without sizes (trace with LIBOMPTARGET_INFO=40 for a replay).")
    return out


def _durations(copies: pd.DataFrame) -> list[str]:
    """What measured copy times (rocprofv3) say per direction: count, median with its interval, total."""
    from ..stats import median_ci
    out = []
    for d, g in copies.groupby("direction"):
        e = median_ci(g.duration_ns.to_numpy(dtype=float))
        if e.n:
            out.append(f"{d.upper()}: {len(g)} copies on the traced node, median "
                       f"{format_measured(e.value, e.low, e.high, 'ns')}, {format_measured(g.duration_ns.sum(), unit='ns')} "
                       "in all (the engines' time, from the trace).")
    return out


def _runtime_term(p, pols, rep, vendor: str, wanted: bool, offload_dir, construct: str,
                  per_step: bool = True) -> tuple[pd.DataFrame, str]:
    """The runtime probe's rows (empty where not run) and what the pages say about the term
    (``per_step`` False: every array mapped once, ``probe_runtime``)."""
    if not wanted:
        return pd.DataFrame(), "not added (--no-runtime-term): the predictions are the copies alone"
    if set(rep.engine) != {"native"}:
        return pd.DataFrame(), "not added: the replay ran on the Python policies, not the native engine"
    t0 = time.perf_counter()
    kw = {"offload_dir": offload_dir} if offload_dir else {}
    variants = [v for v in pols if same_as(pols, v) == v]   # a variant that is plain's model is charged as plain
    probe, why = probe_runtime(p.classes, variants, vendor=vendor, construct=construct, layout=p, per_step=per_step, **kw)
    if why:
        return probe, f"not added ({why}): the predictions are the copies alone, without the runtime's own work"
    made = "target updates" if construct == "update" else "copies as target regions' maps (--construct region)"
    if "at" in probe.columns and (probe["at"] != "update").any():
        made += " (`target enter data` and `exit data` where the trace maps an array every step)"
    if probe.attrs.get("note"):
        made += f" ({probe.attrs['note']})"
    return probe, (f"added: {made} of the trace's own arrays and copies, in its order, through the offload runtime under "
                   f"{', '.join(sorted(set(probe.variant)))} ({probe.process.nunique()} processes each, "
                   f"{time.perf_counter() - t0:.1f} s), less the replay's copy of the same class")


MAX_REPEATS = 1000       #: replays of each class: 10 give the intervals, 1000 are minutes already
_OURS = ("advice.html", "summary.md")     #: what tells an earlier advise's folder


def _new_out() -> Path:
    """``outputs/advise-<time>``, made here without exist-ok so that two advises never share one
    (``-2``, ``-3`` ... where taken)."""
    base = Path(paths.OUTPUTS_DIR) / f"advise-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}"
    base.parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        cand = base if n == 1 else base.with_name(f"{base.name}-{n}")
        try:
            cand.mkdir()
            return cand
        except FileExistsError:
            continue
    raise BadParameter(f"{base}: 999 advise folders of that second exist already")


def _check_out(out: Path) -> Path:
    """``--out``, checked before anything runs: a new folder, an empty one or an earlier advise's
    (replaced whole, ``atomic.replacing_folder``), not a link, not inside a committed reference."""
    out = Path(out)
    if out.is_symlink():
        raise BadParameter(f"--out {out}: is a link; name a plain folder")
    if out.exists():
        if not out.is_dir():
            raise BadParameter(f"--out {out}: is a file; name a folder")
        if any(out.iterdir()) and not all((out / n).is_file() for n in _OURS):
            raise BadParameter(f"--out {out}: holds files that are not an earlier advise's; name a new or empty folder")
    for folder in (out.resolve(), *out.resolve().parents):
        if rf.is_reference(folder) and (folder == out.resolve() or (folder / rf.MANIFEST).is_file()):
            raise BadParameter(f"--out {out}: is inside the committed reference {folder}, which is read-only")
    return out


def _open_waiting_as(platform: str, vendor: str, as_runtime: bool = True):
    """The runtime the replay runs on, with ``as_runtime`` its context waiting as the runtime predicted
    for waits: LLVM's CUDA plugin blocks (CU_CTX_SCHED_BLOCKING_SYNC), so for NVIDIA (or ``auto``) the
    CUDA runtime opens in the blocking mode, unless ``WAIT_ENV`` is set (then that). Where this
    process's CUDA context is already active in another mode, it opens in the mode in force; the
    sentence why comes back beside the runtime ("" otherwise)."""
    if not as_runtime or WAIT_ENV in os.environ or vendor not in ("auto", "nvidia"):
        return open_runtime(platform), ""
    os.environ[WAIT_ENV] = "blocking"
    try:
        return open_runtime(platform), ""
    except WaitModeRefused as e:
        why = str(e)
    finally:
        del os.environ[WAIT_ENV]
    return open_runtime(platform), why


def wait_lines(wait_mode: str, vendor: str, why: str = "") -> list[str]:
    """The advice's sentence on the wait mode the replay ran in (none where it is not applicable)."""
    if wait_mode == WAIT_NOT_APPLICABLE:
        return []
    if wait_mode == "blocking":
        return ["The replay ran with the CUDA context waiting blocking (`CU_CTX_SCHED_BLOCKING_SYNC`), as LLVM's "
                "CUDA plugin sets it: each wait is woken by the GPU's interrupt."]
    asked = (f" ({why})" if why else f" ({WAIT_ENV} said so)" if WAIT_ENV in os.environ else
             " (advise called inside a longer-lived process: the context's mode is the whole process's)")
    plugin = "the blocking one LLVM's CUDA plugin sets" if vendor == "nvidia" else "the one its runtime sets"
    return [f"The replay ran with the CUDA context in the {wait_mode} wait mode, not {plugin}{asked}: "
            "the prediction's waits may be shorter than the application's."]


def advise(trace_path, *, out: Path | None = None, platform: str = "auto", vendor: str = "auto",
           repeats: int = 10, real: Path | None = None, application: str | None = None,
           engine: str = "auto", runtime_term: bool = True, offload_dir: Path | None = None,
           construct: str = "update", designs: bool = False, trace_cpus: str | None = None,
           wait_as_runtime: bool = False) -> dict:
    """Everything ``pinpath advise`` does; the paths written and the run's facts. ``runtime_term``:
    add the offload runtime's own cost per copy, probed on this node (runtime_term.probe_runtime)
    where an offload build is here, as ``construct`` makes the copies (update or region).
    ``designs``: replay the trace under every policy of the engine too, as runtime designs
    (``advise.designs``): designs.csv, their rows in prediction.csv and a section of the pages.
    ``trace_cpus``: the CPUs the traced application ran on (a Linux CPU list), to say where the trace
    was taken against where the prediction was measured (``advise.placement``). ``wait_as_runtime``:
    the replay's CUDA context waits as the runtime predicted for (``_open_waiting_as``); the command
    sets it, its process being its own; a caller inside a longer-lived process leaves it off, since the
    context's wait mode is then the whole process's. The advice says which mode the replay ran in."""
    check_construct(construct)
    if trace_cpus is not None:
        of_cpus(trace_cpus, gpu=False, irq_cpus=[], gpu_node=-1)   # a CPU list, or BadParameter before anything runs
    if engine not in ENGINES:
        raise BadParameter(f"--engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if not 5 <= repeats <= MAX_REPEATS:
        raise BadParameter(f"--repeats must be at least 5 (intervals need them) and at most {MAX_REPEATS}, got {repeats}")
    out = _check_out(out) if out is not None else None
    real_df = read_real(real) if real is not None else None
    t0 = time.perf_counter()
    trace = read_trace(trace_path)
    p = pattern(trace)
    parse_s = time.perf_counter() - t0
    meta = {"format": trace.format, "parse+pattern": f"{parse_s:.2f} s"}
    pred = rep = rep_designs = design_tab = rep_once = split = None
    probe = pd.DataFrame()
    if trace.has_sizes:   # the replay first: a runtime that cannot start leaves nothing written
        if vendor != "auto" and not policies_for(vendor):
            raise BadParameter(f"no variant is modelled for the vendor {vendor!r}; known: nvidia, amd, host")
        rt, wait_why = _open_waiting_as(platform, vendor, wait_as_runtime)
        try:
            vendor = VENDORS.get(rt.name, "host") if vendor == "auto" else vendor
            waits = wait_lines(rt.wait_mode, vendor, wait_why)
            meta["wait mode"] = rt.wait_mode
            pols = policies_for(vendor)
            gpu = rt.name != "host"
            placed = here(gpu=gpu)   # where the replay and the runtime probe run: the prediction's placement
            traced = of_cpus(trace_cpus, irq_cpus=placed.irq_cpus, gpu_node=placed.gpu_node) if trace_cpus else None
            meta["placement"] = f"predicted {placed.where}, traced {traced.where if traced else 'not told'}"
            t1 = time.perf_counter()
            rep = replay(rt, p.classes, pols, repeats, engine=engine)
            meta.update(platform=rt.name, vendor=vendor, engine=" ".join(sorted(set(rep.engine))), repeats=repeats,
                        replay=f"{time.perf_counter() - t1:.1f} s")
            if designs:
                t1 = time.perf_counter()
                rep_designs = replay(rt, p.classes, DESIGNS, repeats, engine=engine)
                meta["designs"] = f"{len(DESIGNS)} runtime designs replayed in {time.perf_counter() - t1:.1f} s"
        finally:
            rt.close()
        probe, meta["runtime term"] = _runtime_term(p, pols, rep, vendor, runtime_term, offload_dir, construct)
        if rep_designs is not None:
            rep_designs = pd.concat([rep_designs, design_runtime_rows(probe, rep, rep_designs)], ignore_index=True)
        if len(probe) and len(remapped_arrays(p)):   # the same arrays mapped once: their copies as updates
            once, why = _runtime_term(p, pols, rep, vendor, runtime_term, offload_dir, construct, per_step=False)
            meta["mapped once"] = f"runtime term {why}"
            if len(once):
                rep_once = pd.concat([rep, runtime_rows(once, rep)], ignore_index=True)
        split = split_probe(probe)   # the probe's waits in two states: each state's replay apart
        if split is not None:
            rep_states = {s: pd.concat([rep, runtime_rows(f, rep)], ignore_index=True) for s, f in split[0].items()}
        if len(probe):
            rep = pd.concat([rep, runtime_rows(probe, rep)], ignore_index=True)
    final = out or _new_out()
    with replacing_folder(final) as out:     # a fresh folder that takes final's place whole, at the end
        write_dataset(p, out)
        if rep is not None:
            rep.to_csv(out / "replay.csv", index=False)
            if len(probe):
                probe.to_csv(out / "runtime_probe.csv", index=False)
            pred = predict(p, rep, pols)
            for name in ("totals", "regions", "steps", "break_even", "by_class", "typical", "arrays"):
                getattr(pred, name).to_csv(out / f"{name}.csv", index=False)
            lines = advice(p, pred, platform=meta["platform"], vendor=vendor, engine=meta["engine"])
            if rep_once is not None:   # a code change: after the verdict on the variants
                once = predict(mapped_once(p), rep_once, pols)
                once.typical.to_csv(out / "map_once.csv", index=False)
                at = next((i + 1 for i, line in enumerate(lines) if line.startswith("**")), len(lines))
                lines[at:at] = map_once_lines(p, pred, once)
            name = application or Path(trace_path).stem
            rows = real_rows(name, pred, real_df)
            lines += measured_apart(rows, pred)
            real_places = set(real_df.placement.astype(str)) if real_df is not None and "placement" in real_df else ()
            states = []
            if split is not None:   # each state predicted and checked apart, where the prediction was measured
                preds = {s: predict(p, r, pols) for s, r in rep_states.items()}
                by = grain(pred, real_df)
                single = single_wait(preds, p, pols, split[1], by)
                write_states(out, preds, split[1])
                states = state_lines(preds, split[1], by, single)
                rows += state_rows(name, preds, split[1], real_df, placed.where if real_places else "", single)
            at = next((i for i, line in enumerate(lines) if line.startswith("Caveat")), len(lines))
            lines[at:at] = placement_lines(placed, traced, real_places) + waits + states   # before the caveats
            if rep_designs is not None:
                rep_designs.to_csv(out / "designs_replay.csv", index=False)
                design_tab = design_table(predict(p, rep_designs, DESIGNS), pred)
                design_tab.to_csv(out / "designs.csv", index=False)
                rows += design_rows(name, design_tab)
            write_prediction(out / "prediction.csv", [{**r, "predicted_placement": placed.where} for r in rows])
        elif trace.stats is not None:
            lines = _stats_advice(trace.stats)
        else:
            lines = _durations(trace.copies) + ["Nothing can be replayed from this trace: " + "; ".join(trace.lacks) + "."]
        meta["total"] = f"{time.perf_counter() - t0:.1f} s"
        pages = write_pages(out, p, pred, lines, meta, designs=design_tab)
    pages = {k: final / v.name if isinstance(v, Path) else v for k, v in pages.items()}
    return {"out": final, **pages, "meta": meta, "advice": lines, "prediction": pred}
