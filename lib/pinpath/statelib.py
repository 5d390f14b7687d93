"""``native/state.c`` loaded with ctypes (built and loaded like ptime.c: ``nativebuild``): the C
timings of notebook 14, "what changes a transfer's cost". Methods return numpy arrays; a state
whose untimed setup the runtime refused raises SetupRefused with its return code.

- ``load(platform, device=0) -> StateLib``; ``why_not(platform) -> str`` ("" if it loads).
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np

from .errors import BadParameter
from .nativebuild import NativeLibrary, loader, reason_not
from .toolchain import NativeUnavailable

__all__ = ["ABI", "StateLib", "SetupRefused", "RegAge", "LockCopy", "Alloc", "Cache", "CACHE_POLICIES", "load",
           "why_not"]

ABI = 2                       #: must equal PS_ABI in state.c
EARG, ENOTSUP, ESETUP = -1, -2, -4
_I64 = np.ctypeslib.ndpointer(np.int64, flags="C_CONTIGUOUS,WRITEABLE")
_I32 = np.ctypeslib.ndpointer(np.int32, flags="C_CONTIGUOUS,WRITEABLE")
_vp, _sz, _int = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
_SIGNATURES = {
    "ps_has_query": (_int, ()), "ps_has_pinned": (_int, ()), "ps_has_copy": (_int, ()),
    "ps_buffer": (_vp, (_sz, _int)), "ps_buffer_free": (_int, (_vp, _sz)),
    "ps_dev_alloc": (_vp, (_sz,)), "ps_dev_free": (_int, (_vp, _sz)),
    "ps_null": (_int, (_int, _I64, _I32)),
    "ps_reg_age": (_int, (_vp, _sz, _int, _int, _I64, _I32, _I64, _I32, _I64, _I32, _I64, _I32)),
    "ps_alloc_state": (_int, (_sz, _int, _int, _sz, _int, _int, _I64, _I64, _I32)),
    "ps_lock_copy": (_int, (_vp, _sz, _vp, _int, _I64, _I64, _I64, _I64, _I32)),
    "ps_cache": (_int, (_int, _vp, _sz, _vp, _vp, _sz, _int, _I64, _I64, _I32)),
}
OPS = {"query": 0, "reregister": 1}
#: the copies timed hot and cold (ps_cache's policy numbers): the runtime's pinned allocation,
#: pageable memory, register + copy + unregister, memcpy into a pinned staging buffer + its copy
CACHE_POLICIES = {"pinned": 0, "pageable": 1, "lock": 2, "staged": 3}


class SetupRefused(NativeUnavailable):
    """An untimed call that sets a state up was refused (``rc``: the runtime's code)."""

    def __init__(self, message: str, rc: int) -> None:
        super().__init__(message)
        self.rc = rc


class RegAge(NamedTuple):
    register_ns: int
    first_ns: int
    first_rc: int
    held_ns: np.ndarray      #: the calls after the first, registration kept
    held_rc: np.ndarray
    fresh_ns: np.ndarray     #: one call right after each fresh register (0 where that register failed)
    fresh_rc: np.ndarray


class LockCopy(NamedTuple):
    copy_pageable_ns: np.ndarray
    lock_ns: np.ndarray
    copy_locked_ns: np.ndarray
    unlock_ns: np.ndarray
    rc: np.ndarray           #: (reps, 4): copy_pageable, lock, copy_locked, unlock; -1 = not run


class Cache(NamedTuple):
    hot_ns: np.ndarray       #: right after an untimed transfer of the same buffer
    cold_ns: np.ndarray      #: right after ``evict_nbytes`` of other memory were written
    rc: np.ndarray           #: (reps, 2): hot, cold


class Alloc(NamedTuple):
    alloc_ns: np.ndarray
    free_ns: np.ndarray
    rc: np.ndarray


class StateLib(NativeLibrary):
    """state.c for one platform; the runtime is started on first use (rt_start: CUDA on this thread)."""
    PREFIX, SOURCE, ABI, SIGNATURES = "ps_", "state.c", ABI, _SIGNATURES

    def __init__(self, platform: str, device: int = 0) -> None:
        super().__init__(platform, device)
        self.has_query = bool(self._lib.ps_has_query())
        self.has_pinned = bool(self._lib.ps_has_pinned())
        self.has_copy = bool(self._lib.ps_has_copy())

    def _check(self, ret: int, what: str, rc: int = 0) -> None:
        if ret == 0:
            return
        if ret == ENOTSUP:
            raise NativeUnavailable(f"{self.platform}: {what} is not timed by state.c on this platform")
        if ret == ESETUP:
            raise SetupRefused(f"{self.platform}: setting up {what} was refused ({self.rc_name(rc)})", int(rc))
        raise BadParameter(f"{self.platform}: {what} refused its arguments")

    # -- buffers (untimed) -----------------------------------------------------------------
    @contextmanager
    def buffer(self, nbytes: int, *, thp: bool):
        """A fresh mapping of ``nbytes``, every page written, asking for THP or 4 KiB pages; its address."""
        p = self._lib.ps_buffer(nbytes, int(thp))
        if not p:
            raise NativeUnavailable(f"{self.platform}: a {nbytes}-byte mapping could not be made")
        try:
            yield p
        finally:
            self._lib.ps_buffer_free(p, nbytes)

    @contextmanager
    def destination(self, nbytes: int):
        """Where copies go (device memory; a host mapping on the host); None where there are no copies."""
        self._ensure()
        p = self._lib.ps_dev_alloc(nbytes) if self.has_copy else None
        if self.has_copy and not p:
            raise NativeUnavailable(f"{self.platform}: no {nbytes}-byte copy destination could be allocated")
        try:
            yield p
        finally:
            if p:
                self._lib.ps_dev_free(p, nbytes)

    # -- timed -----------------------------------------------------------------------------
    def null(self, reps: int) -> tuple[np.ndarray, np.ndarray]:
        self._ensure()
        ns, rc = np.zeros(reps, np.int64), np.zeros(reps, np.int32)
        self._check(self._lib.ps_null(reps, ns, rc), "the null call")
        return ns, rc

    def reg_age(self, ptr: int, nbytes: int, op: str, calls: int) -> RegAge:
        """``op`` ("query" or "reregister") first after a register, held, and fresh (state.c's ps_reg_age)."""
        if op not in OPS:
            raise BadParameter(f"registration age is timed for {', '.join(OPS)}, not {op!r}")
        if op == "query" and not self.has_query:
            raise NativeUnavailable(f"{self.platform}: there is no pointer query to time (Linux has no cheap lock query)")
        self._ensure()
        one = [np.zeros(1, t) for t in (np.int64, np.int32, np.int64, np.int32)]
        many = [np.zeros(max(calls, 1), t) for t in (np.int64, np.int32, np.int64, np.int32)]
        ret = self._lib.ps_reg_age(ptr, nbytes, OPS[op], calls, *one, *many)
        self._check(ret, f"the registration of {nbytes} bytes", one[1][0])
        return RegAge(int(one[0][0]), int(one[2][0]), int(one[3][0]), many[0][:calls], many[1][:calls],
                      many[2][:calls], many[3][:calls])

    def alloc_state(self, nbytes: int, reps: int, *, live_pinned: int = 0, live_registered: int = 0,
                    registered_nbytes: int = 64 << 10, prior_frees: int = 0) -> Alloc:
        """Pinned allocate + free of ``nbytes``, ``reps`` times, in a state set up untimed (ps_alloc_state)."""
        self._ensure()
        a, f, rc = np.zeros(reps, np.int64), np.zeros(reps, np.int64), np.zeros(reps, np.int32)
        ret = self._lib.ps_alloc_state(nbytes, live_pinned, live_registered, registered_nbytes, prior_frees,
                                       reps, a, f, rc)
        self._check(ret, "the pinned allocator's state", rc[0])
        return Alloc(a, f, rc)

    def lock_copy(self, ptr: int, nbytes: int, dst, reps: int) -> LockCopy:
        """Pageable copy, lock, locked copy, unlock of one buffer, each timed (ps_lock_copy)."""
        self._ensure()
        arrs = [np.zeros(reps, np.int64) for _ in range(4)]
        rc = np.zeros(4 * reps, np.int32)
        self._check(self._lib.ps_lock_copy(ptr, nbytes, dst or None, reps, *arrs, rc), "lock and copy")
        return LockCopy(*arrs, rc.reshape(reps, 4))


    def cache(self, policy: str, ptr: int, nbytes: int, dst, evict, evict_nbytes: int, reps: int) -> Cache:
        """One H2D of ``nbytes`` under ``policy`` (CACHE_POLICIES) hot and cold, ``reps`` times
        interleaved; cold after writing ``evict_nbytes`` of the buffer ``evict`` (ps_cache)."""
        if policy not in CACHE_POLICIES:
            raise BadParameter(f"the cache section times {', '.join(CACHE_POLICIES)}, not {policy!r}")
        if not self.has_copy or not dst:
            raise NativeUnavailable(f"{self.platform}: state.c makes no copies here, so there is no cache state to time")
        self._ensure()
        hot, cold, rc = np.zeros(reps, np.int64), np.zeros(reps, np.int64), np.zeros(2 * reps, np.int32)
        ret = self._lib.ps_cache(CACHE_POLICIES[policy], ptr, nbytes, dst, evict or None, evict_nbytes, reps,
                                 hot, cold, rc)
        self._check(ret, f"the {policy} copy of {nbytes} bytes", rc[0])
        return Cache(hot, cold, rc.reshape(reps, 2))


load = loader(StateLib)


def why_not(platform: str) -> str:
    """"" if state.c builds and loads for ``platform``, else one sentence saying why not."""
    return reason_not(load, platform)
