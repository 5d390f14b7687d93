"""The three trace formats, how regions are found, and one-sentence refusals of the rest."""

from __future__ import annotations

import time

import pytest

from pinpath.advise import pattern, read_trace
from pinpath.errors import BadParameter



def test_info_with_markers_assigns_invocations_and_setup(write, tr):
    t = read_trace(write("run.err", tr.info_trace(steps=2, invocations=3)))
    c = t.copies
    assert t.format == "libomptarget-info" and len(c) == 1 + 2 * 3 * 2
    assert list(c.segment[:1]) == ["setup"] and c.region.iat[0] == -1
    inv = c[c.segment == "invocation"]
    assert sorted(inv.region.unique()) == list(range(6))
    assert inv.groupby("region").size().eq(2).all()
    assert set(inv.step) == {0, 1}
    assert set(inv.direction) == {"h2d", "d2h"} and set(inv.buffer) == {"0x100000", "0x200000"}
    assert c[c.name == "out[0:30720]"].nbytes.eq(245760).all()
    assert t.has_sizes and any("markers" in k for k in t.knows)


def test_info_regions_from_kernel_launches(write, tr):
    # h2d, launch, d2h, h2d, launch, d2h: the second h2d belongs to the second launch
    t = read_trace(write("run.err", tr.info_trace(steps=1, invocations=2, markers=False)))
    c = t.copies
    assert list(c.region) == [0, 0, 0, 1, 1]
    assert (c.step == -1).all() and any("kernel launches (2 seen" in k for k in t.knows)


def test_info_without_regions_says_so(write, tr):
    t = read_trace(write("run.err", tr.info_trace(steps=1, invocations=3, markers=False, launches=False)))
    assert (t.copies.region == 0).all()
    assert any("LIBOMPTARGET_INFO=48" in k for k in t.lacks)


def test_old_runtime_prefix_is_read(write, tr):
    text = tr.H2D.format(hp="0x1", tp="0x2", n=8, name="a").replace("omptarget device", "Libomptarget device")
    assert len(read_trace(write("old.err", text)).copies) == 1


def test_rocprofv3_memory_copy_csv(write, tr):
    t = read_trace(write("mc.csv", tr.v3_trace(rows=((2, 300, 350), (1, 100, 180)))))
    assert t.format == "rocprofv3-memory-copy" and not t.has_sizes
    assert list(t.copies.duration_ns) == [80.0, 50.0]   # ordered by start
    assert any("no size column" in k for k in t.lacks)
    p = pattern(t)
    assert p.buffers.empty and p.classes.empty and int(p.sizes.transfers.sum()) == 2


def test_rocprofv3_older_layout(write):
    text = ('"Kind","Direction","Source_Agent_Id","Destination_Agent_Id","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
            '"MEMORY_COPY","DEVICE_TO_HOST",1,0,0,14955952733485,14955953315285\n')
    t = read_trace(write("old.csv", text))
    assert list(t.copies.direction) == ["d2h"] and t.copies.duration_ns.iat[0] == 581800


def test_hsa_stats(write, tr):
    t = read_trace(write("results.hsa_stats.csv", tr.HSA_STATS))
    assert t.format == "rocprof-hsa-stats" and t.copies.empty and len(t.stats) == 4
    assert any("counts and times only" in k for k in t.lacks)


@pytest.mark.parametrize("name,text,words", [
    ("empty.err", lambda tr: "\n\n", "is empty"),
    ("prose.txt", lambda tr: "hello world\nnothing here\n", "not a trace pinpath reads"),
    ("cut.err", lambda tr: tr.H2D.format(hp="0x1", tp="0x2", n=8, name="a") + "\n"
     "omptarget device 0 info: Copying data from host to device, HstPtr=0x1, Size=oops\n", "line 2 is a libomptarget copy line"),
    ("cols.csv", lambda tr: '"Kind","Direction","Stream_Id"\n"MEMORY_COPY","MEMORY_COPY_HOST_TO_DEVICE",0\n', "needs the column(s)"),
    ("dir.csv", lambda tr: tr.v3_trace(direction="MEMORY_COPY_SIDEWAYS"), "unknown copy direction"),
    ("time.csv", lambda tr: tr.v3_trace(rows=((1, 500, 100),)), "ends before it starts"),
    ("nan.csv", lambda tr: tr.V3_HEADER + '\n"MEMORY_COPY","MEMORY_COPY_HOST_TO_DEVICE",0,"Agent 0","Agent 4",1,abc,200\n',
     "cannot be read"),
    ("nocopy.csv", lambda tr: tr.V3_HEADER + '\n"KERNEL","X",0,"Agent 0","Agent 4",1,1,2\n', "without a MEMORY_COPY row"),
    ("stats.csv", lambda tr: '"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n"hsa_x",one,1,1,1\n', "Calls is 'one'"),
])
def test_malformed_is_refused_in_one_sentence(write, tr, name, text, words):
    with pytest.raises(BadParameter) as e:
        read_trace(write(name, text(tr)))
    msg = str(e.value)
    assert words in msg and name in msg and "\n" not in msg


def test_missing_file(tmp_path):
    with pytest.raises(BadParameter, match="no such trace file"):
        read_trace(tmp_path / "nope.err")


def test_100k_transfers_parse_and_pattern(write, report, tr):
    lines = []
    for i in range(10_000):
        lines.append(f"pinpath-region: invocation step={i // 100} invocation={i % 100}")
        for j in range(5):
            b = (i * 7 + j) % 200
            lines.append(tr.H2D.format(hp=hex(0x10000 + b * 4096), tp="0x1", n=1 << (b % 12 + 3), name=f"a{b}"))
        lines.append(tr.LAUNCH.format(line=1))
        for j in range(5):
            b = (i * 3 + j) % 200
            lines.append(tr.D2H.format(hp=hex(0x10000 + b * 4096), tp="0x1", n=1 << (b % 12 + 3), name=f"a{b}"))
    path = write("big.err", "\n".join(lines))
    t0 = time.perf_counter()
    p = pattern(read_trace(path))
    s = time.perf_counter() - t0
    assert len(p.transfers) == 100_000 and len(p.buffers) == 200 and p.regions.region.nunique() == 10_000
    report(f"advise: parse + pattern of a 100,000-transfer LIBOMPTARGET_INFO trace: {s:.2f} s on this host")
    assert s < 10


# LLVM 18's Mapping.cpp printed a D2H's pointers the wrong way round (llvm-project pull request 85444)
_LLVM18 = """\
omptarget device 0 info: Creating new map entry with HstPtrBase=0x7ffd5a3c0b90, HstPtrBegin=0x7ffd5a3c0b90, TgtAllocBegin=0x7f3a85404000, TgtPtrBegin=0x7f3a85404000, Size=8000, DynRefCount=1, HoldRefCount=0, Name=d
omptarget device 0 info: Copying data from host to device, HstPtr=0x7ffd5a3c0b90, TgtPtr=0x7f3a85404000, Size=8000, Name=d
omptarget device 0 info: Copying data from host to device, HstPtr=0x5581c0a2e000, TgtPtr=0x7f3a85406000, Size=4096, Name=e
PluginInterface device 0 info: Launching kernel __omp_offloading_fd00_1c2_main_l9 with 8 blocks and 128 threads in SPMD mode
omptarget device 0 info: Copying data from device to host, TgtPtr=0x7ffd5a3c0b90, HstPtr=0x7f3a85404000, Size=8000, Name=d
omptarget device 0 info: Copying data from device to host, TgtPtr=0x5581c0a2e000, HstPtr=0x7f3a85406000, Size=4096, Name=e
omptarget device 0 info: Removing map entry with HstPtrBegin=0x7ffd5a3c0b90, TgtPtrBegin=0x7f3a85404000, Size=8000, Name=d
"""


def test_llvm18s_swapped_device_to_host_pointers_are_read_as_meant(write):
    t = read_trace(write("llvm18.err", _LLVM18))
    c = t.copies
    assert c.groupby("name").buffer.nunique().eq(1).all()          # each array one buffer, both directions
    assert set(c.buffer) == {"0x7ffd5a3c0b90", "0x5581c0a2e000"}
    assert c[(c.name == "d") & (c.direction == "d2h")]["at"].tolist() == ["unmap"]   # the copy back before removal
    assert any("wrong way round" in k for k in t.knows)
    straight = _LLVM18.replace("TgtPtr=0x7ffd5a3c0b90, HstPtr=0x7f3a85404000", "TgtPtr=0x7f3a85404000, HstPtr=0x7ffd5a3c0b90") \
                      .replace("TgtPtr=0x5581c0a2e000, HstPtr=0x7f3a85406000", "TgtPtr=0x7f3a85406000, HstPtr=0x5581c0a2e000")
    s = read_trace(write("llvm19.err", straight))
    assert s.copies.buffer.tolist() == c.buffer.tolist() and not any("wrong way round" in k for k in s.knows)
