"""NVIDIA GPUs through cuda-python's runtime bindings (``cuda.bindings.runtime``).

Every return code is checked: a refused registration raises LockFailed (policies
and experiments record it), anything else raises RuntimeCallFailed with the CUDA
error name.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import BadParameter, RuntimeCallFailed, RuntimeUnavailable, WaitModeRefused
from ..records import PointerInfo
from ..trace import Recorder
from .base import WAIT_ENV, WAIT_MODES, binding
from .streams import StreamRuntime, stream_categories

__all__ = ["CudaRuntime", "SCHEDULE"]

#: the scheduling bits of a context's flags (cudaDeviceScheduleMask, CU_CTX_SCHED_MASK) -> the wait mode
SCHEDULE = {0: "auto", 1: "spin", 2: "yield", 4: "blocking"}
_SCHEDULE_MASK = 0x07


class CudaRuntime(StreamRuntime):
    """cudaHostRegister/Unregister, cudaPointerGetAttributes, cudaMallocHost, cudaMalloc,
    streams, cudaMemcpyAsync and events on device ``device``."""

    name = "cuda"
    # kernels: NVRTC-compiled at first use (``prepare_kernels``); latch: a spin kernel on a mapped flag
    call_categories = stream_categories("cuda", "MallocHost", "FreeHost", cuLaunchKernel="kernel",
                                        cudaGetDevice="null")

    def __init__(self, recorder: Recorder | None = None, device: int = 0) -> None:
        wait = os.environ.get(WAIT_ENV, "") or "auto"
        if wait not in WAIT_MODES:
            raise BadParameter(f"{WAIT_ENV} is one of {', '.join(WAIT_MODES)}, not {wait!r}")
        self._open(binding("cuda", "cuda.bindings", "runtime", "cuda-python", "pip install cuda-bindings"), recorder)
        cudart = self._rt = self._api
        err, count = cudart.cudaGetDeviceCount()
        if int(err) != 0 or count == 0:
            raise RuntimeUnavailable(
                f"cuda runtime unavailable: no CUDA device answers (cudaGetDeviceCount returned "
                f"{self._name(err)} ({int(err)}))")
        if wait == "blocking":
            self._blocking_before_start(device)
        self._start_device(device)
        try:   # read back from the primary context itself, where the blocking mode was set
            flags, _ = self._primary_state(device)
            self.wait_mode = SCHEDULE.get(flags & _SCHEDULE_MASK, f"flags {flags:#x}")
        except WaitModeRefused as e:
            if wait == "blocking":
                raise
            self.wait_mode, flags = f"unknown ({e})", -1     # the default mode asked for: not worth refusing the runtime
        if (wait == "blocking") != (self.wait_mode == "blocking"):
            raise WaitModeRefused(f"cuda runtime unavailable in the {wait} wait mode: device {device}'s context "
                                  f"waits in the {self.wait_mode} mode (cuDevicePrimaryCtxGetState flags {flags:#x})")
        self._TYPE_HOST = cudart.cudaMemoryType.cudaMemoryTypeHost
        err, ro = cudart.cudaDeviceGetAttribute(
            cudart.cudaDeviceAttr.cudaDevAttrHostRegisterReadOnlySupported, device)
        self.read_only_register = int(err) == 0 and bool(ro)

    def _driver(self, call: str, out):
        """A driver call's results after its CUresult; WaitModeRefused (a sentence) where it failed."""
        from cuda.bindings import driver
        rc = int(out[0])
        if rc != 0:
            _, name = driver.cuGetErrorName(out[0])
            raise WaitModeRefused(f"cuda runtime unavailable: the wait mode could not be read or set ({call} returned "
                                  f"{name.decode() if name else f'CUresult {rc}'})")
        return out[1:]

    def _primary_state(self, device: int) -> tuple[int, bool]:
        """The flags and whether it is active, of ``device``'s primary context (cuDevicePrimaryCtxGetState)."""
        try:
            from cuda.bindings import driver
            self._driver("cuInit", driver.cuInit(0))
            dev, = self._driver("cuDeviceGet", driver.cuDeviceGet(device))
            flags, active = self._driver("cuDevicePrimaryCtxGetState", driver.cuDevicePrimaryCtxGetState(dev))
        except WaitModeRefused:
            raise
        except Exception as e:     # the bindings' driver module not loadable beside a working runtime
            raise WaitModeRefused(f"cuda runtime unavailable: the wait mode could not be read ({type(e).__name__}: "
                                  f"{str(e).splitlines()[0] if str(e) else 'no message'})") from None
        return int(flags), bool(active)

    def _blocking_before_start(self, device: int) -> None:
        """Put ``device``'s primary context in CU_CTX_SCHED_BLOCKING_SYNC before it is created, as
        LLVM's CUDA plugin does (cuDevicePrimaryCtxSetFlags while inactive); WaitModeRefused where
        something in this process already created it in another mode (the native libraries' start
        creates it too: open the runtime first)."""
        from cuda.bindings import driver
        flags, active = self._primary_state(device)
        mode = SCHEDULE.get(flags & _SCHEDULE_MASK, f"flags {flags:#x}")
        if active and mode != "blocking":
            raise WaitModeRefused(f"cuda runtime unavailable in the blocking wait mode: device {device}'s primary "
                                  f"context is already active in the {mode} mode (open the runtime first, "
                                  f"in a fresh process)")
        if not active:
            dev, = self._driver("cuDeviceGet", driver.cuDeviceGet(device))
            self._driver("cuDevicePrimaryCtxSetFlags",
                         driver.cuDevicePrimaryCtxSetFlags(dev, driver.CUctx_flags.CU_CTX_SCHED_BLOCKING_SYNC))

    # -- helpers -----------------------------------------------------------------------
    def _name(self, err) -> str:
        e, name = self._rt.cudaGetErrorName(err)
        return name.decode() if int(e) == 0 else f"cudaError {int(err)}"

    def describe(self) -> dict:
        rt = self._rt
        _, prop = rt.cudaGetDeviceProperties(self.device)
        _, drv = rt.cudaDriverGetVersion()
        _, rtv = rt.cudaRuntimeGetVersion()
        import cuda.bindings
        return {
            "platform": self.name,
            "device": prop.name.decode(errors="replace").rstrip("\x00"),
            "device_index": self.device,
            "pci_bus_id": f"{prop.pciDomainID:04x}:{prop.pciBusID:02x}:{prop.pciDeviceID:02x}",
            "driver_version": f"CUDA {drv // 1000}.{drv % 1000 // 10} (driver API)",
            "runtime_version": f"{rtv // 1000}.{rtv % 1000 // 10}",
            "cuda_bindings_version": cuda.bindings.__version__,
            "read_only_register_supported": self.read_only_register,
            "wait_mode": self.wait_mode,   # read back at open (cuDevicePrimaryCtxGetState)
            **self._pcie_link(),
        }

    def _pcie_link(self) -> dict:
        """The PCIe link as nvidia-smi reports it (generation and width, current and max), if it can."""
        import subprocess
        fields = ("pcie.link.gen.current", "pcie.link.width.current", "pcie.link.gen.max", "pcie.link.width.max",
                  "driver_version")
        try:
            r = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits",
                                "-i", str(self.device)], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return {}
        values = [v.strip() for v in r.stdout.strip().split(",")]
        if r.returncode != 0 or len(values) != len(fields):
            return {}
        keys = ("pcie_gen", "pcie_width", "pcie_gen_max", "pcie_width_max", "nvidia_driver")
        return {k: int(v) if v.isdigit() else v for k, v in zip(keys, values)}

    # -- locking -----------------------------------------------------------------------
    def lock(self, ptr: int, nbytes: int, *, read_only: bool = False) -> int:
        flags = self._rt.cudaHostRegisterDefault
        if read_only and self.read_only_register:
            flags |= self._rt.cudaHostRegisterReadOnly
        return self._register(ptr, nbytes, flags)

    def unlock(self, ptr: int, nbytes: int) -> None:
        self._do("cudaHostUnregister", self._rt.cudaHostUnregister, ptr, ptr=ptr)
        self.recorder.release("lock", ptr)

    def query(self, ptr: int) -> PointerInfo:
        attrs = self._do("cudaPointerGetAttributes", self._rt.cudaPointerGetAttributes, ptr, ptr=ptr)
        locked = attrs.type == self._TYPE_HOST
        return PointerInfo(ptr, locked, int(attrs.devicePointer) if locked else None,
                           detail=attrs.type.name)

    # -- memory ------------------------------------------------------------------------
    # -- kernels and latches -----------------------------------------------------------
    def prepare_kernels(self) -> None:
        """Compile the kernels with NVRTC for this device and load them (once; untimed)."""
        if self._functions:
            return
        from cuda.bindings import driver, nvrtc
        from ..kernels import KERNEL_SOURCE, REPLICA_KERNEL, SPIN_KERNEL
        rt = self._rt
        attr = rt.cudaDeviceAttr
        major = self._check("cudaDeviceGetAttribute", rt.cudaDeviceGetAttribute(attr.cudaDevAttrComputeCapabilityMajor, self.device))
        minor = self._check("cudaDeviceGetAttribute", rt.cudaDeviceGetAttribute(attr.cudaDevAttrComputeCapabilityMinor, self.device))

        def check_nvrtc(call, out):
            if int(out[0]) != 0:
                raise RuntimeCallFailed("cuda", call, int(out[0]), nvrtc.nvrtcGetErrorString(out[0])[1].decode())
            return out[1] if len(out) > 1 else None

        prog = check_nvrtc("nvrtcCreateProgram", nvrtc.nvrtcCreateProgram(KERNEL_SOURCE.encode(), b"pinpath.cu", 0, [], []))
        # no fused multiply-add: the kernel must round as numpy's reference does (kernels.replica_expected)
        opts = [f"--gpu-architecture=sm_{major}{minor}".encode(), b"--fmad=false"]
        err, = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if int(err) != 0:
            size = check_nvrtc("nvrtcGetProgramLogSize", nvrtc.nvrtcGetProgramLogSize(prog))
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(prog, log)
            raise RuntimeCallFailed("cuda", "nvrtcCompileProgram", int(err), log.decode(errors="replace").strip().splitlines()[0])
        size = check_nvrtc("nvrtcGetCUBINSize", nvrtc.nvrtcGetCUBINSize(prog))
        cubin = b" " * size
        check_nvrtc("nvrtcGetCUBIN", nvrtc.nvrtcGetCUBIN(prog, cubin))
        nvrtc.nvrtcDestroyProgram(prog)
        mod = self._check("cuModuleLoadData", driver.cuModuleLoadData(cubin))
        for name in (REPLICA_KERNEL, SPIN_KERNEL):
            self._functions[name] = self._check("cuModuleGetFunction", driver.cuModuleGetFunction(mod, name.encode()))
        self._driver = driver

    def kernel_handle(self) -> int:
        """The replica kernel's CUfunction as an integer (the native engine launches it)."""
        from ..kernels import REPLICA_KERNEL
        self.prepare_kernels()
        return int(self._functions[REPLICA_KERNEL])

    def _launch(self, name: str, q, grid: int, block: int, *args: np.ndarray) -> None:
        self.prepare_kernels()
        params = np.array([a.ctypes.data for a in args], dtype=np.uint64)
        stream = self._driver.CUstream(int(q))
        self._do("cuLaunchKernel", self._driver.cuLaunchKernel, self._functions[name], grid, 1, 1, block, 1, 1, 0,
                 stream, params.ctypes.data, 0)

    def launch_replica(self, q, pos_ptr: int, out_ptr: int, nw: int, nsplines: int) -> None:
        from ..kernels import REPLICA_KERNEL
        self._launch(REPLICA_KERNEL, q, nw, nsplines, np.array([pos_ptr], np.uint64), np.array([out_ptr], np.uint64),
                     np.array([nw], np.int32), np.array([nsplines], np.int32))

    def new_latch(self):
        """A flag in mapped pinned memory that a spin kernel polls."""
        ptr = int(self._check("cudaHostAlloc", self._rt.cudaHostAlloc(4, self._rt.cudaHostAllocMapped)))
        import ctypes
        ctypes.c_int.from_address(ptr).value = 0
        return ptr

    def hold(self, latch: int, q) -> None:
        """Enqueue a spin kernel that holds ``q`` until the latch is released (at most 10 s)."""
        from ..kernels import SPIN_KERNEL, SPIN_TIMEOUT_NS
        dev = int(self._check("cudaHostGetDevicePointer", self._rt.cudaHostGetDevicePointer(latch, 0)))
        self._launch(SPIN_KERNEL, q, 1, 1, np.array([dev], np.uint64), np.array([SPIN_TIMEOUT_NS], np.uint64))

    def release(self, latch: int) -> None:
        import ctypes
        ctypes.c_int.from_address(latch).value = 1

    def free_latch(self, latch: int) -> None:
        self.release(latch)
        self._check("cudaDeviceSynchronize", self._rt.cudaDeviceSynchronize())
        self._check("cudaFreeHost", self._rt.cudaFreeHost(latch))

    def close(self) -> None:
        self.recorder.close()
