"""rocprof stats files: ours read back, the thread's rows, rocprofv3, and the refusals."""

import re

import pandas as pd
import pytest

from pinpath import schema
from pinpath.errors import BadParameter, PinpathError
from pinpath.records import CallRecord
from pinpath.report.rocprof import read_stats, side_by_side, thread_stats
from pinpath.trace import hsa_stats, write_hsa_stats

COLUMNS = list(schema.STATS) + ["source_format"]


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def _one_sentence(err):
    msg = str(err.value)
    assert "\n" not in msg and msg.count(". ") == 0 and not msg.endswith("."), msg
    return msg


def test_our_own_output_reads_back_identically(tmp_path):
    calls = [CallRecord("hsa_amd_memory_lock", 0, 84_873, 0, 1),
             CallRecord("hsa_amd_memory_lock", 10, 20_011, 0, 1),
             CallRecord("hsa_amd_memory_unlock", 0, 24_143, 0, 1),
             CallRecord("hsa_amd_memory_async_copy", 0, 7, 0, 1)]
    rows = hsa_stats(calls)
    path = tmp_path / "results.hsa_stats.csv"
    write_hsa_stats(rows, path)
    got = read_stats(path)
    assert list(got.columns) == COLUMNS
    assert (got["source_format"] == "rocprof-v1").all()
    pd.testing.assert_frame_equal(got[list(schema.STATS)], schema.stats_frame(rows))
    assert got["Percentage"].tolist() == [r[4] for r in rows]     # bit for bit, not approx


def test_thread_without_user_pinning_is_the_grep_excerpt():
    df = thread_stats(False)
    assert list(df.columns) == COLUMNS
    assert df["Name"].tolist() == ["hsa_amd_memory_lock", "hsa_amd_memory_unlock"]
    lock = df.iloc[0]
    assert (lock.Calls, lock.TotalDurationNs, lock.AverageNs) == (803, 68153169, 84873)
    assert lock.Percentage == 9.288249639958051
    unlock = df.iloc[1]
    assert (unlock.Calls, unlock.TotalDurationNs, unlock.AverageNs) == (803, 19387176, 24143)
    assert unlock.Percentage == 2.6421798596306414


def test_thread_with_user_pinning_has_header_and_three_rows():
    df = thread_stats(True)
    assert df["Name"].tolist() == ["hsa_amd_memory_lock_to_pool", "hsa_amd_memory_lock",
                                   "hsa_amd_memory_unlock"]
    assert df["Calls"].tolist() == [36, 803, 838]
    assert df["TotalDurationNs"].tolist() == [41889377, 41304882, 23449281]
    assert df["AverageNs"].tolist() == [1163593, 51438, 27982]
    assert df["Percentage"].tolist() == [12.713881187629408, 12.536480602637097, 7.1171116383357935]
    # v1's AverageNs is the truncated quotient; the thread's numbers satisfy it
    assert (df["TotalDurationNs"] // df["Calls"] == df["AverageNs"]).all()
    assert (df["source_format"] == "rocprof-v1").all()


def test_thread_stats_wants_a_bool():
    with pytest.raises(BadParameter, match="with_user_pinning"):
        thread_stats("yes")


def test_rocprofv3_quoted_with_min_max_stddev(tmp_path):
    p = _write(tmp_path, "1234_hsa_api_stats.csv",
               '"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"\n'
               '"hsa_amd_memory_lock",4,262497406,65624351.500000,85.15,3991286,249121840,122332531.343496\n'
               '"Kernel(int, double const*)",1,9000,9000.000000,2.920e-03,9000,9000,0.00000000e+00\n')
    df = read_stats(p)
    assert list(df.columns) == COLUMNS
    assert (df["source_format"] == "rocprofv3").all()
    assert df["Name"].tolist() == ["hsa_amd_memory_lock", "Kernel(int, double const*)"]
    assert df["AverageNs"].tolist() == [65624351, 9000]          # decimals truncated
    assert df["Percentage"].tolist() == [85.15, 2.92e-03]
    assert df["Calls"].dtype == "int64" and df["AverageNs"].dtype == "int64"


def test_unquoted_v1_with_header_and_floats_for_integers(tmp_path):
    p = _write(tmp_path, "results.stats.csv",
               "Name,Calls,TotalDurationNs,AverageNs,Percentage\n"
               "my_kernel,2.0,3000,1500.0,75.123456789012345\n"
               "\n"
               "other_kernel,1,1000,1000,24.876543210987655\n")
    df = read_stats(p)
    assert df["Name"].tolist() == ["my_kernel", "other_kernel"]
    assert df["Calls"].tolist() == [2, 1] and df["AverageNs"].tolist() == [1500, 1000]
    assert df["Percentage"].tolist() == [75.123456789012345, 24.876543210987655]


def test_headerless_v3_rows_and_header_only(tmp_path):
    df = read_stats(_write(tmp_path, "a.csv", '"k",3,30,10.0,100.00,9,11,1.0\n'))
    assert df["source_format"].tolist() == ["rocprofv3"] and df["Calls"].tolist() == [3]
    empty = read_stats(_write(tmp_path, "b.csv", "Name,Calls,TotalDurationNs,AverageNs,Percentage\n"))
    assert list(empty.columns) == COLUMNS and len(empty) == 0
    schema.check_frame(empty, schema.STATS)


def test_not_a_stats_file(tmp_path):
    p = _write(tmp_path, "results.csv", "a,b\n1,2\n")
    with pytest.raises(BadParameter) as err:
        read_stats(p)
    msg = _one_sentence(err)
    assert msg.startswith(f"{p}: not a rocprof stats file: its first line has columns ['a', 'b']; ")
    assert "Name,Calls,TotalDurationNs,AverageNs,Percentage (rocprof v1)" in msg
    assert "MinNs,MaxNs,StdDev (rocprofv3)" in msg


@pytest.mark.parametrize("text", [
    '"Name","Calls","TotalDurationNs"\n',                          # a short header
    "hsa_amd_memory_lock,803,68153169,84873\n",                     # a row of four
    "\x00\xff\xfe binary",                                          # not text
])
def test_other_garbage_is_refused(tmp_path, text):
    p = tmp_path / "x.csv"
    p.write_bytes(text.encode("latin-1"))
    with pytest.raises(PinpathError, match="not a rocprof stats file: its first line"):
        read_stats(p)


def test_bad_rows_name_their_line(tmp_path):
    p = _write(tmp_path, "s.csv", "Name,Calls,TotalDurationNs,AverageNs,Percentage\nk,1,2,2,100\nk,x,2,2,1\n")
    with pytest.raises(BadParameter, match=re.escape(f"{p}, line 3: Calls is 'x', not a number")):
        read_stats(p)
    p = _write(tmp_path, "t.csv", "k,1.5,2,2,100\n")
    with pytest.raises(BadParameter, match="Calls is '1.5', not a non-negative whole number"):
        read_stats(p)


def test_empty_and_missing_files(tmp_path):
    for text in ("", "\n  \n"):
        with pytest.raises(BadParameter) as err:
            read_stats(_write(tmp_path, "e.csv", text))
        assert _one_sentence(err).startswith(f"{tmp_path / 'e.csv'}: the file is empty; expected Name,")
    with pytest.raises(BadParameter) as err:
        read_stats(tmp_path / "nope.csv")
    assert _one_sentence(err).startswith(f"{tmp_path / 'nope.csv'}: no such file")
    with pytest.raises(BadParameter, match="not a regular file"):
        read_stats(tmp_path)


def test_side_by_side_shapes():
    ours = schema.stats_frame([("hsa_amd_memory_unlock", 10, 900, 90, 30.0),
                               ("hsa_amd_memory_lock", 10, 2100, 210, 70.0)])
    theirs = thread_stats(True)
    t = side_by_side(ours, theirs)
    assert list(t.columns) == ["Name"] + [f"{m}_{s}" for m in ("Calls", "TotalDurationNs", "AverageNs",
                                                                 "Percentage") for s in ("ours", "thread")]
    # ours by TotalDurationNs descending, then what only the thread has
    assert t["Name"].tolist() == ["hsa_amd_memory_lock", "hsa_amd_memory_unlock", "hsa_amd_memory_lock_to_pool"]
    assert t["Calls_ours"].tolist()[:2] == [10, 10] and pd.isna(t["Calls_ours"].iloc[2])
    assert t["AverageNs_thread"].tolist() == [51438, 27982, 1163593]
    assert t["Percentage_ours"].iloc[0] == 70.0 and t["Calls_thread"].dtype == "Int64"

    only = side_by_side(ours, theirs, names=["hsa_amd_memory_lock", "absent"], labels=("a", "b"))
    assert only.shape == (1, 9) and only.columns[1:3].tolist() == ["Calls_a", "Calls_b"]
    assert (only.Calls_a.iloc[0], only.Calls_b.iloc[0]) == (10, 803)


def test_side_by_side_refusals():
    ours = thread_stats(False)
    with pytest.raises(BadParameter, match="labels"):
        side_by_side(ours, ours, labels=("x", "x"))
    with pytest.raises(BadParameter, match="appears more than once"):
        side_by_side(pd.concat([ours, ours]), ours)
    with pytest.raises(PinpathError, match="Calls"):
        side_by_side(ours.drop(columns="Calls"), ours)


# -- our calls in rocprof's layout: refusals counted, the application's own calls shown ------------
def _api_stats() -> pd.DataFrame:
    rows = [{"Name": "cudaHostRegister", "Calls": 4, "TotalDurationNs": 400, "AverageNs": 100, "Percentage": 80.0,
             "user_pinned": False, "category": "lock", "refused": 0, "counted": False},
            {"Name": "cudaMemcpyAsync", "Calls": 4, "TotalDurationNs": 100, "AverageNs": 25, "Percentage": 20.0,
             "user_pinned": False, "category": "copy", "refused": 0, "counted": False},
            {"Name": "cudaHostRegister", "Calls": 4, "TotalDurationNs": 40, "AverageNs": 10, "Percentage": 28.6,
             "user_pinned": True, "category": "lock", "refused": 4, "counted": False},
            {"Name": "cudaMemcpyAsync", "Calls": 4, "TotalDurationNs": 100, "AverageNs": 25, "Percentage": 71.4,
             "user_pinned": True, "category": "copy", "refused": 0, "counted": False}]
    return schema.frame(rows, schema.API_STATS)


def _app_calls() -> pd.DataFrame:
    return pd.DataFrame([{"transfer_id": -1, "call": "cudaHostRegister", "category": "lock", "duration_ns": 230,
                          "rc": 0, "user_pinned": True, "caller": "application"} for _ in range(2)]
                        + [{"transfer_id": 0, "call": "cudaHostRegister", "category": "lock", "duration_ns": 10,
                            "rc": 712, "user_pinned": True, "caller": "runtime"}])


def test_layout_counts_refused_calls_and_adds_the_applications_own():
    from pinpath.report.rocprof import APPLICATION, layout, refused_note
    t = layout(_api_stats(), _app_calls())
    pinned = t[t.user_pinned.astype(bool)].set_index("Name")
    assert pinned.loc["cudaHostRegister", "Refused"] == 4
    own = pinned.loc["cudaHostRegister" + APPLICATION]
    assert (own.Calls, own.TotalDurationNs, own.AverageNs, own.Refused) == (2, 460, 230, 0)
    assert pinned.Percentage.sum() == pytest.approx(100) and own.Percentage == pytest.approx(100 * 460 / 600)
    assert list(pinned.index)[0] == "cudaHostRegister" + APPLICATION            # largest total first
    note = refused_note(t)
    assert "all 4 cudaHostRegister calls with user pinning" in note and "not the cost of a lock" in note


def test_layout_keeps_the_counted_arm_a_table_of_its_own():
    """C10's arm whose re-locks pinpath counted: its calls are not summed into the runtime's own arm."""
    from pinpath.report.rocprof import APPLICATION, layout
    st = _api_stats()
    counted = st[st.user_pinned].assign(counted=True, Name=["pinpath_count_lock", "cudaMemcpyAsync"], refused=0)
    app = _app_calls()
    t = layout(pd.concat([st, counted], ignore_index=True),
               pd.concat([app.assign(counted=False), app[app.caller == "application"].assign(counted=True)]))
    arm = t[t.counted.astype(bool)].set_index("Name")
    assert set(arm.index) == {"pinpath_count_lock", "cudaMemcpyAsync", "cudaHostRegister" + APPLICATION}
    for _, g in t.groupby(["user_pinned", "counted"]):
        assert g.Percentage.sum() == pytest.approx(100)


def test_layout_without_application_calls_or_refusals():
    from pinpath.report.rocprof import layout, refused_note
    st = _api_stats()
    st["refused"] = 0
    t = layout(st)
    assert len(t) == 4 and refused_note(t) == ""
