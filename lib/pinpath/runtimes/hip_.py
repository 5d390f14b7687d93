"""AMD GPUs through hip-python (``from hip import hip``), the HIP layer applications use.

Every return code is checked: a refused registration raises LockFailed, anything else
RuntimeCallFailed with the HIP error name. hip-python is built against one ROCm release
but loads whatever ``libamdhip64.so`` the system has, so two things are read by hand
rather than through its enums: the ``hipMemoryType`` of a pointer (renumbered in
ROCm 6.1; picked by ``hipRuntimeGetVersion``) and device properties (``hipDeviceProp_t``
changed in 6.0, so ``describe`` uses only calls whose ABI did not change).
"""

from __future__ import annotations

import ctypes
import re
from typing import NamedTuple

import numpy as np

from ..errors import RuntimeCallFailed, RuntimeUnavailable
from ..records import PointerInfo
from ..trace import Recorder
from ..vocab import Capability
from .base import CUPTI_CUDA_ONLY, binding
from .streams import StreamRuntime, rc_of, stream_categories

__all__ = ["HipRuntime", "parse_hip_version", "memory_type_names", "PointerAttributes", "load_hiprtc",
           "compile_kernels", "HipLatch", "plain", "dlopen_reason"]

HIP_SUCCESS = 0
HIP_ERROR_INVALID_VALUE = 1     # also what HIP before 6.x answers for a pointer it does not know
HIP_ERROR_NO_DEVICE = 100
_NAME_NBYTES = 256
#: offset of gcnArchName (char[256]) in hipDeviceProp_t before the ROCm 6.0 ABI (792 bytes in 5.2)
GCN_ARCH_NAME_OFFSET_BEFORE_6_0 = 396
_PROP_NBYTES_BEFORE_6_0 = 4096   # room beyond the 5.x struct: a larger one is never overrun

#: hipMemoryType after the ROCm 6.1 ABI break (Unregistered added at 0, the rest renumbered)
MEMORY_TYPES_6_1 = {0: "hipMemoryTypeUnregistered", 1: "hipMemoryTypeHost", 2: "hipMemoryTypeDevice",
                    3: "hipMemoryTypeManaged", 10: "hipMemoryTypeArray", 11: "hipMemoryTypeUnified"}
#: hipMemoryType before 6.1 (Managed = 4 appeared during 5.x; 5.2 ends at Unified = 3)
MEMORY_TYPES_BEFORE_6_1 = {0: "hipMemoryTypeHost", 1: "hipMemoryTypeDevice", 2: "hipMemoryTypeArray",
                           3: "hipMemoryTypeUnified", 4: "hipMemoryTypeManaged"}


def parse_hip_version(version: int) -> tuple[int, int, int]:
    """``hipRuntimeGetVersion``'s integer -> (major, minor, patch); HIP_VERSION is
    major * 10_000_000 + minor * 100_000 + patch (50221153 -> (5, 2, 21153))."""
    if version < 0:
        raise ValueError(f"a HIP version is non-negative, got {version}")
    return version // 10_000_000, version // 100_000 % 100, version % 100_000


def memory_type_names(major: int, minor: int) -> dict[int, str]:
    """The hipMemoryType numbering that a runtime of version ``major.minor`` writes."""
    return MEMORY_TYPES_6_1 if (major, minor) >= (6, 1) else MEMORY_TYPES_BEFORE_6_1


class PointerAttributes(ctypes.Structure):
    """hipPointerAttribute_t, the same 32 bytes on both sides of the 6.1 break; read raw so
    that hip-python's enum (of its own ROCm release) never reinterprets ``type``."""
    _fields_ = [
        ("type", ctypes.c_int),            # ``memoryType`` (a union with ``type``) before 6.1
        ("device", ctypes.c_int),
        ("devicePointer", ctypes.c_void_p),
        ("hostPointer", ctypes.c_void_p),
        ("isManaged", ctypes.c_int),
        ("allocationFlags", ctypes.c_uint),
    ]


_rc = rc_of
_BYTES_REPR = re.compile(r"""\bb(['"])(.*?)\1""", re.S)


def plain(value) -> str:
    """Text for a sentence: bytes decoded, and any ``b'...'`` repr inside a string (hip-python's
    loader formats its bytes arguments with ``str``) reduced to its content."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode(errors="replace")
    return _BYTES_REPR.sub(r"\2", str(value))


def _dll_name(module) -> str:
    """The library name a hip-python C module opens (its ``DLL``)."""
    return plain(getattr(module, "DLL", b"?"))


def dlopen_reason(error) -> str | None:
    """Why hip-python's dlopen failed (its RuntimeError or that text), without bytes reprs
    and on one line; None where the library is simply not on the library path."""
    text = plain(error).strip()
    m = re.match(r"failed to dlopen '[^']*': (.*)", text, re.S)
    text = " ".join((m.group(1) if m else text).split())
    return None if "cannot open shared object file" in text else text


def load_hiprtc():
    """hip-python's hiprtc module, loaded. It opens ``libhiprtc.so``, which ROCm before 5.3
    does not have (hiprtc lived inside libamdhip64 then, as Debian's 5.2 ships it): where
    that open fails, hiprtc is pointed at the library hip-python's HIP module opens."""
    from hip import hiprtc
    import hip.chip
    import hip.chiprtc
    first = _dll_name(hip.chiprtc)
    try:
        hiprtc.hiprtcVersion()
    except RuntimeError:   # dlopen failed; chiprtc retries the open at its next call
        hip.chiprtc.DLL = hip.chip.DLL
        try:
            hiprtc.hiprtcVersion()
        except RuntimeError as e:
            both, reason = f"neither {first} nor {_dll_name(hip.chip)}", dlopen_reason(e)
            raise RuntimeUnavailable(f"hip kernels unavailable: {both} is on the library path to provide hiprtc"
                                     if reason is None else
                                     f"hip kernels unavailable: {both} provides hiprtc ({reason})") from None
    return hiprtc


def _hiprtc_failed(hiprtc, call: str, err) -> RuntimeCallFailed:
    return RuntimeCallFailed("hip", call, int(err), plain(hiprtc.hiprtcGetErrorString(err)[0]))


def compile_kernels(source: str, arch: str | None, wall_clock_hz: int | None, *, recorder: Recorder | None = None,
                    hiprtc=None) -> bytes:
    """Compile ``source`` with hiprtc into a code object for ``arch`` (a gcnArchName such as
    ``gfx90a:sramecc+:xnack-``; None: hiprtc's own choice, the current device). Floating-point
    contraction is off so that ``a * b + c`` rounds twice, as numpy does. Needs no device
    when ``arch`` is given. A failed compile raises RuntimeCallFailed with the first line
    of the log."""
    from ..kernels import HIP_WALL_CLOCK_HZ_MACRO
    hiprtc = hiprtc or load_hiprtc()
    opts = [b"-ffp-contract=off"]
    if arch:
        opts.append(f"--offload-arch={arch}".encode())
    if wall_clock_hz:
        opts.append(f"-D{HIP_WALL_CLOCK_HZ_MACRO}={int(wall_clock_hz)}ull".encode())
    err, prog = hiprtc.hiprtcCreateProgram(source.encode(), b"pinpath.hip", 0, [], [])
    if int(err) != 0:
        raise _hiprtc_failed(hiprtc, "hiprtcCreateProgram", err)
    try:
        compile_ = hiprtc.hiprtcCompileProgram
        out = recorder.call("hiprtcCompileProgram", compile_, prog, len(opts), opts, rc_of=_rc) \
            if recorder is not None else compile_(prog, len(opts), opts)
        err = out[0]
        if int(err) != 0:
            e, size = hiprtc.hiprtcGetProgramLogSize(prog)
            log = bytearray(size if int(e) == 0 else 0)
            if log:
                hiprtc.hiprtcGetProgramLog(prog, log)
            lines = [ln.strip() for ln in bytes(log).rstrip(b"\0").decode(errors="replace").splitlines() if ln.strip()]
            failed = _hiprtc_failed(hiprtc, "hiprtcCompileProgram", err)
            raise RuntimeCallFailed("hip", "hiprtcCompileProgram", int(err),
                                    f"{failed.rc_name}: {lines[0]}" if lines else failed.rc_name)
        err, size = hiprtc.hiprtcGetCodeSize(prog)
        if int(err) != 0:
            raise _hiprtc_failed(hiprtc, "hiprtcGetCodeSize", err)
        code = bytearray(size)
        err, = hiprtc.hiprtcGetCode(prog, code)
        if int(err) != 0:
            raise _hiprtc_failed(hiprtc, "hiprtcGetCode", err)
        return bytes(code)
    finally:
        hiprtc.hiprtcDestroyProgram(prog.createRef())   # takes hiprtcProgram*, hence the reference


class HipLatch(NamedTuple):
    """A flag in mapped, coherent pinned memory: host address and the address kernels use."""
    host: int
    device: int


class HipRuntime(StreamRuntime):
    """hipHostRegister/Unregister, hipPointerGetAttributes, hipHostMalloc, hipMalloc,
    streams, hipMemcpyAsync and events on device ``device``."""

    name = "hip"
    unavailable = {Capability.CUPTI: CUPTI_CUDA_ONLY}
    # kernels: hiprtc-compiled at first use (``prepare_kernels``); latch: a spin kernel on a mapped flag
    call_categories = stream_categories("hip", "HostMalloc", "HostFree", hipModuleLaunchKernel="kernel",
                                        hiprtcCompileProgram="kernel")

    def __init__(self, recorder: Recorder | None = None, device: int = 0) -> None:
        self._open(binding("hip", "hip", "hip", "hip-python", "pip install the hip-python release of this machine's ROCm"),
                   recorder)
        hip = self._hip = self._api
        try:
            out = hip.hipRuntimeGetVersion()
        except RuntimeError as e:   # hip-python opens libamdhip64.so at its first call
            from hip import chip
            library, reason = _dll_name(chip), dlopen_reason(e)
            raise RuntimeUnavailable(
                f"hip runtime unavailable: {library} not found on the library path (hip-python opens it at its "
                "first call)" if reason is None else
                f"hip runtime unavailable: hip-python cannot load {library} ({reason})") from None
        version = self._check("hipRuntimeGetVersion", out)
        self.runtime_version = parse_hip_version(int(version))
        self._memory_types = memory_type_names(*self.runtime_version[:2])
        err, count = hip.hipGetDeviceCount()
        if int(err) != HIP_SUCCESS or count == 0:
            raise RuntimeUnavailable(
                f"hip runtime unavailable: no AMD GPU answers (hipGetDeviceCount returned {self._name(err)} "
                f"({int(err)}) with HIP runtime {'.'.join(map(str, self.runtime_version))})")
        self._start_device(device)
        self._module = None
        self.kernel_build: dict | None = None   #: target, clock rate and size of the compiled code object

    # -- helpers -----------------------------------------------------------------------
    def _name(self, err) -> str:
        try:
            code = self._hip.hipError_t(int(err))
        except ValueError:   # a code newer than hip-python's enum
            return f"hipError {int(err)}"
        e, name = self._hip.hipGetErrorName(code)
        return plain(name) if int(e) == HIP_SUCCESS and name is not None else code.name

    def describe(self) -> dict:
        import importlib.metadata
        import hip as hip_pkg
        hip = self._hip
        name = self._check("hipDeviceGetName", hip.hipDeviceGetName(_NAME_NBYTES, self.device))
        bus = self._check("hipDeviceGetPCIBusId", hip.hipDeviceGetPCIBusId(_NAME_NBYTES, self.device))
        drv = self._check("hipDriverGetVersion", hip.hipDriverGetVersion())
        return {
            "platform": self.name,
            "device": plain(name),
            "device_index": self.device,
            "pci_bus_id": plain(bus),
            "driver_version": ".".join(map(str, parse_hip_version(int(drv)))),
            "runtime_version": ".".join(map(str, self.runtime_version)),
            "hip_python_version": importlib.metadata.version("hip-python"),
            "hip_python_rocm": getattr(hip_pkg, "ROCM_VERSION_NAME", None),
        }

    # -- locking -----------------------------------------------------------------------
    def lock(self, ptr: int, nbytes: int, *, read_only: bool = False) -> int:
        """hipHostRegister with the default flags. ``read_only`` is ignored: AMD ignores
        hipHostRegisterReadOnly, and its value 8 is also hipExtHostRegisterCoarseGrained.
        Returns ``ptr``: hipMemcpy takes the host pointer; the alias matters only to kernels."""
        return self._register(ptr, nbytes, self._hip.hipHostRegisterDefault)

    def unlock(self, ptr: int, nbytes: int) -> None:
        self._do("hipHostUnregister", self._hip.hipHostUnregister, ptr, ptr=ptr)
        self.recorder.release("lock", ptr)

    def query(self, ptr: int) -> PointerInfo:
        attrs = PointerAttributes()
        out = self.recorder.call("hipPointerGetAttributes", self._hip.hipPointerGetAttributes,
                                 ctypes.addressof(attrs), ptr, rc_of=_rc)
        if _rc(out) == HIP_ERROR_INVALID_VALUE:   # HIP before 6.x: a pointer it does not know
            return PointerInfo(ptr, False, detail=self._name(HIP_ERROR_INVALID_VALUE))
        self._check("hipPointerGetAttributes", out, ptr=ptr)
        return pointer_answer(ptr, attrs, self._memory_types)

    # -- memory ------------------------------------------------------------------------
    _PINNED_ALLOC, _PINNED_FREE = "HostMalloc", "HostFree"

    def _pinned_alloc_args(self) -> tuple:
        return (self._hip.hipHostMallocDefault,)

    # -- kernels and latches -----------------------------------------------------------
    def gcn_arch_name(self) -> str | None:
        """The device's gcnArchName (``gfx90a:sramecc+:xnack-``), None where it cannot be read.
        hip-python's hipGetDeviceProperties is the 6.0 ABI (hipGetDevicePropertiesR0600);
        an older runtime fills the old struct, read raw at the header's offset."""
        hip = self._hip
        if self.runtime_version[:2] >= (6, 0):
            props = hip.hipDeviceProp_t()
            err, = hip.hipGetDeviceProperties(props, self.device)
            raw = props.gcnArchName if int(err) == HIP_SUCCESS else b""
        else:
            from hip import chip   # the library hip-python opened, for its pre-6.0 symbol
            fn = ctypes.CDLL(chip.DLL.decode()).hipGetDeviceProperties
            fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_int], ctypes.c_int
            buf = ctypes.create_string_buffer(_PROP_NBYTES_BEFORE_6_0)
            ok = fn(buf, self.device) == HIP_SUCCESS
            start = GCN_ARCH_NAME_OFFSET_BEFORE_6_0
            raw = buf.raw[start:start + _NAME_NBYTES] if ok else b""
        name = bytes(raw).split(b"\0", 1)[0].decode(errors="replace")
        return name if name.startswith("gfx") else None

    def wall_clock_hz(self) -> int | None:
        """wall_clock64()'s rate (hipDeviceAttributeWallClockRate, kHz); None where the runtime
        has no such attribute (it was appended after ROCm 5.2, which answers an error)."""
        attr = self._hip.hipDeviceAttribute_t.hipDeviceAttributeWallClockRate
        err, khz = self._hip.hipDeviceGetAttribute(attr, self.device)
        return int(khz) * 1000 if int(err) == HIP_SUCCESS and khz > 0 else None

    def prepare_kernels(self) -> None:
        """Compile the kernels with hiprtc for this device and load them (once; untimed)."""
        if self._functions:
            return
        from ..kernels import HIP_KERNEL_SOURCE, HIP_WALL_CLOCK_HZ_ASSUMED, REPLICA_KERNEL, SPIN_KERNEL
        arch, hz = self.gcn_arch_name(), self.wall_clock_hz()
        code = compile_kernels(HIP_KERNEL_SOURCE, arch, hz, recorder=self.recorder)
        module = self._check("hipModuleLoadData", self._hip.hipModuleLoadData(code))
        functions = {name: self._check("hipModuleGetFunction", self._hip.hipModuleGetFunction(module, name.encode()))
                     for name in (REPLICA_KERNEL, SPIN_KERNEL)}
        self._module, self._functions = module, functions
        self.kernel_build = {"compiler": "hiprtc", "target": arch or "hiprtc default (current device)",
                             "wall_clock_hz": hz or HIP_WALL_CLOCK_HZ_ASSUMED, "wall_clock_hz_assumed": hz is None,
                             "code_nbytes": len(code)}

    def _launch(self, name: str, q, grid: int, block: int, *args: np.ndarray) -> None:
        self.prepare_kernels()
        params = np.array([a.ctypes.data for a in args], dtype=np.uint64)   # void*[]: one address per argument
        self._do("hipModuleLaunchKernel", self._hip.hipModuleLaunchKernel, self._functions[name],
                 grid, 1, 1, block, 1, 1, 0, q, params.ctypes.data, None)

    def kernel_handle(self) -> int:
        """The replica kernel's hipFunction_t as an integer."""
        from ..kernels import REPLICA_KERNEL
        self.prepare_kernels()
        return int(self._functions[REPLICA_KERNEL])

    def launch_replica(self, q, pos_ptr: int, out_ptr: int, nw: int, nsplines: int) -> None:
        from ..kernels import REPLICA_KERNEL
        self._launch(REPLICA_KERNEL, q, nw, nsplines, np.array([pos_ptr], np.uint64), np.array([out_ptr], np.uint64),
                     np.array([nw], np.int32), np.array([nsplines], np.int32))

    def new_latch(self) -> HipLatch:
        """A flag in pinned memory, mapped and coherent: hipHostMalloc's default coherence
        follows HIP_HOST_COHERENT (0: GPU-cached), and a cached flag would not be seen to change."""
        hip = self._hip
        ptr = int(self._check("hipHostMalloc", hip.hipHostMalloc(4, hip.hipHostMallocMapped | hip.hipHostMallocCoherent)))
        ctypes.c_int.from_address(ptr).value = 0
        try:
            dev = int(self._check("hipHostGetDevicePointer", hip.hipHostGetDevicePointer(ptr, 0)))
        except RuntimeCallFailed:
            hip.hipHostFree(ptr)
            raise
        return HipLatch(ptr, dev)

    def hold(self, latch: HipLatch, q) -> None:
        """Enqueue a spin kernel that holds ``q`` until the latch is released (at most
        SPIN_TIMEOUT_NS by wall_clock64, whose rate is assumed where unknown: kernels.py)."""
        from ..kernels import SPIN_KERNEL, SPIN_TIMEOUT_NS
        self._launch(SPIN_KERNEL, q, 1, 1, np.array([latch.device], np.uint64), np.array([SPIN_TIMEOUT_NS], np.uint64))

    def release(self, latch: HipLatch) -> None:
        ctypes.c_int.from_address(latch.host).value = 1

    def free_latch(self, latch: HipLatch) -> None:
        self.release(latch)
        self._check("hipDeviceSynchronize", self._hip.hipDeviceSynchronize())   # no spin kernel reads it any more
        self._check("hipHostFree", self._hip.hipHostFree(latch.host))

    def close(self) -> None:
        try:
            if self._module is not None:
                module, self._module, self._functions = self._module, None, {}
                self._check("hipModuleUnload", self._hip.hipModuleUnload(module))
        finally:
            self.recorder.close()


def pointer_answer(ptr: int, attrs: PointerAttributes, memory_types: dict[int, str]) -> PointerInfo:
    """Registered and hipHostMalloc'd memory both report hipMemoryTypeHost: locked."""
    detail = memory_types.get(attrs.type, f"hipMemoryType {attrs.type}")
    if detail != "hipMemoryTypeHost":
        return PointerInfo(ptr, False, detail=detail)
    return PointerInfo(ptr, True, attrs.devicePointer, detail=detail)
