"""C15 as meant: overlap.cpp through the real libomptarget (its host x86_64 plugin here), the CUDA
call log's parser, and cudalog.c's forwarding, checked against a stand-in driver library."""

import importlib
import os
import subprocess
import sys
import textwrap

import pytest

from pinpath.errors import NotAvailable
from pinpath.experiments import offload_build as rr
from pinpath.schema import OVERLAP_REAL, OVERLAP_STREAMS, check_frame

ov = importlib.import_module("pinpath.experiments.overlap")   # the package's `overlap` is the function


@pytest.fixture(scope="module")
def host_build(tmp_path_factory):
    try:
        return rr.build_host_region(tmp_path_factory.mktemp("overlap"), app="overlap")
    except NotAvailable as e:
        pytest.skip(str(e))


def test_real_overlap_through_the_host_plugin(host_build):
    rows, streams = ov.real_overlap(chains=3, nbytes=64 << 10, rounds=2, processes=2, variants=("plain",),
                                    build=host_build)
    check_frame(rows, OVERLAP_REAL)
    check_frame(streams, OVERLAP_STREAMS)
    assert len(rows) == 2 * 2 * 2 and set(rows["mode"]) == {"nowait", "wait"} and rows.verified.all()
    assert set(rows.process) == {0, 1} and (rows.ns > 0).all() and (rows.chains == 3).all()
    # the traced run: one untimed and one timed round per mode, nothing recorded without an NVIDIA driver
    assert len(streams) == 4 and set(streams.source) == {"none"} and (streams.copies == 0).all()


def test_real_overlap_or_reason_says_why_in_one_sentence(tmp_path):
    rows, streams = ov.real_overlap_or_reason(offload_dir=tmp_path)
    assert "no offload build" in rows.not_applicable.iloc[0] and list(streams.columns) == ["not_applicable"]


def test_parse_call_log_counts_streams_per_round():
    text = "\n".join([
        "pinpath-cuda: call=cuStreamCreate stream=0x1 nbytes=0 tid=7 t_ns=1",       # before any round: not counted
        "pinpath-overlap: mode=nowait round=0",
        "pinpath-cuda: call=cuMemcpyHtoDAsync stream=0x1 nbytes=64 tid=7 t_ns=2",
        "pinpath-cuda: call=cuStreamCreate stream=0x2 nbytes=0 tid=8 t_ns=3",
        "pinpath-cuda: call=cuMemcpyHtoDAsync stream=0x2 nbytes=64 tid=8 t_ns=4",
        "pinpath-cuda: call=cuLaunchKernel stream=0x2 nbytes=0 tid=8 t_ns=5",
        "pinpath-cuda: call=cuMemcpyDtoHAsync stream=0x1 nbytes=64 tid=7 t_ns=6",
        "pinpath-cuda: call=cuStreamSynchronize stream=0x1 nbytes=0 tid=7 t_ns=7",
        "pinpath-overlap: mode=nowait round=0 end",
        "pinpath-overlap: mode=wait round=0",
        "pinpath-cuda: call=cuMemcpyHtoDAsync stream=0x1 nbytes=64 tid=7 t_ns=8",
        "pinpath-overlap: mode=wait round=0 end"])
    log = check_frame(ov.parse_call_log(text, variant="plain", vendor="nvidia"), OVERLAP_STREAMS)
    got = log.set_index("mode")
    assert got.loc["nowait", "streams"] == 2 and got.loc["nowait", "copies"] == 3
    assert got.loc["nowait", "kernels"] == 1 and got.loc["nowait", "syncs"] == 1
    assert got.loc["nowait", "streams_created"] == 1 and got.loc["wait", "streams"] == 1


FAKE_DRIVER = textwrap.dedent("""
    #include <stddef.h>
    int cuInit(unsigned f) { return (int)f + 40; }
    int cuMemcpyHtoDAsync_v2(unsigned long long d, const void *s, size_t n, void *st) {
        (void)d; (void)s; (void)st; return (int)n; }
""")


def test_call_log_shim_logs_and_forwards_to_the_driver(tmp_path, monkeypatch):
    """Through the shim's handle, a call it logs writes its line and returns the driver's answer;
    a call it does not define (cuInit) is the driver's own, found through the shim's DT_NEEDED."""
    from pinpath.nativelib import compiler
    drv = tmp_path / "driver"
    drv.mkdir()
    (drv / "fake.c").write_text(FAKE_DRIVER)
    subprocess.run([compiler(), "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", str(drv / "fake.c"),
                    "-o", str(drv / "libcuda.so.1")], check=True)
    monkeypatch.setattr(rr, "find_libcuda", lambda: str(drv / "libcuda.so.1"))
    shim = ov.call_log_shim(tmp_path / "shim")
    probe = textwrap.dedent(f"""
        import ctypes
        h = ctypes.CDLL("libcuda.so")
        assert h.cuInit(2) == 42
        assert h.cuMemcpyHtoDAsync_v2(ctypes.c_ulonglong(1), None, ctypes.c_size_t(4096), ctypes.c_void_p(0x10)) == 4096
    """)
    env = {**os.environ, "LD_LIBRARY_PATH": os.pathsep.join([str(shim), str(drv)])}
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "pinpath-cuda: call=cuMemcpyHtoDAsync stream=0x10 nbytes=4096" in r.stderr
    assert "cuInit" not in r.stderr
