"""Experiments: plain functions that return tidy frames (columns in ``pinpath.schema``)."""

from .bandwidth import bandwidth, link_peak
from .harness import harness
from .limits import lock_limits, page_sharing_hazard
from .lock_cost import c12_cases, lock_cost
from .policy_sweep import lock_outcomes, policy_sweep
from .replica import api_stats, replica
from .native import beside_python, native_twin, native_twin_or_reason
from .overlap import overlap, overlap_or_reason
from .semantics import semantics
from .threads import concurrency
from .sweep import DeviceBuffers, grid, repeat_transfers, transfer, transfers_frame

__all__ = ["bandwidth", "link_peak", "harness", "c12_cases", "lock_cost", "policy_sweep", "lock_outcomes", "replica", "api_stats",
           "semantics", "page_sharing_hazard", "concurrency", "native_twin", "native_twin_or_reason", "beside_python", "overlap", "overlap_or_reason", "lock_limits", "DeviceBuffers", "grid", "repeat_transfers",
           "transfer", "transfers_frame"]
