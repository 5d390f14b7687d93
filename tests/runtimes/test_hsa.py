"""The HSA backend without an AMD GPU: bindings against the real library and the headers of
every ROCm release at hand, the refusal to start, and the pure logic (status names,
pointer-info sizes, pools, events).

Header checks compile C at test time, once per header tree (``hsa_tree``: the system's and
those under ``PINPATH_ROCM_HEADERS``; see conftest.py); tests that need the library are
marked ``needs("libhsa")`` and skip, saying why, where it is absent.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from pinpath.errors import RuntimeCallFailed, RuntimeUnavailable
from pinpath.runtimes import hsa_abi
from pinpath.runtimes.hsa_ import (
    CopyEvent, HsaRuntime, PoolInfo, SignalQueue, event_ticks, pick_pool, pointer_answer, ticks_to_ns,
)
from pinpath.runtimes.hsa_abi import (
    CTYPES, HSA_CONSTANTS, LIBRARY, NEWER_STATUS_NAMES, OPTIONAL_SYMBOLS, PROTOTYPES, STATUS_NAMES, STRUCTS,
    Agent, AgentCallback, PointerInfoStruct, init_failure_sentence, load_failure_sentence, soname_version,
    status_name, valid_pointer_fields,
)
from pinpath.trace import Recorder
from pinpath.vocab import Direction

LAYOUT_C = Path(hsa_abi.__file__).resolve().parent.parent / "native" / "hsa_layout.c"
K = HSA_CONSTANTS
INCLUDES = ("#include <stdbool.h>", "#include <stdio.h>", "#include <hsa/hsa.h>", "#include <hsa/hsa_ext_amd.h>")


def _compile(tmp: Path, source: Path, tree, *, run: bool = True, extra=()) -> subprocess.CompletedProcess:
    exe = tmp / source.stem
    args = ["cc", "-std=c11", "-Wall", "-Werror", f"-I{tree.include}", *extra, str(source)]
    args += ["-o", str(exe)] if run else ["-fsyntax-only"]
    built = subprocess.run(args, capture_output=True, text=True)
    if not run or built.returncode != 0:
        return built
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True)


def _c_file(tmp: Path, name: str, lines) -> Path:
    src = tmp / f"{name}.c"
    src.write_text("\n".join([*INCLUDES, *lines]) + "\n")
    return src


@pytest.fixture(scope="module")
def header(hsa_tree, tmp_path_factory):
    """sizes, offsets and constants as this tree's headers define them, and which optional
    symbols they declare."""
    tmp = tmp_path_factory.mktemp("hsa_layout")
    out = _compile(tmp, LAYOUT_C, hsa_tree)
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
    declared = {sym for sym in OPTIONAL_SYMBOLS   # an undeclared function does not compile in C11 -Werror
                if _compile(tmp, _c_file(tmp, f"probe_{sym}", [f"void probe(void) {{ (void){sym}; }}"]),
                            hsa_tree, run=False).returncode == 0}
    return SimpleNamespace(tree=hsa_tree, sizes=sizes, offsets=offsets, consts=consts, declared=declared, tmp=tmp)


def _one_sentence(msg: str) -> bool:
    return "\n" not in msg and ". " not in msg.rstrip(".") and len(msg) < 300


# -- the real library --------------------------------------------------------------------------
@pytest.mark.needs("libhsa")
def test_library_binds_every_required_symbol():
    lib = ctypes.CDLL(LIBRARY)
    fns, path = hsa_abi.bind(lib, LIBRARY)
    for sym in PROTOTYPES:
        fn = getattr(fns, sym)
        if sym not in OPTIONAL_SYMBOLS:
            assert fn is not None, sym
        assert (fn is not None) == hasattr(lib, sym), sym   # an optional one is None exactly where absent
        if fn is not None:
            assert fn.argtypes == [CTYPES[p] for p in PROTOTYPES[sym][1]], sym
    assert path and soname_version(path) != "unknown"


# -- the headers of each release ----------------------------------------------------------------
def test_headers_come_from_the_tree(header):
    """The compiler must read this tree's hsa/ headers, not fall back on the system's."""
    src = _c_file(header.tmp, "deps", [])
    deps = subprocess.run(["cc", "-M", f"-I{header.tree.include}", str(src)], capture_output=True, text=True,
                          check=True).stdout.replace("\\\n", " ").split()
    hsa = [d for d in deps if "/hsa/" in d]
    assert hsa and all(Path(d).resolve().is_relative_to(header.tree.include.resolve()) for d in hsa), hsa


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


def _header_statuses(tree) -> list[str]:
    """Every hsa_status_t enumerator the headers define (comments stripped)."""
    names: list[str] = []
    for h in ("hsa/hsa.h", "hsa/hsa_ext_amd.h"):
        text = re.sub(r"/\*.*?\*/|//[^\n]*", "", (tree.include / h).read_text(), flags=re.S)
        names += [n for n in re.findall(r"\b(HSA_STATUS_[A-Z0-9_]+)\s*=", text) if n not in names]
    return names


def test_every_status_of_the_header_has_its_name(header):
    """A status a newer release added must be named, not printed as a number."""
    names = _header_statuses(header.tree)
    src = _c_file(header.tmp, "statuses", ["int main(void) {", *(f'printf("{n} %d\\n", (int){n});' for n in names),
                                            "return 0; }"])
    out = _compile(header.tmp, src, header.tree)
    assert out.returncode == 0, out.stderr
    values = {n: int(v) for n, v in (line.split() for line in out.stdout.splitlines())}
    assert {n: v for n, v in values.items() if STATUS_NAMES.get(v) != n} == {}
    release = header.tree.release("libhsa-runtime-dev")
    if release:   # the release each newer status first appears in
        have = tuple(map(int, release.split(".")[:2]))
        assert {v for v, (n, since) in NEWER_STATUS_NAMES.items() if n in values} == \
            {v for v, (n, since) in NEWER_STATUS_NAMES.items() if have >= since}


def _prototype_check(tmp_path: Path, tree, prototypes: dict) -> subprocess.CompletedProcess:
    """A C file that assigns each real function to a pointer of the binding's type (a
    mismatch is an error) and asserts each ctypes size equals its C type's size."""
    lines = [f"{ret} (*p_{sym})({', '.join(params) or 'void'}) = {sym};" for sym, (ret, params) in prototypes.items()]
    used = {t for ret, params in prototypes.values() for t in (ret, *params)}
    for cname, ctype in CTYPES.items():
        if ctype is not None and cname in used:
            lines.append(f'_Static_assert(sizeof({cname}) == {ctypes.sizeof(ctype)}, "{cname}");')
    return _compile(tmp_path, _c_file(tmp_path, "hsa_prototypes", lines), tree, run=False,
                    extra=["-Werror=incompatible-pointer-types"])


def test_prototypes_match_header(header, tmp_path):
    """Every required prototype, and each optional one this release declares."""
    bound = {s: p for s, p in PROTOTYPES.items() if s not in OPTIONAL_SYMBOLS or s in header.declared}
    out = _prototype_check(tmp_path, header.tree, bound)
    assert out.returncode == 0, out.stderr


def test_optional_symbols_by_release(header):
    """hsa_amd_memory_async_copy_on_engine came with ROCr 6.x; the others are in 5.2 already."""
    assert OPTIONAL_SYMBOLS - {"hsa_amd_memory_async_copy_on_engine"} <= header.declared
    release = header.tree.release("libhsa-runtime-dev")
    if release:
        assert ("hsa_amd_memory_async_copy_on_engine" in header.declared) == (int(release.split(".")[0]) >= 6)


def test_prototype_check_catches_a_wrong_binding(hsa_tree, tmp_path):
    wrong = dict(PROTOTYPES, hsa_amd_memory_unlock=("hsa_status_t", ("void *", "size_t")))
    wrong.pop("hsa_amd_memory_async_copy_on_engine")
    assert _prototype_check(tmp_path, hsa_tree, wrong).returncode != 0


def test_every_c_type_is_used_by_a_prototype():
    used = {t for ret, params in PROTOTYPES.values() for t in (ret, *params)}
    assert set(CTYPES) == used


# -- refusing to start, in one sentence -------------------------------------------------------
@pytest.mark.needs("libhsa", "no-kfd")
def test_no_gpu_refuses_with_out_of_resources():
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
    assert status_name(47) == "HSA_STATUS_ERROR_NOT_SUPPORTED"   # ROCr 7.2
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


@pytest.mark.parametrize("source", ["ptime.c", "engine.c"])
def test_native_sources_compile_against_every_hsa_tree(hsa_tree, tmp_path, source):
    """The C timing library and the transfer engine, built as HSA, against each release's headers
    (warnings are errors: a changed prototype or enum shows here)."""
    src = LAYOUT_C.parent / source
    built = _compile(tmp_path, src, hsa_tree, run=False, extra=("-DPINPATH_HSA",))
    assert built.returncode == 0, built.stderr
