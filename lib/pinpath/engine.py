"""The native transfer engine (``native/engine.c``): a plan of transfers in, rows out.

Python plans (which buffer, which op, which thread, in which order), owns every buffer and
checks the bytes outside the timed region; C executes the plan under one policy and times
every phase and every runtime call, so a per-transfer figure carries no interpreter time.

- ``Plan``: the buffer table and the ops, each op with the context its row will carry.
- ``load(platform, device) -> Engine``; ``Engine.run(policy, plan) -> Executed``;
  ``Executed.transfers()`` is a TRANSFERS frame (``engine`` = "native"), ``.calls()`` CALLS.
- ``why_not(platform)``: "" where the engine builds and loads, else one sentence.

The vocabulary (policies, phases, paths, call names) is read from the library itself
(``pe_name``), so the C and Python sides cannot drift apart; each policy's steps (``pe_policy``)
must equal its row of ``vocab.POLICY_STEPS``, the Python reference's table, or the engine does
not load.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from . import libc
from .errors import BadParameter, PinpathError
from .nativebuild import NativeLibrary, loader, reason_not
from .schema import CALLS, TRANSFERS, frame
from .toolchain import NativeUnavailable
from .vocab import POLICY_STEPS, Direction, Policy, PolicySteps, choose

__all__ = ["Plan", "Engine", "Executed", "EngineFailed", "load", "why_not", "OP_DTYPE", "DEFAULT_CALLS_PER_OP"]

ABI = 3   #: must equal PE_ABI in engine.c
OPS = {"map": 0, "transfer": 1, "sync": 2, "unmap": 3, "kernel": 4, "adopt": 5, "app_lock": 6, "app_unlock": 7}
_EVENT = {v: k for k, v in OPS.items()}
_WAIT, _COUNT = 1, 2   #: op flags: PE_WAIT, PE_COUNT in engine.c
#: the engine's own calls (past platform.h's table): a lock and its unlock counted by pinpath, no runtime call
COUNT_CALLS = {"pinpath_count_lock": "lock", "pinpath_count_unlock": "unlock"}
DEFAULT_CALLS_PER_OP = 24   #: room in the call log per op (a staged transfer makes about 6 calls)

OP_DTYPE = np.dtype([("op", "i4"), ("thread", "i4"), ("buf", "i4"), ("aux", "i4"), ("direction", "i4"),
                     ("flags", "i4"), ("offset", "i8"), ("nbytes", "i8")])
BUF_DTYPE = np.dtype([("host", "u8"), ("dev", "u8"), ("nbytes", "i8")])
OUT_DTYPE = np.dtype([("start_ns", "i8"), ("end_ns", "i8"), ("phase_ns", "i8", (10,)), ("path", "i4"),
                      ("error", "i4"), ("first_call", "i4"), ("n_calls", "i4")])
CALL_DTYPE = np.dtype([("t0", "i8"), ("t1", "i8"), ("op", "i4"), ("call", "i4"), ("rc", "i4"), ("thread", "i4")])


class EngineFailed(PinpathError):
    """The engine refused a plan or could not run it (one sentence)."""


@dataclass
class Plan:
    """Buffers (host pointer, device pointer, size, memory kind) and ops in execution order.
    Every op takes ``**ctx``: columns its row carries (repeat, step, warmup, ...).
    ``evict_nbytes``, the plan's cache state: 0, the buffers hot (every transfer right after the
    plan's previous op); N > 0, cold: the thread writes N bytes of other memory (the engine's
    scratch) right before each of its transfers, outside the transfer's timestamps."""
    buffers: list[tuple[int, int, int, str]] = field(default_factory=list)
    ops: list[tuple] = field(default_factory=list)
    ctx: list[dict] = field(default_factory=list)
    nthreads: int = 1
    evict_nbytes: int = 0

    def buffer(self, host_ptr: int, dev_ptr: int, nbytes: int, kind: str = "heap") -> int:
        """Enter a buffer (its host and device sides of ``nbytes``); returns its index."""
        if host_ptr == 0 or nbytes < 0:
            raise BadParameter(f"a plan buffer needs a host pointer and nbytes >= 0, not {host_ptr:#x} and {nbytes}")
        self.buffers.append((int(host_ptr), int(dev_ptr), int(nbytes), str(kind)))
        return len(self.buffers) - 1

    def _op(self, op: str, buf: int, *, thread: int = 0, aux: int = 0, direction: int = 0, flags: int = 0,
            offset: int = 0, nbytes: int = 0, **ctx) -> int:
        if not 0 <= buf < len(self.buffers):
            raise BadParameter(f"plan op {op} names buffer {buf}; the plan has {len(self.buffers)}")
        self.nthreads = max(self.nthreads, thread + 1)
        self.ops.append((OPS[op], thread, buf, aux, direction, flags, offset, nbytes))
        self.ctx.append(ctx)
        return len(self.ops) - 1

    def map(self, buf: int, **kw) -> int:
        return self._op("map", buf, **kw)

    def unmap(self, buf: int, **kw) -> int:
        return self._op("unmap", buf, **kw)

    def app_lock(self, buf: int, *, pinpath_count: bool = False, **kw) -> int:
        """The application registers its own array (as QMCPACK does with hipHostRegister); with
        ``pinpath_count`` its registration is also entered in pinpath's count (ROCT's count's analogue),
        so that a ``pinpath_count`` transfer's lock of it is counted there."""
        return self._op("app_lock", buf, flags=_COUNT if pinpath_count else 0, **kw)

    def app_unlock(self, buf: int, *, pinpath_count: bool = False, **kw) -> int:
        """The application's unregister; ``pinpath_count``: its entry in pinpath's count goes too."""
        return self._op("app_unlock", buf, flags=_COUNT if pinpath_count else 0, **kw)

    def adopt(self, buf: int, **kw) -> int:
        """Memory a pinned allocator handed out: entered in the policy's map, never unlocked."""
        return self._op("adopt", buf, **kw)

    def transfer(self, buf: int, direction, *, nbytes: int | None = None, offset: int = 0, wait: bool = True,
                 pinpath_count: bool = False, **kw) -> int:
        """A transfer of ``nbytes`` (default: the rest of the buffer) at ``offset``; with ``wait`` the
        policy's end-of-region wait follows inside the op, so the row covers the whole copy.
        ``pinpath_count``: the lock of a step that locks every transfer (lock_copy_unlock) and its unlock
        are counted by pinpath (calls ``COUNT_CALLS``, no runtime call), as a counting runtime
        takes them; the buffer must be registered by a ``pinpath_count`` app_lock (else lock_failed_error)."""
        direction = Direction(direction)
        n = self.buffers[buf][2] - offset if nbytes is None else nbytes
        return self._op("transfer", buf, direction=0 if direction == Direction.H2D else 1,
                        flags=(_WAIT if wait else 0) | (_COUNT if pinpath_count else 0), offset=offset, nbytes=n, **kw)

    def sync(self, buf: int = 0, **kw) -> int:
        """The end of a target region on the op's thread: wait for its queue."""
        return self._op("sync", buf, **kw)

    def kernel(self, pos: int, out: int, walkers: int, splines: int, **kw) -> int:
        """The replica's kernel on the device sides of ``pos`` and ``out``."""
        return self._op("kernel", pos, aux=out, offset=splines, nbytes=walkers, **kw)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        ops = np.array(self.ops, dtype=OP_DTYPE) if self.ops else np.zeros(0, OP_DTYPE)
        bufs = np.array([b[:3] for b in self.buffers], dtype=BUF_DTYPE) if self.buffers else np.zeros(0, BUF_DTYPE)
        return ops, bufs


_p = ctypes.c_void_p
_SIGNATURES = {"pe_sizes": (ctypes.c_int, (ctypes.c_int,)), "pe_locks_counted": (ctypes.c_int, ()), "pe_name": (ctypes.c_char_p, (ctypes.c_int, ctypes.c_int)),
               "pe_queues_made": (ctypes.c_int, ()),
               "pe_policy": (ctypes.c_char_p, (ctypes.c_int, *(ctypes.POINTER(t) for t in (
                   ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int)))),
               "pe_run": (ctypes.c_int, (ctypes.c_int, ctypes.c_int, ctypes.c_int64, _p, ctypes.c_int64, _p, ctypes.c_int,
                                         ctypes.c_int, ctypes.c_uint64, _p, _p, ctypes.c_int64, _p, _p, ctypes.c_int64))}


class Engine(NativeLibrary):
    """engine.c loaded for one platform; ``run`` executes a plan (ctypes drops the GIL)."""
    PREFIX, SOURCE, ABI, SIGNATURES = "pe_", "engine.c", ABI, _SIGNATURES

    def __init__(self, platform: str, device: int = 0) -> None:
        libc.fix_mmap_threshold()   # as open_runtime: the plan's buffers in one allocator state
        super().__init__(platform, device)
        sizes = tuple(self._lib.pe_sizes(i) for i in range(4))
        want = (OP_DTYPE.itemsize, BUF_DTYPE.itemsize, OUT_DTYPE.itemsize, CALL_DTYPE.itemsize)
        if sizes != want:
            raise NativeUnavailable(f"{platform}: engine structs are {sizes} bytes, engine.py expects {want}")
        self.policies = self._names(0)
        self.phases = self._names(1)
        self.paths = self._names(2)
        self.calls = self._names(3)
        self.locks_counted = bool(self._lib.pe_locks_counted())   #: the runtime counts a re-lock itself (HSA)
        if why := _steps_differ(self.policy_steps()):
            raise NativeUnavailable(f"{platform}: engine.c's policy table differs from vocab.POLICY_STEPS: {why}")
        self._scratch = np.zeros(0, np.uint8)   # the memory written to make a plan's buffers cold, kept

    def scratch(self, nbytes: int) -> np.ndarray:
        """At least ``nbytes`` of memory for cold plans, every page written once (untimed), kept
        between runs so that only the first cold plan pays its page faults."""
        if len(self._scratch) < nbytes:
            self._scratch = np.ones(nbytes, np.uint8)
        return self._scratch

    def drop_scratch(self) -> None:
        """Give the cold plans' memory back (the next cold plan makes it anew)."""
        self._scratch = np.zeros(0, np.uint8)

    def _names(self, kind: int) -> list[str]:
        out, i = [], 0
        while (name := self._lib.pe_name(kind, i)) is not None:
            out.append(name.decode())
            i += 1
        return out

    def policy_steps(self) -> dict[str, PolicySteps]:
        """Each policy's row of engine.c's table ``POLICIES``, in ``vocab.PolicySteps``'s words."""
        qf, tr, mp, pool, asy, lm = (ctypes.c_int(), ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_char_p(),
                                     ctypes.c_int(), ctypes.c_int())
        out = {}
        for i, name in enumerate(self.policies):
            self._lib.pe_policy(i, *(ctypes.byref(v) for v in (qf, tr, mp, pool, asy, lm)))
            out[name] = PolicySteps(tr.value.decode(), mp.value.decode(), bool(qf.value), pool.value.decode(),
                                    bool(asy.value), bool(lm.value))
        return out

    def queues_made(self) -> int:
        """Copy queues (CUDA streams, HSA signals, host workers) the engine has made in this
        process: runs take kept ones, so this grows only with the threads a run needs at once."""
        return self._lib.pe_queues_made()

    def run(self, policy, plan: Plan, *, threshold_nbytes: int = 1 << 20, kernel_fn: int = 0,
            calls_per_op: int = DEFAULT_CALLS_PER_OP) -> "Executed":
        """Execute ``plan`` under ``policy`` (a fresh policy state: empty map, empty pool)."""
        name = str(choose(Policy, policy, "policy"))
        if name not in self.policies:
            raise BadParameter(f"the engine has no policy {name!r}; it has {', '.join(self.policies)}")
        self._ensure()
        ops, bufs = plan.arrays()
        n = len(ops)
        out = np.zeros(n, OUT_DTYPE)
        cap = max(plan.nthreads, n * calls_per_op) // plan.nthreads * plan.nthreads
        calls = np.zeros(cap, CALL_DTYPE)
        ncalls = np.zeros(plan.nthreads, np.int64)
        if plan.evict_nbytes < 0:
            raise BadParameter(f"a plan's evict_nbytes is 0 (hot) or more (cold), not {plan.evict_nbytes}")
        evict = self.scratch(plan.nthreads * plan.evict_nbytes) if plan.evict_nbytes else None
        rc = self._lib.pe_run(self.policies.index(name), self.device, int(threshold_nbytes), ops.ctypes.data, n,
                              bufs.ctypes.data, len(bufs), plan.nthreads, int(kernel_fn), out.ctypes.data,
                              calls.ctypes.data, cap, ncalls.ctypes.data,
                              None if evict is None else evict.ctypes.data, int(plan.evict_nbytes))
        if rc == -1:
            raise EngineFailed(f"the engine refused the plan of {n} ops (a buffer index, thread, direction or "
                               "range out of bounds)")
        if rc not in (0, 1):
            raise EngineFailed(f"the engine could not run the plan: {self.rc_name(rc)} ({rc})")
        if rc == 1:
            raise EngineFailed(f"the engine's call log overflowed ({cap} entries for {n} ops); "
                               "raise calls_per_op")
        per = cap // plan.nthreads
        used = np.concatenate([calls[t * per: t * per + ncalls[t]] for t in range(plan.nthreads)])
        return Executed(self, name, plan, out, calls, used)


@dataclass
class Executed:
    """A plan's results: per op ``out`` (OUT_DTYPE) and the call log."""
    engine: Engine
    policy: str
    plan: Plan
    out: np.ndarray
    call_log: np.ndarray      #: the whole log (ops point into it)
    calls_used: np.ndarray    #: the logged entries only

    def path(self, i: int) -> str:
        return self.engine.paths[int(self.out[i]["path"])]

    def transfers(self, keep=None) -> pd.DataFrame:
        """A TRANSFERS frame, one row per op (``keep(i, ctx)`` filters), with the op's context
        columns and ``engine`` = "native"."""
        e, rows = self.engine, []
        for i, (op, ctx) in enumerate(zip(self.plan.ops, self.plan.ctx)):
            if keep is not None and not keep(i, ctx):
                continue
            o = self.out[i]
            host, _, _, kind = self.plan.buffers[op[2]]
            lo, k = int(o["first_call"]), int(o["n_calls"])
            log = self.call_log[lo:lo + k]
            event = _EVENT[op[0]]
            err = int(o["error"])
            rows.append({
                "event": event, "policy": self.policy, "path": e.paths[int(o["path"])],
                "kind": kind if event != "sync" else "", "nbytes": int(op[7]) if event == "transfer" else
                self.plan.buffers[op[2]][2] if event in ("map", "unmap", "adopt", "app_lock", "app_unlock") else 0,
                "direction": ("h2d", "d2h")[op[4]] if event == "transfer" else "",
                "thread_id": int(op[1]), "start_ns": int(o["start_ns"]), "end_ns": int(o["end_ns"]),
                "total_ns": int(o["end_ns"] - o["start_ns"]),
                **{f"{ph}_ns": int(v) for ph, v in zip(e.phases, o["phase_ns"])},
                "dma_event_ns": None, "error": f"{e.rc_name(err)} ({err})" if err else "", "hazard": "",
                "verified": None, "calls": " ".join(f"{e.calls[c['call']]}={c['rc']}" for c in log),
                "n_calls": k, "platform": e.platform, "engine": "native", "op_index": i, **ctx})
        return frame(rows, TRANSFERS)

    def calls(self, categories: dict[str, str] | None = None) -> pd.DataFrame:
        """A CALLS frame of every logged call; ``transfer_id`` is the op's index in the plan; the
        engine's own calls (``COUNT_CALLS``) are categorised as lock and unlock."""
        cat, names, c = {**COUNT_CALLS, **(categories or {})}, self.engine.calls, self.calls_used
        rows = [{"transfer_id": int(r["op"]), "call": names[r["call"]], "category": cat.get(names[r["call"]], "other"),
                 "start_ns": int(r["t0"]), "end_ns": int(r["t1"]), "duration_ns": int(r["t1"] - r["t0"]),
                 "rc": int(r["rc"]), "thread_id": int(r["thread"])} for r in c]
        return frame(rows, CALLS)


def _steps_differ(native: dict[str, PolicySteps]) -> str:
    """"" if engine.c's rows equal vocab.POLICY_STEPS (``allocates`` is Python's alone), else what differs."""
    python = {str(p): replace(s, allocates=False) for p, s in POLICY_STEPS.items()}
    diff = [f"{name}: C {native.get(name)} against Python {python.get(name)}"
            for name in sorted(set(native) | set(python)) if native.get(name) != python.get(name)]
    return "; ".join(diff)


load = loader(Engine)


def why_not(platform: str) -> str:
    """"" if the engine builds and loads for ``platform`` here, else one sentence saying why not."""
    return reason_not(load, platform)
