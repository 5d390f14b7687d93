"""The one loader of pinpath's three C libraries (``native/ptime.c``, ``engine.c``, ``state.c``):
compiled with the platform's toolchain into a cache (``build``), loaded with ctypes, checked for
its ABI and platform, its return codes named by itself (``<prefix>error_name``, ``<prefix>rc_kind``)
and its runtime started one way (``<prefix>init``: ``rt_start`` in ``platform.h``). A library's
Python class subclasses ``NativeLibrary`` with its prefix, source, ABI and signatures; ``loader``
makes its ``load(platform, device)`` (once per process and device)."""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile
import threading
from importlib import resources
from pathlib import Path

from .hsa_status import status_name
from .toolchain import NativeUnavailable, Toolchain, toolchain

__all__ = ["cache_dir", "build", "build_program", "NativeLibrary", "loader", "reason_not", "RC_KINDS", "OWN_CODES"]

_BASE_FLAGS = ("-O2", "-std=c11", "-Wall", "-Wextra", "-fvisibility=hidden")
_LIBS = ("-lpthread", "-ldl")   # threads; dlopen of libcuda for the engine's kernel launch


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
    # the source and the headers beside it (platform.h, engine.c's parts): a change to any rebuilds
    text = source.read_bytes() + b"".join(h.read_bytes() for h in sorted(source.parent.glob("*.h")))
    kind = ("-fPIC", "-shared") if shared else ()
    cmd_tail = (*_BASE_FLAGS, *kind, *tc.cflags, "|", *tc.ldflags, *_LIBS)
    key = hashlib.sha256(b"\0".join([text, tc.cc.encode(), tc.cc_version.encode(),
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


# -- loading ------------------------------------------------------------------------------------
def _errno_name(rc: int) -> str:
    from .libc import errno_name
    return errno_name(rc)


#: the kind of return code a build declares (<prefix>rc_kind) -> how Python names a code the library
#: does not name itself (<prefix>error_name NULL), and how it prints the number
RC_KINDS = {"cudaError": (lambda rc: f"cudaError {rc}", "{}"), "hsa_status": (status_name, "{:#x}"),
            "errno": (_errno_name, "{}")}
#: pinpath's own negative codes (platform.h's PP_E*, state.c's PS_ESETUP), never a runtime's
OWN_CODES = {-1: "bad arguments", -2: "not supported", -3: "lock not restored", -4: "setup refused",
             -5: "out of memory (pinpath's own allocation)", -6: "no thread (pinpath could not start one)",
             -7: ("past a cap of the engine (16 map references to one buffer, 256 locked units under one range "
                  "or 64 ranges on one unit; pinpath's count holds 4096 ranges)")}
_cp, _int = ctypes.c_char_p, ctypes.c_int
#: what every library exports (platform.h's NATIVE_COMMON_API, and <prefix>init)
_COMMON = {"abi": (_int, ()), "platform": (_cp, ()), "error_name": (_cp, (_int,)), "rc_kind": (_cp, ()),
           "init_call": (_cp, ()), "init": (_int, (_int,)), "fini": (_int, ())}


class NativeLibrary:
    """One C library built and loaded for one platform and device. Subclasses set ``PREFIX``
    ("pp_"), ``SOURCE`` ("ptime.c"), ``ABI`` (its <PREFIX>ABI) and ``SIGNATURES`` (name -> (restype,
    argtypes)) of their own calls. Nothing is started until ``_ensure``."""
    PREFIX: str = ""
    SOURCE: str = ""
    ABI: int = 0
    SIGNATURES: dict = {}

    def __init__(self, platform: str, device: int = 0, tc: Toolchain | None = None) -> None:
        self.platform, self.device = platform, device
        self.toolchain = tc or toolchain(platform)
        self.path = build(platform, self.toolchain, source=self.SOURCE)
        try:
            self._lib = ctypes.CDLL(str(self.path))
        except OSError as e:
            raise NativeUnavailable(f"{platform}: {self.path.name} did not load ({e})") from None
        common = {self.PREFIX + k: v for k, v in _COMMON.items()}
        for name, (res, args) in {**common, **self.SIGNATURES}.items():
            fn = getattr(self._lib, name)
            fn.restype, fn.argtypes = res, args
        abi, got = self._c("abi")(), self._c("platform")().decode()
        if abi != self.ABI or got != platform:
            raise NativeUnavailable(f"{platform}: {self.path.name} is the {got} build of ABI {abi}, "
                                    f"not the {platform} build of ABI {self.ABI}")
        self._rc_namer, self._rc_format = RC_KINDS[self._c("rc_kind")().decode()]
        self._init_call = self._c("init_call")().decode().format(device=device)

    def _c(self, name: str):
        return getattr(self._lib, self.PREFIX + name)

    def _ensure(self) -> None:
        """Start the runtime where it is not started yet, before anything is timed (rt_start keeps
        the once-flag: CUDA cudaSetDevice + cudaFree(0) once per thread; HSA hsa_init once per
        process; host: nothing)."""
        rc = self._c("init")(self.device)
        if rc != 0:
            raise NativeUnavailable(f"{self.platform}: {self._init_call} in {self.SOURCE} returned "
                                    f"{self.rc_name(rc)} ({self._rc_format.format(rc)})")

    def close(self) -> None:
        """Pair a per-process start (HSA: hsa_shut_down); the object stays loaded (ctypes cannot unload)."""
        self._c("fini")()

    def rc_name(self, rc: int) -> str:
        """The runtime's name for a return code (the library's own for a negative one)."""
        rc = int(rc)
        if rc == 0:
            return "success"
        if rc < 0:
            return OWN_CODES.get(rc, str(rc))
        name = self._c("error_name")(rc)
        return name.decode() if name else self._rc_namer(rc)


def loader(cls):
    """``load(platform, device=0)`` for ``cls``: built and loaded once per process and device."""
    loaded: dict[tuple[str, int], NativeLibrary] = {}
    lock = threading.Lock()

    def load(platform: str, device: int = 0):
        with lock:
            if (platform, device) not in loaded:
                loaded[(platform, device)] = cls(platform, device)
            return loaded[(platform, device)]
    load.loaded = loaded
    load.__doc__ = f"{cls.__name__} for ``platform`` (built if needed), loaded once per process and device."
    return load


def reason_not(load_fn, platform: str) -> str:
    """"" if ``load_fn(platform)`` builds and loads its library here, else its one sentence why not."""
    try:
        load_fn(platform)
    except NativeUnavailable as e:
        return str(e)
    return ""
