"""The CUDA runtime on a real GPU; skipped with the runtime's own reason elsewhere."""

import numpy as np
import pytest

from pinpath.errors import LockFailed, RuntimeCallFailed
from pinpath.memkinds import host_buffer


def test_register_query_unregister(cuda_rt):
    with host_buffer("heap", 1 << 20) as b:
        assert not cuda_rt.query(b.ptr).locked
        cuda_rt.lock(b.ptr, b.nbytes)
        info = cuda_rt.query(b.ptr)
        assert info.locked and info.detail == "cudaMemoryTypeHost"
        cuda_rt.unlock(b.ptr, b.nbytes)
        assert not cuda_rt.query(b.ptr).locked


def test_register_twice_is_refused_with_712(cuda_rt):
    with host_buffer("heap", 1 << 20) as b:
        cuda_rt.lock(b.ptr, b.nbytes)
        with pytest.raises(LockFailed) as e:
            cuda_rt.lock(b.ptr, b.nbytes)
        assert e.value.rc == 712 and e.value.rc_name == "cudaErrorHostMemoryAlreadyRegistered"
        cuda_rt.unlock(b.ptr, b.nbytes)


def test_unregister_of_unregistered_is_713(cuda_rt):
    with host_buffer("heap", 1 << 16) as b:
        with pytest.raises(RuntimeCallFailed) as e:
            cuda_rt.unlock(b.ptr, b.nbytes)
        assert e.value.rc == 713 and cuda_rt.recorder.calls[-1].rc == 713


def test_copy_both_ways_with_events(cuda_rt):
    n = 4 << 20
    with host_buffer("pinned", n, rt=cuda_rt) as src, host_buffer("pinned", n, rt=cuda_rt, seed=3) as dst, \
            cuda_rt.device_buffer(n) as dev, cuda_rt.queue() as q:
        e0, e1 = cuda_rt.new_event(), cuda_rt.new_event()
        cuda_rt.record_event(e0, q.handle)
        q.copy_async(dev.ptr, src.ptr, n, "h2d")
        q.copy_async(dst.ptr, dev.ptr, n, "d2h")
        cuda_rt.record_event(e1, q.handle)
        q.wait()
        assert np.array_equal(dst.array, src.array)
        assert cuda_rt.elapsed_ns(e0, e1) > 0
        for ev in (e0, e1):
            cuda_rt.free_event(ev)
    assert cuda_rt.recorder.outstanding() == {}


def test_describe_has_versions(cuda_rt):
    d = cuda_rt.describe()
    assert d["driver_version"] and d["runtime_version"] and d["device"]
