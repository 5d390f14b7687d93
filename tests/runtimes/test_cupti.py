"""pinpath.runtimes.cupti_: record kinds, the sentence when CUPTI is missing, attribution on
synthetic records; on a CUDA machine with cupti-python, real pageable and pinned copies."""

from __future__ import annotations

import os
import sys
import types
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from pinpath.runtimes import cupti_
from pinpath.runtimes.cupti_ import (COPY_OBSERVED, MEMCPY_KINDS, MEMORY_KINDS, CopyObserver, CuptiUnavailable,
                                     attribute, memcpy_fields, source_kind)


def _memcpy(cid, *, rcid=0, copy=1, src=1, dst=3, nbytes=4096, start=1000, end=1500, stream=7):
    return SimpleNamespace(kind=cupti_.KIND_MEMCPY, copy_kind=copy, src_kind=src, dst_kind=dst, bytes=nbytes,
                           start=start, end=end, correlation_id=cid, runtime_correlation_id=rcid, stream_id=stream)


def _external(cid, eid, ekind=cupti_.EXTERNAL_CUSTOM0):
    return SimpleNamespace(kind=cupti_.KIND_EXTERNAL_CORRELATION, external_kind=ekind, external_id=eid,
                           correlation_id=cid)


# -- kinds ---------------------------------------------------------------------------------------
def test_kind_names():
    assert [MEMCPY_KINDS[k] for k in (1, 2, 8, 9, 10)] == ["H2D", "D2H", "D2D", "H2H", "P2P"]
    assert [MEMORY_KINDS[k] for k in (0, 1, 2, 3, 5)] == ["UNKNOWN", "PAGEABLE", "PINNED", "DEVICE", "MANAGED"]


def test_kind_values_agree_with_cupti_python():
    cupti = pytest.importorskip("cupti.cupti", reason="cupti-python is not installed")
    assert {int(cupti.ActivityMemcpyKind[n]): n for n in ("HTOD", "DTOH", "DTOD", "HTOH", "PTOP")} == \
        {1: "HTOD", 2: "DTOH", 8: "DTOD", 9: "HTOH", 10: "PTOP"}
    assert {int(getattr(cupti.ActivityMemoryKind, v)): v for v in MEMORY_KINDS.values()} == MEMORY_KINDS
    assert int(cupti.ActivityKind.MEMCPY) == cupti_.KIND_MEMCPY
    assert int(cupti.ActivityKind.DRIVER) == cupti_.KIND_DRIVER
    assert int(cupti.ActivityKind.RUNTIME) == cupti_.KIND_RUNTIME
    assert int(cupti.ActivityKind.EXTERNAL_CORRELATION) == cupti_.KIND_EXTERNAL_CORRELATION
    assert int(cupti.ExternalCorrelationKind.CUSTOM0) == cupti_.EXTERNAL_CUSTOM0


# -- when cupti is missing ------------------------------------------------------------------------
def test_absent_module_is_one_sentence_and_paths_are_unobserved(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupti", None)
    expected = "cupti-python is not installed (cupti cannot be imported; pip install cupti-python)"
    assert cupti_.why_not() == expected
    obs = CopyObserver()
    with pytest.raises(CuptiUnavailable) as e:
        obs.start()
    assert str(e.value) == expected and obs.why_not() == expected and not obs.started
    with obs.tag(1):               # untagged, no error
        pass
    df = obs.flush()
    assert df.empty and list(df.columns) == list(COPY_OBSERVED)
    assert source_kind(df, 1) == "unobserved" and source_kind(None, 1) == "unobserved"
    obs.stop()


def test_libcupti_missing_is_one_sentence(monkeypatch):
    def no_library():
        raise RuntimeError("libcupti.so.13 not found\nsearched: ...")
    pkg = types.ModuleType("cupti")
    pkg.cupti = SimpleNamespace(get_timestamp=no_library)
    monkeypatch.setitem(sys.modules, "cupti", pkg)
    monkeypatch.setitem(sys.modules, "cupti.cupti", pkg.cupti)
    assert cupti_.why_not() == "CUPTI did not start (RuntimeError: libcupti.so.13 not found)"


def test_start_does_not_happen_at_import():
    import subprocess
    from pathlib import Path
    lib = Path(cupti_.__file__).resolve().parents[2]
    code = ("import sys; import pinpath.runtimes.cupti_; "
            "print(sorted(m for m in sys.modules if m.startswith(('cupti', 'cuda'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(lib), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "[]"


# -- attribution -----------------------------------------------------------------------------------
def test_attribution_on_synthetic_records():
    memcpys = [memcpy_fields(_memcpy(11, start=100, end=600)),                      # driver id linked
               memcpy_fields(_memcpy(12, rcid=21, src=2, start=700, end=800)),       # only the runtime id linked
               memcpy_fields(_memcpy(13, copy=2, src=3, dst=2, start=900, end=950)),  # linked to another kind only
               memcpy_fields(_memcpy(14, start=0, end=0))]                            # no timestamps, no tag
    links = {11: 1, 21: 2}
    df = attribute(memcpys, links)
    assert list(df.columns) == list(COPY_OBSERVED)
    assert df.correlation_id.tolist() == [14, 11, 12, 13]          # in device start order
    by_cid = df.set_index("correlation_id").transfer_id
    assert (by_cid[11], by_cid[12]) == (1, 2) and pd.isna(by_cid[13]) and pd.isna(by_cid[14])
    first = df.set_index("correlation_id").loc[11]
    assert (first.copy_kind, first.src_kind, first.dst_kind, first.device_ns) == ("H2D", "PAGEABLE", "DEVICE", 500)
    assert df.set_index("correlation_id").loc[14, "device_ns"] == 0
    assert df.set_index("correlation_id").loc[13, "copy_kind"] == "D2H"


def test_unknown_kinds_keep_their_number():
    df = attribute([memcpy_fields(_memcpy(1, copy=42, src=99))], {})
    assert (df.copy_kind[0], df.src_kind[0]) == ("KIND_42", "KIND_99")


def test_buffer_callback_feeds_the_active_observer(monkeypatch):
    obs = CopyObserver()
    monkeypatch.setattr(cupti_, "_active", obs)
    other = SimpleNamespace(kind=cupti_.KIND_DRIVER, correlation_id=5)
    cupti_._buffer_completed([_external(5, 100), _external(6, 999, ekind=2), other,
                              _memcpy(5, src=2), _memcpy(6, src=1)])
    df = obs.flush()
    by_cid = df.set_index("correlation_id").transfer_id
    assert by_cid[5] == 100 and pd.isna(by_cid[6])             # 6 was linked under another kind
    assert source_kind(df, 100) == "PINNED" and source_kind(df, 999) == "unobserved"
    assert obs.flush().empty                                   # flush hands each copy over once


def test_a_link_arriving_before_a_later_flush_still_attributes():
    obs = CopyObserver()
    obs._take([], [(cupti_.EXTERNAL_CUSTOM0, 3, 40)])
    assert obs.flush().empty
    obs._take([memcpy_fields(_memcpy(40, src=2))], [])
    assert obs.flush().transfer_id.tolist() == [3]


def test_source_kind_joins_mixed_chunks():
    df = attribute([memcpy_fields(_memcpy(1, src=1)), memcpy_fields(_memcpy(2, src=2)),
                    memcpy_fields(_memcpy(3, copy=2, src=3, dst=2))], {1: 8, 2: 8, 3: 9})
    assert source_kind(df, 8) == "PAGEABLE+PINNED"
    assert source_kind(df, 9, "D2H") == "PINNED" and source_kind(df, 9) == "unobserved"


# -- a real GPU ------------------------------------------------------------------------------------
def test_pageable_and_pinned_copies_on_a_gpu():
    reason = cupti_.why_not()
    if reason:
        # a GPU node that is meant to observe copies (its wheelhouse carries the cupti extra) fails here
        # instead of skipping: a reference measured without CUPTI lacks every copy's observed path
        if os.environ.get("PINPATH_REQUIRE_CUPTI") == "1":
            pytest.fail(f"PINPATH_REQUIRE_CUPTI=1 but CUPTI cannot observe copies: {reason}")
        pytest.skip(reason)
    try:
        from cuda.bindings import runtime as rt
    except ImportError as e:
        pytest.skip(f"cuda-bindings is not installed ({e})")
    err, count = rt.cudaGetDeviceCount()
    if int(err) != 0 or count == 0:
        pytest.skip("cuda: no CUDA device answers through cuda.bindings")

    def ok(out):
        assert int(out[0]) == 0, out
        return out[1] if len(out) > 1 else None
    nbytes = 4 << 20
    host = np.full(nbytes, 0x5A, np.uint8)
    dev = ok(rt.cudaMalloc(nbytes))
    stream = ok(rt.cudaStreamCreate())
    H2D, D2H = rt.cudaMemcpyKind.cudaMemcpyHostToDevice, rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
    try:
        with CopyObserver() as obs:
            with obs.tag(1):
                ok(rt.cudaMemcpyAsync(dev, host.ctypes.data, nbytes, H2D, stream))
            ok(rt.cudaStreamSynchronize(stream))
            ok(rt.cudaHostRegister(host.ctypes.data, nbytes, rt.cudaHostRegisterDefault))
            try:
                with obs.tag(2):
                    ok(rt.cudaMemcpyAsync(dev, host.ctypes.data, nbytes, H2D, stream))
                with obs.tag(3):
                    ok(rt.cudaMemcpyAsync(host.ctypes.data, dev, nbytes, D2H, stream))
                ok(rt.cudaStreamSynchronize(stream))
            finally:
                ok(rt.cudaHostUnregister(host.ctypes.data))
            df = obs.flush()
    finally:
        rt.cudaStreamDestroy(stream)
        rt.cudaFree(dev)
    assert source_kind(df, 1) == "PAGEABLE", df
    assert source_kind(df, 2) == "PINNED", df
    assert source_kind(df, 3, "D2H") == "PINNED", df
    tagged = df[df.transfer_id.notna()]
    assert (tagged.device_ns > 0).all() and tagged.groupby("transfer_id").bytes.sum().eq(nbytes).all(), df
