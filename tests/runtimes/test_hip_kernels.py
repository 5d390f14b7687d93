"""The ROCm side of kernels and latches without an AMD GPU: the HIP kernel source beside the
CUDA one, a real hiprtc compile for gfx90a, the HIP launch and latch calls over fake natives,
the HSA latch as a copy dependency, and the overlap experiment without kernels.

hiprtc compiles for a named target without a device (ROCm 5.2 keeps it in libamdhip64 and
needs libamd-comgr2); those tests are marked ``needs("hiprtc")`` and skip, saying why, where
hip-python or hiprtc is missing. Header checks run once per header tree (``hip_tree``).
"""

from __future__ import annotations

import ctypes
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from pinpath import kernels
from pinpath.errors import NotAvailable, RuntimeCallFailed
from pinpath.experiments import overlap
from pinpath.runtimes import hip_
from pinpath.runtimes.hip_ import HipLatch, HipRuntime
from pinpath.runtimes.hsa_ import HsaLatch, HsaRuntime
from pinpath.runtimes.hsa_abi import CTYPES, HSA_CONSTANTS, Agent
from pinpath.schema import OVERLAP, check_frame
from pinpath.trace import Recorder
from pinpath.vocab import Capability, Direction

K = HSA_CONSTANTS
TARGET = "gfx90a"                       # MI200, known to ROCm 5.2's comgr
TARGET_ID = "gfx90a:sramecc+:xnack-"    # the form gcnArchName takes
_KERNEL = re.compile(r'extern "C" __global__ void (\w+)\(([^)]*)\)')
HIPRTC = pytest.mark.needs("hiprtc")


def _one_sentence(msg: str) -> bool:
    return "\n" not in msg and ". " not in msg.rstrip(".") and len(msg) < 300


def _signatures(source: str) -> dict[str, str]:
    return {name: " ".join(params.split()) for name, params in _KERNEL.findall(source)}


def _body(source: str, name: str) -> str:
    """The text of kernel ``name`` up to its closing brace at column 0."""
    start = source.index(f'extern "C" __global__ void {name}(')
    return source[start:source.index("\n}\n", start) + 3]


# -- the source --------------------------------------------------------------------------------
def test_hip_source_defines_the_cuda_kernels_with_the_same_parameters():
    cuda, hip = _signatures(kernels.KERNEL_SOURCE), _signatures(kernels.HIP_KERNEL_SOURCE)
    assert set(cuda) == {kernels.REPLICA_KERNEL, kernels.SPIN_KERNEL}
    assert hip == cuda


def test_hip_vgh_is_the_cuda_vgh_verbatim():
    name = kernels.REPLICA_KERNEL
    assert _body(kernels.HIP_KERNEL_SOURCE, name) == _body(kernels.KERNEL_SOURCE, name)


def test_hip_spin_reads_wall_clock_not_ptx():
    spin = _body(kernels.HIP_KERNEL_SOURCE, kernels.SPIN_KERNEL)
    assert "asm" not in spin and "globaltimer" not in spin and "wall_clock64()" in spin
    assert "%globaltimer" in kernels.KERNEL_SOURCE    # the CUDA source keeps its PTX timer
    default = re.search(rf"#define {kernels.HIP_WALL_CLOCK_HZ_MACRO} (\d+)ull", kernels.HIP_KERNEL_SOURCE)
    assert default and int(default.group(1)) == kernels.HIP_WALL_CLOCK_HZ_ASSUMED


def test_spin_limit_arithmetic_is_ns_times_rate_without_overflow():
    """The kernel's ns -> ticks split (whole seconds, then the rest), done in Python on u64."""
    def limit(ns, hz):
        a = (ns // 10**9 * hz) % 2**64
        b = (ns % 10**9 * hz % 2**64) // 10**9
        return (a + b) % 2**64
    for hz in (25_000_000, 100_000_000, 1_000_000_000):
        assert limit(kernels.SPIN_TIMEOUT_NS, hz) == kernels.SPIN_TIMEOUT_NS * hz // 10**9
        assert limit(10**9 - 1, hz) == (10**9 - 1) * hz // 10**9


# -- a real hiprtc compile, no device -------------------------------------------------------------
@pytest.fixture(scope="module")
def hiprtc():
    """hip-python's hiprtc, loaded (its tests are marked ``HIPRTC``)."""
    return hip_.load_hiprtc()


@pytest.fixture(scope="module")
def code_object(hiprtc):
    return hip_.compile_kernels(kernels.HIP_KERNEL_SOURCE, TARGET, None, recorder=Recorder(), hiprtc=hiprtc)


def _disassemble(objdump: str, code: bytes, tmp_path: Path, mcpu: str = TARGET) -> str:
    co = tmp_path / "pinpath.co"
    co.write_bytes(code)
    out = subprocess.run([objdump, "-d", f"--mcpu={mcpu}", str(co)], capture_output=True, text=True)
    if out.returncode != 0 or "<pinpath_vgh>:" not in out.stdout:
        pytest.skip(f"llvm-objdump cannot disassemble amdgcn here: {out.stderr.strip()[:200]}")
    return out.stdout


def _kernel_text(asm: str, name: str) -> str:
    start = asm.index(f"<{name}>:")
    nxt = asm.find(">:\n", start + len(name) + 3)
    return asm[start:nxt if nxt > 0 else len(asm)]


@HIPRTC
def test_hiprtc_compiles_both_kernels_for_gfx90a(code_object):
    assert code_object[:4] == b"\x7fELF"
    assert int.from_bytes(code_object[18:20], "little") == 0xE0     # e_machine EM_AMDGPU
    for name in (kernels.REPLICA_KERNEL, kernels.SPIN_KERNEL):
        assert f"{name}.kd".encode() in code_object                # a kernel descriptor each
    assert TARGET.encode() in code_object


@HIPRTC
def test_compile_is_recorded_once(hiprtc):
    rec = Recorder()
    hip_.compile_kernels(kernels.HIP_KERNEL_SOURCE, TARGET_ID, 25_000_000, recorder=rec, hiprtc=hiprtc)
    assert [c.call for c in rec.calls] == ["hiprtcCompileProgram"] and rec.calls[0].rc == 0
    assert HipRuntime.call_categories["hiprtcCompileProgram"] == "kernel"


@pytest.mark.needs("hiprtc", "llvm-objdump")
def test_vgh_is_not_contracted_into_fma(code_object, objdump, tmp_path):
    """numpy rounds the product, then the sum: a fused multiply-add would differ in the last bit."""
    vgh = _kernel_text(_disassemble(objdump, code_object, tmp_path), kernels.REPLICA_KERNEL)
    assert "v_mul_f64" in vgh and "v_add_f64" in vgh and "v_fma_f64" not in vgh


@pytest.mark.needs("hiprtc", "llvm-objdump")
def test_spin_polls_the_flag_against_the_realtime_counter(code_object, objdump, tmp_path):
    spin = _kernel_text(_disassemble(objdump, code_object, tmp_path), kernels.SPIN_KERNEL)
    assert "s_memrealtime" in spin                # wall_clock64 on gfx9, not s_memtime (clock64)
    assert "s_memtime " not in spin
    assert re.search(r"(flat|global)_load_dword .* glc", spin)   # the volatile flag read misses the cache


@HIPRTC
def test_compile_failure_names_the_first_log_line(hiprtc):
    with pytest.raises(RuntimeCallFailed) as e:
        hip_.compile_kernels('extern "C" __global__ void broken() { undefined_name; }', TARGET, None, hiprtc=hiprtc)
    err = e.value
    assert err.call == "hiprtcCompileProgram" and err.rc != 0
    assert err.rc_name.startswith("HIPRTC_ERROR_COMPILATION: ") and "undefined_name" in err.rc_name
    assert "\n" not in str(err)


# -- hipDeviceProp_t and the wall clock attribute against the headers of each release ---------------
def _run_c(tree, tmp_path: Path, body: str) -> str:
    src = tmp_path / "probe.c"
    src.write_text("#include <stddef.h>\n#include <stdio.h>\n#include <hip/hip_runtime_api.h>\n"
                   "#define STR2(x) #x\n#define STR(x) STR2(x)\nint main(void) {\n" + body + "\nreturn 0; }\n")
    built = subprocess.run(["cc", "-std=c11", "-D__HIP_PLATFORM_AMD__", f"-I{tree.include}", str(src), "-o",
                            str(tmp_path / "probe")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    return subprocess.run([str(tmp_path / "probe")], capture_output=True, text=True, check=True).stdout


def test_device_properties_abi_matches_the_version_branch(hip_tree, tmp_path):
    """Before 6.0 the backend reads gcnArchName raw at its offset in the old struct; from 6.0
    on it calls hip-python, whose hipGetDeviceProperties is the header's R0600 symbol."""
    name, offset, nbytes, total = _run_c(hip_tree, tmp_path, (
        'printf("%s %zu %zu %zu\\n", STR(hipGetDeviceProperties), offsetof(hipDeviceProp_t, gcnArchName), '
        "sizeof(((hipDeviceProp_t *)0)->gcnArchName), sizeof(hipDeviceProp_t));")).split()
    assert int(nbytes) == hip_._NAME_NBYTES
    if hip_tree.hip_version[:2] < (6, 0):
        assert name == "hipGetDeviceProperties" and int(offset) == hip_.GCN_ARCH_NAME_OFFSET_BEFORE_6_0
        assert int(total) <= hip_._PROP_NBYTES_BEFORE_6_0
    else:
        assert name == "hipGetDevicePropertiesR0600"


def _amd_attributes(api: str) -> list[str]:
    """The enumerators of hipDeviceAttribute_t's AMD-specific block, after its Begin marker."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", api, flags=re.S)
    block = text[text.index("hipDeviceAttributeAmdSpecificBegin"):text.index("hipDeviceAttributeAmdSpecificEnd")]
    return [item.split("=")[0].strip() for item in block.split(",")[1:] if item.strip()]


@pytest.mark.needs("hip-python")
def test_wall_clock_attribute_is_past_the_old_enum_or_the_same(hip_tree, tmp_path):
    """hip-python's hipDeviceAttributeWallClockRate must mean that attribute to each release's
    runtime, or be a value it does not know (then it answers an error and the rate is assumed)."""
    from hip import hip
    ours = int(hip.hipDeviceAttribute_t.hipDeviceAttributeWallClockRate)
    names = _amd_attributes((hip_tree.include / "hip" / "hip_runtime_api.h").read_text())
    if "hipDeviceAttributeWallClockRate" in names:
        assert int(_run_c(hip_tree, tmp_path, 'printf("%d\\n", (int)hipDeviceAttributeWallClockRate);')) == ours
    else:
        assert ours >= 10000 + len(names)


# -- the HIP backend over fake natives ---------------------------------------------------------------
class _FakeHip:
    """The hip-python calls prepare_kernels, launches and latches make; launches decode
    their kernelParams (void*[]) the way the runtime does."""

    hipSuccess = 0
    hipHostMallocMapped, hipHostMallocCoherent = 2, 0x40000000
    hipDeviceAttribute_t = SimpleNamespace(hipDeviceAttributeWallClockRate=10017)

    class hipDeviceProp_t:
        gcnArchName = TARGET_ID.encode() + b"\0" * 8

    def __init__(self, wall_clock_khz=100_000):
        self.log, self.launches, self.latches = [], [], {}
        self.wall_clock_khz = wall_clock_khz

    def hipGetDeviceProperties(self, props, device):
        self.log.append("hipGetDeviceProperties")
        return (0,)

    def hipDeviceGetAttribute(self, attr, device):
        self.log.append("hipDeviceGetAttribute")
        return (0, self.wall_clock_khz) if self.wall_clock_khz else (1, 0)

    def hipModuleLoadData(self, image):
        self.log.append("hipModuleLoadData")
        self.image = bytes(image)
        return 0, "module"

    def hipModuleGetFunction(self, module, name):
        self.log.append(f"hipModuleGetFunction {name.decode()}")
        return 0, f"fn:{name.decode()}"

    def hipModuleLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        name = f.split(":", 1)[1]
        types = {"pinpath_vgh": (ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int32, ctypes.c_int32),
                 "pinpath_spin": (ctypes.c_uint64, ctypes.c_uint64)}[name]
        addrs = (ctypes.c_uint64 * len(types)).from_address(params)
        args = tuple(t.from_address(a).value for t, a in zip(types, addrs))
        self.launches.append((name, (gx, gy, gz), (bx, by, bz), shared, stream, args, extra))
        return (0,)

    def hipHostMalloc(self, nbytes, flags):
        buf = ctypes.create_string_buffer(b"\xff" * nbytes, nbytes)
        self.latches[ctypes.addressof(buf)] = (buf, flags)
        self.log.append("hipHostMalloc")
        return 0, ctypes.addressof(buf)

    def hipHostGetDevicePointer(self, ptr, flags):
        return 0, ptr + 0x1000_0000_0000

    def hipDeviceSynchronize(self):
        self.log.append("hipDeviceSynchronize")
        return (0,)

    def hipHostFree(self, ptr):
        self.log.append("hipHostFree")
        return (0,)

    def hipModuleUnload(self, module):
        self.log.append("hipModuleUnload")
        return (0,)


def _bare_hip(fake: _FakeHip, version=(6, 2, 0)) -> HipRuntime:
    rt = HipRuntime.__new__(HipRuntime)
    rt._hip, rt.recorder, rt.device, rt.runtime_version = fake, Recorder(), 0, version
    rt._module, rt._functions, rt.kernel_build = None, {}, None
    return rt


@HIPRTC
def test_hip_prepare_kernels_targets_the_device_and_loads_both(hiprtc):
    fake = _FakeHip(wall_clock_khz=25_000)
    rt = _bare_hip(fake)
    rt.prepare_kernels()
    rt.prepare_kernels()    # once only
    assert [c.call for c in rt.recorder.calls] == ["hiprtcCompileProgram"]
    assert fake.log.count("hipModuleLoadData") == 1 and fake.image[:4] == b"\x7fELF"
    assert {f"hipModuleGetFunction {n}" for n in (kernels.REPLICA_KERNEL, kernels.SPIN_KERNEL)} <= set(fake.log)
    assert rt.kernel_build["target"] == TARGET_ID
    assert (rt.kernel_build["wall_clock_hz"], rt.kernel_build["wall_clock_hz_assumed"]) == (25_000_000, False)
    rt.close()
    assert fake.log[-1] == "hipModuleUnload"


def test_hip_wall_clock_rate_falls_back_to_the_assumed_rate():
    rt = _bare_hip(_FakeHip(wall_clock_khz=0))   # a runtime without the attribute answers an error
    assert rt.wall_clock_hz() is None


def test_hip_launch_replica_passes_grid_block_stream_and_arguments():
    fake = _FakeHip()
    rt = _bare_hip(fake)
    rt._functions = {kernels.REPLICA_KERNEL: "fn:pinpath_vgh", kernels.SPIN_KERNEL: "fn:pinpath_spin"}
    rt.launch_replica("stream-1", 0x7000_0000, 0x7100_0000, 16, kernels.NSPLINES)
    name, grid, block, shared, stream, args, extra = fake.launches[0]
    assert (name, grid, block, shared, stream, extra) == ("pinpath_vgh", (16, 1, 1), (kernels.NSPLINES, 1, 1), 0,
                                                          "stream-1", None)
    assert args == (0x7000_0000, 0x7100_0000, 16, kernels.NSPLINES)
    assert rt.recorder.calls[-1].call == "hipModuleLaunchKernel"
    assert rt.call_categories["hipModuleLaunchKernel"] == "kernel"


def test_hip_latch_is_a_coherent_mapped_flag_held_by_a_spin_kernel():
    fake = _FakeHip()
    rt = _bare_hip(fake)
    rt._functions = {kernels.REPLICA_KERNEL: "fn:pinpath_vgh", kernels.SPIN_KERNEL: "fn:pinpath_spin"}
    latch = rt.new_latch()
    assert isinstance(latch, HipLatch)
    flags = fake.latches[latch.host][1]
    assert flags & fake.hipHostMallocMapped and flags & fake.hipHostMallocCoherent
    flag = ctypes.c_int.from_address(latch.host)
    assert flag.value == 0
    rt.hold(latch, "stream-2")
    name, grid, block, _, stream, args, _ = fake.launches[0]
    assert (name, grid, block, stream) == ("pinpath_spin", (1, 1, 1), (1, 1, 1), "stream-2")
    assert args == (latch.device, kernels.SPIN_TIMEOUT_NS)      # the device alias, the timeout in ns
    rt.release(latch)
    assert flag.value == 1
    fake.log.clear()
    rt.free_latch(latch)
    assert fake.log == ["hipDeviceSynchronize", "hipHostFree"]   # no spin kernel is left reading it


def test_hip_capabilities():
    assert not set(HipRuntime.unavailable) & {Capability.KERNELS, Capability.LATCH}


# -- the HSA latch over fake natives -----------------------------------------------------------------
class _FakeHsa:
    """Signal natives that remember values, dependencies, stores, waits and destroys."""

    def __init__(self):
        self.next, self.values, self.copies, self.stores, self.waits, self.destroyed = 100, {}, [], [], [], []
        self.events = []
        self.fail_copy = False

    def create(self, value, n, consumers, attrs, out):
        self.next += 1
        out._obj.handle = self.next
        self.values[self.next] = value
        return 0

    def copy(self, dst, dst_agent, src, src_agent, nbytes, ndeps, deps, sig):
        if ndeps:
            CTYPES["const hsa_signal_t *"].from_param(deps)   # what the real binding would accept
        self.copies.append((ndeps, [deps[i].handle for i in range(ndeps)] if ndeps else [], sig.handle))
        self.events.append(("copy", sig.handle))
        return 0x1008 if self.fail_copy else 0

    def store(self, sig, value):
        self.stores.append((sig.handle, value))
        self.events.append(("store", sig.handle, value))
        self.values[sig.handle] = value

    def wait(self, sig, cond, compare, timeout, state):
        assert (cond, compare) == (K["HSA_SIGNAL_CONDITION_LT"], 1)
        self.waits.append(sig.handle)
        self.events.append(("wait", sig.handle))
        return 0

    def destroy(self, sig):
        self.destroyed.append(sig.handle)
        self.events.append(("destroy", sig.handle))
        return 0


def _bare_hsa() -> tuple[HsaRuntime, _FakeHsa]:
    f = _FakeHsa()
    rt = HsaRuntime.__new__(HsaRuntime)
    rt.recorder, rt._profiling, rt._initialised = Recorder(), False, False
    rt._f = SimpleNamespace(hsa_amd_signal_create=f.create, hsa_amd_memory_async_copy=f.copy,
                            hsa_signal_store_screlease=f.store, hsa_signal_wait_scacquire=f.wait,
                            hsa_signal_destroy=f.destroy)
    rt._gpu, rt._cpu = Agent(0xD0), Agent(0xC0)
    return rt, f


def test_hsa_latch_is_a_signal_at_one():
    rt, f = _bare_hsa()
    latch = rt.new_latch()
    assert isinstance(latch, HsaLatch) and f.values[latch.signal.handle] == 1


def test_hsa_copy_after_hold_lists_the_latch_among_its_dependencies():
    rt, f = _bare_hsa()
    q1, q2 = rt.new_queue(), rt.new_queue()
    rt.copy_async(0x10, 0x20, 64, Direction.H2D, q2)        # q2 already has a copy in flight
    latch = rt.new_latch()
    lsig = latch.signal.handle
    rt.hold(latch, q1)
    rt.hold(latch, q2)
    rt.hold(latch, q2)                                        # twice on one queue: one dependency
    rt.copy_async(0x10, 0x20, 64, Direction.H2D, q1)
    rt.copy_async(0x20, 0x10, 64, Direction.D2H, q1)
    rt.copy_async(0x10, 0x20, 64, Direction.H2D, q2)
    first_q2, _, h2d_q1, d2h_q1, h2d_q2 = 101, lsig, 103, 104, 105
    assert f.copies == [
        (0, [], first_q2),
        (1, [lsig], h2d_q1),                 # the first copy after hold: the latch alone
        (1, [h2d_q1], d2h_q1),               # the next one: only the previous copy
        (2, [first_q2, lsig], h2d_q2),       # the previous copy and the latch
    ]
    assert latch.users == [(q1, 0), (q2, 1)] and q1.holds == q2.holds == []
    rt.release(latch)
    assert f.stores == [(lsig, 0)]
    rec = rt.recorder.calls[-1]
    assert rec.call == "hsa_signal_store_screlease" and rt.call_categories[rec.call] == "latch"
    rt.wait(q1)
    f.events.clear()
    rt.free_latch(latch)
    # q1 is done; q2's held copy still pending: waited for (not consumed) before the destroy
    assert f.events == [("store", lsig, 0), ("wait", h2d_q2), ("destroy", lsig)]
    assert [i for i, _ in q2.pending] == [0, 1]
    rt.wait(q2)
    assert sorted(f.destroyed) == sorted([lsig, first_q2, h2d_q1, d2h_q1, h2d_q2])


def test_hsa_hold_without_a_copy_is_dropped_at_free():
    rt, f = _bare_hsa()
    q = rt.new_queue()
    latch = rt.new_latch()
    rt.hold(latch, q)
    rt.free_latch(latch)
    assert q.holds == [] and f.waits == [] and f.destroyed == [latch.signal.handle]
    rt.copy_async(0x10, 0x20, 64, Direction.H2D, q)
    assert f.copies[-1][:2] == (0, [])    # a destroyed signal never becomes a dependency


def test_hsa_failed_copy_keeps_the_hold_for_the_next():
    rt, f = _bare_hsa()
    q = rt.new_queue()
    latch = rt.new_latch()
    rt.hold(latch, q)
    f.fail_copy = True
    with pytest.raises(RuntimeCallFailed):
        rt.copy_async(0x10, 0x20, 64, Direction.H2D, q)
    f.fail_copy = False
    rt.copy_async(0x10, 0x20, 64, Direction.H2D, q)
    assert f.copies[-1][1] == [latch.signal.handle] and latch.users == [(q, 0)]
    rt.wait(q)
    rt.free_latch(latch)


def test_hsa_has_a_latch_but_no_kernels():
    assert Capability.KERNELS in HsaRuntime.unavailable and Capability.LATCH not in HsaRuntime.unavailable
    rt, _ = _bare_hsa()
    for call in (rt.prepare_kernels, lambda: rt.launch_replica(rt.new_queue(), 0, 0, 1, 1)):
        with pytest.raises(NotAvailable) as e:   # the declared reason, as need() gives it
            call()
        assert str(e.value) == f"hsa: kernels not available: {HsaRuntime.unavailable[Capability.KERNELS]}"
        assert _one_sentence(str(e.value)), str(e.value)


# -- overlap without kernels (on the host platform, kernels switched off) ----------------------------
def _small_overlap(rt):
    return check_frame(overlap(rt, nbytes=1 << 16, chains=3, queues=(1, 2), repeats=1), OVERLAP)


def test_overlap_without_kernels_copies_the_input_back(host_rt):
    def no_kernel(*a, **k):
        raise AssertionError("overlap launched a kernel on a runtime without kernels")
    host_rt.unavailable = {Capability.KERNELS: "switched off for this test"}
    host_rt.launch_replica = host_rt.prepare_kernels = no_kernel
    df = _small_overlap(host_rt)
    assert len(df) == 2 and (~df.kernel).all() and df.verified.all()
    assert (df.nbytes == 1 << 16).all() and (df.wall_ns > 0).all()


def test_overlap_with_kernels_says_so(host_rt):
    df = _small_overlap(host_rt)
    assert df.kernel.all() and df.verified.all()


def test_overlap_without_a_latch_says_why(host_rt):
    host_rt.unavailable = {Capability.LATCH: "switched off for this test"}
    with pytest.raises(NotAvailable) as e:
        overlap(host_rt, nbytes=1 << 16, chains=1, queues=(1,), repeats=1)
    assert "latch" in str(e.value) and _one_sentence(str(e.value))
