"""The advice in the application developer's terms: which arrays to pin and how, which runtime
variable to set, what each costs and why, and the caveats. Every figure comes from the
prediction; a variant whose interval overlaps the baseline's is not called a gain."""

from __future__ import annotations

import math

import pandas as pd

from ..osinfo import memlock_limit_nbytes
from ..report.fmt import binary_size as fmt_bytes, format_measured
from ..report.share import md_code       # a trace's variable name: a code span nothing in it can end
from ..units import fmt_ns
from .pattern import Pattern
from .predict import Prediction

__all__ = ["advice", "VARIANT_WORDS", "DESIGN_WORDS", "PLATFORM_LIMITS"]

VARIANT_WORDS = {   # variant -> what the user does, and what it makes the runtime do
    "plain": ("leave the code and the runtime as they are",
              "the runtime copies from pageable memory (NVIDIA: the driver stages it; AMD: it locks large "
              "copies per copy and stages small ones)"),
    "app_pinned": ("register the arrays before `target enter data`: `cudaHostRegister(p, n, "
                   "cudaHostRegisterDefault)` / `hipHostRegister(p, n, hipHostRegisterDefault)`, or allocate them "
                   "pinned with OpenMP's allocator trait: `omp_alloc(n, ompx_pinned_mem_alloc)` (LLVM) or an "
                   "allocator made by `omp_init_allocator` with `{omp_atk_pinned, omp_atv_true}`",
                   "every later copy of that array is one DMA from pinned memory; the registration is paid once "
                   "per array (and its unregistration at the end)"),
    "lock_mapped": ("set `LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS=1`",
                    "AMD: the runtime locks every mapped array once at `target enter data` and unlocks it at "
                    "`target exit data`, so each copy in between is one DMA; NVIDIA's plugin ignores it "
                    "(its data lock returns the pointer unchanged)"),
    "async_threshold0": ("set `LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES=0` (as QMCPACK does)",
                         "AMD: copies of every size take the asynchronous lock-then-copy path instead of being "
                         "staged below the threshold (1 MiB by default)"),
}
DESIGN_WORDS = {   # the engine's policies as designs a runtime could adopt (CATALOGUE.md): what the runtime would do
    "stage_per_copy": "stage every copy through a pinned buffer allocated for that copy (ATMI, 2020)",
    "lock_always": "lock the host range, copy, unlock, on every copy (PR #174)",
    "query_then_lock": "ask whether the range is locked first and lock only where it is not (the 2021-22 plugin)",
    "nextgen": "today's LLVM AMDGPU plugin: stage copies below 1 MiB, lock larger ones per copy",
    "nextgen_lock_mapped": "lock every mapped array once at map time and unlock it at unmap",
    "stage_pooled": "stage every copy, of any size, through reused pinned buffers",
    "prepinned": "memory that is pinned from its allocation on: each copy is one DMA",
    "driver_pageable": "hand the pageable pointer to the driver's copy (CUDA's plugin)",
    "pinned_allocator": "hand out locked memory from its allocator and track it (C11's idea)",
}
PLATFORM_LIMITS = {
    "host": "This run had no GPU: the replay measured the operating system's share only (mlock/munlock and "
            "memcpy on a worker thread stand in for the driver's pinning and the DMA). The ranking of the "
            "variants' host-side costs (locks, unlocks, staging copies) is measured; the DMA times, the driver's "
            "own pinning cost and the bus are not, so the totals are not the GPU node's. Run `pinpath advise` "
            "on the GPU node for those.",
}


def _est(ns, lo, hi) -> str:
    return format_measured(ns, lo, hi, "ns") if math.isfinite(ns) else "not replayed"


ENGINE_NOTES = {
    "python": "The replay ran pinpath's Python policies (engine `python`): every replayed event includes the "
              "interpreter's cost of its runtime calls (a few microseconds each), so small transfers are predicted "
              "slower than a C runtime makes them; the ranking of large ones is the least affected.",
}


def advice(p: Pattern, pred: Prediction, *, platform: str, vendor: str, engine: str = "python") -> list[str]:
    """Paragraphs (Markdown) of advice, most important first."""
    out = []
    if platform in PLATFORM_LIMITS:
        out.append(PLATFORM_LIMITS[platform])
    if engine in ENGINE_NOTES:
        out.append(ENGINE_NOTES[engine])
    tot = pred.totals
    base = tot[tot.variant == "plain"]
    if not len(base) or not math.isfinite(base.predicted_ns.iat[0]):
        out.append("The baseline (plain) could not be replayed, so no variant is compared with it.")
        return out + _caveats(p, pred)
    b = base.iloc[0]
    better = tot[(tot.high < b.low) & (tot.variant != "plain")]
    worse = tot[(tot.low > b.high) & (tot.variant != "plain")]
    if not len(better):
        out.append(f"**Leave it.** No variant's predicted transfer time is below plain's "
                   f"({_est(b.predicted_ns, b.low, b.high)} for the whole trace) beyond the intervals.")
    else:
        best = better.sort_values("predicted_ns").iloc[0]
        what, why = VARIANT_WORDS.get(best.variant, (best.variant, ""))
        saved = b.predicted_ns - best.predicted_ns
        out.append(f"**{what[0].upper() + what[1:]}.** Predicted transfer time for the whole trace: "
                   f"{_est(best.predicted_ns, best.low, best.high)} against plain's {_est(b.predicted_ns, b.low, b.high)}"
                   f" ({fmt_ns(saved)} less, {saved / b.predicted_ns:.0%}). Why: {why}." + _cost(pred, best.variant))
    for r in worse.itertuples():
        what, _ = VARIANT_WORDS.get(r.variant, (r.variant, ""))
        out.append(f"Do not {what}: predicted {_est(r.predicted_ns, r.low, r.high)}, more than plain.")
    for r in tot[tot.not_replayed != ""].itertuples():
        out.append(f"{r.variant} was not replayed on this node: {r.not_replayed}.")
    for r in tot[tot.same_as != tot.variant].itertuples():
        out.append(f"`{r.variant}` is the same as `{r.same_as}` on this runtime (the same model: "
                   f"{VARIANT_WORDS.get(r.variant, ('', r.variant))[1]}), so it is predicted and ranked as "
                   f"`{r.same_as}`; only a measurement on the real runtime could set them apart.")
    out += _pin_list(p, pred) + _not_arrays(p)
    if vendor == "nvidia":
        out.append("`LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS` and `LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES` do "
                   "nothing on NVIDIA's plugin; pinning the arrays yourself is the only lever there.")
    return out + _caveats(p, pred)


def _cost(pred: Prediction, variant: str) -> str:
    """What a variant costs over plain, once per array, and what it saves per transfer."""
    arr = pred.arrays[pred.arrays.variant == variant] if len(pred.arrays) else pd.DataFrame()
    if not len(arr):
        return ""
    per = (arr.saving_ns * arr.transfers).sum() / arr.transfers.sum()
    return (f" Its cost: {fmt_ns(arr.one_off_ns.clip(lower=0).sum())} once over {len(arr)} array(s) "
            f"({fmt_bytes(int(arr.nbytes.sum()))}), against {fmt_ns(per)} saved per transfer on average.")


def _pin_list(p: Pattern, pred: Prediction) -> list[str]:
    """Which arrays registering pays for: those moved at least as often as the upper end of their
    break-even's interval, so a pin is advised only where it surely pays."""
    arr = pred.arrays
    if not len(arr) or "app_pinned" not in set(arr.variant):
        return []
    arr = arr[arr.variant == "app_pinned"].sort_values("transfers", ascending=False)
    pays = arr[arr.pays]
    if not len(pays):
        return ["No array is moved often enough for registering it to pay back its cost on this node."]
    lines = [f"{md_code(r.name or r.array)} ({fmt_bytes(r.nbytes)}, moved {r.transfers}x; registering pays after "
             f"{math.ceil(r.uses)} transfer(s), at most {math.ceil(r.high)})" for r in pays.head(12).itertuples()]
    more = f" and {len(pays) - 12} more" if len(pays) > 12 else ""
    return ["Arrays worth registering: " + "; ".join(lines) + more +
            f". Together {fmt_bytes(int(pays.nbytes.sum()))} locked."]


OWNER_WORDS = {   # owner -> what the memory is, for the advice
    "stack": "a local variable on the stack (no user registers those: they live a call long)",
    "runtime": "the runtime's own buffer (LLVM's kernel launch environment, copied at the launch of a kernel "
               "with a reduction)",
}


def _not_arrays(p: Pattern) -> list[str]:
    """The copied memory that is not an array a user can register, said as what it is."""
    if not len(p.buffers) or "owner" not in p.buffers.columns:
        return []
    other = p.buffers[p.buffers.owner != "application"]
    if not len(other):
        return []
    parts = []
    for owner, g in other.groupby("owner", sort=False):
        named = ", ".join(f"`{n or b}`" for n, b in g.sort_values("transfers", ascending=False)[["name", "buffer"]]
                          .drop_duplicates("name").head(4).itertuples(index=False))
        parts.append(f"{int(g.transfers.sum())} copies of {len(g)} buffer(s) that are {OWNER_WORDS[owner]}: {named} "
                     f"({fmt_bytes(int(g.nbytes.max()))} at most)")
    return ["Not arrays to register: " + "; ".join(parts) + ". They are charged as the runtime moves them under "
            "every variant, and no advice above concerns them."]


def _caveats(p: Pattern, pred: Prediction) -> list[str]:
    soft, _ = memlock_limit_nbytes()
    limit = "unlimited" if soft < 0 else fmt_bytes(soft)
    locked = int(p.arrays[p.arrays.owner == "application"].nbytes.sum()) if len(p.arrays) else 0
    return [f"Caveat, locked memory is scarce: it cannot be paged out, and Linux caps what a user without "
            f"CAP_IPC_LOCK may lock with RLIMIT_MEMLOCK (`ulimit -l`; here {limit}); the trace's arrays "
            f"together are {fmt_bytes(locked)}. cudaHostRegister and hsa_amd_memory_lock are not bound by that "
            f"limit, but every pinned byte is memory the rest of the node loses.",
            "Caveat, locks are not counted (C11): a page-granular lock is undone by the first unlock of any "
            "range on that page, whoever made it. Two arrays sharing a page, one unregistered while the other "
            "is being copied, leave the copy relying on an unlocked page. Register whole, page-aligned arrays "
            "and unregister them only after the last copy."]
