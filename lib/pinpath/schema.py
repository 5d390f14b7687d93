"""The only place column names and types are written down; figures, tests and reports
import them from here.

Types: ``int`` (int64), ``Int`` (nullable int64), ``float``, ``str``, ``bool?`` (nullable bool).
Frames may carry extra context columns (``repeat``, ``case``, ...) beside the declared ones.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable

import pandas as pd

from .errors import SchemaMismatch
from .records import PHASE_FIELDS, TransferRecord

__all__ = ["ENGINE_FIDELITY", "PLAIN_TRANSFERS", "PHASE_COMPARE", "TRANSFERS", "CALLS", "STATS", "API_STATS", "LOCK_COST", "C12", "HARNESS", "BANDWIDTH", "LINK",
           "LOCK_OUTCOMES", "SEMANTICS", "HAZARD", "HAZARD_MEANT", "LIMITS", "THREADS", "NATIVE_THREADS", "OVERLAP", "COPY_PATHS",
           "OVERLAP_REAL", "OVERLAP_STREAMS",
           "REAL_RUNS", "REAL_INVOCATIONS", "REAL_PRESENT", "REAL_COPIES", "REAL_PHASES", "MODEL_INVOCATIONS", "SUMMARY", "RATIO", "REAL_REGIONS", "REAL_TERMS", "REAL_MEANS",
           "WAIT_MODEL", "WAIT_PHASES",
           "STATE_EFFECTS", "STATE_SUMMARY", "GPU_STATE",
           "frame", "check_frame", "transfer_row", "calls_frame", "stats_frame"]

TRANSFERS = {
    "event": "str",          # "transfer", "map" or "unmap"
    "policy": "str",         # a Policy value
    "path": "str",           # a TransferPath value (transfers) or a MapOutcome value (map, unmap)
    "kind": "str",           # a MemoryKind value
    "direction": "str",      # "h2d", "d2h" ("" for map and unmap)
    "nbytes": "int",
    "thread_id": "int",
    "start_ns": "int",
    "end_ns": "int",
    "total_ns": "int",
    **{f: "int" for f in PHASE_FIELDS},   # host time of each phase; 0 = phase not performed
    "dma_event_ns": "Int",   # device-event time of the DMA (null where the runtime has no events)
    "error": "str",          # the runtime's answer that decided the path, "" if none
    "hazard": "str",         # harm to someone else's memory seen by the harness, "" if none
    "verified": "bool?",     # bytes compared after the transfer (null = not checked)
    "calls": "str",          # the native calls in order, "name=rc" separated by spaces
    "n_calls": "int",
    "platform": "str",
}
CALLS = {"transfer_id": "int",   # row of the TRANSFERS frame the call belongs to
         "call": "str", "category": "str",   # native name; lock, unlock, query, alloc, grant, free, copy, wait, ...
         "start_ns": "int", "end_ns": "int", "duration_ns": "int", "rc": "int", "thread_id": "int"}
STATS = {"Name": "str", "Calls": "int", "TotalDurationNs": "int", "AverageNs": "int", "Percentage": "float"}
LOCK_COST = {
    "op": "str",        # lock, unlock, relock, unlock_after_relock, query; relock_counted and
                        # unlock_after_relock_counted: the re-lock counted by pinpath (call pinpath_count)
    "state": "str",     # what the memory was before the op: pageable, locked, pinned (runtime-allocated)
    "kind": "str",
    "backing": "str",   # the buffer's page backing as Linux reports it: 4k, thp, hugetlbfs, file, runtime
    "nbytes": "int",
    "repeat": "int",
    "call": "str",      # the native call timed
    "ns": "int",        # its duration: from the call trace (python) or timed in C (native)
    "rc": "int",
    "error": "str",
    "source": "str",    # "python" (pinpath's path, through the recorder) or "native" (the C library)
    "platform": "str",
}
C12 = {
    "case": "str",      # "1_lock_copy", "2_prelocked_copy", "3_relock_copy", "pageable_copy";
                        # "3_relock_counted_copy": case 3 with the re-lock counted by pinpath (native)
    "nbytes": "int",
    "repeat": "int",
    "lock_ns": "int",   # the lock inside the braces (case 1), the re-lock (case 3)
    "enqueue_ns": "int",  # enqueue of the async copy
    "wait_ns": "int",
    "braces_ns": "int",       # Carlo's braces as his code has them: lock + enqueue, no wait
    "braces_wait_ns": "int",  # the other reading: lock + enqueue + wait
    "unlock_ns": "int", # timed apart, after the braces
    "dma_event_ns": "Int",
    "lock_rc": "int",
    "lock_error": "str",
    "verified": "bool?",
    "source": "str",    # python or native
    "platform": "str",
}
HARNESS = {"metric": "str", "ns": "float", "platform": "str"}
ENGINE_FIDELITY = {   # the native engine against the same policy written by hand in plain C
    "policy": "str", "direction": "str", "nbytes": "int",
    "engine_ns": "float",   # median over repeats of the engine's per-transfer repeat medians
    "plain_ns": "float",    # the same for tools/plain_policies.c
    "ratio": "float", "low": "float", "high": "float",   # engine / plain paired by repeat: the median of the
                                                         # repeats' ratios, 95 % interval over repeats
    "repeats": "int",
    "plain_process_ns": "float",   # the plain program as a process of its own (the process state's effect)
    "thread_cpu": "int",    # the CPU both sides' timing thread was pinned to (-1: not pinned, host)
    "platform": "str"}
PLAIN_TRANSFERS = {   # the yardstick's (tools/plain_policies.c) timed transfers behind ENGINE_FIDELITY
    "policy": "str", "direction": "str", "nbytes": "int", "repeat": "int", "round": "int", "ns": "int",
    "process": "str",   # "notebook": in the notebook's process, beside the engine; "own": a process of its own
    "first": "str",     # which side of the repeat ran first ("engine" or "plain"; "" in a process of its own)
    "platform": "str"}
BANDWIDTH = {
    "case": "str",      # "pinned" (prepinned policy), "pageable" (driver_pageable), "plain_loop", "sync_loop"
    "path": "str",      # the path the transfer took ("" for the bare loop)
    "direction": "str",
    "nbytes": "int",
    "repeat": "int",
    "total_ns": "int",  # host time of copy + wait
    "dma_event_ns": "Int",
    "gb_per_s": "float",  # nbytes / total_ns
    "verified": "bool?",
    "platform": "str",
}
LOCK_OUTCOMES = {"kind": "str", "nbytes": "int", "backing": "str",
                 "read_only_flag": "bool?",   # the runtime's read-only flag was added (a labelled second reading)
                 "call": "str", "ns": "int", "rc": "int", "error": "str", "granted": "bool?",
                 "already_pinned": "bool?",   # the refusal means "already registered"
                 "not_available": "str",      # why this machine could not make the kind ("" if it could)
                 "platform": "str"}
SEMANTICS = {
    "probe": "str",        # lock_twice_unlock_once, overlapping, sub_range, shared_page, unlock_never_locked
    "step": "int",
    "action": "str",       # what the step did, e.g. "lock A", "unlock B", "query A's last page"
    "call": "str",
    "rc": "int",
    "error": "str",
    "locked": "bool?",     # for query steps: what the runtime said
    "platform": "str",
}
HAZARD = {
    "policy": "str",            # how thread A treats its own range: query_then_lock (relies on B's lock), lock_always
    "iteration": "int",
    "a_path": "str",            # the path A's transfer took
    "a_copy_start_ns": "int",   # A's copy: from its enqueue ...
    "a_copy_end_ns": "int",     # ... to the end of its wait
    "b_unlock_start_ns": "int",
    "b_unlock_end_ns": "int",
    "unlock_inside_copy": "bool?",  # B's unlock began and ended inside A's copy
    "page_locked_before": "bool?",  # A's first page, read just before B's unlock
    "page_locked_after": "bool?",   # the same page, read right after B's unlock
    "observed_by": "str",       # what said so: "smaps" (Linux's VmFlags) or the runtime's query
    "observed_ns": "int",       # when the after-reading finished
    "hazard": "bool?",          # A relied on a lock that was undone while its copy ran
    "copy_verified": "bool?",
    "platform": "str",
}
HAZARD_MEANT = {               # C11 as meant (pp_c11): B locks A's whole range, unlocks it under A's copies
    "iteration": "int",
    "nbytes": "int",            # A's range, copied `copies` times back to back
    "b_nbytes": "int",          # B's lock: A's range or more
    "copies": "int",
    "b_lock_start_ns": "int", "b_lock_end_ns": "int",           # CLOCK_MONOTONIC, from C
    "a_enqueue_start_ns": "int", "a_enqueue_end_ns": "int",
    "b_unlock_start_ns": "int", "b_unlock_end_ns": "int",
    "copy_done_ns": "int",      # the first poll of A's queue that saw the copies done
    "a_wait_end_ns": "int",
    "idle_unlock_ns": "int",    # the same unlock with nothing in flight, just before the race
    "b_unlock_ns": "int",
    "unlock_end_after_copy_ns": "int",   # B's unlock end - copies done (< 0: returned mid-copy)
    "b_lock_rc": "int", "a_found_locked": "bool?", "enqueue_rc": "int", "b_unlock_rc": "int", "wait_rc": "int",
    "idle_rc": "int",
    "rc_names": "str",          # the failed codes, named
    "in_flight": "bool?",       # B's unlock began after A's enqueues and before the copies were done
    "copy_verified": "bool?",   # A's bytes on the device, checked after the race
    "answer": "str",            # limits.RACE_ANSWERS: waits, returns mid-copy, fails, corrupts, ...
    "mechanism": "str",         # whose lock and copy: the runtime's, or the operating system's (host)
    "platform": "str",
}
LIMITS = {"limit_nbytes": "int", "op": "str", "nbytes": "int", "call": "str", "rc": "int", "error": "str",
          "granted": "bool?", "vmlck_nbytes": "int", "platform": "str"}
THREADS = {"policy": "str", "threads": "int", "thread": "int", "transfers": "int", "nbytes": "int",
           "path": "str",          # the path most of this thread's transfers took
           "overhead_ns": "int",   # median per transfer of everything but moving bytes: total - dma - wait
           "total_ns": "int",      # median per transfer
           "native_ns": "int",     # median per transfer of the runtime's own calls (trace), interpreter excluded
           "wall_ns": "int",       # the whole run of all threads
           "aggregate_gb_per_s": "float", "platform": "str"}
NATIVE_THREADS = {"threads": "int", "thread": "int",
                  "repeat": "int",   # an independent repeat (fresh buffers, a new order of thread counts)
                  "call": "int",     # the call's index inside its repeat
                  "op": "str",       # relock, unlock_after_relock; relock_counted, unlock_after_relock_counted
                  "ns": "int", "rc": "int", "platform": "str"}
OVERLAP = {"queues": "int", "chains": "int", "nbytes": "int", "repeat": "int", "wall_ns": "int",
           "verified": "bool?", "kernel": "bool?", "platform": "str"}
OVERLAP_REAL = {          # C15 as meant: overlap.cpp through the real libomptarget, one row per round
    "variant": "str",        # plain (pageable arrays) or app_pinned (registered by the application)
    "mode": "str",           # nowait: N target nowait regions, one taskwait; wait: a taskwait after each
    "round": "int", "process": "int",   # the process is the unit of repeat
    "chains": "int", "nbytes": "int",   # regions per round; bytes each way per region
    "ns": "int",             # the round's wall time, steady clock in the application
    "verified": "bool?", "vendor": "str", "arch": "str",
}
OVERLAP_STREAMS = {       # the traced run: the CUDA plugin's calls per round (cudalog), none elsewhere
    "variant": "str", "mode": "str", "round": "int",
    "copies": "int", "kernels": "int", "syncs": "int", "streams_created": "int",
    "streams": "int",        # distinct streams the round's copies and kernels were enqueued on
    "source": "str",         # cudalog, or none (no NVIDIA driver: nothing recorded)
    "vendor": "str",
}
LINK = {"link": "str", "peak_gb_per_s": "float", "platform": "str"}
COPY_PATHS = {"policy": "str", "kind": "str", "nbytes": "int", "direction": "str",
              "path": "str",            # the path pinpath recorded
              "host_ns": "int",         # host time of copy + wait (observed run: CUPTI adds its own cost)
              "copies_seen": "int",     # memcpy records CUPTI attributed to the transfer
              "src_kind": "str", "dst_kind": "str",   # PAGEABLE, PINNED, DEVICE as CUPTI saw them
              "device_ns": "int",       # the copies' device-side duration
              "observed_path": "str",   # the path, the driver's part resolved from what CUPTI saw
              "platform": "str"}
API_STATS = {**STATS, "user_pinned": "bool?", "category": "str", "refused": "int",
             "counted": "bool?"}   # the arm where pinpath counted the runtime's re-locks (ROCT's count's analogue)
# -- the real offload runtime (notebook 13) ------------------------------------------------------
REAL_RUNS = {            # one row per run of the binary
    "variant": "str", "mode": "str",   # the variant; the binary's --variant (plain, app_pinned)
    "env": "str",                      # the runtime switches set, "K=V K=V"
    "nw": "int", "process": "int",     # the timed process's number (the unit of repeat); the traced run: 0
    "traced": "bool?", "steps": "int", "invocations": "int",
    "paired": "bool?",                 # --paired: each invocation beside the same region over present arrays
    "offload_devices": "int", "on_device": "bool?",
    "register": "str",                 # the application's pinning call (cuMemHostRegister, hipHostRegister, mlock, none)
    "register_rc": "int", "register_ns": "int", "unregister_ns": "int",
    "enter_ns": "int", "exit_ns": "int",   # target enter data / exit data
    "wrong": "int",                    # invocations whose D2H bytes differed from the formula
    "wall_ns": "int",
    "context_wait": "str",             # traced runs: how the CUDA plugin left the context's wait mode (ompinfo.context_wait)
    "placement": "str",                # against the GPU's interrupt CPU: irq_cpu, other_cpu, unpinned (machine_state.place_process)
    "cpus": "str",                     # the CPUs the process could run on (a CPU list: its parent's affinity, inherited)
    "vendor": "str", "arch": "str",
}
REAL_INVOCATIONS = {     # one row per region invocation (host steady_clock around the target region)
    "variant": "str", "nw": "int", "process": "int", "traced": "bool?", "step": "int", "invocation": "int",
    "ns": "int", "verified": "bool?", "vendor": "str", "arch": "str",
}
REAL_PRESENT = {         # one row per invocation of a --paired process
    **REAL_INVOCATIONS,
    "kernel_ns": "int",      # the same region over present arrays: lookup, launch, kernel, synchronize
    "transfer_ns": "int",    # ns - kernel_ns: what the two copies add through the runtime
}
REAL_COPIES = {          # one row per copy LIBOMPTARGET_INFO reported
    "variant": "str", "nw": "int", "segment": "str",   # setup, invocation, teardown
    "step": "int", "invocation": "int",                # -1 outside invocations
    "direction": "str", "nbytes": "int", "name": "str",   # h2d/d2h; the mapped variable's name
    "source": "str",                                   # who printed it: omptarget, PluginInterface ...
    "device": "int", "host_ptr": "str", "tgt_ptr": "str",
}
REAL_PHASES = {          # one row per LIBOMPTARGET_PROFILE event
    "variant": "str", "nw": "int", "segment": "str", "step": "int", "invocation": "int",
    "phase": "str",                # the runtime's name: Runtime: target exe, HostToDev, Kernel Target ...
    "nbytes": "Int",               # Size=...B where the event names one
    "location": "str",             # file:line of the construct
    "start_us": "int", "dur_ns": "int",   # the profile counts whole microseconds
}
MODEL_INVOCATIONS = {    # the replica's cost per invocation: sum of its events' host time
    "variant": "str", "policy": "str", "user_pinned": "bool?", "threshold_nbytes": "Int",
    "nw": "int", "step": "int", "invocation": "int", "ns": "int",
    "h2d_ns": "int", "kernel_ns": "int", "d2h_ns": "int", "sync_ns": "int",   # the invocation's events
    "kernel_only_ns": "Int",  # the same invocation without copies (launch, kernel, wait), run beside it; NA: not run
    "repeat": "int",         # the independent repeat (the step, on the engine: fresh buffers and policy state)
    "platform": "str",
}
PHASE_COMPARE = {        # the model's events beside the real runtime's LIBOMPTARGET_PROFILE phases
    "variant": "str", "nw": "int", "phase": "str",   # h2d, kernel, d2h, sync, region
    "model_ns": "float", "real_ns": "float",   # medians per invocation (real: the traced process)
    "difference_ns": "float",   # real - model
    "real_events": "str",       # the profile's names summed into the phase
}
SUMMARY = {"source": "str", "variant": "str", "nw": "int", "n": "int",
           "median_ns": "float", "lo_ns": "float", "hi_ns": "float",   # bootstrap 95 % of the median ...
           "repeats": "int", "interval_over": "str",   # ... over the repeats: "processes" (their medians) or "invocations"
           "within_spread": "float",    # median over repeats of IQR / median inside one repeat
           "between_spread": "float"}   # (largest - smallest repeat median) / their median; NaN with one repeat
RATIO = {"variant": "str", "nw": "int", "policy": "str", "user_pinned": "bool?",
         "model_median_ns": "float", "real_median_ns": "float",   # the real one: median of the process medians
         "real_lo_ns": "float", "real_hi_ns": "float",   # its bootstrap 95 % over the processes
         "real_processes": "int", "interval_over": "str",   # the real side's repeats: "processes" or "invocations"
         "ratio": "float", "ratio_lo": "float", "ratio_hi": "float",   # model / real, bootstrap 95 %
         "n_model": "int", "n_real": "int"}   # invocations counted on each side
REAL_REGIONS = {         # one row per region of a traced --paired run (real_terms.region_work)
    "variant": "str", "nw": "int", "region": "str",   # full (the copies' region) or present_only
    "step": "int", "invocation": "int",
    "region_ns": "int",      # Runtime: target exe
    "events_ns": "int",      # the union of the profiled events inside it
    "bookkeeping_ns": "int",  # region_ns - events_ns: lookup, argument set-up, the runtime's own events
}
REAL_TERMS = {           # model / real with the real runtime's measured terms added in turn (real_terms)
    "variant": "str", "nw": "int", "step": "int",   # 0: the model alone, then one term more per step
    "term": "str",           # model, present-only region, bookkeeping, blocking wait
    "measured_ns": "float",  # the measured figure the step puts in (median)
    "replaced_ns": "float",  # what of the model it replaces (step 1: the kernel alone; 3: the copies; else 0)
    "term_ns": "float",      # what the step adds to the model's figure (NaN at step 0)
    "model_ns": "float", "model_lo_ns": "float", "model_hi_ns": "float",   # the model with the terms so far
    "real_ns": "float",      # the real invocation: median of the process medians
    "real_paired_ns": "float",   # the same in the --paired processes (pairing's own effect on the real side)
    "ratio": "float", "ratio_lo": "float", "ratio_hi": "float",   # model / real, bootstrap 95 %
    "within": "bool?",       # |ratio - 1| <= 0.15
    "model_repeats": "int", "real_processes": "int", "present_processes": "int", "traced_invocations": "int",
    "wait_processes": "int",  # processes in each wait mode (the fewer of the two)
    "note": "str",           # why a step has no figure
}
REAL_MEANS = {           # the model with the terms from trimmed means against the --paired processes' region (real_means)
    "variant": "str", "nw": "int",
    "present_ns": "float",   # the present-only region: trimmed mean over the --paired processes' invocations
    "bookkeeping_ns": "float",   # full less present-only region outside the profiled events (trimmed means; 0: not traced)
    "copies_ns": "float",    # the replica's copies in the blocking processes: trimmed mean over their invocations
    "model_ns": "float", "model_lo_ns": "float", "model_hi_ns": "float",   # their sum, bootstrap 95 %
    "real_ns": "float", "real_lo_ns": "float", "real_hi_ns": "float",   # the full region in the same --paired processes
    "ratio": "float", "ratio_lo": "float", "ratio_hi": "float",   # model / real, the processes resampled whole
    "within": "bool?",       # |ratio - 1| <= 0.15
    "real_unpaired_ns": "float",   # the full region in the unpaired processes (another time of the run)
    "ratio_unpaired": "float", "ratio_unpaired_lo": "float", "ratio_unpaired_hi": "float",
    "cut_ns": "float",       # the copies' cut between soon and late wakes, both sides pooled (NaN: one group)
    "apart_iqrs": "float",   # how far apart the two groups are, in interquartile ranges
    "late_real": "float", "late_replica": "float",   # each side's share of copies past the cut
    "late_real_min": "float", "late_real_max": "float",   # the range of the processes' own shares
    "late_replica_min": "float", "late_replica_max": "float",
    # the replica's copies in the real processes' wake state: its soon and late groups (trimmed means)
    # weighted by the real --paired processes' late share (= copies_ns where the copies make one group)
    "soon_replica_ns": "float", "late_replica_ns": "float", "copies_state_ns": "float", "model_state_ns": "float",
    "ratio_state": "float", "ratio_state_lo": "float", "ratio_state_hi": "float",   # model_state / real, processes whole
    "within_state": "bool?",  # |ratio_state - 1| <= 0.15
    "in_real_state": "bool?",  # False: its groups do not pair with the real ones', copies as drawn (note: why); null: one group
    "paired_processes": "int", "wait_processes": "int", "unpaired_processes": "int", "traced_invocations": "int",
    "note": "str",           # why a figure is missing or a part was left out
}
WAIT_MODEL = {           # the replica model in fresh processes in each CUDA wait mode (experiments.wait_mode)
    **MODEL_INVOCATIONS,     # repeat: the process (the unit of repeat)
    "wait": "str",           # the mode the process opened in: auto (CUDA's default) or blocking (LLVM's CUDA plugin's)
    "wait_in_force": "str",  # the mode read back from the context (cuDevicePrimaryCtxGetState)
    "repeat_unit": "str", "section_order": "int", "pid": "int",
}
WAIT_PHASES = {          # blocking less auto per phase of an invocation (real_terms.wait_phases)
    "variant": "str", "nw": "int",
    "phase": "str",          # h2d, kernel, d2h, sync, transfer (ns - kernel_only_ns), invocation (ns)
    "auto_ns": "float", "blocking_ns": "float",   # medians of the process medians in each mode
    "difference_ns": "float", "difference_lo_ns": "float", "difference_hi_ns": "float",   # blocking - auto, bootstrap 95 %
    "auto_processes": "int", "blocking_processes": "int",
}

# -- what changes a transfer's cost (notebook 14) ------------------------------------------------
STATE_EFFECTS = {        # one row per timed C call (native/state.c); sections add their own columns
    "section": "str",    # registration_age, allocator, backing, placement
    "state": "str",      # the state compared: an age (first, fresh, held), an allocator state, a backing, a CPU
    "op": "str",         # query, reregister, register, alloc, free, lock, unlock, copy_pageable, copy_locked, null ...
    "nbytes": "int", "repeat": "int",   # repeat: the independent round (the unit of repeat)
    "call": "int",       # the call's index inside its round
    "ns": "int", "rc": "int", "error": "str",
    "backing": "str",    # what Linux reports for the buffer (4k, thp, ...); runtime: the runtime's own allocation
    "thread_cpu": "int", "thread_node": "int",   # the timing thread's CPU and NUMA node when the round began
    "gpu_node": "int",   # the GPU's NUMA node (-1: unavailable)
    "platform": "str",
}
STATE_SUMMARY = {"repeats": "int", "calls": "int",
                 "median_ns": "float", "lo_ns": "float", "hi_ns": "float",   # median of round medians, 95 % over rounds
                 "within_spread": "float",    # median over rounds of IQR / median inside a round
                 "between_spread": "float"}   # (largest - smallest round median) / their median
GPU_STATE = {"when": "str", "field": "str",   # a machine_state.FIELDS name
             "value": "str", "available": "bool?", "unavailable": "str", "platform": "str"}


_CAST = {"int": "int64", "Int": "Int64", "float": "float64", "bool?": "boolean"}
_KINDS = {"int": "iu", "Int": "iu", "float": "f", "bool?": "b", "str": "OUT"}


def frame(rows: Iterable[dict], table: dict[str, str]) -> pd.DataFrame:
    """Rows (dicts) -> a DataFrame whose declared columns come first, cast to their types."""
    df = pd.DataFrame(list(rows))
    missing = [c for c in table if c not in df.columns]
    if missing and len(df):
        raise SchemaMismatch(f"rows lack the column(s) {', '.join(missing)}")
    for c in missing:
        df[c] = pd.Series(dtype=_CAST.get(table[c], "object"))
    for c, t in table.items():
        if t == "str":
            df[c] = df[c].fillna("").astype(str)
        else:
            df[c] = df[c].astype(_CAST[t])
    extra = [c for c in df.columns if c not in table]
    return df[list(table) + extra]


def check_frame(df: pd.DataFrame, table: dict[str, str]) -> pd.DataFrame:
    """Raise SchemaMismatch naming the first column that is missing or of the wrong type."""
    for c, t in table.items():
        if c not in df.columns:
            raise SchemaMismatch(f"column {c!r} is missing")
        kind = df[c].dtype.kind
        if kind not in _KINDS[t]:
            raise SchemaMismatch(f"column {c!r} has dtype {df[c].dtype}, expected {t}")
    return df


def transfer_row(rec: TransferRecord, **context) -> dict:
    """One TRANSFERS row (plus context columns) from a record."""
    row = {f.name: getattr(rec, f.name) for f in dataclasses.fields(rec) if f.name != "calls"}
    row["total_ns"] = rec.total_ns
    row["calls"] = " ".join(f"{c.call}={c.rc}" for c in rec.calls)
    row["n_calls"] = len(rec.calls)
    row.update(context)
    return row


def calls_frame(recs: Iterable[TransferRecord], categories: dict[str, str] | None = None) -> pd.DataFrame:
    """One CALLS row per native call of each record; transfer_id is the record's index;
    ``categories`` (a runtime's ``call_categories``) names what each call does."""
    cat = categories or {}
    rows = [{"transfer_id": i, "call": c.call, "category": cat.get(c.call, "other"), "start_ns": c.start_ns,
             "end_ns": c.end_ns, "duration_ns": c.end_ns - c.start_ns, "rc": c.rc, "thread_id": c.thread_id}
            for i, rec in enumerate(recs) for c in rec.calls]
    return frame(rows, CALLS)


def stats_frame(rows) -> pd.DataFrame:
    """trace.hsa_stats rows -> a STATS frame."""
    return frame([dict(zip(STATS, r)) for r in rows], STATS)
