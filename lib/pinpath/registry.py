"""The one list of notebooks: per notebook its stem, the experiment module that measures, the data
sets it writes (with their column layouts from ``schema``), the claims it judges (each with the data
sets it reads), and its parameters with their defaults. Every parameter's schema (``PARAMS``) is here
too. A preset (``params/<preset>.yaml``) only overrides defaults; a notebook it does not name runs
with the defaults below.

The notebook's ``parameters`` cell declares the same names with the same defaults (papermill reads
it; ``tests/test_registry.py`` keeps the two equal), and its judge cell is
``claims.judge_notebook(NOTEBOOK, out.saved, rt.name)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from . import schema as S
from .machine_state import PLACEMENTS
from .units import GiB
from .vocab import MemoryKind, Policy

__all__ = ["Notebook", "NOTEBOOKS", "PARAMS", "DATASETS", "MAX_NBYTES", "notebook", "claim_datasets",
           "claim_notebook"]

MAX_NBYTES = 64 * GiB      #: the largest size any parameter may name
_SIZE = {"type": "integer", "minimum": 1, "maximum": MAX_NBYTES}


def _list(items: dict, *, most: int = 32, sorted_: bool = True) -> dict:
    return {"type": "array", "items": items, "minItems": 1, "maxItems": most, "uniqueItems": True,
            "sorted": sorted_}


def _int(lo: int, hi: int) -> dict:
    return {"type": "integer", "minimum": lo, "maximum": hi}


_POLICY = {"enum": [p.value for p in Policy]}
_KIND = {"enum": [k.value for k in MemoryKind]}

#: every parameter a notebook may declare: its JSON schema (``sorted`` is pinpath's own keyword)
PARAMS: dict[str, dict] = {
    "SIZES_NBYTES": _list(_SIZE), "KIND_NBYTES": _list(_SIZE), "COPY_NBYTES": _list(_SIZE),
    "NBYTES": _SIZE, "HAZARD_NBYTES": _SIZE, "RACE_NBYTES": _SIZE, "RACE_COPIES": _int(1, 64),
    "LIMIT_NBYTES": {**_SIZE, "minimum": 4096},
    "REPEATS": _int(1, 10_000), "WARMUP": _int(0, 1_000), "VERIFY": {"enum": ["all", "first", "none"]},
    "NW": _int(1, 4096), "NW_VALUES": _list(_int(1, 4096)), "SWEEP_NW": _list(_int(1, 4096)),
    "STEPS": _int(1, 1_000), "SWEEP_STEPS": _int(1, 1_000), "INVOCATIONS": _int(1, 100_000),
    "POLICIES": _list(_POLICY, sorted_=False), "SWEEP_POLICIES": _list(_POLICY, sorted_=False), "POLICY": _POLICY,
    "KINDS": _list(_KIND, sorted_=False), "THREADS": _list(_int(1, 256), most=16),
    "TRANSFERS": _int(1, 1_000_000), "ITERATIONS": _int(1, 100_000), "CHAINS": _int(1, 64), "ROUNDS": _int(1, 1_000),
    "QUEUES": _list(_int(1, 64), most=8), "TRACE_STEPS": _int(0, 100), "VENDOR": {"enum": ["auto", "nvidia", "amd"]},
    "VARIANTS": _list({"enum": ["plain", "app_pinned", "lock_mapped", "async_threshold0"]}, sorted_=False),
    "PROCESSES": _int(1, 100), "PAIRED_PROCESSES": _int(0, 100), "WAIT_PROCESSES": _int(0, 100),
    "WAIT_STEPS": _int(1, 1_000), "PLACEMENT": {"enum": list(PLACEMENTS)},
    "AGE_NBYTES": _list(_SIZE), "ALLOC_NBYTES": _list(_SIZE), "BACKING_NBYTES": _list(_SIZE),
    "LIVE_COUNTS": _list(_int(1, 4096), most=8), "CALLS": _int(1, 10_000), "REPEAT_UNIT": {"enum": ["process", "round"]},
    "CACHE_NBYTES": _list(_SIZE), "EVICT_NBYTES": {**_SIZE, "minimum": 0}, "COLD_NBYTES": _list(_SIZE),
}
#: the cold arm of the policy-sweep claims (C2, C3, C4): their small sizes again, the buffers cold
#: (EVICT_NBYTES of other memory written before each transfer; the claims judge read <data set>_cold)
_COLD_ARM = {"COLD_NBYTES": [4096, 65536], "EVICT_NBYTES": 536870912}


@dataclass(frozen=True)
class Notebook:
    stem: str
    experiment: str                           #: the module of ``pinpath.experiments`` that measures
    datasets: Mapping[str, dict]              #: data set -> its column layout (``schema``)
    claims: Mapping[str, tuple[str, ...]]     #: claim id (a row of claims.csv) -> the data sets it reads
    params: Mapping[str, Any] = field(default_factory=dict)   #: parameter -> its default

    def schema(self) -> dict[str, dict]:
        """The JSON schema of each of this notebook's parameters."""
        return {n: PARAMS[n] for n in self.params}


_ALL_POLICIES = ["stage_per_copy", "lock_always", "query_then_lock", "nextgen", "nextgen_lock_mapped", "stage_pooled",
                 "prepinned", "driver_pageable", "pinned_allocator"]
_API_CALLS = {**S.CALLS, "user_pinned": "bool?", "counted": "bool?", "caller": "str", "repeat": "int"}
_M = MappingProxyType

_LIST = (
    Notebook("00_platform", "bandwidth",
             {"bandwidth": S.BANDWIDTH, "engine_fidelity": S.ENGINE_FIDELITY, "engine_transfers": S.TRANSFERS,
              "plain_transfers": S.PLAIN_TRANSFERS, "copy_paths": S.COPY_PATHS}, {},
             {"SIZES_NBYTES": [4096, 65536, 1048576, 16777216, 268435456], "REPEATS": 10, "WARMUP": 2,
              "VERIFY": "first"}),
    Notebook("01_c12_lock_copy", "replicate", {"c12": S.C12}, {"C12a": ("c12",), "C12b": ("c12",)},
             {"NBYTES": 800000000, "REPEATS": 5, "REPEAT_UNIT": "process", "WARMUP": 1, "VERIFY": "first"}),
    Notebook("02_c2_staging", "replicate", {"staging": S.TRANSFERS, "staging_cold": S.TRANSFERS},
             {"C2": ("staging",)},
             {"SIZES_NBYTES": [4096, 65536, 1048576, 16777216, 268435456], "REPEATS": 5, "REPEAT_UNIT": "process",
              "WARMUP": 1, "VERIFY": "first", **_COLD_ARM}),
    Notebook("03_c6_c7_c9_lock_cost", "replicate", {"lock_cost": S.LOCK_COST},
             {"C6": ("lock_cost",), "C7": ("lock_cost",), "C9": ("lock_cost",)},
             {"SIZES_NBYTES": [4096, 65536, 1048576, 16777216, 268435456], "KINDS": ["heap", "huge_pages"],
              "REPEATS": 5, "REPEAT_UNIT": "process", "WARMUP": 1}),
    Notebook("04_c1_offload_region", "replica",
             {"replica": S.TRANSFERS, "replica_calls": S.CALLS, "nw_sweep": S.TRANSFERS},
             {"C1": ("replica", "replica_calls")},
             {"NW": 16, "STEPS": 5, "INVOCATIONS": 384, "POLICIES": _ALL_POLICIES,
              "SWEEP_NW": [1, 16, 32, 64, 68, 69, 96, 128], "SWEEP_POLICIES": ["nextgen", "stage_per_copy"],
              "SWEEP_STEPS": 1, "VERIFY": "first"}),
    Notebook("05_c3_c5_lock_or_stage", "policy_sweep",
             {"lock_or_stage": S.TRANSFERS, "lock_or_stage_cold": S.TRANSFERS, "lock_outcomes": S.LOCK_OUTCOMES,
              "lock_outcomes_read_only_flag": S.LOCK_OUTCOMES, "kind_paths": S.TRANSFERS},
             {"C3": ("lock_or_stage",), "C5": ("lock_outcomes", "kind_paths")},
             {"SIZES_NBYTES": [4096, 65536, 1048576, 16777216, 268435456], "KIND_NBYTES": [4096, 1048576],
              "REPEATS": 5, "REPEAT_UNIT": "process", "WARMUP": 1, "VERIFY": "first", **_COLD_ARM}),
    Notebook("06_c4_query_vs_lock", "replicate",
             {"query_cost": S.LOCK_COST, "query_saving": S.TRANSFERS, "query_saving_cold": S.TRANSFERS},
             {"C4": ("query_cost", "query_saving")},
             {"SIZES_NBYTES": [4096, 65536, 1048576, 16777216], "REPEATS": 5, "REPEAT_UNIT": "process", "WARMUP": 2,
              "VERIFY": "first", **_COLD_ARM}),
    Notebook("07_c8_semantics", "semantics", {"semantics": S.SEMANTICS}, {"C8": ("semantics",)}, {}),
    Notebook("08_c10_api_stats", "replica", {"api_stats": S.API_STATS, "api_calls": _API_CALLS},
             {"C10": ("api_calls",)},
             {"NW": 16, "REPEATS": 5, "REPEAT_UNIT": "process", "WARMUP": 1, "INVOCATIONS": 384,
              "POLICY": "lock_always"}),
    Notebook("09_c11_hazard_limits", "limits",
             {"hazard_meant": S.HAZARD_MEANT, "hazard": S.HAZARD, "limits": S.LIMITS, "allocator": S.TRANSFERS},
             {"C11": ("hazard_meant", "hazard")},
             {"RACE_NBYTES": 16777216, "RACE_COPIES": 16, "HAZARD_NBYTES": 4194304, "ITERATIONS": 50,
              "LIMIT_NBYTES": 67108864, "NW": 16, "INVOCATIONS": 384}),
    Notebook("10_c13_concurrency", "threads", {"concurrency": S.THREADS, "concurrency_native": S.NATIVE_THREADS},
             {"C13": ("concurrency",)},
             {"POLICIES": ["lock_always", "nextgen_lock_mapped"], "THREADS": [1, 2, 4, 8, 16], "NBYTES": 15360,
              "TRANSFERS": 200, "REPEATS": 5, "REPEAT_UNIT": "process"}),
    Notebook("11_c14_tracked_locking", "replica",
             {"tracked": S.TRANSFERS, "tracked_calls": S.CALLS, "copy": S.BANDWIDTH, "link": S.LINK},
             {"C14": ("tracked", "tracked_calls")},
             {"POLICIES": ["stage_per_copy", "lock_always", "query_then_lock", "nextgen", "nextgen_lock_mapped",
                           "driver_pageable"],
              "NW_VALUES": [16, 128], "STEPS": 1, "INVOCATIONS": 384, "COPY_NBYTES": [1048576, 67108864, 268435456],
              "REPEATS": 10}),
    Notebook("12_c15_overlap", "overlap",
             {"overlap_real": S.OVERLAP_REAL, "overlap_streams": S.OVERLAP_STREAMS, "overlap": S.OVERLAP},
             {"C15": ("overlap_real", "overlap_streams", "overlap")},
             {"NBYTES": 16777216, "CHAINS": 8, "VARIANTS": ["plain", "app_pinned"], "PROCESSES": 5, "ROUNDS": 5,
              "QUEUES": [1, 2, 4, 8], "REPEATS": 3}),
    Notebook("13_real_runtime", "real_runtime",
             {"real_runs": S.REAL_RUNS, "real_invocations": S.REAL_INVOCATIONS, "real_copies": S.REAL_COPIES,
              "real_phases": S.REAL_PHASES, "real_model": S.MODEL_INVOCATIONS, "real_phase_compare": S.PHASE_COMPARE,
              "real_ratio": S.RATIO, "real_present": S.REAL_PRESENT, "real_present_phases": S.REAL_PHASES,
              "real_terms": S.REAL_TERMS, "real_means": S.REAL_MEANS, "real_wait_model": S.WAIT_MODEL, "real_wait_phases": S.WAIT_PHASES}, {},
             {"NW_VALUES": [16, 128], "STEPS": 5, "INVOCATIONS": 384, "PROCESSES": 5, "PAIRED_PROCESSES": 5,
              "TRACE_STEPS": 1, "WAIT_PROCESSES": 2, "WAIT_STEPS": 1,
              "VARIANTS": ["plain", "app_pinned", "lock_mapped", "async_threshold0"], "VENDOR": "auto",
              "VERIFY": "all", "PLACEMENT": "other_cpu"}),
    Notebook("14_state_effects", "state",
             {"state_registration_age": S.STATE_EFFECTS, "state_allocator": S.STATE_EFFECTS,
              "state_backing": S.STATE_EFFECTS, "state_placement": S.STATE_EFFECTS, "state_cache": S.STATE_EFFECTS,
              "state_gpu": S.GPU_STATE}, {},
             {"AGE_NBYTES": [4096, 67108864, 268435456], "ALLOC_NBYTES": [4096, 1048576], "LIVE_COUNTS": [16, 256],
              "BACKING_NBYTES": [4194304, 67108864], "COPY_NBYTES": [4096, 67108864],
              "CACHE_NBYTES": [4096, 65536, 1048576, 16777216], "EVICT_NBYTES": 536870912, "CALLS": 20, "REPEATS": 5,
              "REPEAT_UNIT": "process", "WARMUP": 1}),
)

#: stem -> its notebook, in run order
NOTEBOOKS: Mapping[str, Notebook] = _M({nb.stem: nb for nb in _LIST})
#: every data set a notebook may save: its name -> its column layout
DATASETS: Mapping[str, dict] = _M({name: layout for nb in _LIST for name, layout in nb.datasets.items()})
_CLAIMS = {cid: (nb.stem, sets) for nb in _LIST for cid, sets in nb.claims.items()}


def notebook(stem: str) -> Notebook:
    """The registry's entry of ``stem``; UnknownName in one sentence if it has none."""
    from .errors import UnknownName
    if stem not in NOTEBOOKS:
        raise UnknownName("notebook", stem, NOTEBOOKS)
    return NOTEBOOKS[stem]


def claim_datasets(claim_id: str) -> tuple[str, ...]:
    """The data sets claim ``claim_id`` reads (from the notebook that judges it)."""
    return _CLAIMS[claim_id][1]


def claim_notebook(claim_id: str) -> str:
    """The stem of the notebook that judges ``claim_id``."""
    return _CLAIMS[claim_id][0]
