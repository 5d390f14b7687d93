"""The offload build of native/offload's applications and the runtime it runs on: finding the build
(``tools/offload-bundle``'s manifest, or ``build_host_region`` for libomptarget's host target),
unpacking its runtime bundle, its library path and each variant's environment. The real-runtime
experiment and advise's runtime term both run binaries through it."""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ..errors import NotAvailable
from ..paths import PROJECT_ROOT

__all__ = ["VARIANTS", "OFFLOAD_DIR", "RUNTIME_DIR", "Build", "find_build", "find_libcuda", "runtime_env",
           "device_reason", "build_host_region", "variant_env", "app_binary"]

VARIANTS = {   # name -> (binary's --variant, environment, vendors where it means something)
    "plain": ("plain", {}, ("nvidia", "amd", "host")),
    "app_pinned": ("app_pinned", {}, ("nvidia", "amd", "host")),
    "lock_mapped": ("plain", {"LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS": "1"}, ("nvidia", "amd", "host")),
    "async_threshold0": ("plain", {"LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES": "0"}, ("amd",)),
}
_CLEAR_ENV = ("LIBOMPTARGET_", "OMPX_", "OMP_TARGET_OFFLOAD")   # nothing inherited changes the runtime

OFFLOAD_DIR = Path(os.environ.get("PINPATH_OFFLOAD_DIR", PROJECT_ROOT / "build" / "offload"))
RUNTIME_DIR = PROJECT_ROOT / "build" / "offload-runtime"   # the unpacked bundle (never carried)
_LIBCUDA_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib",
                 "/usr/lib")


@dataclass
class Build:
    """What ``tools/offload-bundle`` (or ``build_host_region``) left in a directory."""
    binary: Path
    vendor: str                     # nvidia, amd or host
    arch: str
    bundle: Path | None             # bundle.tar.xz, None where the runtime is the machine's own
    ld_library_path: list[str]      # relative entries are inside the unpacked bundle
    manifest: dict = field(default_factory=dict)


def _rel(p: Path) -> str:
    try:
        return str(Path(p).resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(p)


# -- the build and its runtime ------------------------------------------------------------------
def find_build(offload_dir: Path | str = OFFLOAD_DIR) -> Build:
    """The build in ``offload_dir`` from its manifest.json; NotAvailable (one sentence) if none."""
    d = Path(offload_dir)
    man_path = d / "manifest.json"
    if not man_path.is_file():
        how = ("tools/offload-bundle builds it" if shutil.which("clang++-19") or shutil.which("clang++")
               else "no clang-19 with OpenMP offload is here to build it (tools/offload-bundle installs one on Debian)")
        raise NotAvailable(f"no offload build: {_rel(man_path)} is missing, and {how}")
    man = json.loads(man_path.read_text())
    binary = d / man["binary"]
    if not binary.is_file():
        raise NotAvailable(f"no offload build: {_rel(binary)}, which {_rel(man_path)} names, is missing")
    bundle = d / man["bundle"]["file"] if man.get("bundle") else None
    if bundle is not None and not bundle.is_file():
        raise NotAvailable(f"the offload build's runtime bundle {_rel(bundle)} is missing")
    return Build(binary, man["vendor"], man["arch"], bundle, list(man.get("ld_library_path", [])), man)


def find_libcuda() -> str | None:
    """The path of this machine's libcuda.so.1 (the driver's), or None."""
    ldconfig = shutil.which("ldconfig") or ("/sbin/ldconfig" if os.path.exists("/sbin/ldconfig") else None)
    if ldconfig:
        r = subprocess.run([ldconfig, "-p"], capture_output=True, text=True)
        for m in re.finditer(r"^\s*libcuda\.so\.1 \(([^)]*)\) => (\S+)", r.stdout, re.M):
            if "x86-64" in m.group(1) or "64bit" in m.group(1):
                return m.group(2)
    dirs = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p] + list(_LIBCUDA_DIRS)
    for d in dirs:
        p = os.path.join(d, "libcuda.so.1")
        if os.path.exists(p):
            return p
    return None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _unpack(bundle: Path, runtime_dir: Path) -> Path:
    """Unpack the bundle into ``runtime_dir`` unless this very bundle is already there; its lib/."""
    stamp = runtime_dir / ".bundle-sha256"
    digest = _sha256(bundle)
    if not (stamp.is_file() and stamp.read_text().strip() == digest):
        shutil.rmtree(runtime_dir, ignore_errors=True)
        runtime_dir.mkdir(parents=True)
        with tarfile.open(bundle) as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(runtime_dir, filter="data")
            else:
                tar.extractall(runtime_dir)
        stamp.write_text(digest + "\n")
    return runtime_dir / "lib"


def runtime_env(build: Build, runtime_dir: Path = RUNTIME_DIR) -> dict[str, str]:
    """LD_LIBRARY_PATH for the build: the unpacked bundle's lib/ (with a libcuda.so link to this
    machine's libcuda.so.1, which LLVM's CUDA plugin opens by its unversioned name) and the
    manifest's other entries."""
    entries = []
    if build.bundle is not None:
        lib = _unpack(build.bundle, Path(runtime_dir))
        if build.vendor == "nvidia":
            link = lib / "libcuda.so"
            target = find_libcuda()
            if link.is_symlink() or link.exists():
                link.unlink()
            if target:
                link.symlink_to(target)
        entries += [str(lib if e == "lib" else e) for e in build.ld_library_path]
    else:
        entries += list(build.ld_library_path)
    old = os.environ.get("LD_LIBRARY_PATH", "")
    return {"LD_LIBRARY_PATH": ":".join(entries + ([old] if old else []))}


def device_reason(build: Build) -> str | None:
    """Why this machine has no GPU for the build, in one sentence, or None."""
    if build.vendor == "nvidia":
        path = find_libcuda()
        if not path:
            return f"no NVIDIA driver here (libcuda.so.1 not found), so the {build.arch} region has no GPU to run on"
        try:
            cu = ctypes.CDLL(path)
            rc = cu.cuInit(0)
            count = ctypes.c_int(0)
            rc = rc or cu.cuDeviceGetCount(ctypes.byref(count))
        except OSError as e:
            return f"the NVIDIA driver library {path} cannot be loaded ({e})"
        if rc != 0 or count.value == 0:
            return f"the NVIDIA driver answers cuInit/cuDeviceGetCount with {rc} and {count.value} GPU(s)"
    elif build.vendor == "amd":
        if not os.path.exists("/dev/kfd"):
            return f"no AMD GPU here (/dev/kfd is missing), so the {build.arch} region has no GPU to run on"
    return None


def build_host_region(dest: Path | str, *, cxx: str | None = None, timeout_s: int = 120, app: str = "region") -> Build:
    """Compile the region (or another of native/offload's applications, ``app``: stencil, updates)
    for libomptarget's host (x86_64) offload target into ``dest`` (a directory) with a manifest, so
    ``find_build(dest)`` finds it: a real libomptarget run on a machine without a GPU. NotAvailable
    if no clang with OpenMP offload is here."""
    cxx = cxx or shutil.which("clang++-19")
    if not cxx:
        raise NotAvailable("no clang++-19 here to build the region for the host offload target")
    resource = Path(subprocess.run([cxx, "-print-resource-dir"], capture_output=True, text=True).stdout.strip())
    llvm_lib = resource.parents[1]   # <llvm>/lib/clang/<major> -> <llvm>/lib
    if not (llvm_lib / "libomptarget.so").exists():
        raise NotAvailable(f"{cxx} has no libomptarget ({llvm_lib}/libomptarget.so is missing: libomp-19-dev)")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    binary = dest / f"{app}-x86_64"
    offload = resources.files("pinpath").joinpath("native/offload")
    flags = [w for line in offload.joinpath("flags.txt").read_text().splitlines() if not line.startswith("#")
             for w in line.split()]
    with resources.as_file(offload.joinpath(f"{app}.cpp")) as src:
        r = subprocess.run([cxx, *flags, "-fopenmp-targets=x86_64-pc-linux-gnu", str(src), "-o", str(binary)],
                           capture_output=True, text=True, timeout=timeout_s)
    if r.returncode != 0:
        first = (r.stderr.strip().splitlines() or ["no output"])[-1]
        raise NotAvailable(f"{app}.cpp did not compile for the host offload target ({first})")
    man = {"vendor": "host", "arch": "x86_64", "binary": binary.name, "compiler": cxx, "bundle": None,
           "runtime": "system", "ld_library_path": [str(llvm_lib)]}
    (dest / "manifest.json").write_text(json.dumps(man, indent=1) + "\n")
    return find_build(dest)


def variant_env(env: dict[str, str], variant: str) -> dict[str, str]:
    """The environment of an offload binary under ``variant``: this process's, less anything that
    changes the runtime (LIBOMPTARGET_*, OMPX_*, OMP_TARGET_OFFLOAD), plus ``env`` (runtime_env's),
    OMP_TARGET_OFFLOAD=MANDATORY and the variant's own settings."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(_CLEAR_ENV)}
    return {**base, **env, "OMP_TARGET_OFFLOAD": "MANDATORY", **VARIANTS[variant][1]}


def app_binary(build: Build, app: str) -> Path:
    """The binary of one of the build's applications (region, stencil, updates); NotAvailable if
    the build has none, or if the manifest records the sources it was built from and this checkout's
    ``{app}.cpp`` or a header differs (``headers_sha256``; older bundles record ``common.h`` alone):
    a bundle carried to a node from before a change would run the old program."""
    if build.binary.name.startswith(f"{app}-"):
        path, recorded = build.binary, build.manifest.get("source_sha256")
    else:
        entry = build.manifest.get("apps", {}).get(app)
        path = build.binary.parent / entry["binary"] if entry else None
        if path is None or not path.is_file():
            raise NotAvailable(f"the offload build in {_rel(build.binary.parent)} has no {app} binary "
                               "(tools/offload-bundle builds it)")
        recorded = entry.get("source_sha256")
    offload = resources.files("pinpath").joinpath("native/offload")
    headers = build.manifest.get("headers_sha256") or {"common.h": build.manifest.get("common_sha256")}
    for name, digest in ((f"{app}.cpp", recorded), *sorted(headers.items())):
        source = offload.joinpath(name)
        if digest and source.is_file():
            with resources.as_file(source) as src:
                if _sha256(src) != digest:
                    raise NotAvailable(f"the offload build's {app} binary ({_rel(path)}) was built from another "
                                       f"{name} than this checkout's: make offload-bundle again")
    return path
