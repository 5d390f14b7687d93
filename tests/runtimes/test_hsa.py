"""The HSA backend without an AMD GPU: bindings against the real library and headers,
the refusal to start, and the pure logic (status names, pointer-info sizes, pools, events).

Header checks compile C at test time; they skip when cc or the Debian packages
(libhsa-runtime64-1, libhsa-runtime-dev) are absent.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from pinpath.errors import RuntimeCallFailed, RuntimeUnavailable
from pinpath.runtimes import hsa_
from pinpath.runtimes.hsa_ import (
    CTYPES, HSA_CONSTANTS, LIBRARY, PROTOTYPES, STATUS_NAMES, STRUCTS, Agent, AgentCallback,
    CopyEvent, HsaRuntime, PointerInfoStruct, PoolInfo, SignalQueue, event_ticks,
    init_failure_sentence, load_failure_sentence, pick_pool, pointer_answer, soname_version,
    status_name, ticks_to_ns, valid_pointer_fields,
)
from pinpath.trace import Recorder
from pinpath.vocab import Direction

LAYOUT_C = Path(hsa_.__file__).resolve().parent.parent / "native" / "hsa_layout.c"
K = HSA_CONSTANTS


# -- environment -----------------------------------------------------------------------------
def _hsa_include_dir() -> str:
    for d in ("/usr/include", "/opt/rocm/include", os.path.join(os.environ.get("ROCM_PATH", "/opt/rocm"), "include")):
        if os.path.exists(os.path.join(d, "hsa", "hsa.h")) and os.path.exists(os.path.join(d, "hsa", "hsa_ext_amd.h")):
            return d
    pytest.skip("hsa/hsa.h and hsa/hsa_ext_amd.h not found (apt-get install libhsa-runtime-dev)")


def _cc() -> str:
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (cc) on PATH")
    return cc


def _library() -> ctypes.CDLL:
    try:
        return ctypes.CDLL(LIBRARY)
    except OSError:
        pytest.skip(f"{LIBRARY} not installed (apt-get install libhsa-runtime64-1)")


def _compile(tmp: Path, source: Path, *, run: bool = True, extra=()) -> subprocess.CompletedProcess:
    exe = tmp / source.stem
    args = [_cc(), "-std=c11", "-Wall", "-Werror", f"-I{_hsa_include_dir()}", *extra, str(source)]
    args += ["-o", str(exe)] if run else ["-fsyntax-only"]
    built = subprocess.run(args, capture_output=True, text=True)
    if not run or built.returncode != 0:
        return built
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True)


@pytest.fixture(scope="module")
def header(tmp_path_factory):
    """sizes, offsets and constants as the real headers define them."""
    out = _compile(tmp_path_factory.mktemp("hsa_layout"), LAYOUT_C)
    assert out.returncode == 0, out.stderr
    sizes, offsets, consts = {}, {}, {}
    for line in out.stdout.splitlines():
        what, *rest = line.split()
        if what == "sizeof":
            sizes[rest[0]] = int(rest[1])
        elif what == "offsetof":
            offsets[(rest[0], rest[1])] = int(rest[2])
        elif what == "const":
            consts[rest[0]] = int(rest[1])
    return SimpleNamespace(sizes=sizes, offsets=offsets, consts=consts)


def _one_sentence(msg: str) -> bool:
    return "\n" not in msg and ". " not in msg.rstrip(".") and len(msg) < 300


# -- the real library and headers -----------------------------------------------------------
def test_library_binds_every_required_symbol():
    fns, path = hsa_.bind(_library(), LIBRARY)
    for sym in PROTOTYPES:
        fn = getattr(fns, sym)
        if fn is not None:
            assert fn.argtypes == [CTYPES[p] for p in PROTOTYPES[sym][1]], sym
    assert path and soname_version(path) != "unknown"


def test_struct_layouts_match_header(header):
    for cname, cls in STRUCTS.items():
        assert ctypes.sizeof(cls) == header.sizes[cname], cname
        c_fields = {m for (t, m) in header.offsets if t == cname}
        assert c_fields == {n for n, _ in cls._fields_}, cname
        for member in c_fields:
            assert getattr(cls, member).offset == header.offsets[(cname, member)], (cname, member)


def test_pointer_info_is_the_56_byte_layout(header):
    assert header.sizes["hsa_amd_pointer_info_t"] == 56 == ctypes.sizeof(PointerInfoStruct)
    assert PointerInfoStruct.global_flags.offset == 48   # what a pre-4.5 runtime writes back


def test_every_constant_matches_header(header):
    assert set(header.consts) == set(HSA_CONSTANTS), "hsa_layout.c and HSA_CONSTANTS list different names"
    wrong = {k: (v, header.consts[k]) for k, v in HSA_CONSTANTS.items() if header.consts[k] != v}
    assert not wrong


def _prototype_check(tmp_path: Path, prototypes: dict) -> subprocess.CompletedProcess:
    """A C file that assigns each real function to a pointer of the binding's type (a
    mismatch is an error) and asserts each ctypes size equals its C type's size."""
    lines = ["#include <stdbool.h>", "#include <hsa/hsa.h>", "#include <hsa/hsa_ext_amd.h>"]
    for sym, (ret, params) in prototypes.items():
        lines.append(f"{ret} (*p_{sym})({', '.join(params) or 'void'}) = {sym};")
    for cname, ctype in CTYPES.items():
        if ctype is not None:
            lines.append(f'_Static_assert(sizeof({cname}) == {ctypes.sizeof(ctype)}, "{cname}");')
    src = tmp_path / "hsa_prototypes.c"
    src.write_text("\n".join(lines) + "\n")
    return _compile(tmp_path, src, run=False, extra=["-Werror=incompatible-pointer-types"])


def test_prototypes_match_header(tmp_path):
    out = _prototype_check(tmp_path, PROTOTYPES)
    assert out.returncode == 0, out.stderr


def test_prototype_check_catches_a_wrong_binding(tmp_path):
    wrong = dict(PROTOTYPES, hsa_amd_memory_unlock=("hsa_status_t", ("void *", "size_t")))
    assert _prototype_check(tmp_path, wrong).returncode != 0


# -- refusing to start, in one sentence -------------------------------------------------------
def test_no_gpu_refuses_with_out_of_resources():
    _library()
    if os.path.exists("/dev/kfd"):
        pytest.skip("an AMD GPU (/dev/kfd) is present: this test is for machines without one")
    rec = Recorder()
    with pytest.raises(RuntimeUnavailable) as e:
        HsaRuntime(recorder=rec)
    msg = str(e.value)
    assert "0x1008" in msg and "HSA_STATUS_ERROR_OUT_OF_RESOURCES" in msg and _one_sentence(msg), msg
    assert [(c.call, c.rc) for c in rec.calls] == [("hsa_init", 0x1008)]   # no shut_down for a failed init
    assert rec.outstanding() == {}


def test_missing_library_is_one_sentence():
    with pytest.raises(RuntimeUnavailable) as e:
        HsaRuntime(library="libhsa-runtime64.so.0-not-there")
    assert str(e.value) == "hsa runtime unavailable: libhsa-runtime64.so.0-not-there not found on the library path"


def test_library_without_hsa_symbols_names_version_and_call():
    libc = ctypes.util.find_library("c")
    with pytest.raises(RuntimeUnavailable) as e:
        HsaRuntime(library=libc)
    msg = str(e.value)
    assert msg.startswith(f"hsa runtime unavailable: {libc} version ") and "has no hsa_init" in msg
    assert _one_sentence(msg), msg


# -- pure logic --------------------------------------------------------------------------------
def test_status_names():
    assert status_name(0x1008) == "HSA_STATUS_ERROR_OUT_OF_RESOURCES"
    assert status_name(0x1000) == "HSA_STATUS_ERROR"
    assert status_name(40) == "HSA_STATUS_ERROR_INVALID_MEMORY_POOL"
    assert status_name(46) == "HSA_STATUS_ERROR_RESOURCE_BUSY"   # newer than the 5.2 headers
    assert status_name(0x7777) == "HSA_STATUS_UNKNOWN_0x7777"
    assert len(set(STATUS_NAMES.values())) == len(STATUS_NAMES)   # no two codes share a name


@pytest.mark.parametrize("path, version", [
    ("/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1.5.0", "1.5.0"),
    ("/opt/rocm-6.2.0/lib/libhsa-runtime64.so.1.14.60200", "1.14.60200"),
    ("/nowhere/libhsa-runtime64.so", "unknown"),
    (None, "unknown"),
])
def test_soname_version(path, version):
    assert soname_version(path) == version


def test_init_failure_sentences(tmp_path):
    absent = init_failure_sentence(0x1008, str(tmp_path / "kfd"))
    assert absent.startswith("hsa runtime unavailable: hsa_init returned HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)")
    assert "does not exist" in absent and _one_sentence(absent)
    (tmp_path / "kfd").touch()
    present = init_failure_sentence(0x1000, str(tmp_path / "kfd"))
    assert "HSA_STATUS_ERROR (0x1000)" in present and "does not exist" not in present


def test_load_failure_sentences():
    assert load_failure_sentence("libx.so.1", "libx.so.1: cannot open shared object file: No such file or directory") \
        == "hsa runtime unavailable: libx.so.1 not found on the library path"
    other = load_failure_sentence("libx.so.1", "libhsakmt.so.1: undefined symbol: foo\n")
    assert "cannot be loaded (libhsakmt.so.1: undefined symbol: foo)" in other and _one_sentence(other)


def _info(size: int, kind: int, *, agent_base=0x7000_0000, host_base=0x1000, nbytes=8192, owner=7, flags=0xAB):
    info = PointerInfoStruct(size=size, type=kind, agentBaseAddress=agent_base, hostBaseAddress=host_base,
                             sizeInBytes=nbytes, agentOwner=Agent(owner), global_flags=flags)
    return info


def test_valid_fields_follow_the_size_written_back():
    assert valid_pointer_fields(_info(56, 2))["global_flags"] == 0xAB
    legacy = valid_pointer_fields(_info(48, 2))        # a runtime from before ROCm 4.5
    assert "global_flags" not in legacy and legacy["agentOwner"] == 7
    assert set(valid_pointer_fields(_info(8, 0))) == {"size", "type"}
    assert valid_pointer_fields(_info(64, 2))["global_flags"] == 0xAB   # a bigger struct: ours is full


@pytest.mark.parametrize("size", [56, 48])
def test_pointer_answer_locked_gives_alias_at_same_offset(size):
    got = pointer_answer(0x1000 + 100, _info(size, K["HSA_EXT_POINTER_TYPE_LOCKED"]), frozenset({7}))
    assert got.locked and got.dev_ptr == 0x7000_0000 + 100
    assert (got.base, got.nbytes, got.detail) == (0x1000, 8192, "HSA_EXT_POINTER_TYPE_LOCKED")


def test_pointer_answer_by_owner_and_type():
    hsa = K["HSA_EXT_POINTER_TYPE_HSA"]
    assert pointer_answer(0x1000, _info(56, hsa, owner=7), frozenset({7})).locked        # CPU pool: pinned
    assert not pointer_answer(0x1000, _info(56, hsa, owner=9), frozenset({7})).locked    # GPU pool: device
    unknown = pointer_answer(0x1000, _info(56, K["HSA_EXT_POINTER_TYPE_UNKNOWN"]), frozenset({7}))
    assert not unknown.locked and unknown.dev_ptr is None and unknown.detail == "HSA_EXT_POINTER_TYPE_UNKNOWN"


def test_ticks_to_ns():
    assert ticks_to_ns(1, 1_000_000_000) == 1
    assert ticks_to_ns(3, 100_000_000) == 30
    assert ticks_to_ns(10**15 + 1, 1_000_000_000) == 10**15 + 1    # exact, no float rounding


def _pool(handle, flags, *, segment=0, allowed=True):
    return PoolInfo(handle, segment, flags, allowed, 1 << 30, 4096, 4096)


def test_pick_pool():
    fine, coarse, kernarg = (K["HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED"],
                             K["HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED"],
                             K["HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT"])
    pools = [_pool(1, fine | kernarg), _pool(2, fine, allowed=False), _pool(3, fine), _pool(4, coarse),
             _pool(5, fine, segment=3)]
    assert pick_pool(pools, fine).pool == 3
    assert pick_pool(pools, coarse).pool == 4
    assert pick_pool(pools[:1], fine).pool == 1          # kernarg pool only when nothing else
    assert pick_pool([pools[1], pools[4]], fine) is None


def test_event_ticks():
    q = SignalQueue(pending=[], submitted=2, times=[(10, 20), (25, 40)])
    assert event_ticks(CopyEvent(q, 0)) == 10    # before any copy: the first copy's start
    assert event_ticks(CopyEvent(q, 1)) == 20    # between copies: the previous copy's end
    assert event_ticks(CopyEvent(q, 2)) == 40
    assert event_ticks(CopyEvent(SignalQueue(pending=[], times=[None]), 1)) is None
    assert event_ticks(CopyEvent()) is None


# -- control flow over fake natives (no GPU; the ctypes callback path is real) ----------------
def _bare(**fns) -> HsaRuntime:
    rt = HsaRuntime.__new__(HsaRuntime)
    rt.recorder, rt._f, rt._profiling, rt._initialised = Recorder(), SimpleNamespace(**fns), False, False
    rt._gpu, rt._cpu = Agent(0xD0), Agent(0xC0)
    return rt


def _walker(handles, status=0, stop_after=None):
    def iterate(cb, data):   # calls the CFUNCTYPE from Python: Agent goes by value through libffi
        for i, h in enumerate(handles):
            rc = cb(Agent(h), data)
            if rc != 0:
                return rc
            if stop_after == i:
                return K["HSA_STATUS_INFO_BREAK"]
        return status
    return iterate


def test_iterate_collects_handles_passed_by_value():
    rt = _bare(hsa_iterate_agents=_walker([2**64 - 2, 5]))
    assert rt._iterate("hsa_iterate_agents", AgentCallback) == [2**64 - 2, 5]
    assert rt.recorder.calls[0].call == "hsa_iterate_agents"
    assert _bare(hsa_iterate_agents=_walker([1, 2], stop_after=0))._iterate("hsa_iterate_agents", AgentCallback) == [1]


def test_iterate_failure_raises_with_status_name():
    rt = _bare(hsa_iterate_agents=_walker([1], status=0x100B))
    with pytest.raises(RuntimeCallFailed) as e:
        rt._iterate("hsa_iterate_agents", AgentCallback)
    assert e.value.rc_name == "HSA_STATUS_ERROR_NOT_INITIALIZED" and e.value.call == "hsa_iterate_agents"


class _FakeSignals:
    """Fake signal natives: wait answers the preset values in order."""

    def __init__(self, values):
        self.values, self.created, self.destroyed, self.copies = list(values), 0, [], []

    def create(self, value, n, consumers, attrs, out):
        self.created += 1
        out._obj.handle = 100 + self.created
        return 0

    def copy(self, dst, dst_agent, src, src_agent, nbytes, ndeps, deps, sig):
        dep = deps[0].handle if deps is not None else None
        self.copies.append((dst_agent.handle, src_agent.handle, ndeps, dep, sig.handle))
        return 0

    def wait(self, sig, cond, compare, timeout, state):
        assert (cond, compare) == (K["HSA_SIGNAL_CONDITION_LT"], 1)
        return self.values.pop(0)

    def destroy(self, sig):
        self.destroyed.append(sig.handle)
        return 0


def _queue_runtime(values):
    f = _FakeSignals(values)
    rt = _bare(hsa_amd_signal_create=f.create, hsa_amd_memory_async_copy=f.copy,
               hsa_signal_wait_scacquire=f.wait, hsa_signal_destroy=f.destroy)
    return rt, f


def test_copies_chain_on_the_previous_signal_and_agents_follow_direction():
    rt, f = _queue_runtime([0, 0])
    q = rt.new_queue()
    rt.copy_async(0x10, 0x20, 64, Direction.H2D, q)
    rt.copy_async(0x20, 0x10, 64, Direction.D2H, q)
    assert f.copies == [(0xD0, 0xC0, 0, None, 101), (0xC0, 0xD0, 1, 101, 102)]
    rt.wait(q)
    assert f.destroyed == [101, 102] and q.pending == []
    assert [c.call for c in rt.recorder.calls].count("hsa_signal_wait_scacquire") == 2


def test_negative_completion_signal_is_a_failed_copy():
    rt, f = _queue_runtime([0, -1])
    q = rt.new_queue()
    rt.copy_async(0x10, 0x20, 64, Direction.H2D, q)
    rt.copy_async(0x10, 0x20, 64, Direction.H2D, q)
    with pytest.raises(RuntimeCallFailed) as e:
        rt.wait(q)
    assert e.value.rc == -1 and e.value.call == "hsa_amd_memory_async_copy"
    assert f.destroyed == [101, 102]    # every signal is still destroyed
    assert [c.rc for c in rt.recorder.calls if c.call == "hsa_signal_wait_scacquire"] == [0, -1]


def test_events_time_the_copies_between_them_from_profiling_ticks():
    rt, f = _queue_runtime([0, 0])
    ticks = iter([(1_000, 3_000), (3_500, 9_000)])

    def copy_time(sig, out):
        out._obj.start, out._obj.end = next(ticks)
        return 0
    rt._f.hsa_amd_profiling_async_copy_enable = lambda on: 0
    rt._f.hsa_amd_profiling_get_async_copy_time = copy_time
    rt.timestamp_hz = 100_000_000   # 10 ns a tick
    q = rt.new_queue()
    e0, e1, e2 = rt.new_event(), rt.new_event(), rt.new_event()
    rt.record_event(e0, q)
    rt.copy_async(0x10, 0x20, 64, Direction.H2D, q)
    rt.record_event(e1, q)
    rt.copy_async(0x10, 0x20, 64, Direction.H2D, q)
    rt.record_event(e2, q)
    assert rt.elapsed_ns(e0, e2) == (9_000 - 1_000) * 10     # waits for the queue itself
    assert rt.elapsed_ns(e0, e1) == (3_000 - 1_000) * 10
    assert rt.elapsed_ns(e1, e2) == (9_000 - 3_000) * 10     # from the end of the copy before e1
    assert [c.call for c in rt.recorder.calls].count("hsa_amd_profiling_async_copy_enable") == 1
    assert f.destroyed == [101, 102]


def test_event_without_a_timed_copy_is_refused():
    rt, _ = _queue_runtime([])
    rt._f.hsa_amd_profiling_async_copy_enable = lambda on: 0
    rt.timestamp_hz = 1
    q = rt.new_queue()
    e0, e1 = rt.new_event(), rt.new_event()
    rt.record_event(e0, q)
    rt.record_event(e1, q)
    with pytest.raises(RuntimeCallFailed):
        rt.elapsed_ns(e0, e1)
