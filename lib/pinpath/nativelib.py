"""pinpath's C timing library (``native/ptime.c``), built per runtime and loaded with ctypes.

Python passes its own buffers; C reads CLOCK_MONOTONIC right around each runtime call,
so a figure carries no interpreter time and is taken on the same memory the Python side
locks and copies (the subprocess twin times its own malloc buffers instead).

- ``build(platform) -> Path``: compile with the system C compiler, or take the cached object.
- ``load(platform, device=0) -> NativeLib``: the loaded library; methods return numpy arrays.
- ``why_not(platform) -> str``: "" if it builds and loads, else one sentence saying why not.

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

Nothing here imports cuda.bindings, and nothing starts a runtime at import time.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .errors import BadParameter, PinpathError, RuntimeCallFailed
from .hsa_status import status_name

__all__ = ["compiler", "NativeUnavailable", "NativeLib", "Toolchain", "Timed", "RelockUnlock", "Staged", "C12Timed",
           "C11Raced", "PLATFORMS", "toolchain", "build", "build_program", "load", "why_not", "reason_not", "cache_dir"]

PLATFORMS = ("cuda", "hsa", "host")
ABI = 2                      #: must equal PP_ABI in ptime.c
EARG, ENOTSUP, ERESTORE = -1, -2, -3
_BASE_FLAGS = ("-O2", "-std=c11", "-Wall", "-Wextra", "-fvisibility=hidden")
_LIBS = ("-lpthread", "-ldl")   # threads; dlopen of libcuda for the engine's kernel launch
_DEFINE = {"cuda": "-DPINPATH_CUDA", "hsa": "-DPINPATH_HSA", "host": "-DPINPATH_HOST"}


class NativeUnavailable(PinpathError):
    """The native timing library cannot be built, loaded or started for a platform
    (the message is one sentence: what is missing and how to get it)."""


class Timed(NamedTuple):
    ns: np.ndarray           #: int64, one duration per rep
    rc: np.ndarray           #: int32, the timed call's return code per rep


class RelockUnlock(NamedTuple):
    lock_ns: np.ndarray
    unlock_ns: np.ndarray    #: 0 where the re-lock was refused
    lock_rc: np.ndarray
    unlock_rc: np.ndarray    #: -1 where the re-lock was refused (no unlock made)


class Staged(NamedTuple):
    alloc_ns: np.ndarray
    free_ns: np.ndarray      #: 0 where the allocation failed
    rc: np.ndarray           #: the first failure of the rep, 0 if none


class C12Timed(NamedTuple):
    lock_ns: np.ndarray
    enqueue_ns: np.ndarray
    wait_ns: np.ndarray
    unlock_ns: np.ndarray
    rc: np.ndarray           #: int32 (reps, 4): lock, enqueue, wait, unlock; -1 = phase not run


class C11Raced(NamedTuple):
    """pp_c11, one row per rep: thread B's lock of A's range, A's copies relying on it, B's
    unlock while they run (CLOCK_MONOTONIC ns; 0 where the step did not run)."""
    b_lock_start_ns: np.ndarray
    b_lock_end_ns: np.ndarray
    a_enqueue_start_ns: np.ndarray   #: A's first enqueue
    a_enqueue_end_ns: np.ndarray     #: A's last enqueue returned; B unlocks from here on
    b_unlock_start_ns: np.ndarray
    b_unlock_end_ns: np.ndarray
    copy_done_ns: np.ndarray         #: the first poll of A's queue that saw the copies done
    a_wait_end_ns: np.ndarray
    idle_unlock_ns: np.ndarray       #: the same unlock with nothing in flight, just before
    rc: np.ndarray                   #: int32 (reps, 6): B lock, A query (1 locked), A enqueue, B unlock, A wait, idle


# -- finding a compiler, headers and libraries ------------------------------------------------
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


# -- building, cached ------------------------------------------------------------------------
def cache_dir() -> Path:
    """$PINPATH_CACHE, $XDG_CACHE_HOME/pinpath or ~/.cache/pinpath, the first that is
    writable; else a private folder under the temp dir."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    candidates = [os.environ.get("PINPATH_CACHE"), xdg and os.path.join(xdg, "pinpath"),
                  os.path.join(os.path.expanduser("~"), ".cache", "pinpath")]
    for c in filter(None, candidates):
        try:
            os.makedirs(c, exist_ok=True)
        except OSError:
            continue
        if os.access(c, os.W_OK | os.X_OK):
            return Path(c)
    d = Path(tempfile.gettempdir()) / f"pinpath-{os.getuid()}"
    try:
        d.mkdir(mode=0o700, exist_ok=True)
        if d.stat().st_uid == os.getuid() and os.access(d, os.W_OK | os.X_OK):
            return d
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix="pinpath-"))


def _compile(tc: Toolchain, source: Path, stem: str, *, shared: bool) -> Path:
    """Compile ``source`` with ``tc`` into the cache (atomic: a temp name, then rename)."""
    # the source and the headers beside it (platform.h): a change to either rebuilds
    text = source.read_bytes() + b"".join(h.read_bytes() for h in sorted(source.parent.glob("*.h")))
    kind = ("-fPIC", "-shared") if shared else ()
    cmd_tail = (*_BASE_FLAGS, *kind, *tc.cflags, "|", *tc.ldflags, *_LIBS)
    key = hashlib.sha256(b"\0".join([text, str(ABI).encode(), tc.cc.encode(), tc.cc_version.encode(),
                                     *(s.encode() for s in cmd_tail)])).hexdigest()[:16]
    out = cache_dir() / f"{stem}-{tc.platform}-{key}{'.so' if shared else ''}"
    if out.exists():
        return out
    tmp = out.with_name(f".{out.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    cmd = [tc.cc, *_BASE_FLAGS, *kind, *tc.cflags, str(source), "-o", str(tmp), *tc.ldflags, *_LIBS]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise NativeUnavailable(f"{tc.platform}: {source.name} did not compile ({e})") from None
    if r.returncode != 0:
        tmp.unlink(missing_ok=True)
        lines = [ln for ln in r.stderr.splitlines() if "error" in ln] or r.stderr.strip().splitlines() or ["no output"]
        raise NativeUnavailable(f"{tc.platform}: {source.name} did not compile ({lines[0].strip()})")
    os.replace(tmp, out)
    return out


def build(platform: str, tc: Toolchain | None = None, *, source: str = "ptime.c") -> Path:
    """The shared object of ``native/<source>`` (ptime.c, engine.c) for ``platform`` (with ``tc``,
    else its toolchain): compiled now, or taken from the cache (keyed by source, headers, flags,
    compiler and include dirs). Raises NativeUnavailable."""
    tc = tc or toolchain(platform)
    with resources.as_file(resources.files("pinpath").joinpath(f"native/{source}")) as src:
        return _compile(tc, Path(src), Path(source).stem, shared=True)


def build_program(platform: str, source: str | os.PathLike, *, shared: bool = False) -> Path:
    """An executable of ``source`` (e.g. tools/bench_calls.c), or with ``shared`` a shared object
    of it, against the same headers and libraries as the library's build for ``platform``,
    cached the same way."""
    return _compile(toolchain(platform), Path(source), Path(source).stem, shared=shared)


# -- the loaded library ----------------------------------------------------------------------
_I64 = np.ctypeslib.ndpointer(np.int64, flags="C_CONTIGUOUS,WRITEABLE")
_I32 = np.ctypeslib.ndpointer(np.int32, flags="C_CONTIGUOUS,WRITEABLE")
_vp, _sz, _int = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
_SIGNATURES = {
    "pp_abi": (_int, ()), "pp_platform": (ctypes.c_char_p, ()), "pp_locks_counted": (_int, ()),
    "pp_has_query": (_int, ()), "pp_has_copy": (_int, ()), "pp_error_name": (ctypes.c_char_p, (_int,)),
    "pp_rc_kind": (ctypes.c_char_p, ()), "pp_init_call": (ctypes.c_char_p, ()), "pp_stage_needs_pool": (_int, ()),
    "pp_init": (_int, (_int,)), "pp_fini": (_int, ()),
    "pp_lock_once": (_int, (_vp, _sz)), "pp_unlock_once": (_int, (_vp, _sz)), "pp_locked": (_int, (_vp,)),
    "pp_null": (_int, (_int, _I64, _I32)),
    "pp_lock": (_int, (_vp, _sz, _int, _I64, _I32)),
    "pp_unlock": (_int, (_vp, _sz, _int, _I64, _I32)),
    "pp_relock": (_int, (_vp, _sz, _int, _I64, _I32)),
    "pp_relock_unlock": (_int, (_vp, _sz, _int, _I64, _I64, _I32, _I32)),
    "pp_query": (_int, (_vp, _int, _I64, _I32)),
    "pp_stage": (_int, (ctypes.c_uint64, _sz, _int, _I64, _I64, _I32)),
    "pp_c12": (_int, (_int, _vp, _vp, _sz, _vp, _int, _I64, _I64, _I64, _I64, _I32)),
    "pp_counted_relock_unlock": (_int, (_vp, _sz, _int, _I64, _I64, _I32, _I32)),
    "pp_c11": (_int, (_vp, _sz, _sz, _vp, _int, _int, _int, _I64, _I32)),
}


def _address(buf) -> int:
    """A pointer from an int or a C-contiguous numpy array."""
    if isinstance(buf, np.ndarray):
        if not buf.flags.c_contiguous:
            raise BadParameter("a numpy buffer to time must be C-contiguous")
        return buf.ctypes.data
    if isinstance(buf, (int, np.integer)):
        return int(buf)
    raise BadParameter(f"a buffer must be an address (int) or a numpy array, not {type(buf).__name__}")


def _handle(obj) -> int:
    """A runtime handle (stream, pool) as an integer: ints, or cuda.bindings objects via int()."""
    try:
        return 0 if obj is None else int(obj)
    except TypeError:
        raise BadParameter(f"cannot take a handle from {type(obj).__name__}") from None


def _errno_name(rc: int) -> str:
    from .libc import errno_name
    return errno_name(rc)


#: the kind of return code a build declares (pp_rc_kind) -> how Python names a code the library
#: does not name itself (pp_error_name NULL), and how it prints the number
RC_KINDS = {"cudaError": (lambda rc: f"cudaError {rc}", "{}"), "hsa_status": (status_name, "{:#x}"),
            "errno": (_errno_name, "{}")}


class NativeLib:
    """ptime.c loaded for one platform. Every timing method runs ``warmup`` untimed reps,
    then ``reps`` timed ones, all in one C call (no Python between reps), and returns the
    timed ones as numpy arrays. Refusals are return codes in ``rc``, never exceptions;
    bad arguments raise BadParameter, a call the platform lacks NativeUnavailable."""

    def __init__(self, path: Path, platform: str, device: int = 0, tc: Toolchain | None = None) -> None:
        self.path, self.platform, self.device, self.toolchain = Path(path), platform, device, tc
        try:
            self._lib = ctypes.CDLL(str(path))
        except OSError as e:
            raise NativeUnavailable(f"{platform}: {Path(path).name} did not load ({e})") from None
        for name, (res, args) in _SIGNATURES.items():
            fn = getattr(self._lib, name)
            fn.restype, fn.argtypes = res, args
        abi, got = self._lib.pp_abi(), self._lib.pp_platform().decode()
        if abi != ABI or got != platform:
            raise NativeUnavailable(f"{platform}: {Path(path).name} is the {got} build of ABI {abi}, "
                                    f"not the {platform} build of ABI {ABI}")
        self.locks_counted = bool(self._lib.pp_locks_counted())   #: a re-lock needs its own unlock
        self.has_query = bool(self._lib.pp_has_query())
        self.has_copy = bool(self._lib.pp_has_copy())               #: pp_c12 is there
        self.stage_needs_pool = bool(self._lib.pp_stage_needs_pool())  #: HSA: stage takes a pool handle
        self._rc_namer, self._rc_format = RC_KINDS[self._lib.pp_rc_kind().decode()]
        self._init_call = self._lib.pp_init_call().decode().format(device=device)

    def describe(self) -> dict:
        tc = self.toolchain
        return {"platform": self.platform, "path": str(self.path), "locks_counted": self.locks_counted,
                "has_query": self.has_query, "has_copy": self.has_copy,
                "compiler": tc and f"{tc.cc} ({tc.cc_version})", "include_dirs": tc and list(tc.include_dirs),
                "library": tc and tc.library, "headers_from": tc and tc.origin}

    # -- runtime start ---------------------------------------------------------------------
    def _ensure(self) -> None:
        """Start the runtime where it is not started yet, before anything is timed: pp_init keeps
        the once-flag (CUDA: cudaSetDevice + cudaFree(0) once per thread; HSA: hsa_init once per
        process; host: nothing)."""
        rc = self._lib.pp_init(self.device)
        if rc != 0:
            raise NativeUnavailable(f"{self.platform}: {self._init_call} in the native library returned "
                                    f"{self.rc_name(rc)} ({self._rc_format.format(rc)})")

    def close(self) -> None:
        """Pair a per-process start (HSA: hsa_shut_down); the object stays loaded (ctypes cannot unload)."""
        self._lib.pp_fini()

    def rc_name(self, rc: int) -> str:
        """The runtime's name for a return code."""
        rc = int(rc)
        if rc == 0:
            return "success"
        if rc < 0:
            return {EARG: "bad arguments", ENOTSUP: "not supported", ERESTORE: "lock not restored"}.get(rc, str(rc))
        name = self._lib.pp_error_name(rc)
        return name.decode() if name else self._rc_namer(rc)

    # -- helpers ---------------------------------------------------------------------------
    def _check(self, ret: int, what: str) -> None:
        if ret == 0:
            return
        if ret == ENOTSUP:
            reason = {"pp_query": "Linux has no cheap lock query (only /proc/self/smaps VmFlags)",
                      "pp_c12": "async copies need agents and signals; pp_c12 is CUDA and host only"}.get(what, "")
            raise NativeUnavailable(f"{self.platform}: {what} is not supported" + (f": {reason}" if reason else ""))
        if ret == ERESTORE:
            raise RuntimeCallFailed(self.platform, f"{what} (re-locking the caller's memory)", ret, "lock not restored")
        raise BadParameter(f"{self.platform}: {what} refused its arguments (a NULL pointer or array, reps < 0, "
                           "or a case outside 1-4)")

    @staticmethod
    def _counts(reps: int, warmup: int) -> int:
        if int(reps) < 0 or int(warmup) < 0:
            raise BadParameter(f"reps and warmup must be >= 0, not {reps} and {warmup}")
        return int(reps) + int(warmup)

    @staticmethod
    def _arrays(n: int, *dtypes) -> list[np.ndarray]:
        return [np.zeros(n, dtype=d) for d in dtypes]

    def _ptr(self, buf) -> int:
        p = _address(buf)
        if p == 0:
            raise BadParameter(f"{self.platform}: a NULL buffer cannot be timed")
        return p

    def _simple(self, fname: str, head: tuple, reps: int, warmup: int) -> Timed:
        self._ensure()
        n = self._counts(reps, warmup)
        ns, rc = self._arrays(n, np.int64, np.int32)
        self._check(getattr(self._lib, fname)(*head, n, ns, rc), fname)
        return Timed(ns[warmup:], rc[warmup:])

    # -- timed calls -----------------------------------------------------------------------
    def null(self, reps: int, *, warmup: int = 0) -> Timed:
        """The runtime's cheapest call: cudaGetDevice (after the runtime is initialised),
        hsa_system_get_info(TIMESTAMP), getppid."""
        return self._simple("pp_null", (), reps, warmup)

    def lock(self, buf, nbytes: int, reps: int, *, warmup: int = 0) -> Timed:
        """Lock of unlocked memory: cudaHostRegister, hsa_amd_memory_lock, mlock; each
        granted lock is undone untimed."""
        return self._simple("pp_lock", (self._ptr(buf), nbytes), reps, warmup)

    def unlock(self, buf, nbytes: int, reps: int, *, warmup: int = 0) -> Timed:
        """Unlock of locked memory, after an untimed lock (a refused lock: ns 0, its rc)."""
        return self._simple("pp_unlock", (self._ptr(buf), nbytes), reps, warmup)

    def relock(self, buf, nbytes: int, reps: int, *, warmup: int = 0) -> Timed:
        """Re-lock of memory the caller has locked (CUDA: 712 cudaErrorHostMemoryAlreadyRegistered);
        a granted inner lock is undone untimed where locks are counted (HSA)."""
        return self._simple("pp_relock", (self._ptr(buf), nbytes), reps, warmup)

    def relock_unlock(self, buf, nbytes: int, reps: int, *, warmup: int = 0) -> RelockUnlock:
        """C13's path on memory the caller has locked: re-lock, then the unlock of that
        re-lock when it was granted, each timed. Host: that munlock unlocks the caller's
        memory too (mlock does not stack), so it is re-locked untimed after each rep."""
        self._ensure()
        n = self._counts(reps, warmup)
        lns, uns, lrc, urc = self._arrays(n, np.int64, np.int64, np.int32, np.int32)
        self._check(self._lib.pp_relock_unlock(self._ptr(buf), nbytes, n, lns, uns, lrc, urc), "pp_relock_unlock")
        w = warmup
        return RelockUnlock(lns[w:], uns[w:], lrc[w:], urc[w:])

    def counted_relock_unlock(self, buf, nbytes: int, reps: int, *, warmup: int = 0) -> RelockUnlock:
        """The same path as a counting runtime takes it (the analogue of ROCT's registration count),
        on memory the caller has locked: the re-lock counted by pinpath's own table (no runtime
        call), then its unlock, which takes the count back down; each timed."""
        self._ensure()
        n = self._counts(reps, warmup)
        lns, uns, lrc, urc = self._arrays(n, np.int64, np.int64, np.int32, np.int32)
        self._check(self._lib.pp_counted_relock_unlock(self._ptr(buf), nbytes, n, lns, uns, lrc, urc),
                    "pp_counted_relock_unlock")
        w = warmup
        return RelockUnlock(lns[w:], uns[w:], lrc[w:], urc[w:])

    def query(self, buf, reps: int, *, warmup: int = 0) -> Timed:
        """Pointer query: cudaPointerGetAttributes, hsa_amd_pointer_info (info.size set);
        the host has none (NativeUnavailable)."""
        if not self.has_query:
            self._check(ENOTSUP, "pp_query")
        return self._simple("pp_query", (self._ptr(buf),), reps, warmup)

    def stage(self, nbytes: int, reps: int, *, warmup: int = 0, pool=0) -> Staged:
        """Pinned staging buffer, allocate and free each timed: cudaMallocHost/cudaFreeHost;
        hsa_amd_memory_pool_allocate/free on ``pool`` (HsaRuntime.pinned_pool.pool; no
        agents_allow_access); host mmap+mlock / munlock+munmap."""
        pool = _handle(pool)
        if self.stage_needs_pool and not pool:
            raise BadParameter(f"{self.platform}: stage needs a memory pool handle (the fine-grained CPU pool)")
        self._ensure()
        n = self._counts(reps, warmup)
        a, f, rc = self._arrays(n, np.int64, np.int64, np.int32)
        self._check(self._lib.pp_stage(pool, nbytes, n, a, f, rc), "pp_stage")
        return Staged(a[warmup:], f[warmup:], rc[warmup:])

    def c12(self, case: int, host_buf, dev_ptr, nbytes: int, reps: int, *, stream=0, warmup: int = 0) -> C12Timed:
        """carlobertolli's cases, H2D, every phase timed apart in C: 1 lock+copy+wait+unlock of
        unlocked memory; 2 copy+wait of memory the caller locked; 3 re-lock (CUDA: refused,
        712) + copy + wait + unlock of a granted re-lock; 4 case 3 with the re-lock and its unlock
        counted by pinpath (``counted_relock_unlock``). ``stream``: a CUDA stream made by
        the caller (cuda.bindings' cudaStream_t or CUstream, or its int; 0 = the legacy
        default stream); ignored on the host, where a worker thread copies."""
        if not self.has_copy:
            self._check(ENOTSUP, "pp_c12")
        if case not in (1, 2, 3, 4):
            raise BadParameter(f"C12 has cases 1, 2 and 3 (and 4, case 3 counted by pinpath), not {case!r}")
        self._ensure()
        n = self._counts(reps, warmup)
        lk, enq, wt, ul = self._arrays(n, np.int64, np.int64, np.int64, np.int64)
        rc = np.zeros(4 * n, dtype=np.int32)
        self._check(self._lib.pp_c12(case, self._ptr(host_buf), self._ptr(dev_ptr), nbytes, _handle(stream), n,
                                     lk, enq, wt, ul, rc), "pp_c12")
        w = warmup
        return C12Timed(lk[w:], enq[w:], wt[w:], ul[w:], rc.reshape(n, 4)[w:])

    def c11(self, host_buf, dev_ptr, nbytes: int, reps: int, *, b_nbytes: int | None = None,
            copies: int = 1) -> C11Raced:
        """C11 as meant, in C with two threads: B locks ``b_nbytes`` (default ``nbytes``: exactly
        A's range) from ``host_buf``; A, finding it locked, enqueues ``copies`` H2D copies of
        ``nbytes`` to ``dev_ptr`` on a fresh queue without a lock of its own; B unlocks as soon
        as they are enqueued; A polls its queue until they are done. The bytes are the caller's
        to verify. Every platform (host: mlock/munlock and a worker thread's memcpy)."""
        b_nbytes = nbytes if b_nbytes is None else b_nbytes
        if b_nbytes < nbytes or copies < 1:
            raise BadParameter(f"C11: B locks at least A's {nbytes} bytes ({b_nbytes}) and A copies at least once "
                               f"({copies})")
        self._ensure()
        n = self._counts(reps, 0)
        t, rc = np.zeros(9 * n, dtype=np.int64), np.zeros(6 * n, dtype=np.int32)
        self._check(self._lib.pp_c11(self._ptr(host_buf), nbytes, b_nbytes, self._ptr(dev_ptr), copies,
                                     self.device, n, t, rc), "pp_c11")
        return C11Raced(*t.reshape(n, 9).T.copy(), rc.reshape(n, 6))

    # -- untimed helpers -------------------------------------------------------------------
    def lock_once(self, buf, nbytes: int) -> int:
        """One untimed lock; its return code (the recorded CUDA error is cleared)."""
        self._ensure()
        return self._lib.pp_lock_once(self._ptr(buf), nbytes)

    def unlock_once(self, buf, nbytes: int) -> int:
        """One untimed unlock; its return code."""
        self._ensure()
        return self._lib.pp_unlock_once(self._ptr(buf), nbytes)

    def is_locked(self, buf) -> bool | None:
        """What this library's runtime instance says of ``buf``: True if locked/registered
        (or an HSA pool allocation), False if not, None on the host (no query)."""
        if not self.has_query:
            return None
        self._ensure()
        state = self._lib.pp_locked(self._ptr(buf))
        if state < 0:
            raise RuntimeCallFailed(self.platform, "pointer query", -1000 - state, self.rc_name(-1000 - state))
        return state > 0


_LOADED: dict[tuple[str, int], NativeLib] = {}
_LOADED_LOCK = threading.Lock()


def load(platform: str, device: int = 0) -> NativeLib:
    """The library for ``platform`` (built if needed), loaded once per process and device.
    Nothing is initialised until the first call on it."""
    with _LOADED_LOCK:
        lib = _LOADED.get((platform, device))
        if lib is None:
            tc = toolchain(platform)
            lib = _LOADED[(platform, device)] = NativeLib(build(platform, tc), platform, device, tc)
        return lib


def reason_not(load_fn, platform: str) -> str:
    """"" if ``load_fn(platform)`` builds and loads its library here, else its one sentence why not."""
    try:
        load_fn(platform)
    except NativeUnavailable as e:
        return str(e)
    return ""


def why_not(platform: str) -> str:
    """"" if the library for ``platform`` builds and loads here, else one sentence saying why not
    (a missing compiler, header or library). It does not start the runtime."""
    return reason_not(load, platform)
