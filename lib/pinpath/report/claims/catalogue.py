"""The 15 claims of the thread as data: who said what, the figure quoted, the tests that judge it
and its subject and analogues (the tests' measures are in ``measures``)."""

from __future__ import annotations

from .measures.concurrency import _c11, _c11_meant, _c12, _c13_growth, _c13_level, _c15, _c15_plugin
from .measures.locks import _c4_cost, _c4_saving, _c5, _c6, _c7, _c8, _c9_lock, _c9_unlock, _c10_lock, _c10_total
from .measures.staging import _c1_model, _c1_real, _c2_reuse, _c2_share, _c3, _c14_model, _c14_real
from .model import Claim, Test


def _c12_claim(wait: bool) -> Claim:
    """carlobertolli's claim in one reading of his braces: as written (lock + enqueue, C12a) or
    with the copy's wait inside them (C12b)."""
    words, plus = ("with the wait", " + wait") if wait else ("without the wait", "")
    return Claim(
        "C12b" if wait else "C12a", "carlobertolli", "10^8 doubles: (1) lock + copy is slowest by orders of magnitude; "
        "(2) and (3) are alike. " + ("Read with the copy's wait inside the braces." if wait
                                     else "Read as his braces are written: lock + enqueue, no wait."),
        "lock+copy far slower; re-lock+copy like copy" + (" (with the wait)" if wait else ""),
        "(1) 'slowest by several orders of magnitude'; (2) ~ (3)", (Test(f"case 1 / case 2, braces {words}", "x", ">=", 100, lambda d: _c12(d, "1", wait), so="case 1 takes {v} case 2"),
         Test(f"case 3 / case 2, braces {words}", "x", "within", 0.10, lambda d: _c12(d, "3", wait),
              so="case 3 takes {v} case 2")),
        subject="hsa", analogues={"cuda": f"cudaHostRegister + cudaMemcpyAsync{plus}; case 3's re-register is refused "
                                          f"(712), so case 3 is {_COUNTED}",
                                  "hip": f"hipHostRegister + hipMemcpyAsync{plus}"})


_REFUSAL = "a runtime that always tries to lock pays"
#: the analogue of ROCT's counted re-lock where the runtime refuses one: pinpath's own count
_COUNTED = ("the re-lock counted by pinpath (ROCT's count's analogue: a table of locked ranges under a mutex, no "
            "runtime call); the refusal itself is shown for information")

CLAIMS: dict[str, Claim] = {c.id: c for c in (
    Claim("C1", "ye-luo", "Arrays already mapped with target enter data still show memory_pool_allocate, "
          "agents_allow_access and memory_pool_free per transfer.", "allocation per transfer of mapped arrays",
          "allocate / allow_access / free once per transfer (one miniqmc region)", (Test("staging allocations per transfer under the 2020 plugin's model", "count", ">=", 1, _c1_model),),
          subject="amdgpu_plugin", real_vendor="amd", real_datasets=("real_calls", "real_copies"),
          real=(Test("allocations per transfer of arrays mapped once, the real runtime", "count", ">=", 1, _c1_real,
                     so="the real runtime allocates {v} times per transfer"),),
          elsewhere="the claim is about the AMDGPU plugin's calls, which only the real runtime on AMD shows"),
    Claim("C2", "JonChesterfield", "Data is staged to a fine-grain region allocated per memcpy; buffer reuse would "
          "be cheaper if allocation is expensive.", "per-copy staging buffer; reuse is cheaper",
          "'if memory_pool_allocate is expensive ... we should do some buffer reuse'", (Test("share of allocate + grant + free in a per-copy transfer (smallest size)", "fraction", ">=", 0.5, _c2_share,
                so="allocating and freeing the staging buffer is {v} of the transfer"),
           Test("per-copy / pooled time per transfer", "x", ">", 1, _c2_reuse,
                so="a buffer allocated per copy takes {v} the time of a reused one")),
          subject="hsa", analogues={"cuda": "a staging buffer from cudaMallocHost per copy against a reused one",
                                    "hip": "a staging buffer from hipHostMalloc per copy against a reused one"}),
    Claim("C3", "JonChesterfield", "Lock the user pointer and copy from it: faster on the happy path.",
          "lock-then-copy beats staging", "'things should now be faster on the happy path'", (Test("lock_always / stage_per_copy time per transfer", "x", "<", 1, _c3, over="majority",
                so="lock, copy and unlock take {v} the time of per-copy staging"),),
          subject="hsa", analogues={"cuda": "cudaHostRegister, copy, cudaHostUnregister against staging through "
                                            "cudaMallocHost per copy",
                                    "hip": "hipHostRegister, copy, hipHostUnregister against per-copy staging"}),
    Claim("C4", "ye-luo", "Query the pointer (hsa_amd_pointer_info) to see whether it is pinned and skip staging.",
          "query first, skip staging", "query instead of lock", (Test("query / lock of pageable memory", "x", "<", 1, _c4_cost, so="a query costs {v} a lock"),
           Test("query_then_lock / lock_always on memory the application pinned", "x", "<", 1, _c4_saving,
                so="checking first takes {v} the time of always trying to lock")),
          subject="hsa", analogues={"cuda": "cudaPointerGetAttributes against cudaHostRegister (whose answer on "
                                            "registered memory is a refusal, 712)",
                                    "hip": "hipPointerGetAttributes against hipHostRegister"}),
    Claim("C5", "JonChesterfield", "Unconditionally lock; if the lock fails, allocate + memcpy: needed for pointers "
          "into rodata and probably the host stack.", "read-only memory needs the staging fallback",
          "locks of rodata (and maybe the stack) fail", (Test("lock of rodata refused with the runtime's default flags (1 = refused)", "count", ">=", 1, _c5,
                so="the refusal count is {v}"),),
          subject="hsa", analogues={"cuda": "cudaHostRegister of rodata (LLVM's CUDA plugin never calls it)",
                                    "hip": "hipHostRegister of rodata"}),
    Claim("C6", "ye-luo", "On NVIDIA GPUs registering pinned memory is expensive while checking whether a pointer is "
          "pinned is cheap.", "register expensive, query cheap", "register expensive, query cheap", (Test("register / query of pageable memory", "x", ">=", 10, _c6, so="a register costs {v} a query"),),
          subject="cuda", elsewhere="the claim is about NVIDIA's runtime"),
    Claim("C7", "JonChesterfield", "Calling lock on already locked memory costs about the same check as a query.",
          "re-lock costs about a query", "'roct has to do ~ the same check'", (Test("re-lock path / query of locked memory", "x", "<=", 2, _c7, so="the re-lock path costs {v} a query"),),
          subject="hsa", analogues={"cuda": f"CUDA refuses the re-register (712): {_COUNTED}, against "
                                            "cudaPointerGetAttributes",
                                    "hip": "hipHostRegister of registered memory (refused) against a query"}),
    Claim("C8", "ye-luo / JonChesterfield", "HSA refcounts locks (ROCT registration_count).", "HSA counts locks",
          "fmm_register_memory / fmm_deregister_memory keep a registration count", (Test("memory still locked after lock, lock, unlock (1 = counted)", "count", ">=", 1, _c8,
                so="the count test gives {v}"),),
          subject="hsa", elsewhere="the claim is about HSA/ROCT's registration count; other runtimes have no count "
                                   "to compare (CUDA refuses a second register, mlock keeps no count)"),
    Claim("C9", "ye-luo", "Lock 35 us, unlock 7 us; with memory pinned by HIP beforehand lock 0.9 us, unlock 0.7 us.",
          "prior pinning makes lock and unlock cheap", "35 us -> 0.9 us (lock), 7 us -> 0.7 us (unlock)", (Test("lock of pageable / the runtime's lock path on memory the application locked", "x", ">=", 10, _c9_lock,
                so="a real lock costs {v} the lock path on memory the application locked"),
           Test("unlock / unlock of that second lock", "x", ">=", 5, _c9_unlock,
                so="an unlock costs {v} the unlock of the second lock")),
          subject="hsa", analogues={"cuda": f"a real cudaHostRegister and cudaHostUnregister against, on memory the "
                                            f"application registered (whose re-register CUDA refuses, 712), {_COUNTED}",
                                    "hip": "hipHostRegister on memory the application registered"}),
    Claim("C10", "ye-luo", "rocprof: hsa_amd_memory_lock avg 84873 ns without user pinning, 51438 ns with.",
          "user pinning makes the runtime's locks cheaper", "lock 803 calls avg 84873 ns -> avg 51438 ns",
          (Test("the runtime's average lock call with / without the application pinning its arrays", "x", "<", 1,
                _c10_lock, so="the runtime's lock path with user pinning costs {v} a lock without"),
           Test("all native-call time with / without user pinning, the application's pinning included", "x", "<=", 1,
                _c10_total, so="user pinning makes the replica's native calls {v} as long")),
          subject="hsa", analogues={"cuda": "cudaHostRegister of memory the application registered is refused (712): "
                                            f"the replica's runtime lock of it is {_COUNTED} (what {_REFUSAL}), "
                                            "against cudaHostRegister without user pinning; the whole replica's time, "
                                            "the counted arm's",
                                    "hip": "hipHostRegister with and without the application's registration"}),
    Claim("C11", "JonChesterfield", "The lock must be held for the call: another thread might unlock the same page "
          "meanwhile; locked memory is scarce.", "another thread's unlock can unpin our page",
          "another thread's unlock of the same page",
          (Test("races in which another thread's unlock of the range our copies relied on took effect under them "
                "(returned mid-copy, failed or corrupted)", "count", ">", 0, _c11_meant,
                so="the unlock took effect under the copies in {v} races"),
           Test("share of copies relying on another's lock that saw the shared page unlocked mid-copy", "fraction", ">", 0,
                _c11, so="the page-sharing hazard rate is {v}")),
          subject="any"),
    _c12_claim(False),
    _c12_claim(True),
    Claim("C13", "ye-luo", "With concurrent offload (QMCPACK) runtime costs go beyond the 1.6 us of re-lock + unlock.",
          "concurrency pushes the re-lock path past 1.6 us", "0.9 us + 0.7 us = 1.6 us with one thread",
          (Test("re-lock path per transfer at the most threads", "ns", ">", 1600, _c13_level,
                so="the path costs {v} with the most threads"),
           Test("re-lock path per transfer, most threads / one thread", "x", ">", 1, _c13_growth,
                so="the path costs {v} its one-thread cost")),
          subject="hsa", analogues={"cuda": f"CUDA refuses the re-register (712): {_COUNTED}, under concurrency, "
                                            "against HSA's 1.6 us", "hip": "the hipHostRegister path under concurrency"}),
    Claim("C14", "ye-luo", "plugin-nextgen keeps track of locked memory (D142514); the HSA async copy remains very slow.",
          "tracked locked memory pays", "tracked locked memory; slow async copy", (Test("tracked / best other locking model, time per transfer with map-time locks", "x", "<", 1, _c14_model),),
          subject="amdgpu_plugin", real_vendor="amd", real_datasets=("real_invocations",),
          real=(Test("real runtime, locked and tracked mapped buffers / plain, time per invocation", "x", "<", 1,
                     _c14_real, so="tracking locked memory takes {v} the time per invocation"),),
          elsewhere="the claim is about the AMDGPU plugin's tracking and HSA's async copy"),
    Claim("C15", "JonChesterfield", "The CUDA plugin overlaps tasks that the AMD plugin runs sequentially.",
          "the CUDA plugin overlaps target tasks", "overlap across streams",
          (Test("wall time over the most queues / one queue (raw queues, not the plugin)", "x", "<=", 0.9, _c15,
                so="the chains take {v} the wall time of one queue"),),
          subject="plugins", real_vendor="nvidia amd", real_datasets=("overlap_real", "overlap_streams"),
          real=(Test("LLVM's CUDA plugin: target nowait regions with one wait / the same waited one by one", "x", "<=",
                     0.9, lambda d: _c15_plugin(d, "nvidia"), so="the nowait regions take {v} the waited ones"),
                Test("LLVM's AMDGPU plugin: target nowait regions with one wait / the same waited one by one", "x", ">",
                     0.9, lambda d: _c15_plugin(d, "amd"), so="the nowait regions take {v} the waited ones")),
          real_only="not applicable here: the claim is about LLVM's offload plugins, which did not run here",
          elsewhere="raw queues only show whether the hardware overlaps streams"),
)}


#: a claim of the thread judged in more than one reading: its id -> the rows' ids
READINGS = {"C12": ("C12a", "C12b")}
