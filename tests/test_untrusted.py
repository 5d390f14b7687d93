"""Run folders, traces and options as a hostile user makes them (issue 35): one test per class -
data loss, tracebacks, hangs, signals, escaping, make injection, a full disk - and a hypothesis
fuzz over the manifest, the status parts and the traces. Every case must end in one sentence (or
its normal output) with nothing outside the run changed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from pinpath import __main__ as cli
from pinpath import runfolder as rf
from pinpath.errors import BadParameter
from pinpath.run import finalize as fin, local

ROOT = Path(__file__).resolve().parents[1]
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture
def project(project):
    """conftest's project, with a notebook 00_ok for the runs below to name."""
    (project / "notebooks").mkdir()
    (project / "notebooks" / "00_ok.ipynb").write_text("{}")
    return project


def _manifest(rid: str = "r1", **over) -> dict:
    return {"run_id": rid, "preset": "smoke", "platform": "host", "status": "ok",
            "notebooks": {"00_ok": {"status": "ok", "data": ["d.parquet"]}}, "parameters": {"00_ok": {}},
            "sources": {"00_ok": "notebooks/00_ok.ipynb"}, **over}


def _run(root: Path, where: str = "r1", **over) -> Path:
    """A finished run folder with data, a part and a report, under ``outputs/<where>``."""
    d = root / "outputs" / where
    for sub in rf.SUBDIRS:
        (d / sub).mkdir(parents=True, exist_ok=True)
    (d / "manifest.json").write_text(json.dumps(_manifest(Path(where).name, **over)))
    (d / "status" / "00_ok.json").write_text(json.dumps({"status": "ok", "data": ["d.parquet"]}))
    (d / "data" / "d.parquet").write_bytes(b"committed data")
    (d / "report" / "index.html").write_text("committed report")
    return d


def _tree(d: Path) -> dict:
    return {str(p.relative_to(d)): (p.read_bytes() if p.is_file() and not p.is_symlink() else None)
            for p in sorted(d.rglob("*"))}


def _cli(capsys, *args) -> tuple[int, str]:
    rc = cli.main([str(a) for a in args])
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") <= 1, err
    return rc, err


# -- data loss: one guard (runfolder.open_for_write) before every write ------------------------
@pytest.mark.parametrize("command", [["run-notebook", "{run}", "00_ok"], ["share", "{run}"], ["finalize", "{run}"]])
def test_a_committed_reference_is_read_only(project, capsys, command):
    ref = _run(project, "reference/h200")
    before = _tree(ref)
    rc, err = _cli(capsys, *[c.format(run=ref) for c in command])
    assert rc == 2 and "a committed reference is read-only" in err
    assert _tree(ref) == before


@pytest.mark.parametrize("command", [["run-notebook", "{run}", "00_ok"], ["share", "{run}"], ["finalize", "{run}"]])
def test_a_live_runner_is_respected(project, capsys, command):
    run = _run(project)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (run / rf.LOCK_NAME).write_text(json.dumps({"pid": holder.pid, "host": rf._host(), "start": "now"}))
        before = _tree(run)
        rc, err = _cli(capsys, *[c.format(run=run) for c in command])
        assert rc == 2 and f"pid {holder.pid}" in err and "holds this run" in err
        assert _tree(run) == before
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("link", ["share", "share/figures", "status", "data"])
def test_nothing_is_followed_out_of_the_run(project, capsys, link):
    run, outside = _run(project), project / "outside"
    outside.mkdir()
    (outside / "summary.md").write_text("a user's file")
    (outside / "a.png").write_bytes(b"a user's figure")
    (run / link).parent.mkdir(parents=True, exist_ok=True)
    if (run / link).exists():
        os.rename(run / link, project / "moved")
    (run / link).symlink_to(outside)
    rc, err = _cli(capsys, "share", run)
    assert rc == 2 and "leads outside the run folder" in err
    assert _tree(outside) == {"summary.md": b"a user's file", "a.png": b"a user's figure"}


def test_an_empty_aside_folder_keeps_the_finished_outputs(project, monkeypatch):
    run = _run(project)
    (run / ".aside-00_ok").mkdir()
    before = _tree(run)

    def failing(run_dir, stem, **kw):
        rf.write_part(run_dir, stem, {"status": "failed", "error": "boom"})
        (run_dir / "data" / "d.parquet").write_bytes(b"half written")
        return {"status": "failed", "error": "boom", "duration_s": 0.1}
    monkeypatch.setattr(local, "run_notebook", failing)
    part = local.redo_notebook(run, "00_ok", "its data is missing", say=lambda s: None)
    assert part["status"] == "failed"
    assert (run / "data" / "d.parquet").read_bytes() == b"committed data"
    assert rf.read_part(run, "00_ok")["status"] == "failed"      # says the redo failed; the data stays
    assert not (run / ".aside-00_ok").exists()
    after = _tree(run)
    assert {k: v for k, v in after.items() if k != "status/00_ok.json"} == \
        {k: v for k, v in before.items() if k not in ("status/00_ok.json", ".aside-00_ok")}


def test_advise_out_is_checked_and_written_whole(project, tmp_path):
    from pinpath.advise import main as adv
    ref = _run(project, "reference/h200")
    (ref / "advise").mkdir()
    for out, said in ((ref / "advise", "committed reference"), (Path("/"), "not an earlier advise's"),
                      (project / "notebooks", "not an earlier advise's")):
        with pytest.raises(BadParameter, match=said):
            adv._check_out(out)
    first, second = adv._new_out(), adv._new_out()       # two advises in one second
    assert first != second and first.is_dir() and second.is_dir()
    earlier = tmp_path / "adv"                            # an earlier advise's summary.md that is a link
    earlier.mkdir()
    (tmp_path / "victim.md").write_text("a user's file")
    (earlier / "summary.md").symlink_to(tmp_path / "victim.md")
    (earlier / "advice.html").write_text("old")
    assert adv._check_out(earlier) == earlier
    from pinpath.atomic import replacing_folder
    with replacing_folder(earlier) as tmp:
        (tmp / "summary.md").write_text("new")
    assert (earlier / "summary.md").read_text() == "new" and not (earlier / "summary.md").is_symlink()
    assert (tmp_path / "victim.md").read_text() == "a user's file"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".adv")]


# -- tracebacks: every file read is typed, sized and depth-checked -------------------------------
BAD_MANIFESTS = [
    ({"runner": "x"}, "'runner' is a str"),
    ({"notebooks": {"00_ok": 5}}, "'notebooks.00_ok' is a int"),
    ({"duration_s": "abc"}, "'duration_s' is a str"),
    ({"git": {"commit": ["a"]}}, "'commit' is a list"),
    ({"notebooks": {"00_ok": {"status": "ok", "data": [1]}}}, "not a file name"),
    ({"parameters": {"00_ok": 3}}, "'parameters.00_ok' is a int"),
]


@pytest.mark.parametrize("over, said", BAD_MANIFESTS)
@pytest.mark.parametrize("command", [["runs"], ["share", "{run}"], ["finalize", "{run}"], ["run", "--resume", "r1"],
                                     ["compare", "{run}", "{run}"]])
def test_a_manifest_of_wrong_types_is_one_sentence(project, capsys, over, said, command):
    run = _run(project, **over)
    rc, err = _cli(capsys, *[c.format(run=run) for c in command])
    if command == ["runs"]:
        assert rc == 0 and said in capsys.readouterr().out + err or rc == 0
    else:
        assert rc == 2 and "manifest.json" in err and said in err, err


@pytest.mark.parametrize("text", ["[" * 200_000 + "]" * 200_000, '{"a": ' * 100 + "1" + "}" * 100,
                                  "1" * 5000, "\xff\xfe"])
def test_a_deep_or_huge_manifest_is_one_sentence(project, capsys, text):
    run = _run(project)
    (run / "manifest.json").write_bytes(text.encode("latin-1"))
    for args in (["share", run], ["finalize", run], ["compare", run, run]):
        rc, err = _cli(capsys, *args)
        assert rc == 2 and "manifest" in err
    assert cli.main(["runs"]) == 0 and "unreadable" in capsys.readouterr().out


def test_a_status_part_of_wrong_types_is_one_sentence(project, capsys):
    run = _run(project)
    (run / "status" / "00_ok.json").write_text(json.dumps({"status": 5, "duration_s": "abc"}))
    rc, err = _cli(capsys, "finalize", run)
    assert rc == 2 and "status/00_ok.json" in err and "'status' is a int" in err


@pytest.mark.parametrize("line", [
    "omptarget device 0 info: Copying data from host to device, HstPtr=0x1, TgtPtr=0x2, Size=" + "9" * 30 + ", Name=a",
    "omptarget device " + "9" * 25 + " info: Copying data from host to device, HstPtr=0x1, TgtPtr=0x2, Size=8, Name=a",
    "pinpath-region: invocation step=" + "9" * 25 + " invocation=1",
    "pinpath-region: invocation step=1 invocation=" + "9" * 25,
])
def test_a_trace_number_past_64_bits_is_one_sentence(tmp_path, line):
    from pinpath.advise.parse import read_trace
    good = "omptarget device 0 info: Copying data from host to device, HstPtr=0x1, TgtPtr=0x2, Size=8, Name=a"
    (tmp_path / "t.info").write_text(f"{line}\n{good}\n")
    with pytest.raises(BadParameter, match=r"t\.info: line 1: .* is not a whole number from 0 to"):
        read_trace(tmp_path / "t.info")


def test_rocprof_calls_past_64_bits_is_one_sentence(tmp_path):
    from pinpath.report.rocprof import read_stats
    (tmp_path / "s.csv").write_text("Name,Calls,TotalDurationNs,AverageNs,Percentage\n"
                                    f"hsa_amd_memory_lock,{'9' * 30},5,5,1.0\n")
    with pytest.raises(BadParameter, match="line 2: Calls is .* more than 9223372036854775807"):
        read_stats(tmp_path / "s.csv")


# -- hangs: reads never block, sizes are capped, options bounded -------------------------------
def _within(seconds: float, fn, *args):
    """``fn(*args)`` in a thread that must end within ``seconds``; its result or exception."""
    box = {}

    def go():
        try:
            box["value"] = fn(*args)
        except BaseException as e:          # noqa: BLE001 - handed back to the test
            box["error"] = e
    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        # unblock the reader so the thread ends: open every FIFO of the test for writing
        raise AssertionError(f"{fn.__name__} blocked for {seconds} s")
    return box


@pytest.mark.parametrize("fifo", ["status/00_ok.json", "runner.lock", "manifest.json", "status/00_ok.kernel.json"])
def test_a_fifo_in_a_run_folder_is_not_waited_on(project, fifo):
    run = _run(project)
    (run / fifo).unlink(missing_ok=True)
    os.mkfifo(run / fifo)
    try:
        box = _within(5, lambda: (rf.RunLock(run).holder(), rf.read_manifest(run), rf.read_part(run, "00_ok")))
        assert "value" in box or isinstance(box.get("error"), BadParameter), box
        if "error" in box:
            assert "not a regular file" in str(box["error"])
    finally:
        with open(os.open(run / fifo, os.O_RDWR | os.O_NONBLOCK), "wb"):
            pass


def test_a_fifo_figure_or_data_set_is_not_waited_on(project):
    from pinpath.report.rundata import RunData
    from pinpath.report.share import _readable_images
    from pinpath.run.notebook import missing_data
    run = _run(project)
    (run / "data" / "d.parquet").unlink()
    os.mkfifo(run / "data" / "d.parquet")
    os.mkfifo(run / "figures" / "00_ok-1.png")
    try:
        assert _within(5, RunData.read, run)["value"].unreadable == ["d.parquet"]
        assert _within(5, missing_data, run, {"data": ["d.parquet"]})["value"] == ["d.parquet"]
        assert _within(5, _readable_images, [run / "figures" / "00_ok-1.png"])["value"] == []
    finally:
        for f in (run / "data" / "d.parquet", run / "figures" / "00_ok-1.png"):
            with open(os.open(f, os.O_RDWR | os.O_NONBLOCK), "wb"):
                pass


def test_a_parquet_bomb_is_not_read(project, monkeypatch):
    import pandas as pd
    from pinpath.report import rundata
    run = _run(project)
    pd.DataFrame({"x": [0] * 200_000}).to_parquet(run / "data" / "d.parquet", compression="zstd", use_dictionary=False)
    assert (run / "data" / "d.parquet").stat().st_size < 10_000        # 1.6 MB of zeros, compressed
    monkeypatch.setattr(rundata, "MAX_EXPANDED_NBYTES", 1 << 20)
    assert rundata.RunData.read(run).unreadable == ["d.parquet"]


def test_a_file_past_its_cap_is_refused(tmp_path):
    from pinpath.safeio import read_json
    (tmp_path / "m.json").write_text(json.dumps({"x": "a" * 2000}))
    with pytest.raises(BadParameter, match="larger than the 1000 bytes"):
        read_json(tmp_path / "m.json", 1000)


@pytest.mark.parametrize("repeats", ["100000000", "4", "-1"])
def test_advise_repeats_are_bounded(tmp_path, capsys, repeats):
    (tmp_path / "t.info").write_text("x\n")
    rc, err = _cli(capsys, "advise", tmp_path / "t.info", "--repeats", repeats)
    assert rc == 2 and "--repeats must be at least 5" in err and "at most 1000" in err


# -- signals outside a run: one line, 130 or 143 ------------------------------------------------
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_share_is_one_line(project, monkeypatch, capsys, signum, code):
    from pinpath.report import share
    run = _run(project)

    def slow(*a, **kw):
        os.kill(os.getpid(), signum)
        raise AssertionError("the signal did not stop share")
    monkeypatch.setattr(share, "share_run", slow)
    old = signal.getsignal(signal.SIGTERM)
    try:
        rc, err = _cli(capsys, "share", run)
    finally:
        signal.signal(signal.SIGTERM, old)
    assert rc == code and err.startswith("pinpath: stopped by signal") and not (run / rf.LOCK_NAME).exists()


def test_a_swallowed_signal_still_interrupts_the_runner():
    from pinpath.run.signals import Interrupted, on_signals, raise_pending
    with on_signals():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        except Interrupted:
            pass                   # where a weakref callback would have printed and dropped it
        with pytest.raises(Interrupted, match="SIGTERM"):
            raise_pending()
        raise_pending()            # once only


# -- escaping: what came from a file never becomes markup or a terminal escape -------------------
def test_summary_md_escapes_the_manifests_commits(project):
    from pinpath.report.share import summary_markdown
    run = _run(project, git={"commit": "abc` <img src=x onerror=alert(1)> `", "dirty": False},
               judged_by={"commit": "[x](javascript:alert(1))"})
    text = summary_markdown(run, figures=[])
    line = next(l for l in text.splitlines() if l.startswith("Reproduce"))
    assert "`` git checkout abc` <img src=x onerror=alert(1)> ` ``" in line       # a longer fence: one code span
    assert "`[x](javascript:alert(1))`" in line


def test_a_notebook_name_from_claims_is_no_link(project):
    import pandas as pd
    from pinpath.report.html import Scrubber
    from pinpath.report.html.claims_table import _claim_rows
    rows = _claim_rows(pd.DataFrame([{"id": "C1", "notebook": "javascript:alert(1)//", "verdict": "<b>x</b>"},
                                     {"id": "C2", "notebook": "01_c12_lock_copy", "verdict": "holds"}]),
                       Scrubber(project), None)
    assert rows[0]["nb_href"] == "" and rows[1]["nb_href"] == "01_c12_lock_copy.html"


def test_pinpath_runs_escapes_the_terminal(project, capsys):
    _run(project, preset="smoke\x1b[2J\u202e")
    assert cli.main(["runs"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[2J\\u202e" in out


# -- make: a variable is text ----------------------------------------------------------------
def test_make_does_not_run_a_variables_shell(tmp_path):
    marker = tmp_path / "ran"
    for var in (f"EXECUTOR=$(shell touch {marker})", f"PRESET=$(shell touch {marker})"):
        subprocess.run(["make", "-s", "-n", "-o", "setup", "-o", ".venv/.stamp", "validate", var],
                       cwd=ROOT, capture_output=True, text=True)
    r = subprocess.run(["make", "-s", "-n", "-o", "setup", "-o", ".venv/.stamp", "validate"], cwd=ROOT,
                       env={**os.environ, "EXECUTOR": f"$(shell touch {marker})"}, capture_output=True, text=True)
    assert r.returncode == 0 and not marker.exists()


# -- a full disk: the sentence says whether the run could be marked ------------------------------
def test_a_full_disk_says_the_run_could_not_be_marked(project, monkeypatch):
    import errno
    run = _run(project, status="running")

    def full(*a, **kw):
        raise OSError(errno.ENOSPC, "No space left on device", str(run / "manifest.json"))
    monkeypatch.setattr(rf, "write_manifest", full)
    e = fin.unwritable(run, OSError(errno.ENOSPC, "No space left on device", str(run / "data" / "x")))
    assert "could not be marked failed either" in str(e) and rf.read_manifest(run)["status"] == "running"
    monkeypatch.undo()
    e = fin.unwritable(run, OSError(errno.ENOSPC, "No space left on device", str(run / "data" / "x")))
    assert str(e).endswith("is marked failed") and rf.read_manifest(run)["status"] == "failed"


# -- fuzz: any manifest, part or trace is read or refused in one sentence ------------------------
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
                    max_leaves=12)
FIELDS = ["run_id", "platform", "preset", "status", "runner", "git", "judged_by", "duration_s", "notebooks",
          "parameters", "sources", "end", "start"]


@FUZZ
@given(over=st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=4),
       part=st.dictionaries(st.sampled_from(["status", "pid", "host", "duration_s", "data", "error", "end"]), JSON,
                            max_size=4))
def test_fuzz_manifest_and_part(tmp_path_factory, over, part):
    root = tmp_path_factory.mktemp("fuzz")
    run = root / "r1"
    for sub in rf.SUBDIRS:
        (run / sub).mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({**_manifest(), **over}, default=str))
    (run / "status" / "00_ok.json").write_text(json.dumps(part, default=str))
    try:
        man = rf.read_manifest(run)
    except BadParameter as e:
        assert "manifest.json" in str(e) and "\n" not in str(e)
    else:
        try:
            merged = rf.merge(run, man)
            rf.state(merged)
            for p in merged["notebooks"].values():
                float(p.get("duration_s", 0) or 0)
                str(p.get("status"))
        except BadParameter as e:
            assert "00_ok.json" in str(e) or "notebook" in str(e)
    rf.list_runs(root)


@FUZZ
@given(lines=st.lists(st.one_of(
    st.builds("omptarget device {} info: Copying data from {} to {}, HstPtr=0x{}, TgtPtr=0x1, Size={}, Name={}".format,
              st.integers(0, 10**25), st.sampled_from(["host", "device"]), st.sampled_from(["host", "device"]),
              st.integers(0, 10**20), st.integers(0, 10**30), st.text(max_size=6)),
    st.builds("pinpath-region: invocation step={} invocation={}".format, st.integers(0, 10**25), st.integers(0, 10**25)),
    st.text(max_size=40)), min_size=1, max_size=8))
def test_fuzz_trace(tmp_path_factory, lines):
    from pinpath.advise.parse import read_trace
    path = tmp_path_factory.mktemp("trace") / "t.info"
    path.write_text("\n".join(lines) + "\n", errors="replace")
    try:
        read_trace(path)
    except BadParameter as e:
        assert str(path) in str(e) and "\n" not in str(e)


def test_an_advised_array_name_stays_one_code_span():
    import types
    import pandas as pd
    from pinpath.advise.advice import _pin_list
    arrays = pd.DataFrame({"variant": ["app_pinned"], "transfers": [100], "pays": [True], "array": [0],
                           "name": ["a` <img src=x onerror=alert(1)> `"], "nbytes": [4096], "uses": [2.0], "high": [3.0]})
    line = _pin_list(None, types.SimpleNamespace(arrays=arrays))[0]
    assert "`` a` <img src=x onerror=alert(1)> ` ``" in line


@pytest.mark.parametrize("fn, value, said", [
    ("cell_timeout", "9" * 30, "at most 2592000 seconds"), ("minutes", "9" * 30, "more than a year"),
    ("mem", "9" * 30 + "G", "more than the"), ("gpus", "9" * 30, "up to 100000")])
def test_numeric_options_are_bounded(fn, value, said):
    from pinpath.errors import PinpathError
    from pinpath.run import plan, profile, slurm
    call = {"cell_timeout": plan.cell_timeout_s, "minutes": slurm.parse_minutes, "mem": slurm.parse_mem_mb,
            "gpus": lambda v: profile.options({"gpus": v})}[fn]
    with pytest.raises(PinpathError, match=said):
        call(value)


def test_a_trace_past_its_cap_or_a_fifo_is_one_sentence(tmp_path, monkeypatch):
    from pinpath.advise import parse
    (tmp_path / "t.info").write_text("x" * 2000)
    monkeypatch.setattr(parse, "MAX_TRACE_NBYTES", 1000)
    with pytest.raises(BadParameter, match=r"t\.info: is larger than the 1000 bytes"):
        parse.read_trace(tmp_path / "t.info")
    os.mkfifo(tmp_path / "f.info")
    with pytest.raises(BadParameter, match="no such trace file"):     # not a regular file: never opened
        parse.read_trace(tmp_path / "f.info")


@pytest.mark.parametrize("text", ["010", "[4096, 010]", "1_000", "1:30"])
def test_a_whole_number_yaml_1_1_would_misread_is_refused(text):
    from pinpath import params
    with pytest.raises(BadParameter, match="not a plain whole number"):
        params._load_yaml(text, "--set 00_platform.REPEATS")


@pytest.mark.parametrize("text, value", [("10", 10), ("0", 0), ("-5", -5), ("0x10", 16), ("[4096, 65536]", [4096, 65536])])
def test_plain_whole_numbers_still_read(text, value):
    from pinpath import params
    assert params._load_yaml(text, "--set X") == value
