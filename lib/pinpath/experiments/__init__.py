"""Experiments: plain functions that return tidy frames (columns in ``pinpath.schema``)."""

from .bandwidth import bandwidth
from .harness import harness
from .lock_cost import c12_cases, lock_cost
from .staging import staging_cost
from .sweep import DeviceBuffers, grid, repeat_transfers, transfer, transfers_frame

__all__ = ["bandwidth", "harness", "c12_cases", "lock_cost", "staging_cost", "DeviceBuffers", "grid",
           "repeat_transfers", "transfer", "transfers_frame"]
