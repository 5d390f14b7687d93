"""pinpath.nativelib: ptime.c built, cached and loaded; timings on buffers Python owns.

Host tests run anywhere with a C compiler (also as a non-root user under ulimit -l 8192:
every locked buffer is at most 1 MiB); the HSA build is compiled and its symbols checked
where Debian's libhsa-runtime-dev is installed; CUDA tests that make calls need a GPU.
conftest.py checks after every test that VmLck is back where it was.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from pinpath import nativebuild, nativelib, osinfo, toolchain
from pinpath.errors import BadParameter
from pinpath.nativelib import NativeUnavailable

KIB = 1024
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.malloc.restype, LIBC.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
LIBC.free.restype, LIBC.free.argtypes = None, (ctypes.c_void_p,)
LIBC.mmap.restype = ctypes.c_void_p
LIBC.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
LIBC.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)


@pytest.fixture(scope="module")
def host():
    reason = nativelib.why_not("host")
    if reason:
        pytest.skip(reason)
    return nativelib.load("host")


@pytest.fixture
def malloced():
    """A 256 KiB malloc'd buffer, touched with non-zero bytes."""
    nbytes = 256 * KIB
    ptr = LIBC.malloc(nbytes)
    assert ptr
    ctypes.memset(ptr, 0x5A, nbytes)
    yield ptr, nbytes
    LIBC.free(ptr)


def _unmapped_range(nbytes: int = 2 * 4096) -> int:
    """An address range that is not mapped (mapped, then unmapped)."""
    p = LIBC.mmap(None, nbytes, 3, 0x22, -1, 0)
    assert p not in (None, ctypes.c_void_p(-1).value)
    assert LIBC.munmap(p, nbytes) == 0
    return p


def _fresh(monkeypatch):
    """Forget loaded libraries so why_not/load look again."""
    monkeypatch.setattr(nativelib, "load", nativebuild.loader(nativelib.NativeLib))


# -- building and caching ----------------------------------------------------------------------
def test_host_library_builds_and_describes_itself(host):
    assert nativelib.why_not("host") == ""
    info = host.describe()
    assert info["platform"] == "host" and Path(info["path"]).exists()
    assert host.locks_counted is False and host.has_query is False and host.has_copy is True


def test_second_build_is_a_cache_hit(monkeypatch, tmp_path, host):
    monkeypatch.setenv("PINPATH_CACHE", str(tmp_path))
    first = nativelib.build("host")
    assert first.parent == tmp_path and first.exists()
    stamp = first.stat().st_mtime_ns

    def no_compiler(*a, **k):
        raise AssertionError("compiled again instead of taking the cached object")
    monkeypatch.setattr(nativebuild.subprocess, "run", no_compiler)
    assert nativelib.build("host") == first and first.stat().st_mtime_ns == stamp
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_changed_part_of_the_engine_rebuilds_it(monkeypatch, tmp_path, host):
    """engine.c compiles as one translation unit with its parts (engine_*.h) beside it: the cache
    key reads them, so a changed part is a new build, never the stale object."""
    monkeypatch.setenv("PINPATH_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "native"
    shutil.copytree(Path(nativebuild.__file__).parent / "native", src, ignore=shutil.ignore_patterns("offload"))
    first = nativebuild.build_program("host", src / "engine.c", shared=True)
    assert nativebuild.build_program("host", src / "engine.c", shared=True) == first
    part = src / "engine_steps.h"
    part.write_text(part.read_text() + "/* changed */\n")
    again = nativebuild.build_program("host", src / "engine.c", shared=True)
    assert again != first and again.exists() and first.exists()


def test_two_processes_building_at_once_agree(tmp_path, host):
    code = "import sys; sys.path.insert(0, 'lib'); from pinpath import nativelib; print(nativelib.build('host'))"
    env = {**os.environ, "PINPATH_CACHE": str(tmp_path)}
    root = Path(nativelib.__file__).resolve().parents[2]
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=root, env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = {p.communicate(timeout=120)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert len(outs) == 1
    assert [p.name for p in tmp_path.iterdir()] == [Path(outs.pop()).name]     # no temp file left behind


def test_cache_dir_falls_back_to_a_private_temp_dir(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.delenv("PINPATH_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))     # pinpath/ cannot be made under a file
    monkeypatch.setenv("HOME", str(blocker))
    monkeypatch.setattr(nativebuild.tempfile, "tempdir", str(tmp_path))
    d = nativelib.cache_dir()
    assert d == tmp_path / f"pinpath-{os.getuid()}" and d.is_dir()


def test_no_compiler_is_one_sentence(monkeypatch, tmp_path):
    _fresh(monkeypatch)
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert nativelib.why_not("host") == "host: no C compiler (cc) on PATH (apt-get install gcc)"
    with pytest.raises(NativeUnavailable, match="no C compiler"):
        nativelib.build("cuda")


def test_unknown_platform_is_one_sentence():
    assert nativelib.why_not("hip") == "hip: no native build (ptime.c has cuda, hsa and host builds)"


def _no_cuda_anywhere(monkeypatch, tmp_path):
    for var in ("PINPATH_CUDA_HOME", "CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(toolchain, "_site_dirs", lambda: [])
    monkeypatch.setattr(toolchain, "_CUDA_DEFAULT_ROOT", tmp_path / "no-cuda")
    monkeypatch.setattr(toolchain.shutil, "which", lambda name, _w=toolchain.shutil.which: None
                        if name == "nvcc" else _w(name))
    _fresh(monkeypatch)


def test_missing_cuda_headers_are_one_sentence(monkeypatch, tmp_path, host):
    _no_cuda_anywhere(monkeypatch, tmp_path)
    assert nativelib.why_not("cuda") == ("cuda: cuda_runtime_api.h and libcudart not found "
                                         "(pip install nvidia-cuda-runtime nvidia-cuda-crt, or set CUDA_HOME)")


def test_cuda_13_headers_without_crt_name_the_missing_wheel(monkeypatch, tmp_path, host):
    _no_cuda_anywhere(monkeypatch, tmp_path)
    fake = tmp_path / "cuda"
    (fake / "include").mkdir(parents=True)
    (fake / "include/cuda_runtime_api.h").write_text('#include "crt/host_defines.h"\n')
    (fake / "lib").mkdir()
    (fake / "lib/libcudart.so.13").write_bytes(b"")
    monkeypatch.setenv("CUDA_HOME", str(fake))
    msg = nativelib.why_not("cuda")
    assert "crt/host_defines.h" in msg and "nvidia-cuda-crt" in msg and msg.startswith("cuda: "), msg


def test_missing_hsa_headers_are_one_sentence(monkeypatch, tmp_path, host):
    monkeypatch.delenv("ROCM_PATH", raising=False)
    monkeypatch.setattr(toolchain, "_HSA_DEFAULT_ROOTS", (tmp_path,))
    _fresh(monkeypatch)
    assert nativelib.why_not("hsa") == ("hsa: hsa/hsa.h and hsa/hsa_ext_amd.h not found "
                                        "(apt-get install libhsa-runtime-dev, or set ROCM_PATH)")


def test_hsa_build_compiles_and_exports_every_symbol(host):
    reason = nativelib.why_not("hsa")
    if reason:
        pytest.skip(reason)
    lib = nativelib.load("hsa")
    assert lib.locks_counted is True and lib.has_query is True and lib.has_copy is False
    for name in [*nativelib._SIGNATURES, *(f"pp_{n}" for n in nativebuild._COMMON)]:
        assert hasattr(lib._lib, name)
    with pytest.raises(NativeUnavailable, match="pp_c12 is CUDA and host only"):
        lib.c12(1, 1, 1, 4096, 1)          # refused before any HSA call
    if not os.path.exists("/dev/kfd"):
        with pytest.raises(NativeUnavailable, match=r"hsa_init .* \(0x1008\)"):
            lib.null(1)


def test_cuda_build_compiles_and_links_libcudart(host):
    reason = nativelib.why_not("cuda")
    if reason:
        pytest.skip(reason)
    lib = nativelib.load("cuda")
    assert lib.locks_counted is False and lib.has_query and lib.has_copy
    assert lib.rc_name(712) == "cudaErrorHostMemoryAlreadyRegistered"
    if _cuda_device() is None:
        with pytest.raises(NativeUnavailable, match=r"^cuda: cudaSetDevice\(0\)"):
            lib.null(1)


@pytest.mark.parametrize("platform, rc_kind, init_call, needs_pool, calls", [
    ("cuda", "cudaError", "cudaSetDevice(0)/cudaFree(0)", False,
     ["cudaHostRegister", "cudaHostUnregister", "cudaPointerGetAttributes", "cudaMallocHost", "none", "cudaFreeHost",
      "cudaMemcpyAsync", "cudaStreamSynchronize", "memcpy", "cuLaunchKernel"]),
    ("hsa", "hsa_status", "hsa_init", True,
     ["hsa_amd_memory_lock", "hsa_amd_memory_unlock", "hsa_amd_pointer_info", "hsa_amd_memory_pool_allocate",
      "hsa_amd_agents_allow_access", "hsa_amd_memory_pool_free", "hsa_amd_memory_async_copy",
      "hsa_signal_wait_scacquire", "memcpy", "none"]),
    ("host", "errno", "nothing", False,
     ["mlock", "munlock", "smaps_lookup", "mmap", "none", "munmap", "memmove@worker", "worker_wait", "memcpy",
      "kernel@worker"]),
])
def test_each_build_declares_what_python_used_to_branch_on(platform, rc_kind, init_call, needs_pool, calls):
    """platform.h says how codes are named, what starts the runtime, whether staging takes a pool and
    the engine's call names; nativelib and engine.py read them instead of the platform's name."""
    from pinpath import engine
    reason = nativelib.why_not(platform) or engine.why_not(platform)
    if reason:
        pytest.skip(reason)
    lib = nativelib.load(platform)
    assert lib._lib.pp_rc_kind().decode() == rc_kind and lib._init_call == init_call
    assert lib.stage_needs_pool is needs_pool and engine.load(platform).calls == calls + list(engine.COUNT_CALLS)   # then the engine's own


def test_the_host_start_is_idempotent_and_close_lets_it_start_again(host):
    for _ in range(2):
        assert host._lib.pp_init(0) == 0 and host._lib.pp_init(0) == 0
        assert (host.null(2).rc == 0).all()
        host.close()


# -- timing on the host ------------------------------------------------------------------------
def test_timings_on_a_malloced_buffer(host, malloced):
    ptr, nbytes = malloced
    before = osinfo.vmlck_nbytes()
    for timed in (host.null(7, warmup=3), host.lock(ptr, nbytes, 7, warmup=2), host.unlock(ptr, nbytes, 7)):
        assert timed.ns.shape == timed.rc.shape == (7,)
        assert timed.ns.dtype == np.int64 and timed.rc.dtype == np.int32
        assert (timed.rc == 0).all() and (timed.ns > 0).all()
    assert host.lock_once(ptr, nbytes) == 0
    try:
        assert osinfo.vmlck_nbytes() > before
        relock = host.relock(ptr, nbytes, 5, warmup=1)
        assert (relock.rc == 0).all() and (relock.ns > 0).all()   # mlock grants a re-lock ...
        assert osinfo.vmlck_nbytes() > before                      # ... and nothing undid the caller's lock
    finally:
        assert host.unlock_once(ptr, nbytes) == 0
    assert osinfo.vmlck_nbytes() == before


def test_timings_on_a_numpy_array(host):
    a = np.full(1 << 20, 7, np.uint8)          # 1 MiB
    lk, ul = host.lock(a, a.nbytes, 3), host.unlock(a, a.nbytes, 3)
    assert (lk.rc == 0).all() and (ul.rc == 0).all() and lk.ns.min() > 0
    with pytest.raises(BadParameter, match="C-contiguous"):
        host.lock(a.reshape(1024, 1024)[:, ::2], 4096, 1)


def test_relock_unlock_puts_the_callers_lock_back(host, malloced):
    ptr, nbytes = malloced
    before = osinfo.vmlck_nbytes()
    assert host.lock_once(ptr, nbytes) == 0
    try:
        locked = osinfo.vmlck_nbytes()
        r = host.relock_unlock(ptr, nbytes, 4, warmup=1)
        assert (r.lock_rc == 0).all() and (r.unlock_rc == 0).all()
        assert (r.lock_ns > 0).all() and (r.unlock_ns > 0).all()
        assert osinfo.vmlck_nbytes() == locked      # munlock undid it; it was locked again untimed
    finally:
        host.unlock_once(ptr, nbytes)
    assert osinfo.vmlck_nbytes() == before


def test_counted_relock_calls_nothing_and_leaves_the_callers_lock(host, malloced):
    """pinpath's count: the re-lock and its unlock only move the count (mlock is never called, so
    the caller's lock stays as it was), and each is timed; the count is forgotten afterwards, so a
    later counted lock of the same memory calls the runtime again."""
    ptr, nbytes = malloced
    assert host.lock_once(ptr, nbytes) == 0
    try:
        locked = osinfo.vmlck_nbytes()
        r = host.counted_relock_unlock(ptr, nbytes, 4, warmup=1)
        assert (r.lock_rc == 0).all() and (r.unlock_rc == 0).all()
        assert (r.lock_ns > 0).all() and (r.unlock_ns > 0).all() and osinfo.vmlck_nbytes() == locked
    finally:
        host.unlock_once(ptr, nbytes)
    src = np.arange(1 << 18, dtype=np.uint32).view(np.uint8)
    dst = np.zeros_like(src)
    assert host.lock_once(src, src.nbytes) == 0
    try:
        r4 = host.c12(4, src, dst, src.nbytes, 2)       # case 3 through the count
    finally:
        host.unlock_once(src, src.nbytes)
    assert (r4.rc == 0).all() and (r4.lock_ns > 0).all() and (dst == src).all()


def test_a_refused_call_is_timed_and_its_errno_returned(host):
    p = _unmapped_range()
    lk = host.lock(p, 8192, 3)
    assert (lk.rc == errno.ENOMEM).all() and (lk.ns > 0).all()
    ul = host.unlock(p, 8192, 2)                    # the untimed lock is refused: nothing timed
    assert (ul.rc == errno.ENOMEM).all() and (ul.ns == 0).all()
    assert host.rc_name(errno.ENOMEM).startswith("ENOMEM")


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores RLIMIT_MEMLOCK (CAP_IPC_LOCK)")
def test_memlock_limit_refusal_is_an_rc_not_an_exception(host, malloced):
    ptr, nbytes = malloced
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    resource.setrlimit(resource.RLIMIT_MEMLOCK, (64 * KIB, hard))
    try:
        lk = host.lock(ptr, nbytes, 2)
    finally:
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (soft, hard))
    assert set(lk.rc.tolist()) <= {errno.ENOMEM, errno.EPERM} and lk.rc.all()


def test_host_has_no_query(host, malloced):
    with pytest.raises(NativeUnavailable, match="host: pp_query is not supported: Linux has no cheap lock query"):
        host.query(malloced[0], 1)
    assert host.is_locked(malloced[0]) is None


def test_host_staging(host):
    s = host.stage(64 * KIB, 4, warmup=1)
    assert (s.rc == 0).all() and (s.alloc_ns > 0).all() and (s.free_ns > 0).all()


def test_c12_cases_on_the_host(host):
    src = np.arange(1 << 18, dtype=np.uint32).view(np.uint8)     # 1 MiB
    dst = np.zeros_like(src)
    r1 = host.c12(1, src, dst, src.nbytes, 3, warmup=1)
    assert r1.rc.shape == (3, 4) and (r1.rc == 0).all() and (dst == src).all()
    assert (r1.lock_ns > 0).all() and (r1.wait_ns > 0).all() and (r1.unlock_ns > 0).all()
    dst[:] = 0
    assert host.lock_once(src, src.nbytes) == 0
    try:
        r2 = host.c12(2, src, dst, src.nbytes, 3)
        r3 = host.c12(3, src, dst, src.nbytes, 3)
    finally:
        host.unlock_once(src, src.nbytes)
    assert (r2.rc == [-1, 0, 0, -1]).all() and (r2.lock_ns == 0).all() and (r2.unlock_ns == 0).all()
    assert (r3.rc == 0).all() and (r3.lock_ns > 0).all() and (dst == src).all()


def test_c11_race_on_the_host(host):
    """B mlocks A's range, A's worker copies from it, B munlocks once the copy is enqueued: every
    step's code is 0, the timestamps are ordered, the bytes arrive and B's range ends unlocked."""
    src = np.arange(1 << 18, dtype=np.uint32).view(np.uint8)     # 1 MiB
    dst = np.zeros_like(src)
    r = host.c11(src, dst, src.nbytes, 3, copies=2)
    assert r.rc.shape == (3, 6) and (r.rc == [0, 1, 0, 0, 0, 0]).all(), r.rc   # 1: A found its range locked
    assert (r.b_lock_end_ns <= r.a_enqueue_start_ns).all() and (r.a_enqueue_end_ns <= r.b_unlock_start_ns).all()
    assert (r.b_unlock_start_ns < r.b_unlock_end_ns).all() and (r.copy_done_ns <= r.a_wait_end_ns).all()
    assert (r.idle_unlock_ns > 0).all() and (dst == src).all()
    with pytest.raises(BadParameter):
        host.c11(src, dst, src.nbytes, 1, b_nbytes=src.nbytes - 1)


def test_bad_arguments_raise(host, malloced):
    ptr, nbytes = malloced
    with pytest.raises(BadParameter):
        host.lock(ptr, nbytes, -1)
    with pytest.raises(BadParameter):
        host.lock(0, nbytes, 1)
    with pytest.raises(BadParameter):
        host.c12(5, ptr, ptr, nbytes, 1)
    ns, rc = np.zeros(1, np.int64), np.zeros(1, np.int32)
    assert host._lib.pp_lock(None, nbytes, 1, ns, rc) == nativelib.EARG
    assert host._lib.pp_null(-1, ns, rc) == nativelib.EARG


def test_calls_drop_the_gil(host):
    """A long C call in one thread must not stop Python in another (C13 runs several):
    the main thread keeps ticking inside the window of one C call."""
    import time
    window = []

    def one_long_call():
        t0 = time.perf_counter()
        host.null(2_000_000)                 # a long time inside one C call
        window.extend([t0, time.perf_counter()])
    t = threading.Thread(target=one_long_call)
    stamps = []
    t.start()
    while t.is_alive():
        stamps.append(time.perf_counter())
    t.join()
    lo, hi = window[0] + 0.02, window[1] - 0.02
    assert hi - lo > 0.05 and sum(lo < x < hi for x in stamps) > 100    # 0 if the GIL were held


def test_threads_time_their_own_buffers_at_once(host):
    bufs = [np.full(64 * KIB, i + 1, np.uint8) for i in range(4)]
    out = [None] * len(bufs)

    def work(i):
        out[i] = (host.lock(bufs[i], bufs[i].nbytes, 20), host.unlock(bufs[i], bufs[i].nbytes, 20))
    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(bufs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all((lk.rc == 0).all() and (ul.rc == 0).all() for lk, ul in out)


# -- CUDA (needs a GPU) ------------------------------------------------------------------------
def _cuda_device():
    try:
        from cuda.bindings import runtime as rt
    except ImportError:
        return None
    err, count = rt.cudaGetDeviceCount()
    return rt if int(err) == 0 and count > 0 else None


@pytest.fixture
def cuda():
    rt = _cuda_device()
    if rt is None:
        pytest.skip("cuda: no CUDA device answers through cuda.bindings")
    reason = nativelib.why_not("cuda")
    if reason:
        pytest.skip(reason)

    def ok(out):
        assert int(out[0]) == 0, out
        return out[1] if len(out) > 1 else None
    ok(rt.cudaSetDevice(0))
    ok(rt.cudaFree(0))
    return rt, ok, nativelib.load("cuda")


def test_cuda_sees_cuda_bindings_registrations(cuda):
    rt, ok, lib = cuda
    a = np.full(1 << 20, 3, np.uint8)
    assert (lib.null(5, warmup=2).rc == 0).all()
    assert (lib.lock(a, a.nbytes, 3).rc == 0).all() and lib.is_locked(a) is False
    ok(rt.cudaHostRegister(a.ctypes.data, a.nbytes, rt.cudaHostRegisterDefault))
    try:
        assert lib.is_locked(a) is True
        assert (lib.relock(a, a.nbytes, 4).rc == 712).all()       # cudaErrorHostMemoryAlreadyRegistered
        assert (lib.query(a, 4).rc == 0).all()
        ru = lib.relock_unlock(a, a.nbytes, 3)
        assert (ru.lock_rc == 712).all() and (ru.unlock_rc == -1).all() and (ru.unlock_ns == 0).all()
        assert lib.is_locked(a) is True
    finally:
        ok(rt.cudaHostUnregister(a.ctypes.data))
    assert lib.is_locked(a) is False
    assert (lib.stage(1 << 20, 3).rc == 0).all()


def test_cuda_c12_on_a_cuda_bindings_stream(cuda):
    rt, ok, lib = cuda
    src = np.arange(1 << 18, dtype=np.uint32).view(np.uint8)
    dev = ok(rt.cudaMalloc(src.nbytes))
    stream = ok(rt.cudaStreamCreate())
    back = np.zeros_like(src)
    try:
        r1 = lib.c12(1, src, int(dev), src.nbytes, 3, stream=stream, warmup=1)
        assert (r1.rc == 0).all(), r1.rc
        ok(rt.cudaHostRegister(src.ctypes.data, src.nbytes, rt.cudaHostRegisterDefault))
        try:
            r2 = lib.c12(2, src, int(dev), src.nbytes, 3, stream=stream)
            r3 = lib.c12(3, src, int(dev), src.nbytes, 3, stream=stream)
        finally:
            ok(rt.cudaHostUnregister(src.ctypes.data))
        assert (r2.rc == [-1, 0, 0, -1]).all(), r2.rc
        assert (r3.rc == [712, 0, 0, -1]).all(), r3.rc
        ok(rt.cudaMemcpy(back.ctypes.data, dev, src.nbytes, rt.cudaMemcpyKind.cudaMemcpyDeviceToHost))
        assert (back == src).all()
    finally:
        rt.cudaStreamDestroy(stream)
        rt.cudaFree(dev)


def test_cuda_c11_race(cuda):
    """C11 as meant on CUDA: B registers A's range, A's copies rely on it, B unregisters under them;
    whatever the driver answers, B's lock and A's query are granted, the order holds and B's
    range ends unregistered (its bytes: the experiment's test)."""
    rt, ok, lib = cuda
    src = np.arange(1 << 22, dtype=np.uint32).view(np.uint8)     # 16 MiB
    dev = ok(rt.cudaMalloc(src.nbytes))
    try:
        r = lib.c11(src, int(dev), src.nbytes, 3, copies=4)
        assert (r.rc[:, :2] == [0, 1]).all() and (r.rc[:, 5] == 0).all(), r.rc
        assert (r.a_enqueue_end_ns <= r.b_unlock_start_ns).all() and (r.b_unlock_end_ns > 0).all()
        assert lib.is_locked(src) is False
    finally:
        rt.cudaFree(dev)


def test_cuda_threads_each_with_a_buffer(cuda):
    rt, ok, lib = cuda
    bufs = [np.full(256 * KIB, i + 1, np.uint8) for i in range(4)]
    out = [None] * len(bufs)

    def work(i):
        out[i] = lib.lock(bufs[i], bufs[i].nbytes, 10)          # the library sets the device per thread
    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(bufs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all((t.rc == 0).all() for t in out), [t.rc for t in out]
