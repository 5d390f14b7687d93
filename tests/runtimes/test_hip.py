"""The HIP backend without an AMD GPU: hip-python against the system's libamdhip64, the
refusal to start, the hipMemoryType numbering by version, and the raw struct read.

Header checks compile C at test time; they skip when cc or libamdhip64-dev is absent.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pinpath.errors import RuntimeUnavailable
from pinpath.runtimes import hip_
from pinpath.runtimes.hip_ import (
    MEMORY_TYPES_6_1, MEMORY_TYPES_BEFORE_6_1, HipRuntime, PointerAttributes, memory_type_names,
    parse_hip_version, pointer_answer,
)


def _hip_include_dir() -> str:
    for d in ("/usr/include", "/opt/rocm/include", os.path.join(os.environ.get("ROCM_PATH", "/opt/rocm"), "include")):
        if os.path.exists(os.path.join(d, "hip", "hip_runtime_api.h")):
            return d
    pytest.skip("hip/hip_runtime_api.h not found (apt-get install libamdhip64-dev)")


def _header_version(include: str) -> tuple[int, int, int]:
    text = Path(include, "hip", "hip_version.h").read_text()
    part = [int(re.search(rf"#define HIP_VERSION_{k} (\d+)", text).group(1)) for k in ("MAJOR", "MINOR", "PATCH")]
    return part[0], part[1], part[2]


def _hip_python():
    try:
        from hip import hip
    except ImportError:
        pytest.skip("hip-python is not installed (pip install hip-python==6.2.0.499.16)")
    return hip


def _one_sentence(msg: str) -> bool:
    return "\n" not in msg and ". " not in msg.rstrip(".") and len(msg) < 300


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


# -- the real headers --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def header(tmp_path_factory):
    """Layout and constants from the system's HIP headers, compiled as C."""
    include = _hip_include_dir()
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc) on PATH")
    major, minor, patch = _header_version(include)
    api = Path(include, "hip", "hip_runtime_api.h").read_text()
    first = "memoryType" if (major, minor) < (6, 1) else "type"   # the member's name before 6.1
    types = [n for n in memory_type_names(major, minor).values() if re.search(rf"\b{n}\b", api)]
    consts = ["hipSuccess", "hipErrorInvalidValue", "hipErrorNoDevice", "hipMemcpyHostToDevice",
              "hipMemcpyDeviceToHost", "hipHostRegisterDefault", "hipHostMallocDefault", "hipStreamNonBlocking",
              *types]
    body = [f'printf("offsetof type %zu\\n", offsetof(hipPointerAttribute_t, {first}));']
    body += [f'printf("offsetof {m} %zu\\n", offsetof(hipPointerAttribute_t, {m}));'
             for m, _ in PointerAttributes._fields_ if m != "type"]
    body += ['printf("sizeof %zu\\n", sizeof(hipPointerAttribute_t));']
    body += [f'printf("const {c} %lld\\n", (long long)({c}));' for c in consts]
    tmp = tmp_path_factory.mktemp("hip_layout")
    src = tmp / "hip_layout.c"
    src.write_text("#include <stddef.h>\n#include <stdio.h>\n#include <hip/hip_runtime_api.h>\n"
                   "int main(void) {\n" + "\n".join(body) + "\nreturn 0;\n}\n")
    built = subprocess.run(["cc", "-std=c11", "-D__HIP_PLATFORM_AMD__", f"-I{include}", str(src),
                            "-o", str(tmp / "hip_layout")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    out = subprocess.run([str(tmp / "hip_layout")], capture_output=True, text=True, check=True).stdout
    got = {}
    for line in out.splitlines():
        *key, value = line.split()
        got[" ".join(key)] = int(value)
    return {"version": (major, minor, patch), "types": types, "values": got}


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


def test_hip_python_constants_agree_with_system_header(header):
    """hip-python is generated from another ROCm release; the values the backend takes
    from it must be the system header's."""
    hip = _hip_python()
    v = header["values"]
    assert int(hip.hipMemcpyKind.hipMemcpyHostToDevice) == v["const hipMemcpyHostToDevice"]
    assert int(hip.hipMemcpyKind.hipMemcpyDeviceToHost) == v["const hipMemcpyDeviceToHost"]
    assert hip.hipHostRegisterDefault == v["const hipHostRegisterDefault"]
    assert hip.hipHostMallocDefault == v["const hipHostMallocDefault"]
    assert hip.hipStreamNonBlocking == v["const hipStreamNonBlocking"]
    assert int(hip.hipError_t.hipErrorNoDevice) == v["const hipErrorNoDevice"]


# -- hip-python against the system library, and refusing to start --------------------------------
def test_hip_python_loads_the_system_runtime(header):
    hip = _hip_python()
    err, version = hip.hipRuntimeGetVersion()
    assert int(err) == 0
    assert parse_hip_version(int(version)) == header["version"]   # the library matches its headers


def test_no_gpu_refuses_in_one_sentence():
    try:
        import hip  # noqa: F401
        installed = True
    except ImportError:
        installed = False
    if os.path.exists("/dev/kfd"):
        pytest.skip("an AMD GPU (/dev/kfd) is present: this test is for machines without one")
    with pytest.raises(RuntimeUnavailable) as e:
        HipRuntime()
    msg = str(e.value)
    assert msg.startswith("hip runtime unavailable: ") and _one_sentence(msg), msg
    assert ("hipErrorNoDevice (100)" in msg) if installed else ("hip-python is not installed" in msg)


def test_missing_hip_python_is_one_sentence(monkeypatch):
    monkeypatch.setitem(sys.modules, "hip", None)     # makes ``from hip import hip`` fail
    with pytest.raises(RuntimeUnavailable) as e:
        HipRuntime()
    msg = str(e.value)
    assert msg.startswith("hip runtime unavailable: hip-python is not installed") and _one_sentence(msg), msg
