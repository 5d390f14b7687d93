"""pinpath's C timing library (``native/ptime.c``), built per runtime and loaded with ctypes.

Python passes its own buffers; C reads CLOCK_MONOTONIC right around each runtime call,
so a figure carries no interpreter time and is taken on the same memory the Python side
locks and copies.

- ``build(platform) -> Path``: compile with the system C compiler, or take the cached object.
- ``load(platform, device=0) -> NativeLib``: the loaded library; methods return numpy arrays.
- ``why_not(platform) -> str``: "" if it builds and loads, else one sentence saying why not.

Finding the compiler, headers and libraries is ``toolchain``'s job (its docstring says where the
CUDA and HSA headers come from); compiling, caching, loading and starting the runtime are
``nativebuild``'s, shared with the engine (``engine.c``) and ``state.c``. Nothing here imports
cuda.bindings, and nothing starts a runtime at import time.
"""

from __future__ import annotations

import ctypes
from typing import NamedTuple

import numpy as np

from .errors import BadParameter, RuntimeCallFailed
from .nativebuild import NativeLibrary, build, build_program, cache_dir, loader, reason_not
from .toolchain import PLATFORMS, NativeUnavailable, Toolchain, compiler, toolchain

__all__ = ["compiler", "NativeUnavailable", "NativeLib", "Toolchain", "Timed", "RelockUnlock", "Staged", "C12Timed",
           "C11Raced", "PLATFORMS", "toolchain", "build", "build_program", "load", "why_not", "reason_not", "cache_dir"]

ABI = 2                      #: must equal PP_ABI in ptime.c
EARG, ENOTSUP, ERESTORE = -1, -2, -3


class Timed(NamedTuple):
    ns: np.ndarray           #: int64, one duration per rep
    rc: np.ndarray           #: int32, the timed call's return code per rep


class RelockUnlock(NamedTuple):
    lock_ns: np.ndarray
    unlock_ns: np.ndarray    #: 0 where the re-lock was refused
    lock_rc: np.ndarray
    unlock_rc: np.ndarray    #: -1 where the re-lock was refused (no unlock made)


class Staged(NamedTuple):
    alloc_ns: np.ndarray
    free_ns: np.ndarray      #: 0 where the allocation failed
    rc: np.ndarray           #: the first failure of the rep, 0 if none


class C12Timed(NamedTuple):
    lock_ns: np.ndarray
    enqueue_ns: np.ndarray
    wait_ns: np.ndarray
    unlock_ns: np.ndarray
    rc: np.ndarray           #: int32 (reps, 4): lock, enqueue, wait, unlock; -1 = phase not run


class C11Raced(NamedTuple):
    """pp_c11, one row per rep: thread B's lock of A's range, A's copies relying on it, B's
    unlock while they run (CLOCK_MONOTONIC ns; 0 where the step did not run)."""
    b_lock_start_ns: np.ndarray
    b_lock_end_ns: np.ndarray
    a_enqueue_start_ns: np.ndarray   #: A's first enqueue
    a_enqueue_end_ns: np.ndarray     #: A's last enqueue returned; B unlocks from here on
    b_unlock_start_ns: np.ndarray
    b_unlock_end_ns: np.ndarray
    copy_done_ns: np.ndarray         #: the first poll of A's queue that saw the copies done
    a_wait_end_ns: np.ndarray
    idle_unlock_ns: np.ndarray       #: the same unlock with nothing in flight, just before
    rc: np.ndarray                   #: int32 (reps, 6): B lock, A query (1 locked), A enqueue, B unlock, A wait, idle


_I64 = np.ctypeslib.ndpointer(np.int64, flags="C_CONTIGUOUS,WRITEABLE")
_I32 = np.ctypeslib.ndpointer(np.int32, flags="C_CONTIGUOUS,WRITEABLE")
_vp, _sz, _int = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
_SIGNATURES = {
    "pp_locks_counted": (_int, ()), "pp_has_query": (_int, ()), "pp_has_copy": (_int, ()),
    "pp_stage_needs_pool": (_int, ()),
    "pp_lock_once": (_int, (_vp, _sz)), "pp_unlock_once": (_int, (_vp, _sz)), "pp_locked": (_int, (_vp,)),
    "pp_null": (_int, (_int, _I64, _I32)),
    "pp_lock": (_int, (_vp, _sz, _int, _I64, _I32)),
    "pp_unlock": (_int, (_vp, _sz, _int, _I64, _I32)),
    "pp_relock": (_int, (_vp, _sz, _int, _I64, _I32)),
    "pp_relock_unlock": (_int, (_vp, _sz, _int, _I64, _I64, _I32, _I32)),
    "pp_query": (_int, (_vp, _int, _I64, _I32)),
    "pp_stage": (_int, (ctypes.c_uint64, _sz, _int, _I64, _I64, _I32)),
    "pp_c12": (_int, (_int, _vp, _vp, _sz, _vp, _int, _I64, _I64, _I64, _I64, _I32)),
    "pp_counted_relock_unlock": (_int, (_vp, _sz, _int, _I64, _I64, _I32, _I32)),
    "pp_c11": (_int, (_vp, _sz, _sz, _vp, _int, _int, _int, _I64, _I32)),
}


def _address(buf) -> int:
    """A pointer from an int or a C-contiguous numpy array."""
    if isinstance(buf, np.ndarray):
        if not buf.flags.c_contiguous:
            raise BadParameter("a numpy buffer to time must be C-contiguous")
        return buf.ctypes.data
    if isinstance(buf, (int, np.integer)):
        return int(buf)
    raise BadParameter(f"a buffer must be an address (int) or a numpy array, not {type(buf).__name__}")


def _handle(obj) -> int:
    """A runtime handle (stream, pool) as an integer: ints, or cuda.bindings objects via int()."""
    try:
        return 0 if obj is None else int(obj)
    except TypeError:
        raise BadParameter(f"cannot take a handle from {type(obj).__name__}") from None


class NativeLib(NativeLibrary):
    """ptime.c loaded for one platform. Every timing method runs ``warmup`` untimed reps,
    then ``reps`` timed ones, all in one C call (no Python between reps), and returns the
    timed ones as numpy arrays. Refusals are return codes in ``rc``, never exceptions;
    bad arguments raise BadParameter, a call the platform lacks NativeUnavailable."""
    PREFIX, SOURCE, ABI, SIGNATURES = "pp_", "ptime.c", ABI, _SIGNATURES

    def __init__(self, platform: str, device: int = 0, tc: Toolchain | None = None) -> None:
        super().__init__(platform, device, tc)
        self.locks_counted = bool(self._lib.pp_locks_counted())   #: a re-lock needs its own unlock
        self.has_query = bool(self._lib.pp_has_query())
        self.has_copy = bool(self._lib.pp_has_copy())               #: pp_c12 is there
        self.stage_needs_pool = bool(self._lib.pp_stage_needs_pool())  #: HSA: stage takes a pool handle

    def describe(self) -> dict:
        tc = self.toolchain
        return {"platform": self.platform, "path": str(self.path), "locks_counted": self.locks_counted,
                "has_query": self.has_query, "has_copy": self.has_copy,
                "compiler": tc and f"{tc.cc} ({tc.cc_version})", "include_dirs": tc and list(tc.include_dirs),
                "library": tc and tc.library, "headers_from": tc and tc.origin}

    # -- helpers ---------------------------------------------------------------------------
    def _check(self, ret: int, what: str) -> None:
        if ret == 0:
            return
        if ret == ENOTSUP:
            reason = {"pp_query": "Linux has no cheap lock query (only /proc/self/smaps VmFlags)",
                      "pp_c12": "async copies need agents and signals; pp_c12 is CUDA and host only"}.get(what, "")
            raise NativeUnavailable(f"{self.platform}: {what} is not supported" + (f": {reason}" if reason else ""))
        if ret == ERESTORE:
            raise RuntimeCallFailed(self.platform, f"{what} (re-locking the caller's memory)", ret, "lock not restored")
        raise BadParameter(f"{self.platform}: {what} refused its arguments (a NULL pointer or array, reps < 0, "
                           "or a case outside 1-4)")

    @staticmethod
    def _counts(reps: int, warmup: int) -> int:
        if int(reps) < 0 or int(warmup) < 0:
            raise BadParameter(f"reps and warmup must be >= 0, not {reps} and {warmup}")
        return int(reps) + int(warmup)

    @staticmethod
    def _arrays(n: int, *dtypes) -> list[np.ndarray]:
        return [np.zeros(n, dtype=d) for d in dtypes]

    def _ptr(self, buf) -> int:
        p = _address(buf)
        if p == 0:
            raise BadParameter(f"{self.platform}: a NULL buffer cannot be timed")
        return p

    def _simple(self, fname: str, head: tuple, reps: int, warmup: int) -> Timed:
        self._ensure()
        n = self._counts(reps, warmup)
        ns, rc = self._arrays(n, np.int64, np.int32)
        self._check(getattr(self._lib, fname)(*head, n, ns, rc), fname)
        return Timed(ns[warmup:], rc[warmup:])

    # -- timed calls -----------------------------------------------------------------------
    def null(self, reps: int, *, warmup: int = 0) -> Timed:
        """The runtime's cheapest call: cudaGetDevice (after the runtime is initialised),
        hsa_system_get_info(TIMESTAMP), getppid."""
        return self._simple("pp_null", (), reps, warmup)

    def lock(self, buf, nbytes: int, reps: int, *, warmup: int = 0) -> Timed:
        """Lock of unlocked memory: cudaHostRegister, hsa_amd_memory_lock, mlock; each
        granted lock is undone untimed."""
        return self._simple("pp_lock", (self._ptr(buf), nbytes), reps, warmup)

    def unlock(self, buf, nbytes: int, reps: int, *, warmup: int = 0) -> Timed:
        """Unlock of locked memory, after an untimed lock (a refused lock: ns 0, its rc)."""
        return self._simple("pp_unlock", (self._ptr(buf), nbytes), reps, warmup)

    def relock(self, buf, nbytes: int, reps: int, *, warmup: int = 0) -> Timed:
        """Re-lock of memory the caller has locked (CUDA: 712 cudaErrorHostMemoryAlreadyRegistered);
        a granted inner lock is undone untimed where locks are counted (HSA)."""
        return self._simple("pp_relock", (self._ptr(buf), nbytes), reps, warmup)

    def relock_unlock(self, buf, nbytes: int, reps: int, *, warmup: int = 0) -> RelockUnlock:
        """C13's path on memory the caller has locked: re-lock, then the unlock of that
        re-lock when it was granted, each timed. Host: that munlock unlocks the caller's
        memory too (mlock does not stack), so it is re-locked untimed after each rep."""
        self._ensure()
        n = self._counts(reps, warmup)
        lns, uns, lrc, urc = self._arrays(n, np.int64, np.int64, np.int32, np.int32)
        self._check(self._lib.pp_relock_unlock(self._ptr(buf), nbytes, n, lns, uns, lrc, urc), "pp_relock_unlock")
        w = warmup
        return RelockUnlock(lns[w:], uns[w:], lrc[w:], urc[w:])

    def counted_relock_unlock(self, buf, nbytes: int, reps: int, *, warmup: int = 0) -> RelockUnlock:
        """The same path as a counting runtime takes it (the analogue of ROCT's registration count),
        on memory the caller has locked: the re-lock counted by pinpath's own table (no runtime
        call), then its unlock, which takes the count back down; each timed."""
        self._ensure()
        n = self._counts(reps, warmup)
        lns, uns, lrc, urc = self._arrays(n, np.int64, np.int64, np.int32, np.int32)
        self._check(self._lib.pp_counted_relock_unlock(self._ptr(buf), nbytes, n, lns, uns, lrc, urc),
                    "pp_counted_relock_unlock")
        w = warmup
        return RelockUnlock(lns[w:], uns[w:], lrc[w:], urc[w:])

    def query(self, buf, reps: int, *, warmup: int = 0) -> Timed:
        """Pointer query: cudaPointerGetAttributes, hsa_amd_pointer_info (info.size set);
        the host has none (NativeUnavailable)."""
        if not self.has_query:
            self._check(ENOTSUP, "pp_query")
        return self._simple("pp_query", (self._ptr(buf),), reps, warmup)

    def stage(self, nbytes: int, reps: int, *, warmup: int = 0, pool=0) -> Staged:
        """Pinned staging buffer, allocate and free each timed: cudaMallocHost/cudaFreeHost;
        hsa_amd_memory_pool_allocate/free on ``pool`` (HsaRuntime.pinned_pool.pool; no
        agents_allow_access); host mmap+mlock / munlock+munmap."""
        pool = _handle(pool)
        if self.stage_needs_pool and not pool:
            raise BadParameter(f"{self.platform}: stage needs a memory pool handle (the fine-grained CPU pool)")
        self._ensure()
        n = self._counts(reps, warmup)
        a, f, rc = self._arrays(n, np.int64, np.int64, np.int32)
        self._check(self._lib.pp_stage(pool, nbytes, n, a, f, rc), "pp_stage")
        return Staged(a[warmup:], f[warmup:], rc[warmup:])

    def c12(self, case: int, host_buf, dev_ptr, nbytes: int, reps: int, *, stream=0, warmup: int = 0) -> C12Timed:
        """carlobertolli's cases, H2D, every phase timed apart in C: 1 lock+copy+wait+unlock of
        unlocked memory; 2 copy+wait of memory the caller locked; 3 re-lock (CUDA: refused,
        712) + copy + wait + unlock of a granted re-lock; 4 case 3 with the re-lock and its unlock
        counted by pinpath (``counted_relock_unlock``). ``stream``: a CUDA stream made by
        the caller (cuda.bindings' cudaStream_t or CUstream, or its int; 0 = the legacy
        default stream); ignored on the host, where a worker thread copies."""
        if not self.has_copy:
            self._check(ENOTSUP, "pp_c12")
        if case not in (1, 2, 3, 4):
            raise BadParameter(f"C12 has cases 1, 2 and 3 (and 4, case 3 counted by pinpath), not {case!r}")
        self._ensure()
        n = self._counts(reps, warmup)
        lk, enq, wt, ul = self._arrays(n, np.int64, np.int64, np.int64, np.int64)
        rc = np.zeros(4 * n, dtype=np.int32)
        self._check(self._lib.pp_c12(case, self._ptr(host_buf), self._ptr(dev_ptr), nbytes, _handle(stream), n,
                                     lk, enq, wt, ul, rc), "pp_c12")
        w = warmup
        return C12Timed(lk[w:], enq[w:], wt[w:], ul[w:], rc.reshape(n, 4)[w:])

    def c11(self, host_buf, dev_ptr, nbytes: int, reps: int, *, b_nbytes: int | None = None,
            copies: int = 1) -> C11Raced:
        """C11 as meant, in C with two threads: B locks ``b_nbytes`` (default ``nbytes``: exactly
        A's range) from ``host_buf``; A, finding it locked, enqueues ``copies`` H2D copies of
        ``nbytes`` to ``dev_ptr`` on a fresh queue without a lock of its own; B unlocks as soon
        as they are enqueued; A polls its queue until they are done. The bytes are the caller's
        to verify. Every platform (host: mlock/munlock and a worker thread's memcpy)."""
        b_nbytes = nbytes if b_nbytes is None else b_nbytes
        if b_nbytes < nbytes or copies < 1:
            raise BadParameter(f"C11: B locks at least A's {nbytes} bytes ({b_nbytes}) and A copies at least once "
                               f"({copies})")
        self._ensure()
        n = self._counts(reps, 0)
        t, rc = np.zeros(9 * n, dtype=np.int64), np.zeros(6 * n, dtype=np.int32)
        self._check(self._lib.pp_c11(self._ptr(host_buf), nbytes, b_nbytes, self._ptr(dev_ptr), copies,
                                     self.device, n, t, rc), "pp_c11")
        return C11Raced(*t.reshape(n, 9).T.copy(), rc.reshape(n, 6))

    # -- untimed helpers -------------------------------------------------------------------
    def lock_once(self, buf, nbytes: int) -> int:
        """One untimed lock; its return code (the recorded CUDA error is cleared)."""
        self._ensure()
        return self._lib.pp_lock_once(self._ptr(buf), nbytes)

    def unlock_once(self, buf, nbytes: int) -> int:
        """One untimed unlock; its return code."""
        self._ensure()
        return self._lib.pp_unlock_once(self._ptr(buf), nbytes)

    def is_locked(self, buf) -> bool | None:
        """What this library's runtime instance says of ``buf``: True if locked/registered
        (or an HSA pool allocation), False if not, None on the host (no query)."""
        if not self.has_query:
            return None
        self._ensure()
        state = self._lib.pp_locked(self._ptr(buf))
        if state < 0:
            raise RuntimeCallFailed(self.platform, "pointer query", -1000 - state, self.rc_name(-1000 - state))
        return state > 0


load = loader(NativeLib)


def why_not(platform: str) -> str:
    """"" if the library for ``platform`` builds and loads here, else one sentence saying why not
    (a missing compiler, header or library). It does not start the runtime."""
    return reason_not(load, platform)
