"""The HIP backend without an AMD GPU: hip-python against the system's libamdhip64, the
refusal to start (with the library, and with it missing), the hipMemoryType numbering by
version, the raw struct read, and the headers of every ROCm release at hand.

Header checks compile C at test time, once per header tree (``hip_tree``: the system's and
those under ``PINPATH_ROCM_HEADERS``; see conftest.py); tests that need hip-python or
libamdhip64 are marked ``needs(...)`` and skip, saying why, where either is absent.
"""

from __future__ import annotations

import ctypes
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pinpath.errors import RuntimeUnavailable
from pinpath.runtimes import hip_
from pinpath.runtimes.hip_ import (
    MEMORY_TYPES_6_1, MEMORY_TYPES_BEFORE_6_1, HipRuntime, PointerAttributes, dlopen_reason, memory_type_names,
    parse_hip_version, plain, pointer_answer,
)
from pinpath.runtimes.streams import StreamRuntime

#: the HIP calls the backend makes through hip-python, as C prototypes (ROCm 5.2 to 7.2 alike);
#: hip-python is generated from one release and calls whichever library the system has
HIP_CALLS: dict[str, tuple[str, tuple[str, ...]]] = {
    "hipRuntimeGetVersion": ("hipError_t", ("int *",)),
    "hipDriverGetVersion": ("hipError_t", ("int *",)),
    "hipGetDeviceCount": ("hipError_t", ("int *",)),
    "hipSetDevice": ("hipError_t", ("int",)),
    "hipGetDevice": ("hipError_t", ("int *",)),
    "hipGetErrorName": ("const char *", ("hipError_t",)),
    "hipDeviceGetName": ("hipError_t", ("char *", "int", "int")),
    "hipDeviceGetPCIBusId": ("hipError_t", ("char *", "int", "int")),
    "hipDeviceGetAttribute": ("hipError_t", ("int *", "hipDeviceAttribute_t", "int")),
    "hipHostRegister": ("hipError_t", ("void *", "size_t", "unsigned int")),
    "hipHostUnregister": ("hipError_t", ("void *",)),
    "hipPointerGetAttributes": ("hipError_t", ("hipPointerAttribute_t *", "const void *")),
    "hipHostMalloc": ("hipError_t", ("void **", "size_t", "unsigned int")),
    "hipHostFree": ("hipError_t", ("void *",)),
    "hipHostGetDevicePointer": ("hipError_t", ("void **", "void *", "unsigned int")),
    "hipMalloc": ("hipError_t", ("void **", "size_t")),
    "hipFree": ("hipError_t", ("void *",)),
    "hipMemset": ("hipError_t", ("void *", "int", "size_t")),
    "hipMemcpy": ("hipError_t", ("void *", "const void *", "size_t", "hipMemcpyKind")),
    "hipMemcpyAsync": ("hipError_t", ("void *", "const void *", "size_t", "hipMemcpyKind", "hipStream_t")),
    "hipStreamCreateWithFlags": ("hipError_t", ("hipStream_t *", "unsigned int")),
    "hipStreamSynchronize": ("hipError_t", ("hipStream_t",)),
    "hipStreamDestroy": ("hipError_t", ("hipStream_t",)),
    "hipDeviceSynchronize": ("hipError_t", ()),
    "hipEventCreate": ("hipError_t", ("hipEvent_t *",)),
    "hipEventRecord": ("hipError_t", ("hipEvent_t", "hipStream_t")),
    "hipEventElapsedTime": ("hipError_t", ("float *", "hipEvent_t", "hipEvent_t")),
    "hipEventDestroy": ("hipError_t", ("hipEvent_t",)),
    "hipModuleLoadData": ("hipError_t", ("hipModule_t *", "const void *")),
    "hipModuleGetFunction": ("hipError_t", ("hipFunction_t *", "hipModule_t", "const char *")),
    "hipModuleLaunchKernel": ("hipError_t", ("hipFunction_t", *["unsigned int"] * 7, "hipStream_t", "void **",
                                             "void **")),
    "hipModuleUnload": ("hipError_t", ("hipModule_t",)),
}


def _one_sentence(msg: str) -> bool:
    return "\n" not in msg and ". " not in msg.rstrip(".") and len(msg) < 300


def _cc(tree, src: Path, *, out: Path | None = None, extra=()) -> subprocess.CompletedProcess:
    args = ["cc", "-std=c11", "-Wall", "-Werror", "-D__HIP_PLATFORM_AMD__", f"-I{tree.include}", *extra, str(src)]
    return subprocess.run(args + (["-o", str(out)] if out else ["-fsyntax-only"]), capture_output=True, text=True)


# -- pure logic --------------------------------------------------------------------------------
@pytest.mark.parametrize("version, parts", [
    (50221153, (5, 2, 21153)),     # Debian bookworm's ROCm 5.2.3
    (60140091, (6, 1, 40091)),
    (70000000, (7, 0, 0)),
])
def test_parse_hip_version(version, parts):
    assert parse_hip_version(version) == parts


def test_parse_hip_version_rejects_negative():
    with pytest.raises(ValueError):
        parse_hip_version(-1)


@pytest.mark.parametrize("major, minor, table", [
    (5, 2, MEMORY_TYPES_BEFORE_6_1), (6, 0, MEMORY_TYPES_BEFORE_6_1),
    (6, 1, MEMORY_TYPES_6_1), (6, 4, MEMORY_TYPES_6_1), (7, 0, MEMORY_TYPES_6_1),
])
def test_memory_type_table_by_version(major, minor, table):
    assert memory_type_names(major, minor) is table


@pytest.mark.parametrize("raw, table, locked, detail", [
    (0, MEMORY_TYPES_BEFORE_6_1, True, "hipMemoryTypeHost"),
    (1, MEMORY_TYPES_BEFORE_6_1, False, "hipMemoryTypeDevice"),
    (0, MEMORY_TYPES_6_1, False, "hipMemoryTypeUnregistered"),   # same raw value, other meaning
    (1, MEMORY_TYPES_6_1, True, "hipMemoryTypeHost"),
    (2, MEMORY_TYPES_6_1, False, "hipMemoryTypeDevice"),
    (99, MEMORY_TYPES_6_1, False, "hipMemoryType 99"),
])
def test_pointer_answer_reads_raw_type_by_table(raw, table, locked, detail):
    attrs = PointerAttributes(type=raw, device=0, devicePointer=0xBEEF000, hostPointer=0x1000)
    got = pointer_answer(0x1000, attrs, table)
    assert (got.locked, got.detail) == (locked, detail)
    assert got.dev_ptr == (0xBEEF000 if locked else None)


def test_plain_text_has_no_bytes_reprs():
    raw = "failed to dlopen 'b'libamdhip64.so'': b'libamdhip64.so: cannot open shared object file: No such file'"
    assert plain(raw) == ("failed to dlopen 'libamdhip64.so': libamdhip64.so: cannot open shared object file: "
                          "No such file")
    assert plain(b"hipErrorNoDevice") == "hipErrorNoDevice" and plain("bob's b'x'") == "bob's x"
    assert dlopen_reason(raw) is None     # not found: the caller says so in its own words
    assert dlopen_reason("failed to dlopen 'b'x.so'': b'x.so: invalid ELF header\n'") == "x.so: invalid ELF header"


# -- the headers of each release ----------------------------------------------------------------
@pytest.fixture(scope="module")
def header(hip_tree, tmp_path_factory):
    """Layout and constants from this tree's HIP headers, compiled as C."""
    major, minor, patch = hip_tree.hip_version
    api = (hip_tree.include / "hip" / "hip_runtime_api.h").read_text()
    first = "memoryType" if (major, minor) < (6, 1) else "type"   # the member's name before 6.1
    types = [n for n in memory_type_names(major, minor).values() if re.search(rf"\b{n}\b", api)]
    consts = ["hipSuccess", "hipErrorInvalidValue", "hipErrorNoDevice", "hipErrorHostMemoryAlreadyRegistered",
              "hipMemcpyHostToDevice", "hipMemcpyDeviceToHost", "hipHostRegisterDefault", "hipHostMallocDefault",
              "hipHostMallocMapped", "hipHostMallocCoherent", "hipStreamNonBlocking", *types]
    body = [f'printf("offsetof type %zu\\n", offsetof(hipPointerAttribute_t, {first}));']
    body += [f'printf("offsetof {m} %zu\\n", offsetof(hipPointerAttribute_t, {m}));'
             for m, _ in PointerAttributes._fields_ if m != "type"]
    body += ['printf("sizeof %zu\\n", sizeof(hipPointerAttribute_t));']
    body += [f'printf("const {c} %lld\\n", (long long)({c}));' for c in consts]
    tmp = tmp_path_factory.mktemp("hip_layout")
    src = tmp / "hip_layout.c"
    src.write_text("#include <stddef.h>\n#include <stdio.h>\n#include <hip/hip_runtime_api.h>\n"
                   "int main(void) {\n" + "\n".join(body) + "\nreturn 0;\n}\n")
    built = _cc(hip_tree, src, out=tmp / "hip_layout")
    assert built.returncode == 0, built.stderr
    out = subprocess.run([str(tmp / "hip_layout")], capture_output=True, text=True, check=True).stdout
    got = {}
    for line in out.splitlines():
        *key, value = line.split()
        got[" ".join(key)] = int(value)
    return {"tree": hip_tree, "version": (major, minor, patch), "types": types, "values": got, "tmp": tmp}


def test_headers_come_from_the_tree(header):
    tree = header["tree"]
    src = header["tmp"] / "deps.c"
    src.write_text("#include <hip/hip_runtime_api.h>\n")
    deps = subprocess.run(["cc", "-M", "-D__HIP_PLATFORM_AMD__", f"-I{tree.include}", str(src)], capture_output=True,
                          text=True, check=True).stdout.replace("\\\n", " ").split()
    hip = [d for d in deps if "/hip/" in d]
    assert hip and all(Path(d).resolve().is_relative_to(tree.include.resolve()) for d in hip), hip


def test_pointer_attributes_layout_matches_header(header):
    v = header["values"]
    assert ctypes.sizeof(PointerAttributes) == v["sizeof"] == 32
    for m, _ in PointerAttributes._fields_:
        assert getattr(PointerAttributes, m).offset == v[f"offsetof {m}"], m


def test_memory_type_table_matches_header(header):
    table = memory_type_names(*header["version"][:2])
    assert "hipMemoryTypeHost" in header["types"] and "hipMemoryTypeDevice" in header["types"]
    for value, name in table.items():
        if name in header["types"]:
            assert header["values"][f"const {name}"] == value, name


def test_error_codes_match_header(header):
    v = header["values"]
    assert (v["const hipSuccess"], v["const hipErrorInvalidValue"], v["const hipErrorNoDevice"]) == (
        hip_.HIP_SUCCESS, hip_.HIP_ERROR_INVALID_VALUE, hip_.HIP_ERROR_NO_DEVICE)
    assert v["const hipErrorHostMemoryAlreadyRegistered"] == StreamRuntime.ALREADY_REGISTERED


def test_calls_have_the_same_prototype_in_every_release(header):
    """Each call the backend makes, assigned to a pointer of its 5.2 prototype: a changed
    prototype is an error, and so is a deprecation of one of them."""
    lines = ["#include <stddef.h>", "#include <hip/hip_runtime_api.h>"]
    lines += [f"{ret} (*p_{sym})({', '.join(params) or 'void'}) = {sym};" for sym, (ret, params) in HIP_CALLS.items()]
    src = header["tmp"] / "hip_calls.c"
    src.write_text("\n".join(lines) + "\n")
    out = _cc(header["tree"], src, extra=["-Werror=incompatible-pointer-types", "-Werror=deprecated-declarations"])
    assert out.returncode == 0, out.stderr


@pytest.mark.needs("hip-python")
def test_hip_python_constants_agree_with_header(header):
    """hip-python is generated from another ROCm release; the values the backend takes
    from it must be those of every release it may meet."""
    from hip import hip
    v = header["values"]
    assert int(hip.hipMemcpyKind.hipMemcpyHostToDevice) == v["const hipMemcpyHostToDevice"]
    assert int(hip.hipMemcpyKind.hipMemcpyDeviceToHost) == v["const hipMemcpyDeviceToHost"]
    assert hip.hipHostRegisterDefault == v["const hipHostRegisterDefault"]
    assert hip.hipHostMallocDefault == v["const hipHostMallocDefault"]
    assert hip.hipHostMallocMapped == v["const hipHostMallocMapped"]
    assert hip.hipHostMallocCoherent == v["const hipHostMallocCoherent"]
    assert hip.hipStreamNonBlocking == v["const hipStreamNonBlocking"]
    assert int(hip.hipError_t.hipErrorNoDevice) == v["const hipErrorNoDevice"]
    assert int(hip.hipError_t.hipErrorHostMemoryAlreadyRegistered) == v["const hipErrorHostMemoryAlreadyRegistered"]


# -- hip-python against the system library, and refusing to start --------------------------------
@pytest.mark.needs("libamdhip64")
def test_hip_python_loads_the_system_runtime(system_hip_tree):
    from hip import hip
    err, version = hip.hipRuntimeGetVersion()
    assert int(err) == 0
    assert parse_hip_version(int(version)) == system_hip_tree.hip_version   # the library matches its headers


@pytest.mark.needs("libamdhip64", "no-kfd")
def test_no_gpu_refuses_in_one_sentence():
    with pytest.raises(RuntimeUnavailable) as e:
        HipRuntime()
    msg = str(e.value)
    assert msg.startswith("hip runtime unavailable: ") and _one_sentence(msg), msg
    assert "hipErrorNoDevice (100)" in msg and "b'" not in msg


def _in_fresh_python(code: str) -> str:
    """Run ``code`` in a new interpreter (hip-python opens its libraries once a process)
    and return what it printed."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


_REFUSAL = """
import hip.chip, hip.chiprtc
{setup}
from pinpath.errors import RuntimeUnavailable
from pinpath.runtimes.hip_ import HipRuntime, load_hiprtc
try:
    {call}()
except RuntimeUnavailable as e:
    print(e)
"""


@pytest.mark.needs("hip-python")
def test_missing_library_is_one_sentence_without_reprs():
    """What the user sees where libamdhip64 is not installed, made missing here whatever the
    machine has: hip-python is pointed at a library name that cannot resolve."""
    msg = _in_fresh_python(_REFUSAL.format(setup="hip.chip.DLL = b'libamdhip64.so.0-not-there'", call="HipRuntime"))
    assert msg == ("hip runtime unavailable: libamdhip64.so.0-not-there not found on the library path "
                   "(hip-python opens it at its first call)")


@pytest.mark.needs("hip-python")
def test_unloadable_library_names_the_loaders_reason(tmp_path):
    broken = tmp_path / "libamdhip64.so"
    broken.write_text("not an ELF file\n")
    msg = _in_fresh_python(_REFUSAL.format(setup=f"hip.chip.DLL = {str(broken).encode()!r}", call="HipRuntime"))
    assert msg.startswith(f"hip runtime unavailable: hip-python cannot load {broken} ({broken}: ")
    assert "b'" not in msg and 'b"' not in msg and _one_sentence(msg), msg


@pytest.mark.needs("hip-python")
def test_missing_hiprtc_is_one_sentence_without_reprs():
    msg = _in_fresh_python(_REFUSAL.format(
        setup="hip.chiprtc.DLL = b'libhiprtc.so.0-not-there'; hip.chip.DLL = b'libamdhip64.so.0-not-there'",
        call="load_hiprtc"))
    assert msg == ("hip kernels unavailable: neither libhiprtc.so.0-not-there nor libamdhip64.so.0-not-there "
                   "is on the library path to provide hiprtc")


def test_missing_hip_python_is_one_sentence(monkeypatch):
    monkeypatch.setitem(sys.modules, "hip", None)     # makes ``from hip import hip`` fail
    with pytest.raises(RuntimeUnavailable) as e:
        HipRuntime()
    msg = str(e.value)
    assert msg.startswith("hip runtime unavailable: hip-python is not installed") and _one_sentence(msg), msg


def test_error_names_are_text_whatever_hip_python_returns():
    """hip-python hands back names as its CStr (str() decodes) or, in some releases, bytes."""
    class FakeHip:
        class hipError_t(int):
            name = "hipErrorNoDevice"
        hipGetErrorName = staticmethod(lambda code: (0, b"hipErrorNoDevice"))
    rt = HipRuntime.__new__(HipRuntime)
    rt._hip = FakeHip
    assert rt._name(100) == "hipErrorNoDevice"
