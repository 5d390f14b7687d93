"""Traces the advise tests write themselves: LIBOMPTARGET_INFO text, rocprofv3 memory-copy CSV,
rocprof hsa_stats.csv."""

from __future__ import annotations

import shutil
import subprocess
import types
from importlib import resources

import pytest

H2D = ("omptarget device 0 info: Copying data from host to device, HstPtr={hp}, TgtPtr={tp}, Size={n}, "
       "Name={name}")
D2H = ("omptarget device 0 info: Copying data from device to host, TgtPtr={tp}, HstPtr={hp}, Size={n}, "
       "Name={name}")
LAUNCH = "PluginInterface device 0 info: Launching kernel __omp_offloading_fd00_main_l{line} with 4 blocks and 32 threads in SPMD mode"


def info_trace(steps: int = 2, invocations: int = 3, *, markers: bool = True, launches: bool = True) -> str:
    """A miniqmc-like trace: per invocation pos (384 B) in, out (240 KiB) back; a setup copy."""
    lines = ["some application output", H2D.format(hp="0x700000", tp="0x9000", n=8192, name="table[0:1024]")]
    for s in range(steps):
        for i in range(invocations):
            if markers:
                lines.append(f"pinpath-region: invocation step={s} invocation={i}")
            lines.append(H2D.format(hp="0x100000", tp="0xa000", n=384, name="pos[0:48]"))
            if launches:
                lines.append(LAUNCH.format(line=10))
            lines.append(D2H.format(hp="0x200000", tp="0xb000", n=245760, name="out[0:30720]"))
    if markers:
        lines.append("pinpath-region: teardown")
    return "\n".join(lines) + "\n"


V3_HEADER = '"Kind","Direction","Stream_Id","Source_Agent_Id","Destination_Agent_Id","Correlation_Id","Start_Timestamp","End_Timestamp"'


def v3_trace(rows=((1, 100, 180), (2, 300, 350)), direction="MEMORY_COPY_HOST_TO_DEVICE") -> str:
    return V3_HEADER + "\n" + "".join(f'"MEMORY_COPY","{direction}",0,"Agent 0","Agent 4",{c},{s},{e}\n'
                                      for c, s, e in rows)


HSA_STATS = ('"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n'
             '"hsa_amd_memory_async_copy",768,3840000,5000,40.0\n'
             '"hsa_amd_memory_lock",768,2304000,3000,24.0\n'
             '"hsa_amd_memory_unlock",768,1536000,2000,16.0\n'
             '"hsa_amd_pointer_info",1536,1920000,1250,20.0\n')


@pytest.fixture
def tr():
    """The trace makers above (tests import nothing from conftest: --import-mode=importlib)."""
    return types.SimpleNamespace(H2D=H2D, D2H=D2H, LAUNCH=LAUNCH, V3_HEADER=V3_HEADER, HSA_STATS=HSA_STATS,
                                 info_trace=info_trace, v3_trace=v3_trace)


@pytest.fixture
def write(tmp_path):
    def _write(name: str, text: str):
        p = tmp_path / name
        p.write_text(text)
        return p
    return _write


@pytest.fixture
def host_offload(tmp_path):
    """host_offload(app): the offload application ``app`` built for libomptarget's host (x86_64)
    offload target into tmp_path (real_runtime.build_host_region); the test is skipped where no
    clang++-19 with libomptarget is here."""
    from pinpath.errors import NotAvailable
    from pinpath.experiments import real_runtime as rr

    def _build(app: str):
        if not shutil.which("clang++-19"):
            pytest.skip("no clang++-19 here (apt-get install clang-19 libomp-19-dev clang-tools-19)")
        try:
            return rr.build_host_region(tmp_path, app=app)
        except NotAvailable as e:
            pytest.skip(str(e))
    return _build


@pytest.fixture(scope="module")
def gnu_build(tmp_path_factory):
    """gnu_build(app): native/offload/<app>.cpp built with the host's C++ compiler and -fopenmp (its
    target constructs fall back to the host); the test is skipped where there is no compiler."""
    cxx = shutil.which("g++") or shutil.which("clang++")

    def _build(app: str):
        if cxx is None:
            pytest.skip(f"no C++ compiler here to build {app}.cpp for the host")
        d = resources.files("pinpath").joinpath("native/offload")
        flags = [w for line in d.joinpath("flags.txt").read_text().splitlines() if not line.startswith("#")
                 for w in line.split() if w != "-gline-tables-only"]
        out = tmp_path_factory.mktemp(app) / f"{app}-host"
        r = subprocess.run([cxx, *flags, str(d.joinpath(f"{app}.cpp")), "-o", str(out)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-2000:]
        return out
    return _build
