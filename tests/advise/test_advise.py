"""Pattern, data set, replay on the host runtime, predictions, advice and the command line."""

from __future__ import annotations

import math
import re
import types

import numpy as np
import pandas as pd
import pytest

from pinpath.advise import pattern, read_trace, replay, write_dataset
from pinpath.advise.advice import advice
from pinpath.advise.main import policies_for
from pinpath.advise.validate import real_rows
from pinpath.advise.predict import predict
from pinpath.advise.report import write_prediction
from pinpath.__main__ import main
from pinpath.experiments.native import native_why_not
from pinpath.runtimes import open_runtime


def test_pattern_reuse_classes_and_sizes(write, tr):
    p = pattern(read_trace(write("run.err", tr.info_trace(steps=2, invocations=3))))
    b = p.buffers.set_index("buffer")
    assert b.loc["0x100000", "transfers"] == 6 and b.loc["0x100000", "h2d"] == 6 and b.loc["0x100000", "d2h"] == 0
    assert b.loc["0x200000", "nbytes"] == 245760 and b.loc["0x700000", "transfers"] == 1
    assert b.loc["0x100000", "reuse_class"] == 4   # 6 rounded down to a power of two
    got = {tuple(r) for r in p.classes[["nbytes", "direction", "reuse"]].itertuples(index=False)}
    assert got == {(384, "h2d", 4), (245760, "d2h", 4), (8192, "h2d", 1)}
    t = p.transfers
    assert list(t[t.buffer == "0x100000"].use) == [0, 1, 1, 1, 1, 1]
    assert int(p.sizes.transfers.sum()) == len(t) == 13
    assert p.regions[p.regions.region >= 0].transfers.eq(2).all()


def test_many_sizes_are_binned(write, tr):
    lines = [tr.H2D.format(hp=hex(0x1000 * (i + 1)), tp="0x1", n=1000 + i, name="a") for i in range(100)]
    p = pattern(read_trace(write("many.err", "\n".join(lines))))
    assert p.size_binned and set(p.classes.nbytes) == {512, 1024}   # 1000..1023 -> 512, 1024..1099 -> 1024


def test_dataset_round_trips(write, tr, tmp_path):
    p = pattern(read_trace(write("run.err", tr.info_trace())))
    paths = write_dataset(p, tmp_path / "out")
    assert len(paths) == 12 and all(x.stat().st_size > 0 for x in paths)
    back = pd.read_parquet(tmp_path / "out/pattern/buffers.parquet")
    assert back.transfers.tolist() == p.buffers.transfers.tolist()
    csv = pd.read_csv(tmp_path / "out/pattern/transfers.csv")
    assert len(csv) == len(p.transfers) and set(csv.columns) >= {"direction", "nbytes", "buffer", "region", "reuse"}


@pytest.fixture
def host():
    rt = open_runtime("host")
    yield rt
    rt.close()


@pytest.mark.parametrize("engine", ["python", "native"])
def test_replay_on_host(host, engine):
    if engine == "native" and native_why_not(host):
        pytest.skip(f"no native engine here: {native_why_not(host)}")
    classes = pd.DataFrame({"nbytes": [4096, 65536], "direction": ["h2d", "d2h"], "reuse": [4, 1]})
    pols = policies_for("host")
    rep = replay(host, classes, pols, 5, engine=engine)
    assert set(rep.engine) == {engine} and set(rep.variant) == set(pols)
    assert (rep.repeat >= 0).all() and not (rep.event == "refused").any()
    assert {"policy", "nbytes", "direction", "reuse", "repeat", "ns"} <= set(rep.columns)
    tr = rep[rep.event == "transfer"]
    n = tr.groupby(["variant", "nbytes", "direction", "reuse", "use"]).ns.size()
    assert n.min() >= 5 and (tr.ns > 0).all()
    # reuse 4 gives a first and a later use, reuse 1 only a first one
    assert set(tr[tr.reuse == 4].use) == {0, 1} and set(tr[tr.reuse == 1].use) == {0}
    reg = rep[rep.event == "register"]
    assert set(reg.variant) == {v for v, (_, pinned, _) in pols.items() if pinned}
    assert set(rep[rep.event == "map"].variant) == set(pols)


def _synthetic_replay(ns: dict, repeats: int = 7) -> pd.DataFrame:
    """Replay rows with known times (arithmetic check of the prediction, not a measurement)."""
    rows = []
    for (variant, event, nbytes, direction, reuse, use), value in ns.items():
        for i in range(repeats):
            rows.append({"variant": variant, "policy": variant, "event": event, "nbytes": nbytes, "direction": direction,
                         "reuse": reuse, "use": use, "repeat": i, "ns": float(value + (i % 3) - 1), "path": "",
                         "error": "", "engine": "python"})
    return pd.DataFrame(rows)


def _known_times(pols, classes, transfer_ns, event_ns) -> dict:
    """(variant, event, nbytes, direction, reuse, use) -> ns for every (nbytes, direction, reuse)
    of ``classes`` under every variant: transfer_ns(variant, use), event_ns(variant, event)."""
    ns = {}
    for v in pols:
        for nb, d, r in classes:
            for use in ((0, 1) if r > 1 else (0,)):
                ns[(v, "transfer", nb, d, r, use)] = transfer_ns(v, use)
            for ev in ("map", "unmap", "register", "unregister"):
                ns[(v, ev, nb, d, r, -1)] = event_ns(v, ev)
    return ns


def test_prediction_sums_and_break_even(write, tr):
    # 6 invocations: pos 384 B h2d (reuse 6 -> class 4), out 240 KiB d2h; table 8 KiB once
    p = pattern(read_trace(write("run.err", tr.info_trace(steps=2, invocations=3))))
    pols = {"plain": ("driver_pageable", False, None), "app_pinned": ("prepinned", True, None)}
    ns = {}
    for v, per in (("plain", 1000), ("app_pinned", 400)):
        for nb, d, r in ((384, "h2d", 4), (245760, "d2h", 4), (8192, "h2d", 1)):
            for use in ((0, 1) if r > 1 else (0,)):
                ns[(v, "transfer", nb, d, r, use)] = per
            for ev in ("map", "unmap") + (("register", "unregister") if v == "app_pinned" else ()):
                ns[(v, ev, nb, d, r, -1)] = 100 if ev in ("map", "unmap") else 500
    pred = predict(p, _synthetic_replay(ns), pols)
    t = pred.totals.set_index("variant")
    # plain: 13 transfers x 1000 + 3 buffers x (map + unmap) 200
    assert t.loc["plain", "predicted_ns"] == 13 * 1000 + 3 * 200
    assert t.loc["app_pinned", "predicted_ns"] == 13 * 400 + 3 * (200 + 1000)
    assert t.loc["plain", "low"] <= t.loc["plain", "predicted_ns"] <= t.loc["plain", "high"]
    assert t.loc["app_pinned", "rank"] == 1
    be = pred.break_even.set_index(["variant", "nbytes"])
    # one-off 1000 ns (register + unregister; maps equal), saving 600 ns per transfer -> 1.67, so 2 transfers
    assert be.loc[("app_pinned", 384), "uses"] == pytest.approx(1000 / 600)
    assert "pays after 2" in be.loc[("app_pinned", 384), "verdict"]
    arr = pred.arrays.set_index("name")
    assert arr.loc["pos[0:48]", "uses"] == pytest.approx(1000 / 600) and arr.loc["pos[0:48]", "pays"]
    assert not arr.loc["table[0:1024]", "pays"]   # moved once: 1 < 2
    words = " ".join(advice(p, pred, platform="cuda", vendor="nvidia"))
    assert "Arrays worth registering: `pos[0:48]`" in words and "`out[0:30720]`" in words
    assert "table" not in words.split("Arrays worth registering")[1].split(".")[0]
    assert "do nothing on NVIDIA" in words and "no GPU" not in words
    assert "**Register the arrays" in words and "engine `python`" in words and "Its cost: 3 us once over 3 array(s)" in words
    typ = pred.typical.set_index(["variant", "by"])
    # each step: 6 transfers, and either the maps (step 0) or the unmaps (step 1) of pos and out
    assert typ.loc[("plain", "step"), "predicted_ns"] == 6 * 1000 + 2 * 100
    # the median invocation: its two transfers (the maps and unmaps fall in the first and last)
    assert typ.loc[("plain", "region"), "predicted_ns"] == 2 * 1000
    # region.cpp's stdout is per invocation: prediction.csv then compares the median invocation
    real = pd.DataFrame({"variant": "plain", "nw": 16, "step": [0, 0, 1], "invocation": [0, 1, 0], "ns": [4000.0] * 3})
    rows = {r["variant"]: r for r in real_rows("region", pred, real)}
    assert rows["plain"]["predicted_ns"] == 2000 and rows["plain"]["real_ns"] == 4000 and rows["app_pinned"]["real_ns"] is None
    assert {r["predicted_ns"] for r in real_rows("region", pred, None) if r["kind"] == "variant"} == \
        {6200, 6 * 400 + 2 * (100 + 500)}
    # with a process column the real figure is the median of the processes' medians, its interval over them
    per_process = pd.DataFrame({"variant": "plain", "invocation": 0, "process": np.repeat([1, 2, 3], 4),
                                "ns": [1000.0, 1000, 1000, 9000, 3000, 3000, 3000, 9000, 2000, 2000, 2000, 9000]})
    row = {r["variant"]: r for r in real_rows("region", pred, per_process)}["plain"]
    assert row["real_ns"] == 2000 and row["low"] <= 2000 / 2000 <= row["high"]


def test_no_saving_is_never_called_a_break_even(write, tr):
    p = pattern(read_trace(write("run.err", tr.info_trace(steps=1, invocations=2))))
    pols = {"plain": ("driver_pageable", False, None), "app_pinned": ("prepinned", True, None)}
    ns = _known_times(pols, ((384, "h2d", 2), (245760, "d2h", 2), (8192, "h2d", 1)),
                      lambda v, use: 1000, lambda v, ev: 100)   # the same time under both
    pred = predict(p, _synthetic_replay(ns), pols)
    assert pred.break_even.verdict.str.startswith("never pays").all()
    assert np.isinf(pred.break_even.uses).all()


def test_a_variant_with_the_baseline_policy_shows_no_saving_and_no_array_to_register(write, tr):
    """lock_mapped on NVIDIA's plugin is plain's policy: its replay differs from plain's by noise
    alone (the 178d5b8 reference's species rows showed 2-22 us "savings"), so its break-even rows
    carry no figure and it puts no array on the list to register (issue 33 item 3)."""
    p = pattern(read_trace(write("run.err", tr.info_trace(steps=2, invocations=3))))
    pols = {"plain": ("driver_pageable", False, None), "lock_mapped": ("driver_pageable", False, None)}
    classes = ((384, "h2d", 4), (245760, "d2h", 4), (8192, "h2d", 1))
    ns = _known_times(pols, classes, lambda v, use: 1000 if v == "plain" else 700, lambda v, ev: 100)
    pred = predict(p, _synthetic_replay(ns), pols)
    be = pred.break_even
    assert len(be) and (be.variant == "lock_mapped").all()
    assert be.verdict.str.startswith("the same policy as plain").all()
    assert be[["one_off_ns", "saving_ns", "saving_low", "saving_high"]].isna().all().all()
    assert not len(pred.arrays) or not (pred.arrays.variant == "lock_mapped").any()


def test_prediction_csv(tmp_path):
    path = write_prediction(tmp_path / "prediction.csv", [
        {"application": "region", "variant": "plain", "predicted_ns": 900.0, "real_ns": 1000.0, "low": 0.8, "high": 1.0},
        {"application": "stencil", "variant": "plain", "predicted_ns": 5.0, "real_ns": None, "low": None, "high": None}])
    df = pd.read_csv(path)
    assert list(df.columns) == ["application", "kind", "variant", "placement", "predicted_placement", "predicted_ns",
                                "predicted_low", "predicted_high", "real_ns", "real_low", "real_high", "ratio", "low",
                                "high", "verdict", "state", "probe_late_share", "real_late_share"]
    assert df.ratio.iat[0] == pytest.approx(0.9) and math.isnan(df.ratio.iat[1])
    assert list(df.kind) == ["variant", "variant"]


def _cli(capsys, *args):
    """``pinpath advise ...`` in this process: (exit status, stdout, stderr)."""
    rc = main(["advise", *map(str, args)])
    out = capsys.readouterr()
    return types.SimpleNamespace(returncode=rc, stdout=out.out, stderr=out.err)


def test_cli_end_to_end_on_host(write, tr, tmp_path, capsys):
    trace = write("run.err", tr.info_trace(steps=2, invocations=2))
    real = write("stencil.out", "# offload_devices=1 variant=plain\nvariant,nx,ny,step,ns,transfer_ns,checkpoint\n"
                                "plain,8,8,0,900000,500000,false\nplain,8,8,1,900000,510000,false\n"
                                "plain,8,8,2,900000,490000,true\n"   # stencil's stdout: its transfer_ns counts
                                "variant,nx,ny,step,ns,transfer_ns,checkpoint\napp_pinned,8,8,0,900000,400000,false\n")
    # (a second run's output joined to the first, its header line with it)
    out = tmp_path / "adv"
    r = _cli(capsys, trace, "--platform", "host", "--out", out, "--repeats", "5", "--real", real, "--application", "miniqmc")
    assert r.returncode == 0, r.stderr
    for name in ("advice.html", "summary.md", "prediction.csv", "replay.csv", "totals.csv", "break_even.csv",
                 "cost_by_size.png", "pattern/transfers.parquet", "pattern/buffers.csv"):
        assert (out / name).is_file(), name
    md = (out / "summary.md").read_text()
    assert "### Ranking" in md and "### Advice" in md and "no GPU" in md and "RLIMIT_MEMLOCK" in md and "C11" in md
    page = (out / "advice.html").read_text()
    assert page.index(">Advice</h3>") < page.index(">Pattern</h3>") < page.index(">All figures</h2>")  # advice first
    figures = page.split(">All figures</h2>", 1)[1]
    assert not re.search(r"\d\.\d+e[+-]\d|>\s*(NaN|nan|inf|True|False)\s*<", figures), figures[:400]
    pred = pd.read_csv(out / "prediction.csv")
    plain = pred[pred.variant == "plain"].iloc[0]
    assert plain.application == "miniqmc" and plain.real_ns == 500000 and plain.low <= plain.ratio <= plain.high
    assert pred.set_index("variant").real_ns.get("app_pinned") == 400000
    assert pred[~pred.variant.isin(["plain", "app_pinned", "app_pinned - plain"])].real_ns.isna().all()
    diff = pred[pred.kind == "difference"].set_index("variant")
    # the real difference is the medians' difference; the predicted one has its interval around it
    assert diff.real_ns["app_pinned - plain"] == -100000
    row = diff.loc["app_pinned - plain"]
    assert row.predicted_low <= row.predicted_ns <= row.predicted_high
    assert pred[pred.real_ns.isna()].verdict.isna().all()


def test_cli_hsa_stats_says_what_counts_tell(write, tr, tmp_path, capsys):
    r = _cli(capsys, write("results.hsa_stats.csv", tr.HSA_STATS), "--out", tmp_path / "adv")
    assert r.returncode == 0, r.stderr
    assert "1.00 locks per copy" in r.stdout and "cannot be told without sizes" in r.stdout
    assert (tmp_path / "adv/summary.md").is_file()


def test_cli_refuses_in_one_sentence(write, tmp_path, capsys):
    r = _cli(capsys, write("junk.txt", "nothing to see\n"), "--out", tmp_path / "adv")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "junk.txt" in r.stderr and "Traceback" not in r.stderr
    r = _cli(capsys, write("x.err", "a\n"), "--repeats", "2")
    assert r.returncode == 2 and "at least 5" in r.stderr
    r = _cli(capsys, write("y.err", "a\n"), "--construct", "kernel", "--out", tmp_path / "adv2")
    assert r.returncode == 2 and "--construct must be one of update, region" in r.stderr
    assert not (tmp_path / "adv2").exists()


def test_rows_of_one_array_are_one_array(write, tr):
    # a stencil: the grid (64 KiB at 0x10000) in once; rows 1 and 14 out, rows 0 and 15 in, every step
    row, grid = 4096, 0x10000
    lines = [tr.H2D.format(hp=hex(grid), tp="0x1", n=16 * row, name="g[0:n]")]
    for s in range(3):
        lines.append(f"pinpath-region: invocation step={s} invocation=0")
        lines += [tr.D2H.format(hp=hex(grid + row), tp="0x1", n=row, name="g[top:nx]"),
                  tr.D2H.format(hp=hex(grid + 14 * row), tp="0x1", n=row, name="g[bottom:nx]"),
                  tr.H2D.format(hp=hex(grid), tp="0x1", n=row, name="g[0:nx]"),
                  tr.H2D.format(hp=hex(grid + 15 * row), tp="0x1", n=row, name="g[ghost:nx]")]
    lines.append(tr.H2D.format(hp=hex(0x100000), tp="0x1", n=64, name="other[0:8]"))   # a separate array
    p = pattern(read_trace(write("stencil.err", "\n".join(lines))))
    assert len(p.buffers) == 5 and len(p.arrays) == 2
    g = p.arrays.set_index("array").loc[hex(grid)]
    assert g["nbytes"] == 16 * row and g["buffers"] == 4 and g["transfers"] == 13 and g["name"] == "g[0:n]"
    assert set(p.transfers[p.transfers.buffer != hex(0x100000)].array) == {hex(grid)}
    assert 16 * row in set(p.classes.nbytes)   # the array's size is replayed for its one-off costs


def test_cli_thread_table_without_copy_rows(tmp_path, capsys):
    from importlib import resources
    path = resources.files("pinpath").joinpath("report/data/thread_hsa_stats_without_user_pinning.csv")
    r = _cli(capsys, path, "--out", tmp_path / "adv")
    assert r.returncode == 0, r.stderr
    assert "803 locks" in r.stdout and "unknown, not zero" in r.stdout and "cannot be told without the copy rows" in r.stdout


def test_cli_rocprofv3_gives_durations_and_says_nothing_replays(write, tr, tmp_path, capsys):
    r = _cli(capsys, write("mc.csv", tr.v3_trace(rows=((1, 100, 180), (2, 300, 340), (3, 500, 560)))),
             "--out", tmp_path / "adv")
    assert r.returncode == 0, r.stderr
    assert "H2D: 3 copies" in r.stdout and "median 60.0 ns" in r.stdout and "Nothing can be replayed" in r.stdout
    assert (tmp_path / "adv/pattern/transfers.parquet").is_file() and not (tmp_path / "adv/replay.csv").exists()


def test_cli_refuses_a_vendor_it_does_not_model_and_writes_nothing(write, tr, tmp_path, capsys):
    r = _cli(capsys, write("run.err", tr.info_trace(steps=1, invocations=1)), "--platform", "host", "--vendor", "intel",
             "--out", tmp_path / "adv")
    assert r.returncode == 2 and "vendor 'intel'" in r.stderr and not (tmp_path / "adv").exists()


def test_a_refused_registration_is_not_replayed():
    from pinpath.advise.replay import _refuse_failed_lives
    base = {"policy": "prepinned", "nbytes": 4096, "direction": "h2d", "reuse": 2, "use": -1, "repeat": 0,
            "ns": 5.0, "path": "", "error": "", "engine": "native"}
    rows = [{**base, "variant": "app_pinned", "event": "register", "error": "ENOMEM (12)"},
            {**base, "variant": "app_pinned", "event": "transfer", "use": 0},
            {**base, "variant": "plain", "event": "transfer", "use": 0}]
    out = pd.DataFrame(_refuse_failed_lives(rows))
    assert out[out.variant == "app_pinned"].event.tolist() == ["refused"]
    assert out[out.variant == "app_pinned"].error.iat[0] == "ENOMEM (12)"
    assert out[out.variant == "plain"].event.tolist() == ["transfer"]


def test_the_runtime_term_adds_the_probe_less_the_copy(write, tr):
    """runtime_rows: each probed update less the replay's median later-use copy of its class;
    predict then charges every transfer of a variant that has the term its size and direction's."""
    from pinpath.advise.runtime_term import runtime_rows
    p = pattern(read_trace(write("run.err", tr.info_trace(steps=2, invocations=3))))
    pols = {"plain": ("driver_pageable", False, None), "app_pinned": ("prepinned", True, None)}
    ns = _known_times(pols, ((384, "h2d", 4), (245760, "d2h", 4), (8192, "h2d", 1)),
                      lambda v, use: 1000 if use == 0 else 800, lambda v, ev: 100)   # later uses are cheaper
    rep = _synthetic_replay(ns)
    probe = pd.DataFrame([{"variant": "plain", "process": k, "direction": d, "nbytes": nb, "round": i, "ns": 3800.0}
                          for k in range(3) for i in range(5) for nb, d in ((384, "h2d"), (245760, "d2h"), (8192, "h2d"))])
    rt = runtime_rows(probe, rep)
    assert set(rt.variant) == {"plain"} and (rt.event == "runtime").all() and len(rt) == len(probe)
    # the 8 KiB class is used once (use 0 only): its copy is 1000; the others' later uses cost 800
    assert rt.groupby("nbytes").ns.median().to_dict() == {384: 3000.0, 8192: 2800.0, 245760: 3000.0}
    with_term = predict(p, pd.concat([rep, rt], ignore_index=True), pols).totals.set_index("variant")
    without = predict(p, rep, pols).totals.set_index("variant")
    # 13 transfers: 12 of the reused classes (3000 each) and the table once (2800)
    assert with_term.loc["plain", "predicted_ns"] == pytest.approx(without.loc["plain", "predicted_ns"] + 12 * 3000 + 2800,
                                                                   abs=30)
    assert with_term.loc["app_pinned", "predicted_ns"] == without.loc["app_pinned", "predicted_ns"]
    assert with_term.loc["plain", "runtime_term"] and not with_term.loc["app_pinned", "runtime_term"]


def test_the_runtime_probe_through_the_host_libomptarget(write, tr, tmp_path, host_offload):
    """probe_runtime with updates built for the host offload target: rows per variant, process,
    size and direction; a build for another vendor is refused in one sentence."""
    from pinpath.advise.runtime_term import probe_runtime
    from pinpath.errors import BadParameter
    host_offload("updates")
    classes = pd.DataFrame({"nbytes": [384, 8192], "direction": ["h2d", "d2h"], "reuse": [2, 1]})
    probe, why = probe_runtime(classes, ["plain", "lock_mapped"], vendor="host", offload_dir=tmp_path, rounds=4,
                               processes=2)
    assert why == "" and len(probe) == 2 * 2 * 2 * 2 * 4 and (probe.ns > 0).all()
    assert probe.groupby(["variant", "process"]).size().eq(16).all()
    probe, why = probe_runtime(classes, ["plain"], vendor="nvidia", offload_dir=tmp_path)
    assert probe.empty and why.endswith("is for host, and nvidia is modelled")
    probe, why = probe_runtime(classes, ["app_pinned"], vendor="host", construct="region", offload_dir=tmp_path,
                               rounds=4, processes=1)
    assert why == "" and len(probe) == 2 * 2 * 4 and set(probe.variant) == {"app_pinned"}
    with pytest.raises(BadParameter, match="--construct must be one of update, region"):
        probe_runtime(classes, ["plain"], vendor="host", construct="kernel", offload_dir=tmp_path)


def test_the_runtime_probe_takes_fewer_rounds_of_large_sizes():
    from pinpath.advise.runtime_term import MIN_ROUNDS, PROBE_BUDGET_NBYTES, probe_rounds
    assert probe_rounds([384, 32768, 16 << 20], 100) == 100                  # the stencil's sizes: all rounds
    assert probe_rounds([256 << 20], 100) == PROBE_BUDGET_NBYTES // (256 << 20) == 16   # by the budget ...
    assert probe_rounds([1 << 30, 1 << 30], 100) == MIN_ROUNDS               # ... but never fewer than the minimum
    assert probe_rounds([8], 5) == 5                                          # asked for fewer: as asked


def test_variants_the_prediction_cannot_tell_apart_share_a_rank():
    """A variant whose interval overlaps the one ranked just before it shares its rank (the
    stencil's plain and lock_mapped on CUDA: one path, ranked 2 and 3 by probe noise alone)."""
    from pinpath.advise.predict import ranked
    tot = pd.DataFrame([
        {"variant": "plain", "predicted_ns": 33.9e6, "low": 33.2e6, "high": 34.5e6},
        {"variant": "app_pinned", "predicted_ns": 24.0e6, "low": 23.7e6, "high": 24.4e6},
        {"variant": "lock_mapped", "predicted_ns": 35.1e6, "low": 34.0e6, "high": 35.7e6},
        {"variant": "other", "predicted_ns": 40.0e6, "low": 39.0e6, "high": 41.0e6},
        {"variant": "refused", "predicted_ns": float("nan"), "low": float("nan"), "high": float("nan")}])
    r = ranked(tot).set_index("variant")["rank"]
    assert r.isna().to_dict() == {"plain": False, "app_pinned": False, "lock_mapped": False, "other": False, "refused": True}
    assert r.dropna().to_dict() == {"plain": 2, "app_pinned": 1, "lock_mapped": 2, "other": 4}
