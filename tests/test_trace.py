import csv
import threading

import pytest

from pinpath.errors import PinpathWarning
from pinpath.trace import HSA_STATS_HEADER, Recorder, hsa_stats, measure_harness, write_hsa_stats


def test_records_name_rc_thread_and_order():
    r = Recorder()
    assert r.call("f", lambda a, b: a + b, 2, 3, rc_of=lambda out: out - 5) == 5
    (c,) = r.calls
    assert (c.call, c.rc, c.thread_id) == ("f", 0, threading.get_native_id())
    assert c.end_ns >= c.start_ns


def test_spans_collect_only_their_thread():
    r = Recorder()
    seen = {}

    def worker(name):
        with r.span() as mine:
            for _ in range(50):
                r.call(name, lambda: None)
        seen[name] = {c[0] for c in mine}

    ts = [threading.Thread(target=worker, args=(f"t{i}",)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert seen == {f"t{i}": {f"t{i}"} for i in range(4)}
    assert len(r.calls) == 200


def test_nested_spans_both_see_inner_calls():
    r = Recorder()
    with r.span() as outer:
        r.call("a", lambda: None)
        with r.span() as inner:
            r.call("b", lambda: None)
    assert [c[0] for c in outer] == ["a", "b"] and [c[0] for c in inner] == ["b"]


def test_balance_and_close_warns_about_leaks():
    r = Recorder()
    r.acquire("lock", 0x1000, 4096)
    r.acquire("pinned", 0x2000, 64)
    r.release("pinned", 0x2000)
    assert r.outstanding() == {("lock", 0x1000): 4096}
    with pytest.warns(PinpathWarning, match="lock of 4096 bytes at 0x1000"):
        r.close()


def test_hsa_stats_layout(tmp_path):
    from pinpath.records import CallRecord
    calls = [CallRecord("hsa_amd_memory_lock", 0, 300, 0, 1), CallRecord("hsa_amd_memory_lock", 0, 100, 0, 1),
             CallRecord("hsa_amd_memory_unlock", 0, 101, 0, 1)]
    rows = hsa_stats(calls)
    assert rows[0][:4] == ("hsa_amd_memory_lock", 2, 400, 200)
    assert rows[1][:4] == ("hsa_amd_memory_unlock", 1, 101, 101)
    assert sum(r[4] for r in rows) == pytest.approx(100.0)
    path = tmp_path / "results.hsa_stats.csv"
    write_hsa_stats(rows, path)
    text = path.read_text().splitlines()
    assert text[0] == ",".join(f'"{h}"' for h in HSA_STATS_HEADER)
    assert text[1].startswith('"hsa_amd_memory_lock",2,400,200,')
    assert list(csv.reader(text))[2][0] == "hsa_amd_memory_unlock"


def test_measure_harness_reports_every_metric():
    m = measure_harness(lambda: None, loops=200, rounds=5)
    assert set(m) >= {"clock_ns", "resolution_ns", "null_call_ns", "trace_overhead_ns", "trace_overhead_spread_ns"}
    assert m["trace_overhead_ns"] > 0 and m["clock_ns"] > 0 and m["resolution_ns"] >= 1


def test_called_since_a_mark_sees_other_threads():
    r = Recorder()
    r.call("copy", lambda: 0)
    mark = r.mark()
    assert not r.called_since(mark, "copy")
    t = threading.Thread(target=lambda: (r.call("lock", lambda: 0), r.call("copy", lambda: 0)))
    t.start()
    t.join()
    assert r.called_since(mark, "copy") and r.called_since(mark, "lock") and not r.called_since(mark, "wait")
