"""Finding a C compiler and, per platform, the headers and library the native code compiles
against (``toolchain(platform) -> Toolchain``; NativeUnavailable in one sentence where something is missing).

The CUDA build compiles against ``cuda_runtime_api.h`` and links ``libcudart`` from the same
place (with an rpath to it), looked up in this order: ``$PINPATH_CUDA_HOME``; the
``nvidia/cu13``, ``nvidia/cu12`` or ``nvidia/cuda_runtime`` folders of the wheels on
``sys.path`` (nvidia-cuda-runtime; CUDA 13's headers also need nvidia-cuda-crt's
``crt/host_defines.h``); ``$CUDA_HOME``/``$CUDA_PATH``; the toolkit above ``nvcc``;
``/usr/local/cuda``. That libcudart is a second CUDA runtime in the process beside
cuda.bindings' own (cuda-bindings 13 carries the runtime inside its extension module); both
use the device's primary context ("there exists a one to one relationship between CUDA
devices in the CUDA Runtime API and CUcontexts in the CUDA Driver API within a process",
CUDA Runtime API, "Interactions with the CUDA Driver API"), and a cudaStream_t is a CUstream,
so registrations, pointers and streams made on one side are valid on the other.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .errors import PinpathError

__all__ = ["PLATFORMS", "NativeUnavailable", "Toolchain", "compiler", "toolchain"]

PLATFORMS = ("cuda", "hsa", "host")
_DEFINE = {"cuda": "-DPINPATH_CUDA", "hsa": "-DPINPATH_HSA", "host": "-DPINPATH_HOST"}


class NativeUnavailable(PinpathError):
    """The native timing library cannot be built, loaded or started for a platform
    (the message is one sentence: what is missing and how to get it)."""


# -- the compiler, headers and libraries ------------------------------------------------
@dataclass(frozen=True)
class Toolchain:
    """How to compile against one runtime: compiler, flags, and where they came from."""
    platform: str
    cc: str
    cc_version: str
    cflags: tuple[str, ...]
    ldflags: tuple[str, ...]
    include_dirs: tuple[str, ...] = ()
    library: str | None = None
    origin: str = ""         #: where the headers were found (wheel, CUDA_HOME, nvcc, ...)
    notes: tuple[str, ...] = field(default=(), compare=False)


@lru_cache(maxsize=None)
def _cc_version(cc: str) -> str:
    try:
        r = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return (r.stdout.strip().splitlines() or ["unknown"])[0]


def compiler() -> str:
    """The C compiler: $CC, else cc or gcc on PATH; NativeUnavailable in one sentence."""
    cc = os.environ.get("CC", "").split()
    found = shutil.which(cc[0]) if cc else (shutil.which("cc") or shutil.which("gcc"))
    if found is None:
        raise NativeUnavailable(f"no C compiler ({cc[0] if cc else 'cc'}) on PATH (apt-get install gcc)")
    return found


def _site_dirs() -> list[Path]:
    """sys.path entries and site-packages folders, in import order, each once."""
    seen, out = set(), []
    extra = []
    try:
        extra = [*site.getsitepackages(), site.getusersitepackages()]
    except AttributeError:           # a virtualenv's old site module
        pass
    for d in (*sys.path, *extra):
        p = Path(d or ".").resolve()
        if p not in seen and p.is_dir():
            seen.add(p)
            out.append(p)
    return out


_CUDA_WHEEL_DIRS = ("nvidia/cu13", "nvidia/cu12", "nvidia/cuda_runtime")
_CUDA_DEFAULT_ROOT = Path("/usr/local/cuda")
_HSA_DEFAULT_ROOTS = (Path("/opt/rocm"), Path("/usr"))


def _made(platform: str, cc: str, incs, lib: Path | None, origin: str) -> Toolchain:
    """The toolchain compiling against the header folders ``incs`` and linking ``lib`` (with an
    rpath to its folder; none for the host)."""
    return Toolchain(platform, cc, _cc_version(cc), (_DEFINE[platform], *(f"-I{d}" for d in incs)),
                     (str(lib), f"-Wl,-rpath,{lib.parent}") if lib else (), tuple(map(str, incs)),
                     str(lib) if lib else None, origin)


def _libcudart(root: Path) -> Path | None:
    for d in (root / "lib", root / "lib64", root / "targets/x86_64-linux/lib"):
        if (d / "libcudart.so").exists():
            return d / "libcudart.so"
        versioned = sorted(d.glob("libcudart.so.[0-9]*"), key=lambda p: [int(x) for x in re.findall(r"\d+", p.name)])
        if versioned:
            return versioned[-1]
    return None


def _cuda_toolchain(cc: str) -> Toolchain:
    roots: list[tuple[str, Path]] = []
    if os.environ.get("PINPATH_CUDA_HOME"):
        roots.append(("PINPATH_CUDA_HOME", Path(os.environ["PINPATH_CUDA_HOME"])))
    sites = _site_dirs()
    roots += [(f"wheel {sub}", s / sub) for s in sites for sub in _CUDA_WHEEL_DIRS]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            roots.append((var, Path(os.environ[var])))
    if nvcc := shutil.which("nvcc"):
        roots.append(("nvcc", Path(nvcc).resolve().parent.parent))
    roots.append((str(_CUDA_DEFAULT_ROOT), _CUDA_DEFAULT_ROOT))

    no_crt = None
    for origin, root in roots:
        for inc in (root / "include", root / "targets/x86_64-linux/include"):
            if not (inc / "cuda_runtime_api.h").exists():
                continue
            incs = [inc]
            if not (inc / "crt/host_defines.h").exists():
                # CUDA 13 wheels: crt/ comes from nvidia-cuda-crt, maybe from another sys.path entry
                sub = root.relative_to(root.parent.parent).as_posix() if origin.startswith("wheel") else None
                more = [s / sub / "include" for s in sites if sub and (s / sub / "include/crt/host_defines.h").exists()]
                if not more:
                    no_crt = no_crt or inc
                    continue
                incs.append(more[0])
            lib = _libcudart(root)
            if lib is None:
                continue
            return _made("cuda", cc, incs, lib, origin)
    raise _not_found(no_crt, f"cuda: {no_crt}/cuda_runtime_api.h needs crt/host_defines.h, which is not there "
                             "(pip install nvidia-cuda-crt, or set CUDA_HOME to a CUDA toolkit)",
                     "cuda: cuda_runtime_api.h and libcudart not found "
                     "(pip install nvidia-cuda-runtime nvidia-cuda-crt, or set CUDA_HOME)")


def _hsa_toolchain(cc: str) -> Toolchain:
    multiarch = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
    roots = [Path(os.environ["ROCM_PATH"])] if os.environ.get("ROCM_PATH") else []
    roots += list(_HSA_DEFAULT_ROOTS)
    headers_at = None
    for root in roots:
        inc = root / "include"
        if not ((inc / "hsa/hsa.h").exists() and (inc / "hsa/hsa_ext_amd.h").exists()):
            continue
        headers_at = headers_at or inc
        for d in (root / "lib", root / "lib64", root / "lib" / multiarch):
            for name in ("libhsa-runtime64.so.1", "libhsa-runtime64.so"):
                if (d / name).exists():
                    return _made("hsa", cc, (inc,), d / name, str(root))
    raise _not_found(headers_at, f"hsa: libhsa-runtime64.so.1 not found beside {headers_at} "
                                 "(apt-get install libhsa-runtime64-1, or set ROCM_PATH)",
                     "hsa: hsa/hsa.h and hsa/hsa_ext_amd.h not found (apt-get install libhsa-runtime-dev, or set ROCM_PATH)")


def _not_found(part, part_why: str, none_why: str) -> NativeUnavailable:
    """A toolchain search's error: ``part_why`` where it found ``part`` of what it needs, else ``none_why``."""
    return NativeUnavailable(part_why if part is not None else none_why)


def _host_toolchain(cc: str) -> Toolchain:
    return _made("host", cc, (), None, "libc")


#: platform -> how its headers and library are found (the order of PLATFORMS)
_TOOLCHAINS = {"cuda": _cuda_toolchain, "hsa": _hsa_toolchain, "host": _host_toolchain}


def toolchain(platform: str) -> Toolchain:
    """The compiler and flags for ``platform``; raises NativeUnavailable saying what is missing."""
    if platform not in PLATFORMS:
        raise NativeUnavailable(f"{platform}: no native build (ptime.c has cuda, hsa and host builds)")
    try:
        cc = compiler()
    except NativeUnavailable as e:
        raise NativeUnavailable(f"{platform}: {e}") from None
    return _TOOLCHAINS[platform](cc)
