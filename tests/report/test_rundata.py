"""RunData, the one owner of a run's data: what it saves it reads back with the notebook that wrote
each data set and each notebook's harness; it refuses unknown data sets and frames off their
layout, names files it cannot read, and computes a shared measure once."""

import pandas as pd
import pytest

from pinpath.errors import SchemaMismatch, UnknownName
from pinpath.report.outputs import NotebookOutputs
from pinpath.report.rundata import RunData
from pinpath.schema import SEMANTICS, frame

ROW = {c: (1 if t in ("int", "Int") else 1.0 if t == "float" else True if t == "bool?" else "x")
       for c, t in SEMANTICS.items()}


def test_saved_data_reads_back_with_its_notebook_and_harness(tmp_path):
    out = NotebookOutputs(str(tmp_path), "07_c8_semantics")
    df = frame([ROW, ROW], SEMANTICS)
    out.data(df, "semantics")
    harness = pd.DataFrame({"metric": ["null_call_ns"], "ns": [42.0], "platform": ["host"]})
    out.saved.save_harness(harness, "07_c8_semantics")
    for data in (out.saved, RunData.read(tmp_path)):
        pd.testing.assert_frame_equal(data["semantics"].reset_index(drop=True), df)
        assert data.notebook_of("semantics") == "07_c8_semantics" and data.notebook_of("c12") == ""
        assert data.notebooks() == {"07_c8_semantics"} and "semantics" in data and "c12" not in data
        pd.testing.assert_frame_equal(data.harness_of("07_c8_semantics"), harness)
        pd.testing.assert_frame_equal(data.harness_for("semantics"), harness)
        assert data.harness_for("c12") is None
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["harness.07_c8_semantics.parquet", "semantics.parquet"]
    assert list(RunData.read(tmp_path, names=("c12",))) == []


def test_interactive_use_writes_nothing(tmp_path):
    out = NotebookOutputs("", "07_c8_semantics")
    out.data(frame([ROW], SEMANTICS), "semantics")
    assert "semantics" in out.saved and not list(tmp_path.iterdir())


def test_unknown_data_sets_frames_off_their_layout_and_unreadable_files(tmp_path):
    data = RunData(run_dir=tmp_path)
    with pytest.raises(UnknownName, match="data set 'semantic'"):
        data.save(frame([ROW], SEMANTICS), "semantic", "07_c8_semantics")
    with pytest.raises(SchemaMismatch):
        data.save(pd.DataFrame({"probe": ["x"]}), "semantics", "07_c8_semantics")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "c12.parquet").write_bytes(b"not parquet")
    assert RunData.read(tmp_path).unreadable == ["c12.parquet"]
    with pytest.raises(TypeError, match="'_notebook' is not a data frame"):
        RunData({"_notebook": {}})


def test_a_shared_measure_is_computed_once_and_an_error_every_time():
    data, calls = RunData(), []
    assert data.memo(("k",), lambda: calls.append(1) or 7) == 7
    assert data.memo(("k",), lambda: calls.append(1) or 8) == 7 and calls == [1]

    def boom():
        calls.append(2)
        raise ValueError("no")
    for _ in range(2):
        with pytest.raises(ValueError):
            data.memo(("e",), boom)
    assert calls == [1, 2, 2]
