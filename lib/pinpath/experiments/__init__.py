"""Experiments: plain functions that return tidy frames (columns in ``pinpath.schema``)."""

from .bandwidth import bandwidth, link_peak
from .c12 import c12_cases
from .copy_paths import copy_paths, label_paths
from .fidelity import engine_fidelity, engine_fidelity_or_reason
from . import native
from .harness import harness
from .limits import lock_limits, page_sharing_hazard, relied_lock_race
from .lock_cost import lock_cost
from .overlap import overlap, overlap_or_reason, real_overlap, real_overlap_or_reason
from .policy_sweep import lock_outcomes, policy_sweep
from .replica import api_calls, api_stats, calls_stats, replica
from .replicate import replicated, replicated_all
from .semantics import semantics
from .sweep import DeviceBuffers, grid, rounds, transfer, transfers_frame
from .threads import concurrency, concurrency_native

__all__ = ["engine_fidelity", "engine_fidelity_or_reason", "native", "bandwidth", "link_peak", "c12_cases", "copy_paths", "label_paths", "harness", "lock_limits", "page_sharing_hazard", "relied_lock_race", "lock_cost",
           "overlap", "overlap_or_reason", "real_overlap", "real_overlap_or_reason", "lock_outcomes", "policy_sweep", "api_calls", "api_stats", "calls_stats", "replica", "replicated", "replicated_all", "semantics",
           "DeviceBuffers", "grid", "rounds", "transfer", "transfers_frame", "concurrency", "concurrency_native"]
