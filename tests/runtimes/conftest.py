"""What the AMD tests need, decided once per session.

* ``@pytest.mark.needs("libhsa", ...)``: a test that needs a library, a tool or the absence
  of a GPU. Where one is missing the test is marked skipped at collection with the reason,
  so the summary prints one line per file and reason, not one per test.
* ``hsa_tree`` / ``hip_tree``: the header trees to compile the layout, prototype and enum
  checks against, one test per tree: the system's (``/usr/include``, ``/opt/rocm/include``,
  ``$ROCM_PATH/include``) and every tree found in or directly below each folder named by
  ``PINPATH_ROCM_HEADERS`` (colon-separated; ``tools/rocm-headers`` fills ``build/rocm``).
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from pinpath.errors import RuntimeUnavailable

ENV = "PINPATH_ROCM_HEADERS"


def pytest_configure(config):
    config.addinivalue_line("markers", "needs(*what): libraries, tools or conditions the test needs "
                                       f"(one of: {', '.join(sorted(_REASONS))}); skipped with the reason where absent")


# -- requirements --------------------------------------------------------------------------------
def _cc() -> str:
    return "" if shutil.which("cc") else "no C compiler (cc) on PATH"


def _libhsa() -> str:
    from pinpath.runtimes.hsa_abi import LIBRARY
    try:
        ctypes.CDLL(LIBRARY)
    except OSError:
        return f"{LIBRARY} is not installed (apt-get install libhsa-runtime64-1)"
    return ""


def _hip_python() -> str:
    try:
        importlib.import_module("hip.hip")
    except ImportError:
        return "hip-python is not installed (pip install hip-python)"
    return ""


def _libamdhip64() -> str:
    if _reason("hip-python"):
        return _reason("hip-python")
    from hip import hip
    try:
        hip.hipRuntimeGetVersion()
    except RuntimeError:
        from hip import chip
        from pinpath.runtimes.hip_ import plain
        return f"{plain(chip.DLL)} is not installed (apt-get install libamdhip64-5)"
    return ""


def _hiprtc() -> str:
    if _reason("hip-python"):
        return _reason("hip-python")
    from pinpath.runtimes.hip_ import load_hiprtc
    try:
        load_hiprtc()
    except RuntimeUnavailable as e:
        return str(e)
    return ""


def _cuda_device() -> str:
    from pinpath.runtimes import open_runtime
    try:
        open_runtime("cuda").close()
    except RuntimeUnavailable as e:
        return str(e)
    return ""


def _no_kfd() -> str:
    return "an AMD GPU (/dev/kfd) is present: the test is for machines without one" \
        if os.path.exists("/dev/kfd") else ""


def llvm_objdump() -> str | None:
    for name in ("llvm-objdump", *(f"llvm-objdump-{v}" for v in range(22, 12, -1))):
        path = shutil.which(name)
        if path:
            return path
    return None


def _objdump() -> str:
    return "" if llvm_objdump() else "no llvm-objdump on PATH to disassemble amdgcn (apt-get install llvm)"


@pytest.fixture(scope="session")
def objdump() -> str:
    """llvm-objdump's path (tests using it are marked ``needs("llvm-objdump")``)."""
    return llvm_objdump()


_REASONS = {"cc": _cc, "libhsa": _libhsa, "hip-python": _hip_python, "libamdhip64": _libamdhip64,
            "hiprtc": _hiprtc, "no-kfd": _no_kfd, "llvm-objdump": _objdump, "cuda-device": _cuda_device}


@functools.cache
def _reason(what: str) -> str:
    """"" where ``what`` is here, else why not (asked once a session)."""
    return _REASONS[what]()


def pytest_collection_modifyitems(config, items):
    for item in items:
        for mark in item.iter_markers("needs"):
            unknown = set(mark.args) - set(_REASONS)
            if unknown:
                raise pytest.UsageError(f"{item.nodeid}: unknown needs {sorted(unknown)}")
            missing = next((r for r in map(_reason, mark.args) if r), "")
            if missing:
                item.add_marker(pytest.mark.skip(reason=missing))
                break


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A skip before the test body runs (a need, a missing header tree, a fixture whose
    runtime does not start) is reported without its line, so that the summary folds every
    test of a file skipped for one reason into one line (pytest itself folds only skip
    marks on undecorated tests)."""
    report = yield
    if report.skipped and call.when == "setup" and isinstance(report.longrepr, tuple):
        path, _, reason = report.longrepr
        report.longrepr = (path, None, reason)
    return report


# -- header trees --------------------------------------------------------------------------------
HSA_HEADERS = ("hsa/hsa.h", "hsa/hsa_ext_amd.h")
HIP_HEADERS = ("hip/hip_runtime_api.h", "hip/hip_version.h")


@dataclass(frozen=True)
class HeaderTree:
    """An include folder holding ``hsa/`` and/or ``hip/`` headers of one ROCm release."""
    include: Path
    label: str                     #: "system", or the folder's name (a Debian suite for tools/rocm-headers)
    packages: tuple[tuple[str, str], ...] = ()   #: (package, version) where known
    system: bool = False           #: the headers of the ROCm installed here (not PINPATH_ROCM_HEADERS')

    @property
    def has_hsa(self) -> bool:
        return all((self.include / h).is_file() for h in HSA_HEADERS)

    @property
    def has_hip(self) -> bool:
        return all((self.include / h).is_file() for h in HIP_HEADERS)

    @property
    def hip_version(self) -> tuple[int, int, int]:
        text = (self.include / "hip" / "hip_version.h").read_text()
        return tuple(int(re.search(rf"#define HIP_VERSION_{k} (\d+)", text).group(1))
                     for k in ("MAJOR", "MINOR", "PATCH"))

    @property
    def hsa_interface(self) -> tuple[int, int]:
        """HSA_AMD_INTERFACE_VERSION_MAJOR/MINOR of hsa_ext_amd.h (1.0 in ROCm 5.2, 1.15 in 7.2)."""
        text = (self.include / "hsa" / "hsa_ext_amd.h").read_text()
        return tuple(int(re.search(rf"#define HSA_AMD_INTERFACE_VERSION_{k} (\d+)", text).group(1))
                     for k in ("MAJOR", "MINOR"))

    def release(self, package: str) -> str | None:
        """The Debian version of ``package`` this tree came from, upstream part only."""
        version = dict(self.packages).get(package)
        return re.sub(r"^\d+:|[-+~].*$", "", version) if version else None

    def hsa_id(self) -> str:
        release = self.release("libhsa-runtime-dev") or "-interface{}.{}".format(*self.hsa_interface)
        return f"{self.label}-hsa{release}"

    def hip_id(self) -> str:
        release = self.release("libamdhip64-dev") or ".".join(map(str, self.hip_version))
        return f"{self.label}-hip{release}"


def _packages(root: Path) -> tuple[tuple[str, str], ...]:
    """(package, version) pairs from the PACKAGES file tools/rocm-headers writes beside a tree."""
    listing = root / "PACKAGES"
    if not listing.is_file():
        return ()
    return tuple(tuple(line.split()[:2]) for line in listing.read_text().splitlines() if len(line.split()) >= 2)


def _system_packages() -> tuple[tuple[str, str], ...]:
    if not shutil.which("dpkg-query"):
        return ()
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version} ${db:Status-Abbrev}\\n",
                          "libhsa-runtime-dev", "libamdhip64-dev"], capture_output=True, text=True)
    return tuple((p, v) for p, v, status in (ln.split(maxsplit=2) for ln in out.stdout.splitlines()
                                              if len(ln.split()) == 3) if status.startswith("ii"))


def _tree_in(root: Path) -> Path | None:
    for include in (root / "usr" / "include", root / "include", root):
        if (include / HSA_HEADERS[0]).is_file() or (include / HIP_HEADERS[0]).is_file():
            return include
    return None


@functools.cache
def header_trees() -> tuple[HeaderTree, ...]:
    trees: list[HeaderTree] = []
    seen: set[Path] = set()

    def add(include: Path | None, label: str, packages=(), system=False):
        if include is not None and include.resolve() not in seen:
            seen.add(include.resolve())
            trees.append(HeaderTree(include, label, packages, system))

    rocm = os.environ.get("ROCM_PATH", "/opt/rocm")
    for include in (Path("/usr/include"), Path("/opt/rocm/include"), Path(rocm, "include")):
        if _tree_in(include) == include:
            usr = include == Path("/usr/include")
            add(include, "system" if usr else str(include.parent).strip("/").replace("/", "-"),
                _system_packages() if usr else (), system=True)
    for folder in filter(None, os.environ.get(ENV, "").split(":")):
        base = Path(folder).resolve()
        for root in [base, *sorted(p for p in base.iterdir() if p.is_dir())] if base.is_dir() else []:
            add(_tree_in(root), root.name, _packages(root))
    return tuple(trees)


@pytest.fixture(scope="session")
def system_hip_tree() -> HeaderTree:
    """The HIP headers of the ROCm installed here, to compare its library with."""
    tree = next((t for t in header_trees() if t.system and t.has_hip), None)
    if tree is None:
        pytest.skip("no HIP headers installed to compare the library with (apt-get install libamdhip64-dev)")
    return tree


def _where() -> str:
    folders = os.environ.get(ENV)
    return f"installed nor in {ENV}={folders}" if folders else f"installed, and {ENV} is not set"


def pytest_generate_tests(metafunc):
    for name, has, ident, install in (
            ("hsa_tree", "has_hsa", "hsa_id", "apt-get install libhsa-runtime-dev, or tools/rocm-headers"),
            ("hip_tree", "has_hip", "hip_id", "apt-get install libamdhip64-dev, or tools/rocm-headers")):
        if name not in metafunc.fixturenames:
            continue
        trees = [t for t in header_trees() if getattr(t, has)]
        what = "HSA" if name == "hsa_tree" else "HIP"
        if _reason("cc"):
            params = [pytest.param(None, marks=pytest.mark.skip(reason=_reason("cc")), id="no-cc")]
        elif not trees:
            params = [pytest.param(None, id=f"no-{what.lower()}-headers", marks=pytest.mark.skip(
                reason=f"no {what} headers {_where()} ({install})"))]
        else:
            params = [pytest.param(t, id=getattr(t, ident)()) for t in trees]
        metafunc.parametrize(name, params, scope="module")
