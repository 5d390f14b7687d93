"""Every backend against the runtime interface (``runtimes/base.py``).

* Each backend class (they import without their libraries) has every core member with the
  Protocol's parameters, declares ``relock`` and ``unavailable``, and has the members of
  every capability it does not declare unavailable.
* The core protocol, driven end to end with bytes verified and every lock and allocation
  undone: on the host for real; on HSA and HIP over fake natives (the real backend code,
  from ``__init__`` on, over Python stand-ins for the library, as test_hip_kernels.py does);
  on CUDA where a GPU answers.
* Opened for real, each runtime either runs that protocol or refuses in one sentence
  (RuntimeUnavailable): HSA and HIP against their real libraries without a device here.
"""

from __future__ import annotations

import ast
import ctypes
import ctypes.util
import importlib
import inspect
import sys
import textwrap
import types
from enum import IntEnum

import numpy as np
import pytest

from pinpath.errors import LockFailed, RuntimeUnavailable
from pinpath.runtimes import RUNTIMES, hsa_, open_runtime
from pinpath.runtimes.base import (CALL_MEMBERS, CAPABILITY_MEMBERS, CORE_MEMBERS, Backend, Runtime, RuntimeBase,
                                   RuntimeCalls, event_pair)
from pinpath.runtimes.hip_ import MEMORY_TYPES_6_1, PointerAttributes
from pinpath.runtimes.hsa_abi import K, OPTIONAL_SYMBOLS, PROTOTYPES, Agent
from pinpath.trace import Recorder
from pinpath.vocab import Capability, Direction, PageableCopy, Platform, Relock

PLATFORMS = [p.value for p in RUNTIMES]
RELOCK = {"host": Relock.UNCOUNTED, "cuda": Relock.REFUSED, "hsa": Relock.COUNTED, "hip": Relock.REFUSED}
NBYTES = 3 * 4096 + 123        # not a whole number of pages


def _one_sentence(msg: str) -> bool:
    return "\n" not in msg and ". " not in msg.rstrip(".") and len(msg) < 300


def _class(platform: str) -> type:
    module, name = RUNTIMES[Platform(platform)].split(":")
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as e:
        pytest.skip(f"{platform}: {module} cannot be imported without its library ({e})")


def _init_attributes(cls: type) -> set[str]:
    """``self.X`` assigned in the ``__init__`` of ``cls`` or a base, or in a ``self._method(...)``
    that such an ``__init__`` calls: instance members."""
    names: set[str] = set()
    seen: set[str] = set()

    def scan(fn) -> None:
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        except (OSError, TypeError):
            return
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                if isinstance(node.ctx, ast.Store):
                    names.add(node.attr)
                elif node.attr.startswith("_") and node.attr not in seen and callable(getattr(cls, node.attr, None)):
                    seen.add(node.attr)
                    scan(getattr(cls, node.attr))

    for klass in cls.__mro__:
        if "__init__" in klass.__dict__:
            scan(klass.__dict__["__init__"])
    return names


# -- the classes ---------------------------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
def test_class_has_every_core_member(platform):
    cls = _class(platform)
    assert issubclass(cls, RuntimeBase) and cls.name == platform
    instance_members = _init_attributes(cls)
    assert [m for m in CORE_MEMBERS + CALL_MEMBERS if not hasattr(cls, m) and m not in instance_members] == []


def test_the_core_is_start_buffers_and_capabilities():
    """The core is at most 12 calls; the per-call layer mirrors native/platform.h's table and no
    more (device events are a capability); what every backend shares is RuntimeBase's."""
    core_calls = [m for m in CORE_MEMBERS if callable(getattr(Runtime, m, None))]
    assert len(core_calls) <= 12, core_calls
    assert set(CALL_MEMBERS) == {"lock", "unlock", "query", "new_queue", "free_queue", "copy_async", "wait",
                                 "host_copy"}
    assert not set(CORE_MEMBERS) & set(CALL_MEMBERS)
    assert not set(CAPABILITY_MEMBERS[Capability.EVENTS]) & set(CORE_MEMBERS + CALL_MEMBERS)
    for shared in ("capabilities", "reason", "host_copy", "fill_device"):
        assert callable(getattr(RuntimeBase, shared)), shared


def test_what_a_backend_writes():
    """RuntimeBase writes four members of the two layers (the capability answers, the host copy,
    a grant that does nothing); a backend writes the other 22 (23 before the no-op grant moved
    to RuntimeBase). Buffers and queues as objects are RuntimeBase's too, over the handle calls."""
    shared = {m for m in CORE_MEMBERS + CALL_MEMBERS if callable(vars(RuntimeBase).get(m))}
    assert shared == {"capabilities", "reason", "grant", "host_copy"}
    assert len(CORE_MEMBERS + CALL_MEMBERS) - len(shared) == 22
    for made in ("pinned_buffer", "device_buffer", "queue"):
        assert callable(vars(RuntimeBase).get(made)) and made not in CORE_MEMBERS + CALL_MEMBERS, made


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_backend_writes_its_grant_only_where_it_needs_one(platform):
    """RuntimeBase's grant does nothing: a backend whose pinned memory needs a grant writes its own."""
    cls = _class(platform)
    assert (cls.grant is not RuntimeBase.grant) == cls.needs_grant


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_backend_writes_no_member_it_does_not_offer(platform):
    """Events are a capability: a backend that declares them unavailable has none of their
    members (no stubs that only refuse); one that offers them has all of them."""
    cls = _class(platform)
    events = CAPABILITY_MEMBERS[Capability.EVENTS]
    have = [m for m in events if callable(getattr(cls, m, None))]
    assert have == ([] if Capability.EVENTS in cls.unavailable else list(events))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_core_methods_take_the_protocols_parameters(platform):
    """Same names in the same order (callers pass some by keyword)."""
    cls = _class(platform)
    wrong = {}
    for name in CORE_MEMBERS + CALL_MEMBERS:
        proto = getattr(Runtime if name in CORE_MEMBERS else RuntimeCalls, name, None)
        if not callable(proto):
            continue
        impl = inspect.getattr_static(cls, name)
        if isinstance(impl, staticmethod):
            impl = impl.__func__
        try:
            got = list(inspect.signature(impl).parameters)
        except (TypeError, ValueError):   # a C function (the host's null_native): no Python signature
            continue
        if not isinstance(inspect.getattr_static(cls, name), staticmethod):
            got = got[1:]
        want = list(inspect.signature(proto).parameters)[1:]
        if got != want:
            wrong[name] = (got, want)
    assert wrong == {}


@pytest.mark.parametrize("platform", PLATFORMS)
def test_declared_semantics_and_capabilities(platform):
    cls = _class(platform)
    assert cls.relock is RELOCK[platform]
    assert isinstance(cls.pageable_copy, PageableCopy)
    assert isinstance(cls.needs_grant, bool)
    core_categories = {"lock", "unlock", "query", "alloc", "free", "copy", "wait", "host_copy"}
    assert core_categories <= set(cls.call_categories.values())
    for cap, reason in cls.unavailable.items():
        assert isinstance(cap, Capability) and reason and _one_sentence(reason), (cap, reason)
    missing = {cap.value: [m for m in members if not callable(getattr(cls, m, None))]
               for cap, members in CAPABILITY_MEMBERS.items() if cap not in cls.unavailable}
    assert {cap: ms for cap, ms in missing.items() if ms} == {}


@pytest.mark.parametrize("platform", [p for p in PLATFORMS if p != "cuda"])
def test_only_cuda_can_offer_cupti(platform):
    """Asking a backend for CUPTI loads nothing: the others declare it unavailable."""
    assert Capability.CUPTI in _class(platform).unavailable


# -- the core protocol, end to end ---------------------------------------------------------------
def _categories(rt, fn, *args):
    """Run ``fn(*args)`` and return its result and the categories of the calls it recorded."""
    with rt.recorder.span() as calls:
        out = fn(*args)
    return out, {rt.call_categories.get(c[0]) for c in calls}


def drive_core(rt, *, describe: bool = True) -> None:
    """Every core member, bytes verified at each hop, every lock and allocation undone."""
    assert isinstance(rt, Backend)
    if describe:
        assert rt.describe()["platform"] == rt.name
    caps = rt.capabilities()
    assert set(caps) == {c.value for c in Capability} and all(isinstance(v, str) for v in caps.values())
    pattern = (np.arange(NBYTES) % 251 + 1).astype(np.uint8)
    back = np.zeros(NBYTES, np.uint8)
    src = pattern.ctypes.data

    assert not rt.query(src).locked
    alias, cats = _categories(rt, rt.lock, src, NBYTES)
    try:
        assert alias and "lock" in cats
        info, cats = _categories(rt, rt.query, src)
        assert info.locked and "query" in cats
    finally:
        _, cats = _categories(rt, rt.unlock, src, NBYTES)
    assert "unlock" in cats and not rt.query(src).locked

    pinned_buf, cats = _categories(rt, rt.pinned_buffer, NBYTES)     # alloc_pinned, grant
    assert "alloc" in cats and not pinned_buf.closed
    pinned = pinned_buf.ptr
    assert rt.query(pinned).locked
    with pinned_buf, rt.device_buffer(NBYTES) as dev_buf, rt.queue() as q:
        dev = dev_buf.ptr
        _, cats = _categories(rt, rt.host_copy, pinned, src, NBYTES)
        assert "host_copy" in cats
        with event_pair(rt) as (e0, e1):
            if e0 is not None:
                rt.record_event(e0, q.handle)
            _, cats = _categories(rt, q.copy_async, dev, pinned, NBYTES, Direction.H2D)
            assert "copy" in cats
            if e1 is not None:
                rt.record_event(e1, q.handle)
            _, cats = _categories(rt, q.wait)
            assert "wait" in cats
            if e0 is not None:
                assert rt.elapsed_ns(e0, e1) >= 0
        assert np.array_equal(rt.read_device(dev, NBYTES), pattern)             # host -> device

        rt.fill_device(dev, 0x5A, NBYTES)
        assert (rt.read_device(dev, NBYTES) == 0x5A).all()
        rt.write_device(dev, np.ascontiguousarray(pattern[::-1]))
        rt.copy_async(pinned, dev, NBYTES, Direction.D2H, q.handle)            # the handle layer itself
        rt.wait(q.handle)
        rt.host_copy(back.ctypes.data, pinned, NBYTES)
        assert np.array_equal(back, pattern[::-1])                              # device -> host
    assert pinned_buf.closed and dev_buf.closed and q.closed
    rt.null_native()
    assert rt.recorder.outstanding() == {} and rt.recorder.acquired == rt.recorder.released
    assert rt.recorder.acquired.get("lock") == 1


def test_host_runs_the_core_protocol():
    with open_runtime("host") as rt:
        drive_core(rt)


def test_host_relock_is_uncounted():
    with open_runtime("host") as rt:
        buf = np.ones(NBYTES, np.uint8)
        rt.lock(buf.ctypes.data, NBYTES)
        rt.lock(buf.ctypes.data, NBYTES)     # granted again
        rt.unlock(buf.ctypes.data, NBYTES)
        assert not rt.query(buf.ctypes.data).locked   # one unlock undid both
        rt.unlock(buf.ctypes.data, NBYTES)


@pytest.mark.parametrize("platform", [p for p in PLATFORMS if p != "host"])
def test_opened_for_real_runs_the_core_or_refuses_in_one_sentence(platform):
    """Here (no GPU) cuda, hsa and hip refuse, with or without their libraries installed;
    where a device answers, the same test drives the core protocol on it."""
    rec = Recorder()
    try:
        rt = open_runtime(platform, recorder=rec)
    except RuntimeUnavailable as e:
        msg = str(e)
        assert msg.startswith(f"{platform} runtime unavailable: ") and _one_sentence(msg), msg
        assert "b'" not in msg and 'b"' not in msg, msg
        assert rec.outstanding() == {}
        return
    with rt:
        drive_core(rt)


def _write_strided(rt) -> None:
    pattern = (np.arange(2 * NBYTES) % 251).astype(np.uint8)[::-2]     # a view with a negative stride
    with rt.device_buffer(pattern.size) as dev:
        rt.write_device(dev.ptr, pattern)
        assert np.array_equal(rt.read_device(dev.ptr, pattern.size), pattern)


def test_host_write_device_takes_a_strided_array():
    with open_runtime("host") as rt:
        _write_strided(rt)


# -- HSA over fake natives -----------------------------------------------------------------------
class FakeHsa:
    """libhsa-runtime64 in Python: one CPU and one GPU agent, a fine-grained CPU pool and a
    coarse GPU pool in host memory, copies done at once by memmove, locks counted as ROCT
    counts them."""

    CPU, GPU, FINE, COARSE = 0xC0, 0xD0, 0xF1, 0xF2

    def __init__(self):
        self.buffers: dict[int, tuple[object, int]] = {}    # address -> (keep-alive, pool)
        self.locks: dict[int, tuple[int, int]] = {}         # address -> (nbytes, count)
        self.signals: dict[int, int] = {}
        self.clock = 1000
        self.inits = 0

    def bind(self, lib, library):
        fns = types.SimpleNamespace(**{sym: getattr(self, sym, None) for sym in PROTOTYPES})
        assert {s for s in PROTOTYPES if getattr(fns, s) is None} <= OPTIONAL_SYMBOLS
        return fns, "/fake/libhsa-runtime64.so.1.14.0"

    def hsa_init(self):
        self.inits += 1
        return 0

    def hsa_shut_down(self):
        self.inits -= 1
        return 0

    def hsa_system_get_info(self, attribute, out):
        self.clock += 1
        out._obj.value = {K.HSA_SYSTEM_INFO_VERSION_MAJOR: 1, K.HSA_SYSTEM_INFO_VERSION_MINOR: 1,
                          K.HSA_SYSTEM_INFO_TIMESTAMP: self.clock,
                          K.HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY: 1_000_000_000}[attribute]
        return 0

    def hsa_iterate_agents(self, callback, data):
        for handle in (self.CPU, self.GPU):
            status = callback(Agent(handle), data)
            if status:
                return status
        return 0

    def hsa_agent_get_info(self, agent, attribute, out):
        value = {K.HSA_AGENT_INFO_DEVICE: K.HSA_DEVICE_TYPE_CPU if agent.handle == self.CPU else
                 K.HSA_DEVICE_TYPE_GPU, K.HSA_AGENT_INFO_NODE: 1, K.HSA_AGENT_INFO_NAME: b"gfx90a",
                 K.HSA_AMD_AGENT_INFO_PRODUCT_NAME: b"Fake MI210"}[attribute]
        out._obj.value = value
        return 0

    def hsa_amd_agent_iterate_memory_pools(self, agent, callback, data):
        return callback(hsa_.MemoryPool(self.FINE if agent.handle == self.CPU else self.COARSE), data)

    def hsa_amd_memory_pool_get_info(self, pool, attribute, out):
        flags = K.HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED if pool.handle == self.FINE else \
            K.HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED
        out._obj.value = {K.HSA_AMD_MEMORY_POOL_INFO_SEGMENT: K.HSA_AMD_SEGMENT_GLOBAL,
                          K.HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS: flags,
                          K.HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED: True,
                          K.HSA_AMD_MEMORY_POOL_INFO_SIZE: 1 << 30,
                          K.HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE: 4096,
                          K.HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT: 4096}[attribute]
        return 0

    def hsa_amd_memory_pool_allocate(self, pool, nbytes, flags, out):
        buf = ctypes.create_string_buffer(nbytes)
        self.buffers[ctypes.addressof(buf)] = (buf, pool.handle)
        out._obj.value = ctypes.addressof(buf)
        return 0

    def hsa_amd_memory_pool_free(self, ptr):
        return 0 if self.buffers.pop(ptr, None) else K.HSA_STATUS_ERROR_INVALID_ALLOCATION

    def hsa_amd_agents_allow_access(self, n, agents, flags, ptr):
        return 0 if ptr in self.buffers and agents[0].handle == self.GPU else K.HSA_STATUS_ERROR_INVALID_ARGUMENT

    def hsa_amd_memory_lock(self, ptr, nbytes, agents, n, out):
        size, count = self.locks.get(ptr, (nbytes, 0))
        self.locks[ptr] = (nbytes, count + 1)
        out._obj.value = ptr
        return 0

    def hsa_amd_memory_unlock(self, ptr):
        nbytes, count = self.locks.pop(ptr, (0, 0))
        if count > 1:
            self.locks[ptr] = (nbytes, count - 1)
        return 0   # ROCr's unlock answers success whatever it finds

    def hsa_amd_pointer_info(self, ptr, info, alloc, n, accessible):
        i = info._obj
        assert i.size == 56   # the caller sets it
        i.type, i.hostBaseAddress, i.agentBaseAddress, i.sizeInBytes = K.HSA_EXT_POINTER_TYPE_UNKNOWN, 0, 0, 0
        for base, (nbytes, _) in self.locks.items():
            if base <= ptr < base + nbytes:
                i.type, i.hostBaseAddress, i.agentBaseAddress, i.sizeInBytes = \
                    K.HSA_EXT_POINTER_TYPE_LOCKED, base, base, nbytes
                i.agentOwner = Agent(self.CPU)
        for base, (buf, pool) in self.buffers.items():
            if base <= ptr < base + len(buf):
                i.type, i.hostBaseAddress, i.agentBaseAddress, i.sizeInBytes = \
                    K.HSA_EXT_POINTER_TYPE_HSA, base, base, len(buf)
                i.agentOwner = Agent(self.CPU if pool == self.FINE else self.GPU)
        return 0

    def hsa_amd_signal_create(self, value, n, consumers, attributes, out):
        handle = 0x5000 + len(self.signals) + 1
        self.signals[handle] = value
        out._obj.handle = handle
        return 0

    def hsa_signal_destroy(self, signal):
        return 0 if self.signals.pop(signal.handle, None) is not None else K.HSA_STATUS_ERROR_INVALID_SIGNAL

    def hsa_amd_memory_async_copy(self, dst, dst_agent, src, src_agent, nbytes, ndeps, deps, signal):
        ctypes.memmove(dst, src, nbytes)
        self.signals[signal.handle] = 0
        return 0

    def hsa_signal_wait_scacquire(self, signal, condition, compare, timeout, state):
        return self.signals[signal.handle]

    def hsa_signal_store_screlease(self, signal, value):
        self.signals[signal.handle] = value

    def hsa_amd_profiling_async_copy_enable(self, on):
        return 0

    def hsa_amd_profiling_get_async_copy_time(self, signal, out):
        self.clock += 10
        out._obj.start, out._obj.end = self.clock - 10, self.clock
        return 0


@pytest.fixture
def fake_hsa(monkeypatch):
    fake = FakeHsa()
    monkeypatch.setattr(hsa_, "bind", fake.bind)
    libc = ctypes.util.find_library("c")
    rt = hsa_.HsaRuntime(recorder=Recorder(), library=libc)   # a loadable library: the symbols are the fake's
    yield rt, fake
    rt.close()
    assert fake.inits == 0 and fake.buffers == {} and fake.locks == {} and fake.signals == {}


def test_hsa_runs_the_core_protocol_over_fake_natives(fake_hsa):
    rt, _ = fake_hsa
    drive_core(rt)
    assert rt.describe()["device"] == "Fake MI210"


def test_hsa_write_device_takes_a_strided_array(fake_hsa):
    _write_strided(fake_hsa[0])


# -- HIP over fake natives -----------------------------------------------------------------------
class FakeHip(types.SimpleNamespace):
    """hip-python's ``hip`` module in Python: HIP 6.4 numbering, host memory as device memory,
    a second register refused with 712 as HIP answers it."""

    class hipError_t(IntEnum):
        hipSuccess = 0
        hipErrorInvalidValue = 1
        hipErrorNoDevice = 100
        hipErrorHostMemoryAlreadyRegistered = 712
        hipErrorHostMemoryNotRegistered = 713

    class hipMemcpyKind(IntEnum):
        hipMemcpyHostToDevice = 1
        hipMemcpyDeviceToHost = 2

    hipHostRegisterDefault = hipHostMallocDefault = 0
    hipStreamNonBlocking = 1

    def __init__(self):
        super().__init__(registered={}, host={}, device={}, streams=set(), events=set())

    def _alloc(self, table, nbytes):
        buf = ctypes.create_string_buffer(nbytes)
        table[ctypes.addressof(buf)] = buf
        return (0, ctypes.addressof(buf))

    def hipGetErrorName(self, code):
        return (0, code.name.encode())     # bytes, as some hip-python releases hand back

    def hipRuntimeGetVersion(self):
        return (0, 60443484)

    def hipGetDeviceCount(self):
        return (0, 1)

    def hipSetDevice(self, device):
        return (0,)

    def hipGetDevice(self):
        return (0, 0)

    def hipDeviceGetName(self, n, device):
        return (0, b"Fake MI210")

    def hipDeviceGetPCIBusId(self, n, device):
        return (0, b"0000:03:00.0")

    def hipDriverGetVersion(self):
        return (0, 60443484)

    def hipHostRegister(self, ptr, nbytes, flags):
        if ptr in self.registered:
            return (712,)
        self.registered[ptr] = nbytes
        return (0,)

    def hipHostUnregister(self, ptr):
        return (0,) if self.registered.pop(ptr, None) else (713,)

    def hipPointerGetAttributes(self, address, ptr):
        attrs = PointerAttributes.from_address(address)
        host = any(b <= ptr < b + n for b, n in self.registered.items()) or ptr in self.host
        attrs.type = 1 if host else 2 if ptr in self.device else 0
        attrs.devicePointer = ptr if host else 0
        return (0,)

    def hipHostMalloc(self, nbytes, flags):
        return self._alloc(self.host, nbytes)

    def hipHostFree(self, ptr):
        return (0,) if self.host.pop(ptr, None) else (1,)

    def hipMalloc(self, nbytes):
        return self._alloc(self.device, nbytes)

    def hipFree(self, ptr):
        return (0,) if ptr == 0 or self.device.pop(ptr, None) else (1,)

    def hipStreamCreateWithFlags(self, flags):
        self.streams.add(len(self.streams) + 1)
        return (0, len(self.streams))

    def hipStreamDestroy(self, q):
        self.streams.discard(q)
        return (0,)

    def hipMemcpyAsync(self, dst, src, nbytes, kind, q):
        ctypes.memmove(dst, src, nbytes)
        return (0,)

    def hipMemcpy(self, dst, src, nbytes, kind):
        ctypes.memmove(dst, src, nbytes)
        return (0,)

    def hipMemset(self, ptr, byte, nbytes):
        ctypes.memset(ptr, byte, nbytes)
        return (0,)

    def hipStreamSynchronize(self, q):
        return (0,)

    def hipDeviceSynchronize(self):
        return (0,)

    def hipEventCreate(self):
        self.events.add(len(self.events) + 1)
        return (0, len(self.events))

    def hipEventDestroy(self, ev):
        self.events.discard(ev)
        return (0,)

    def hipEventRecord(self, ev, q):
        return (0,)

    def hipEventElapsedTime(self, ev0, ev1):
        return (0, 0.25)


@pytest.fixture
def fake_hip(monkeypatch):
    fake = FakeHip()
    monkeypatch.setitem(sys.modules, "hip", types.SimpleNamespace(hip=fake))
    from pinpath.runtimes.hip_ import HipRuntime
    rt = HipRuntime(recorder=Recorder())
    yield rt, fake
    rt.close()
    assert fake.registered == fake.host == fake.device == {} and fake.streams == fake.events == set()


def test_hip_runs_the_core_protocol_over_fake_natives(fake_hip):
    rt, _ = fake_hip
    assert rt._memory_types is MEMORY_TYPES_6_1
    drive_core(rt, describe=False)     # describe reads hip-python's package metadata


def test_hip_write_device_takes_a_strided_array(fake_hip):
    _write_strided(fake_hip[0])


def test_hip_relock_is_refused_and_marked_already_pinned(fake_hip):
    rt, _ = fake_hip
    buf = np.ones(NBYTES, np.uint8)
    rt.lock(buf.ctypes.data, NBYTES)
    with pytest.raises(LockFailed) as e:
        rt.lock(buf.ctypes.data, NBYTES)
    assert e.value.already_pinned and e.value.answer == "hipErrorHostMemoryAlreadyRegistered (712)"
    rt.unlock(buf.ctypes.data, NBYTES)
    assert rt.recorder.outstanding() == {}


# -- CUDA where a GPU answers --------------------------------------------------------------------
@pytest.mark.needs("cuda-device")
def test_cuda_relock_is_refused_and_marked_already_pinned(cuda_rt):
    buf = np.ones(NBYTES, np.uint8)
    cuda_rt.lock(buf.ctypes.data, NBYTES)
    with pytest.raises(LockFailed) as e:
        cuda_rt.lock(buf.ctypes.data, NBYTES)
    assert e.value.already_pinned and e.value.rc == 712
    cuda_rt.unlock(buf.ctypes.data, NBYTES)
