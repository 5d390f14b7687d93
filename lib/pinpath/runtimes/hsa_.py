"""AMD GPUs through ctypes over the HSA runtime (``libhsa-runtime64.so.1``), the layer
LLVM's AMDGPU offload plugin calls directly.

Every native call goes through the recorder under its HSA symbol and every status is
checked: a refused lock raises LockFailed, anything else RuntimeCallFailed with the
status name. Names come from a table (``STATUS_NAMES``), because ``hsa_status_string``
itself needs an initialised runtime, which is exactly what is missing when naming
matters most. The C interface (constants, structs, prototypes, loading) is data in
``hsa_abi``, which tests compare with the real headers; its names are re-exported here.
"""

from __future__ import annotations

import ctypes
import time

import numpy as np

from ..errors import LockFailed, RuntimeCallFailed, RuntimeUnavailable
from ..records import PointerInfo
from ..trace import Recorder
from ..vocab import Capability, Direction, PageableCopy, Relock
from .base import CUPTI_CUDA_ONLY, RuntimeBase, need
from .hsa_abi import (  # noqa: F401  (re-exported: the names tests and nativelib import from here)
    CTYPES, HSA_CONSTANTS, LIBRARY, NAME_NBYTES, POINTER_TYPE_NAMES, PROTOTYPES, STATUS_NAMES, STRUCTS,
    U64_MAX, Agent, AgentCallback, AsyncCopyTime, MemoryPool, PointerInfoStruct, PoolCallback, Signal, bind,
    init_failure_sentence, load_failure_sentence, missing_symbol_sentence, soname_version, status_name,
    valid_pointer_fields,
)
from .hsa_abi import K as _K
from .hsa_pure import (  # noqa: F401  (re-exported: tests import them from here)
    CopyEvent, HsaLatch, PoolInfo, SignalQueue, event_ticks, pick_pool, pointer_answer, ticks_to_ns,
)
from .hsa_pure import rc_signal as _rc_signal, rc_status as _rc_status

__all__ = ["HsaRuntime", "HsaLatch", "HSA_CONSTANTS", "STATUS_NAMES", "STRUCTS", "PROTOTYPES", "CTYPES",
           "status_name", "LIBRARY"]


class HsaRuntime(RuntimeBase):
    """hsa_amd_memory_lock/unlock, hsa_amd_pointer_info, fine-grained CPU pool allocations
    granted to the GPU, coarse-grained GPU pool allocations and hsa_amd_memory_async_copy
    with completion signals, on GPU agent number ``device``."""

    name = "hsa"
    needs_grant = True     # pool memory is reachable only by agents given access
    pageable_copy = PageableCopy.UNSUPPORTED
    relock = Relock.COUNTED   # ROCT counts registrations (fmm_register_memory / fmm_deregister_memory)
    unavailable = {Capability.KERNELS: "launching needs a code object, which needs the ROCm compiler: "
                                       "the hsa backend runs transfers only",
                   Capability.SYNC_COPY: "the hsa backend binds no synchronous copy",
                   Capability.CUPTI: CUPTI_CUDA_ONLY}
    # latch: a signal the next copy depends on (see hold)
    call_categories = {"hsa_amd_memory_lock": "lock", "hsa_amd_memory_lock_to_pool": "lock",
                       "hsa_amd_memory_unlock": "unlock", "hsa_amd_pointer_info": "query",
                       "hsa_amd_memory_pool_allocate": "alloc", "hsa_amd_agents_allow_access": "grant",
                       "hsa_amd_memory_pool_free": "free", "hsa_amd_memory_async_copy": "copy",
                       "hsa_signal_wait_scacquire": "wait", "memcpy": "host_copy",
                       "hsa_signal_store_screlease": "latch"}

    def __init__(self, recorder: Recorder | None = None, device: int = 0,
                 library: str = LIBRARY) -> None:
        self.recorder = recorder or Recorder()
        self._initialised = False
        self._profiling = False
        try:
            lib = ctypes.CDLL(library)
        except OSError as e:
            raise RuntimeUnavailable(load_failure_sentence(library, str(e))) from None
        self._lib, self._library = lib, library
        self._f, self.library_path = bind(lib, library)
        self.library_version = soname_version(self.library_path)
        rc = self.recorder.call("hsa_init", self._f.hsa_init, rc_of=_rc_status)
        if rc != _K.HSA_STATUS_SUCCESS:
            raise RuntimeUnavailable(init_failure_sentence(rc))
        self._initialised = True
        try:
            self._discover(device)
        except BaseException:
            self.close()   # hsa_init is reference counted: give ours back before raising
            raise

    # -- helpers -----------------------------------------------------------------------
    def _do(self, call: str, *args, exc=RuntimeCallFailed, nbytes=None, ptr=None) -> None:
        """Record one status-returning call and raise on anything but success."""
        status = self.recorder.call(call, getattr(self._f, call), *args, rc_of=_rc_status)
        if status != _K.HSA_STATUS_SUCCESS:
            raise exc("hsa", call, status, status_name(status), nbytes, ptr)

    def _raw(self, call: str, *args, nbytes=None, ptr=None) -> None:
        """The same, unrecorded, for the untimed helpers."""
        status = getattr(self._f, call)(*args)
        if status != _K.HSA_STATUS_SUCCESS:
            raise RuntimeCallFailed("hsa", call, status, status_name(status), nbytes, ptr)

    def _need(self, sym: str):
        fn = getattr(self._f, sym)
        if fn is None:
            raise RuntimeUnavailable(missing_symbol_sentence(self._library, self.library_path, sym))
        return fn

    def _iterate(self, call: str, cb_type, *lead) -> list[int]:
        """Collect the handles an iterator walks over. The callback only appends (no native
        calls from inside the walk) and never lets a Python error unwind through C."""
        handles: list[int] = []
        trouble: list[BaseException] = []

        def visit(h, _data):
            try:
                handles.append(h.handle)
                return _K.HSA_STATUS_SUCCESS
            except BaseException as e:   # re-raised below, after C has returned
                trouble.append(e)
                return _K.HSA_STATUS_ERROR

        cb = cb_type(visit)   # kept alive by this frame for the whole call
        status = self.recorder.call(call, getattr(self._f, call), *lead, cb, None, rc_of=_rc_status)
        if trouble:
            raise trouble[0]
        if status not in (_K.HSA_STATUS_SUCCESS, _K.HSA_STATUS_INFO_BREAK):
            raise RuntimeCallFailed("hsa", call, status, status_name(status))
        return handles

    def _agent_info(self, agent: int, attribute: int, value) -> None:
        self._do("hsa_agent_get_info", Agent(agent), attribute, ctypes.byref(value))

    def _agent_name(self, agent: int, attribute: int) -> str:
        buf = ctypes.create_string_buffer(NAME_NBYTES)
        self._agent_info(agent, attribute, buf)
        return buf.value.decode(errors="replace")

    def _pool_info(self, pool: int) -> PoolInfo:
        def get(attribute, ctype):
            value = ctype()
            self._do("hsa_amd_memory_pool_get_info", MemoryPool(pool), attribute, ctypes.byref(value))
            return value.value
        segment = get(_K.HSA_AMD_MEMORY_POOL_INFO_SEGMENT, ctypes.c_int)
        if segment != _K.HSA_AMD_SEGMENT_GLOBAL:   # the other attributes are for GLOBAL pools
            return PoolInfo(pool, segment, 0, False, 0, 0, 0)
        return PoolInfo(
            pool, segment,
            get(_K.HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, ctypes.c_uint32),
            get(_K.HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, ctypes.c_bool),
            get(_K.HSA_AMD_MEMORY_POOL_INFO_SIZE, ctypes.c_size_t),
            get(_K.HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE, ctypes.c_size_t),
            get(_K.HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT, ctypes.c_size_t))

    def _pools(self, agent: int) -> list[PoolInfo]:
        handles = self._iterate("hsa_amd_agent_iterate_memory_pools", PoolCallback, Agent(agent))
        return [self._pool_info(h) for h in handles]

    def _discover(self, device: int) -> None:
        cpus, gpus = [], []
        for h in self._iterate("hsa_iterate_agents", AgentCallback):
            kind = ctypes.c_int()
            self._agent_info(h, _K.HSA_AGENT_INFO_DEVICE, kind)
            if kind.value == _K.HSA_DEVICE_TYPE_CPU:
                cpus.append(h)
            elif kind.value == _K.HSA_DEVICE_TYPE_GPU:
                gpus.append(h)   # DSP agents and others are of no use here
        if not gpus:
            raise RuntimeUnavailable("hsa runtime unavailable: hsa_init succeeded but no GPU agent is listed")
        if not 0 <= device < len(gpus):
            raise RuntimeUnavailable(
                f"hsa runtime unavailable: GPU agent {device} asked for, but only {len(gpus)} exist")
        if not cpus:
            raise RuntimeUnavailable("hsa runtime unavailable: no CPU agent is listed")
        self.device = device
        self._cpu_agents = frozenset(cpus)
        self._gpu = Agent(gpus[device])
        self._gpu_array = (Agent * 1)(self._gpu)
        fine = coarse = None
        for cpu in cpus:   # the first CPU agent with a fine-grained pool, as the plugin takes
            fine = pick_pool(self._pools(cpu), _K.HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED)
            if fine is not None:
                self._cpu = Agent(cpu)
                break
        if fine is None:
            raise RuntimeUnavailable(
                "hsa runtime unavailable: no CPU agent has a fine-grained global pool to allocate pinned memory from")
        coarse = pick_pool(self._pools(gpus[device]), _K.HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED)
        if coarse is None:
            raise RuntimeUnavailable(
                f"hsa runtime unavailable: GPU agent {device} has no coarse-grained global pool for device memory")
        self.pinned_pool, self.device_pool = fine, coarse
        freq = ctypes.c_uint64()
        self._do("hsa_system_get_info", _K.HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, ctypes.byref(freq))
        self.timestamp_hz = freq.value
        self._now_ticks = ctypes.c_uint64()   # the null call's out-parameter, made once
        if self._f.hsa_amd_profiling_get_async_copy_time is None or \
                self._f.hsa_amd_profiling_async_copy_enable is None or self.timestamp_hz <= 0:   # events: see new_event
            self.unavailable = {**self.unavailable, Capability.EVENTS: "this ROCr has no async-copy profiling "
                                "(hsa_amd_profiling_async_copy_enable, hsa_amd_profiling_get_async_copy_time)"}

    def describe(self) -> dict:
        major, minor = ctypes.c_uint16(), ctypes.c_uint16()
        self._do("hsa_system_get_info", _K.HSA_SYSTEM_INFO_VERSION_MAJOR, ctypes.byref(major))
        self._do("hsa_system_get_info", _K.HSA_SYSTEM_INFO_VERSION_MINOR, ctypes.byref(minor))
        node = ctypes.c_uint32()
        self._agent_info(self._gpu.handle, _K.HSA_AGENT_INFO_NODE, node)
        try:
            with open("/sys/module/amdgpu/version") as f:
                driver = f.read().strip() or None
        except OSError:
            driver = None   # an in-tree amdgpu has no version file
        return {
            "platform": self.name,
            "device": self._agent_name(self._gpu.handle, _K.HSA_AMD_AGENT_INFO_PRODUCT_NAME),
            "device_index": self.device,
            "gfx_name": self._agent_name(self._gpu.handle, _K.HSA_AGENT_INFO_NAME),
            "kfd_node": node.value,
            "driver_version": driver,
            "runtime_version": f"libhsa-runtime64 {self.library_version} (HSA {major.value}.{minor.value})",
            "library_path": self.library_path,
            "timestamp_hz": self.timestamp_hz,
            "pinned_pool_granule_nbytes": self.pinned_pool.granule_nbytes,
            "device_pool_granule_nbytes": self.device_pool.granule_nbytes,
        }

    # -- locking -----------------------------------------------------------------------
    def lock(self, ptr: int, nbytes: int, *, read_only: bool = False) -> int:
        """hsa_amd_memory_lock for all agents (NULL, 0), as the plugin calls it. HSA has no
        read-only lock, so ``read_only`` changes nothing."""
        agent_ptr = ctypes.c_void_p()
        self._do("hsa_amd_memory_lock", ptr, nbytes, None, 0, ctypes.byref(agent_ptr),
                 exc=LockFailed, nbytes=nbytes, ptr=ptr)
        self.recorder.acquire("lock", ptr, nbytes)
        return agent_ptr.value or ptr

    def lock_to_pool(self, ptr: int, nbytes: int) -> int:
        """hsa_amd_memory_lock_to_pool with the fine-grained CPU pool: the lock that
        hipHostRegister makes underneath. Undone by ``unlock``."""
        self._need("hsa_amd_memory_lock_to_pool")
        agent_ptr = ctypes.c_void_p()
        self._do("hsa_amd_memory_lock_to_pool", ptr, nbytes, None, 0, MemoryPool(self.pinned_pool.pool),
                 0, ctypes.byref(agent_ptr), exc=LockFailed, nbytes=nbytes, ptr=ptr)
        self.recorder.acquire("lock", ptr, nbytes)
        return agent_ptr.value or ptr

    def unlock(self, ptr: int, nbytes: int) -> None:
        self._do("hsa_amd_memory_unlock", ptr, nbytes=nbytes, ptr=ptr)
        self.recorder.release("lock", ptr)

    def query(self, ptr: int) -> PointerInfo:
        info = PointerInfoStruct(size=ctypes.sizeof(PointerInfoStruct))   # size 0 is refused
        self._do("hsa_amd_pointer_info", ptr, ctypes.byref(info), None, None, None, ptr=ptr)
        return pointer_answer(ptr, info, self._cpu_agents)

    # -- memory ------------------------------------------------------------------------
    def _allocate(self, pool: PoolInfo, nbytes: int) -> int:
        out = ctypes.c_void_p()
        self._do("hsa_amd_memory_pool_allocate", MemoryPool(pool.pool), nbytes, 0, ctypes.byref(out),
                 nbytes=nbytes)
        return out.value

    def alloc_pinned(self, nbytes: int) -> int:
        ptr = self._allocate(self.pinned_pool, nbytes)
        self.recorder.acquire("pinned", ptr, nbytes)
        return ptr

    def grant(self, ptr: int, nbytes: int) -> None:
        self._do("hsa_amd_agents_allow_access", 1, self._gpu_array, None, ptr, nbytes=nbytes, ptr=ptr)

    def free_pinned(self, ptr: int, nbytes: int) -> None:
        self._do("hsa_amd_memory_pool_free", ptr, nbytes=nbytes, ptr=ptr)
        self.recorder.release("pinned", ptr)

    def alloc_device(self, nbytes: int) -> int:
        ptr = self._allocate(self.device_pool, nbytes)
        self.recorder.acquire("device", ptr, nbytes)
        return ptr

    def free_device(self, ptr: int, nbytes: int) -> None:
        self._do("hsa_amd_memory_pool_free", ptr, nbytes=nbytes, ptr=ptr)
        self.recorder.release("device", ptr)

    # -- queues, copies, events --------------------------------------------------------
    def new_queue(self) -> SignalQueue:
        return SignalQueue(pending=[])

    def free_queue(self, q: SignalQueue) -> None:
        if q.pending:
            self.wait(q)   # a signal destroyed under a running copy is undefined behaviour

    def _agents_for(self, direction: Direction) -> tuple[Agent, Agent]:
        """(dst agent, src agent): the GPU owns the device side, the CPU the host side."""
        return (self._gpu, self._cpu) if direction == Direction.H2D else (self._cpu, self._gpu)

    def copy_async(self, dst: int, src: int, nbytes: int, direction: Direction, q: SignalQueue) -> None:
        """Issue the copy after the queue's previous copy and after every latch held on
        the queue since (the copy engine starts once each dependency reads 0)."""
        sig = Signal()
        self._do("hsa_amd_signal_create", 1, 0, None, 0, ctypes.byref(sig))
        prev = q.last_signal()
        deps = ([prev] if prev is not None else []) + [latch.signal for latch in q.holds]
        dep_array = (Signal * len(deps))(*deps) if deps else None
        dst_agent, src_agent = self._agents_for(direction)
        try:
            self._do("hsa_amd_memory_async_copy", dst, dst_agent, src, src_agent, nbytes,
                     len(deps), dep_array, sig, nbytes=nbytes, ptr=src)
        except RuntimeCallFailed:
            self._do("hsa_signal_destroy", sig)
            raise   # the holds stay for the next copy
        for latch in q.holds:
            latch.users.append((q, q.submitted))
        q.holds.clear()
        q.pending.append((q.submitted, sig))
        q.submitted += 1

    def wait(self, q: SignalQueue) -> None:
        """Wait for every pending copy in order (value below 1), collect its profiling
        times when events are on, destroy its signal; a negative value is a failed copy."""
        failed = None
        while q.pending:
            index, sig = q.pending[0]
            value = self.recorder.call("hsa_signal_wait_scacquire", self._f.hsa_signal_wait_scacquire,
                                       sig, _K.HSA_SIGNAL_CONDITION_LT, 1, U64_MAX, _K.HSA_WAIT_STATE_BLOCKED,
                                       rc_of=_rc_signal)
            if value < 0 and failed is None:
                failed = value
            if self._profiling and value >= 0:
                t = AsyncCopyTime()
                self._do("hsa_amd_profiling_get_async_copy_time", sig, ctypes.byref(t))
                if q.times is None:
                    q.times = []
                q.times.extend([None] * (index + 1 - len(q.times)))
                q.times[index] = (t.start, t.end)
            q.pending.pop(0)   # only now: a raise above leaves this copy pending, not leaked
            self._do("hsa_signal_destroy", sig)
        if failed is not None:
            raise RuntimeCallFailed("hsa", "hsa_amd_memory_async_copy", int(failed),
                                    "a negative completion signal (the copy failed)")

    # -- kernels and latches -----------------------------------------------------------
    def prepare_kernels(self) -> None:
        """Refused with the declared reason (NotAvailable): kernels are not a capability here."""
        need(self, Capability.KERNELS)

    def launch_replica(self, q: SignalQueue, pos_ptr: int, out_ptr: int, nw: int, nsplines: int) -> None:
        self.prepare_kernels()

    def new_latch(self) -> HsaLatch:
        sig = Signal()
        self._do("hsa_amd_signal_create", 1, 0, None, 0, ctypes.byref(sig))
        return HsaLatch(sig)

    def hold(self, latch: HsaLatch, q: SignalQueue) -> None:
        """Make the next copy on ``q`` wait for the latch as well. No native call: the
        dependency goes into that copy. Unlike the CUDA spin kernel it has no timeout;
        ``free_latch`` releases first, so only a wait before the release can block."""
        if latch not in q.holds:
            q.holds.append(latch)
            latch.held.append(q)

    def release(self, latch: HsaLatch) -> None:
        self.recorder.call("hsa_signal_store_screlease", self._f.hsa_signal_store_screlease, latch.signal, 0)

    def free_latch(self, latch: HsaLatch) -> None:
        """Release, drop holds not yet taken by a copy, wait for every copy that depends on
        the signal still pending (the copy engine reads it until the copy starts), destroy."""
        self.release(latch)
        for q in latch.held:
            if latch in q.holds:
                q.holds.remove(latch)
        for q, index in latch.users:
            for i, sig in q.pending:
                if i == index:   # completion, not consumption: the queue's own wait still collects it
                    self.recorder.call("hsa_signal_wait_scacquire", self._f.hsa_signal_wait_scacquire, sig,
                                       _K.HSA_SIGNAL_CONDITION_LT, 1, U64_MAX, _K.HSA_WAIT_STATE_BLOCKED,
                                       rc_of=_rc_signal)
        latch.users.clear()
        latch.held.clear()
        self._do("hsa_signal_destroy", latch.signal)

    def new_event(self) -> CopyEvent:
        """An event is a position in a queue; its time comes from the profiling times of the
        copies beside it. Profiling is switched on at the first event, not at start-up,
        because it changes how the runtime issues copies and untimed runs should not pay."""
        if not self._profiling:
            self._do("hsa_amd_profiling_async_copy_enable", True)
            self._profiling = True
        return CopyEvent()

    def free_event(self, ev: CopyEvent) -> None:
        ev.q = None

    def record_event(self, ev: CopyEvent, q: SignalQueue) -> None:
        ev.q, ev.index = q, q.submitted

    def elapsed_ns(self, ev0: CopyEvent, ev1: CopyEvent) -> int:
        """Device time from ``ev0`` to ``ev1``; waits for their queues first, as
        cudaEventElapsedTime needs completed events."""
        for ev in (ev0, ev1):
            if ev.q is not None and ev.q.pending:
                self.wait(ev.q)
        t0, t1 = event_ticks(ev0), event_ticks(ev1)
        if t0 is None or t1 is None:
            raise RuntimeCallFailed("hsa", "hsa_amd_profiling_get_async_copy_time",
                                    _K.HSA_STATUS_ERROR_INVALID_SIGNAL,
                                    "no timed copy next to the event (record events around copies)")
        return ticks_to_ns(t1 - t0, self.timestamp_hz)

    # -- untimed helpers ---------------------------------------------------------------
    def null_native(self) -> int:
        """The cheapest real runtime call, unrecorded: read the system timestamp."""
        return self._f.hsa_system_get_info(_K.HSA_SYSTEM_INFO_TIMESTAMP, ctypes.byref(self._now_ticks))

    def _sync_copy(self, dst: int, src: int, nbytes: int, direction: Direction) -> None:
        sig = Signal()
        self._raw("hsa_amd_signal_create", 1, 0, None, 0, ctypes.byref(sig))
        try:
            dst_agent, src_agent = self._agents_for(direction)
            self._raw("hsa_amd_memory_async_copy", dst, dst_agent, src, src_agent, nbytes, 0, None, sig,
                      nbytes=nbytes)
            value = self._f.hsa_signal_wait_scacquire(sig, _K.HSA_SIGNAL_CONDITION_LT, 1, U64_MAX,
                                                      _K.HSA_WAIT_STATE_BLOCKED)
            if value < 0:
                raise RuntimeCallFailed("hsa", "hsa_amd_memory_async_copy", int(value),
                                        "a negative completion signal (the copy failed)", nbytes)
        finally:
            self._f.hsa_signal_destroy(sig)

    def _staged(self, nbytes: int, body) -> None:
        """Run ``body(staging_ptr)`` with a granted fine-grained staging buffer (unrecorded)."""
        out = ctypes.c_void_p()
        self._raw("hsa_amd_memory_pool_allocate", MemoryPool(self.pinned_pool.pool), max(nbytes, 1), 0,
                  ctypes.byref(out), nbytes=nbytes)
        try:
            self._raw("hsa_amd_agents_allow_access", 1, self._gpu_array, None, out.value, nbytes=nbytes)
            body(out.value)
        finally:
            self._f.hsa_amd_memory_pool_free(out.value)

    def read_device(self, ptr: int, nbytes: int) -> np.ndarray:
        out = np.empty(nbytes, dtype=np.uint8)

        def body(stage):
            self._sync_copy(stage, ptr, nbytes, Direction.D2H)
            ctypes.memmove(out.ctypes.data, stage, nbytes)
        self._staged(nbytes, body)
        return out

    def write_device(self, ptr: int, src: np.ndarray) -> None:
        src = np.ascontiguousarray(src)

        def body(stage):
            ctypes.memmove(stage, src.ctypes.data, src.nbytes)
            self._sync_copy(ptr, stage, src.nbytes, Direction.H2D)
        self._staged(src.nbytes, body)

    def plain_copy_ns(self, dst: int, src: int, nbytes: int, direction: Direction, repeats: int) -> list[int]:
        """hsa_amd_memory_async_copy + hsa_signal_wait_scacquire on one reused signal in a
        bare loop, host-timed, unrecorded."""
        f = self._f
        dst_agent, src_agent = self._agents_for(direction)
        sig = Signal()
        self._raw("hsa_amd_signal_create", 1, 0, None, 0, ctypes.byref(sig))
        out = []
        try:
            for _ in range(repeats):
                f.hsa_signal_store_screlease(sig, 1)
                t0 = time.perf_counter_ns()
                status = f.hsa_amd_memory_async_copy(dst, dst_agent, src, src_agent, nbytes, 0, None, sig)
                value = f.hsa_signal_wait_scacquire(sig, _K.HSA_SIGNAL_CONDITION_LT, 1, U64_MAX,
                                                    _K.HSA_WAIT_STATE_BLOCKED) if status == 0 else 0
                out.append(time.perf_counter_ns() - t0)
                if status != _K.HSA_STATUS_SUCCESS:
                    raise RuntimeCallFailed("hsa", "hsa_amd_memory_async_copy", status,
                                            status_name(status), nbytes)
                if value < 0:
                    raise RuntimeCallFailed("hsa", "hsa_amd_memory_async_copy", int(value),
                                            "a negative completion signal (the copy failed)", nbytes)
        finally:
            f.hsa_signal_destroy(sig)
        return out

    def close(self) -> None:
        """Give back this object's hsa_init (the runtime counts them) and report leaks; idempotent."""
        try:
            if self._initialised:
                self._initialised = False
                self._do("hsa_shut_down")
        finally:
            self.recorder.close()
