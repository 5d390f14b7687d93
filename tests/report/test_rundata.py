"""RunData, the one owner of a run's data: what it saves it reads back with the notebook that wrote
each data set and each notebook's harness; it refuses unknown data sets and frames off their
layout, names files it cannot read, and computes a shared measure once."""

import io

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


def test_a_saved_figure_is_shown_from_its_png_and_not_drawn_again(tmp_path, monkeypatch):
    import IPython
    import IPython.display
    import matplotlib
    matplotlib.use("agg")
    import matplotlib.pyplot as plt

    from pinpath.report.outputs import NotebookOutputs
    fig, ax = plt.subplots()
    fig2, _ = plt.subplots()
    ax.plot([1, 2], [3, 4])
    ax.set(title="t", xlabel="x", ylabel="y")
    shown = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())          # as inside a kernel
    monkeypatch.setattr(IPython.display, "display", shown.append)
    draws = []
    fig.canvas.mpl_connect("draw_event", draws.append)
    NotebookOutputs(str(tmp_path), "nb").figure(fig, "one")
    png = tmp_path / "figures" / "nb-one.png"
    saving = len(draws)                                 # what savefig itself draws (tight bbox: two)
    fig.savefig(io.BytesIO(), dpi=110, bbox_inches="tight", format="png")
    assert saving == len(draws) - saving and len(shown) == 1 and shown[0].data == png.read_bytes()
    assert not plt.fignum_exists(fig.number)            # the inline backend has nothing left to draw
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)               # a plain script: nothing shown
    NotebookOutputs(str(tmp_path), "nb").figure(fig2, "two")
    assert len(shown) == 1 and plt.fignum_exists(fig2.number)
    plt.close(fig2)
