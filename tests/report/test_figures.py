"""Every figure function on a tiny synthetic frame (Agg): words on the axes, binary units,
legends beside the data, the thread's figures as reference lines."""

from __future__ import annotations

import io
import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from pinpath.report import figures  # noqa: E402
from pinpath.report.figures.axes import _references  # noqa: E402

SIZES = [4096, 65536, 1 << 20, 16 << 20, 800_000_000]
DECIMAL = re.compile(r"\b\d+(\.\d+)?\s?(kB|MB|GB|TB)\b")
RAW_COLUMNS = {"nbytes", "ns", "total_ns", "overhead_ns", "wall_ns", "AverageNs", "threads", "step"}


@pytest.fixture(autouse=True)
def _close():
    figures.theme()
    yield
    plt.close("all")


def _rng():
    return np.random.default_rng(7)


def cost_frame(backings=("4k", "thp")) -> pd.DataFrame:
    rng, rows = _rng(), []
    for backing in backings:
        for op, state, base in (("lock", "pageable", 60_000), ("unlock", "locked", 40_000), ("query", "locked", 900)):
            for n in SIZES:
                for r in range(3):
                    rows.append({"op": op, "state": state, "kind": "heap", "backing": backing, "nbytes": n,
                                 "ns": base * (1 + n / 2**24) * rng.uniform(0.9, 1.1) / (2 if backing == "thp" else 1),
                                 "direction": "h2d" if r % 2 else "d2h"})
    return pd.DataFrame(rows)


def transfers_frame() -> pd.DataFrame:
    rng = _rng()
    return pd.DataFrame([{"policy": p, "array": a, "case": c, "nbytes": n, "total_ns": rng.uniform(5e3, 5e5),
                          "lock_ns": 3e4, "dma_ns": 1e4, "wait_ns": 2e3, "unlock_ns": 7e3, "direction": d}
                         for p in ("lock_always", "stage_per_copy") for a in ("pos", "out") for c in ("1_lock", "2_pre")
                         for n in SIZES[:3] for d in ("h2d", "d2h")])


def _texts(fig) -> list[str]:
    out = []
    for ax in fig.axes:
        out += [ax.get_xlabel(), ax.get_ylabel(), ax.get_title()]
        out += [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
        out += [t.get_text() for t in ax.texts]
    out += [t.get_text() for t in fig.texts]
    return out


def _render(fig) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=40)
    assert buf.tell() > 1000


def _check(fig, *, refs=(), size_axis=False, time_axis=True) -> None:
    assert isinstance(fig, matplotlib.figure.Figure)
    fig.canvas.draw()
    texts = _texts(fig)
    labels = [t for ax in fig.axes for t in (ax.get_xlabel(), ax.get_ylabel()) if t]
    assert labels and not RAW_COLUMNS & set(labels), labels
    assert not any(DECIMAL.search(t) for t in texts), [t for t in texts if DECIMAL.search(t)]
    if size_axis:
        assert "transfer size" in labels and any(re.search(r"\d (KiB|MiB|GiB)$", t) for t in texts)
    if time_axis:
        assert any(re.search(r"\d (ns|us|ms|s)$", t) for t in texts), texts
    for label in refs:
        assert label in texts, (label, texts)
    _render(fig)


def _legend_outside(fig) -> None:
    """Each legend lies right of the axes it belongs to (it hides no data)."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    legends = [lg for ax in fig.axes for lg in ([ax.get_legend()] if ax.get_legend() else [])] + list(fig.legends)
    assert legends
    right = max(ax.get_window_extent(r).x1 for ax in fig.axes)
    for lg in legends:
        assert lg.get_window_extent(r).x0 >= right - 1


REF = [("thread: lock 35 us", 35_000), ("thread: unlock 7 us", 7_000)]


def test_vs_size_binary_axis_log_time_and_references():
    fig = figures.vs_size(cost_frame(("4k",)), "ns", hue="op", col="direction", title="t", reference=REF)
    _check(fig, refs=[r[0] for r in REF], size_axis=True)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and ax.get_xscale() == "log"
    assert any(np.allclose(line.get_ydata(), 35_000) for line in ax.get_lines())
    _legend_outside(fig)


def test_vs_size_old_call_still_works():
    bw = cost_frame(("4k",)).assign(gb_per_s=lambda d: d.nbytes / d.ns)
    fig = figures.vs_size(bw, "gb_per_s", hue="op", col="direction", ns=False, logy=False, ylabel="GB/s (decimal)")
    _check(fig, size_axis=True, time_axis=False)
    assert fig.axes[0].get_yscale() == "linear"


def test_vs_size_picks_linear_when_values_are_close():
    d = cost_frame(("4k",)).assign(ns=lambda d: 1000 + d.nbytes % 7)
    fig = figures.vs_size(d, "ns", hue="op")
    assert fig.axes[0].get_yscale() == "linear"


def test_reference_accepts_one_pair_or_a_mapping_and_refuses_nonsense():
    want = [("thread: 35 us", 35_000.0)]
    assert _references(("thread: 35 us", 35_000)) == want
    assert _references({"thread: 35 us": 35_000}) == want
    assert _references(None) == []
    for bad in ([("bad", -1)], [("bad", float("nan"))]):
        with pytest.raises(ValueError):
            _references(bad)


def test_lock_cost_by_backing_side_by_side():
    fig = figures.lock_cost_by_backing(cost_frame(), title="lock cost", reference=REF[:1])
    _check(fig, refs=[REF[0][0]], size_axis=True)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["4 KiB pages", "transparent huge pages (THP)"]
    assert fig.axes[0].get_ylim() == fig.axes[1].get_ylim()       # one time axis for both
    _legend_outside(fig)


def test_phase_bars_sizes_in_binary_units():
    t = transfers_frame().assign(nbytes=lambda d: d.nbytes.replace(1 << 20, 800_000_000))
    fig = figures.phase_bars(t, ["lock", "dma", "wait", "unlock"], row="nbytes", col="direction",
                             reference=[("thread: 7 us", 7_000)])
    _check(fig, refs=["thread: 7 us"])
    _figure_level(fig)
    assert "763 MiB" in _texts(fig)
    assert _legend_words(fig) == ("phase", ["lock", "dma", "wait", "unlock"])
    _legend_outside(fig)
    _check(figures.phase_bars(t, ["lock", "dma"], row="case", title="c12"))
    share = figures.phase_bars(t, ["lock", "dma"], row="nbytes", share=True, title="shares")
    _check(share, time_axis=False)
    assert share.axes[0].get_xlim() == (0, 100) and "100 %" in _texts(share)


def test_case_bars_and_overlap():
    t = transfers_frame()
    fig = figures.case_bars(t, "policy", "total_ns", hue="array", title="per transfer", reference=REF[:1])
    _check(fig, refs=[REF[0][0]])
    _legend_outside(fig)
    ov = pd.DataFrame({"queues": [1, 1, 2, 2], "wall_ns": [2e7, 2.1e7, 1.2e7, 1.1e7]})
    _check(figures.overlap_bars(ov))
    na = figures.overlap_bars(pd.DataFrame({"not_applicable": ["no second queue on host"]}))
    assert "not applicable here: no second queue on host" in _texts(na)


def test_vs_threads():
    rng = _rng()
    conc = pd.DataFrame([{"threads": th, "policy": p, "overhead_ns": rng.uniform(1e3, 1e5) * th}
                         for th in (1, 2, 4, 8) for p in ("nextgen", "lock_always") for _ in range(3)])
    fig = figures.vs_threads(conc, "overhead_ns", title="overhead", reference=[("thread: 1.6 us", 1_600)])
    _check(fig, refs=["thread: 1.6 us"])
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["1", "2", "4", "8"]
    _legend_outside(fig)


def _legend_words(fig) -> tuple[str, list[str]]:
    w = [a for a in figures.words(fig)["axes"] if a["legend"]]
    return (w[0]["legend"], w[0]["entries"]) if w else ("", [])


def _figure_level(fig) -> None:
    """Drawn by one of seaborn's figure-level interfaces: a FacetGrid's or a seaborn.objects
    figure (its legend a figure legend, beside the panels)."""
    assert fig.legends, "no figure-level legend"


def test_timeline():
    tr = pd.DataFrame([{"event": "transfer", "step": 0, "invocation": 0, "transfer_id": i, "policy": p}
                       for i, p in enumerate(("stage_per_copy", "nextgen"))])
    calls = pd.DataFrame([{"transfer_id": i, "category": c, "start_ns": 1000 * k * (i + 1), "duration_ns": 500}
                          for i in range(2) for k, c in enumerate(("alloc", "copy", "free"))])
    fig = figures.timeline(tr, calls, title="one invocation")
    _check(fig, time_axis=False)
    _figure_level(fig)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["stage_per_copy (2.5 us)", "nextgen (4.5 us)"]
    widths = [np.ptp(line.get_xdata()) for line in fig.axes[0].get_lines() if len(line.get_xdata()) == 2]
    assert len(widths) == 6 and min(widths) >= 2 and max(widths) < 50, widths   # every call shows
    assert _legend_words(fig) == ("native call", ["alloc", "copy", "free"])
    _legend_outside(fig)
    quiet = figures.timeline(tr, calls[calls.transfer_id == 0], title="one policy without native calls")
    assert [t.get_text() for t in quiet.axes[0].get_yticklabels()][1] == "nextgen (no native calls)"


def test_answers_grid():
    probes = pd.DataFrame([{"probe": "lock_twice", "step": s, "action": a, "locked": lk, "error": e}
                           for s, (a, lk, e) in enumerate((("lock A", False, ""), ("lock A again", False, "712"),
                                                           ("query A", True, "")))])
    fig = figures.answers_grid(probes, title="answers")
    _check(fig, time_axis=False)
    _figure_level(fig)
    assert {"lock A", "lock A again", "query A", "call 1", "call 3", "lock twice"} <= set(_texts(fig))
    assert _legend_words(fig) == ("the runtime's answer", ["granted", "refused", "query: locked"])
    _legend_outside(fig)
    marked = figures.answers_grid(probes, title="answers", judged={"lock_twice": "C8"})
    label = marked.axes[0].get_yticklabels()[0]
    assert label.get_text() == "lock twice\n(C8 is judged on it)" and label.get_fontweight() == "bold"


def test_stats_bars():
    calls = pd.DataFrame({"call": ["cudaHostRegister", "cudaHostUnregister"] * 3,
                          "category": ["lock", "unlock"] * 3, "duration_ns": [94_925, 58_720, 1_200, 9_000, 12_000, 8_000],
                          "rc": [0, 0, 712, 0, 0, 0], "user_pinned": [False, False, True, True, True, True],
                          "caller": ["runtime"] * 4 + ["application"] * 2})
    thread = pd.DataFrame({"Name": ["hsa_amd_memory_lock", "hsa_amd_memory_unlock", "hsa_amd_memory_lock"],
                           "AverageNs": [84_873, 24_143, 51_438], "user_pinned": [False, False, True]})
    fig = figures.stats_bars(calls, thread, title="average per call", reference=REF[:1])
    _check(fig, refs=[REF[0][0]])
    _figure_level(fig)
    assert [ax.get_title() for ax in fig.axes] == ["measured here", "the thread's rocprof tables"]
    assert {"cudaHostRegister", "cudaHostRegister (the application's own)"} <= set(_texts(fig))
    assert any("1 of 2 cudaHostRegister calls refused (rc 712)" in t for t in _texts(fig)), _texts(fig)
    assert fig.axes[0].get_xscale() == "log" and fig.axes[0].get_xlim() == fig.axes[1].get_xlim()
    _legend_outside(fig)


def test_limits_bars():
    limits = pd.DataFrame({"op": ["lock", "lock", "alloc_pinned"], "nbytes": [32 << 20, 128 << 20, 64 << 20],
                           "granted": [True, False, True], "limit_nbytes": [64 << 20] * 3})
    fig = figures.limits_bars(limits, title="limits")
    _check(fig, time_axis=False)
    _figure_level(fig)
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()]
    assert "64 MiB" in ticks and all(re.fullmatch(r"0|\d+ (KiB|MiB|GiB)", t) for t in ticks), ticks
    assert "RLIMIT_MEMLOCK 64 MiB" in _texts(fig)
    assert not any("above the limit granted" in t for t in _texts(fig))
    _legend_outside(fig)
    past = figures.limits_bars(limits.assign(granted=True, vmlck_nbytes=0), title="limits")
    assert any("1 request above the limit granted; the kernel counted at most 0 B locked" in t
               for t in _texts(past)), _texts(past)


@pytest.mark.parametrize("nbytes, text", [(4096, "4 KiB"), (800_000_000, "763 MiB"), (1 << 30, "1 GiB"),
                                          (1536, "1.50 KiB"), (12, "12 B")])
def test_binary_size(nbytes, text):
    assert figures.binary_size(nbytes) == text


def test_every_figure_of_the_smoke_run_has_a_title_and_axis_words(smoke_run):
    """Each figure the notebooks saved, as matplotlib's Axes API read it when it was saved
    (``status/<stem>.figures.json``): a title, words on every axis that draws data, legends
    with a title, no raw column names."""
    import json
    run_dir = smoke_run[0]
    saved = sorted(p.stem for p in (run_dir / "figures").glob("*.png"))
    assert saved
    seen = {}
    for p in (run_dir / "status").glob("*.figures.json"):
        stem = p.name.removesuffix(".figures.json")
        seen.update({f"{stem}-{name}": w for name, w in json.loads(p.read_text()).items()})
    assert sorted(seen) == saved
    bad = {name: w["problems"] for name, w in seen.items() if w["problems"] or (w["axes"] and not w["title"])}
    assert not bad, bad
    assert any(w["axes"] for w in seen.values())         # not every figure a notice
    for name, w in seen.items():
        for ax in w["axes"]:
            assert ax["xlabel"], name
    # phase_bars, timeline, answers_grid, stats_bars and limits_bars, each drawn from its notebook's data
    for name in ("01_c12_lock_copy-phases", "02_c2_staging-phases", "04_c1_offload_region-timeline",
                 "07_c8_semantics-answers", "08_c10_api_stats-stats", "09_c11_hazard_limits-limits"):
        w = seen[name]
        assert w["title"] and w["axes"], name
        assert all(ax["xlabel"] for ax in w["axes"]) and w["axes"][0]["ylabel"], (name, w["axes"])
        assert any(ax["legend"] and ax["entries"] for ax in w["axes"]), (name, w["axes"])


def test_problems_names_what_a_figure_lacks():
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4], label="a")
    ax.legend()
    assert set(figures.problems(fig)) == {"no title", "axes 0: no x label", "axes 0: no y label",
                                          "axes 0: a legend without a title"}
    ax.set(title="t", xlabel="transfer size", ylabel="nbytes")
    ax.legend(title="policy")
    assert figures.problems(fig) == ["axes 0: ylabel is the column name 'nbytes'"]


def test_legend_keeps_its_entries_when_titled():
    d = cost_frame().assign(call=lambda d: d.op + " / " + d.state)
    fig = figures.vs_size(d, "ns", hue="call", style="backing")
    legends = [lg for ax in fig.axes for lg in ([ax.get_legend()] if ax.get_legend() else [])] + list(fig.legends)
    assert len(legends) == 1 and legends[0].get_title().get_text() == "call; backing"
    assert {"lock / pageable", "4k", "thp"} <= {t.get_text() for t in legends[0].get_texts()}
    _legend_outside(fig)


def test_a_notice_figure_needs_only_its_words():
    fig, ax = plt.subplots()
    ax.axis("off")
    assert figures.problems(fig) == ["no words"]
    ax.text(0, 0.5, "not applicable here: no GPU")
    assert figures.problems(fig) == []


def test_gpu_clocks_name_their_axes_and_readings():
    from pinpath.report.state_figures import gpu_clocks
    rows = [{"when": w, "field": f, "value": v, "available": True, "unavailable": "", "platform": "cuda"}
            for w in ("start", "after registration age", "end")
            for f, v in (("sm_clock_mhz", "1980"), ("mem_clock_mhz", "3201"), ("sm_clock_max_mhz", "1980"),
                         ("mem_clock_max_mhz", "3201"))]
    fig = gpu_clocks(pd.DataFrame(rows))
    _check(fig, time_axis=False)
    _figure_level(fig)
    assert (fig.axes[0].get_xlabel(), fig.axes[0].get_ylabel()) == ("when it was read", "clock (MHz)")
    assert _legend_words(fig)[0] == "the GPU's clocks" and {"SM", "memory", "as read", "its maximum"} <= \
        set(_legend_words(fig)[1])
    assert figures.words(fig)["title"] and not figures.problems(fig), figures.problems(fig)
    _legend_outside(fig)
    unread = gpu_clocks(pd.DataFrame([{**rows[0], "available": False, "unavailable": "no nvidia-smi"}]))
    assert "no nvidia-smi" in " ".join(_texts(unread))


def test_the_cache_ratio_shows_each_policy_and_size_with_its_interval():
    from pinpath.report.state_figures import cache_ratio
    rows = [{"policy": p, "nbytes": n, "evict_nbytes": 512 << 20, "hot_ns": 1e4, "cold_ns": 5e4,
             "cold_over_hot": f, "low": f * 0.8, "high": f * 1.3, "repeats": 5}
            for p, f in (("pinned", 6.0), ("lock", 3.5)) for n in (4096, 1 << 20)]
    fig = cache_ratio(pd.DataFrame(rows))
    _check(fig, time_axis=False)
    assert figures.words(fig)["title"] and not figures.problems(fig), figures.problems(fig)
    assert {"4 KiB", "1 MiB"} <= set(_texts(fig)) and set(_legend_words(fig)[1]) == {"pinned", "lock"}
    assert "512 MiB" in _legend_words(fig)[0]
    bars = [c for c in fig.axes[0].collections if len(c.get_segments()) == 2]   # one interval per size and policy
    assert sorted(round(s[1][1] - s[0][1], 6) for c in bars for s in c.get_segments()) == \
        sorted([round(f * 0.5, 6) for f in (6.0, 6.0, 3.5, 3.5)])
    _legend_outside(fig)
    assert "no cache here" in " ".join(_texts(cache_ratio(pd.DataFrame([{"not_available": "no cache here"}]))))


# -- each verdict's figure against claims.csv ----------------------------------------------------
def _reference_claims() -> list[pd.DataFrame]:
    """The committed references' claims.csv (measured on H200s), and one made up to cover every
    comparison and unit."""
    from pinpath.paths import OUTPUTS_DIR
    frames = [pd.read_csv(p) for p in sorted((OUTPUTS_DIR / "reference").glob("*/report/claims.csv"))]
    frames.append(pd.DataFrame({
        "id": ["A", "B", "C", "D", "E"], "metric": ["a ratio", "a time", "a share", "a count", "near 1"],
        "measured": [3.2, 2824.5, 0.97, 1.0, 1.36], "low": [2.1, 2241.5, 0.95, 1.0, 1.07],
        "high": [4.4, 3778.5, 0.98, 1.0, 1.58], "unit": ["x", "ns", "fraction", "count", "x"],
        "comparison": ["<=", ">", ">=", ">=", "within"], "threshold": [2.0, 1600, 0.5, 1, 0.1],
        "verdict": ["does not hold", "holds", "holds", "holds", "inconclusive"]}))
    return frames


@pytest.mark.parametrize("frame", range(len(_reference_claims())))
def test_each_verdict_figure_shows_its_claims_csv_value_and_threshold(frame):
    """Deliver 1 of issue 37: the figure beside a verdict plots the verdict's own figure (value,
    interval) in its unit, with its threshold, and greens the side where the claim holds."""
    from pinpath.report import strip
    df = _reference_claims()[frame]
    fig = figures.verdicts(df)
    judged = df[pd.to_numeric(df.measured, errors="coerce").notna()]
    assert fig is not None and figures.problems(fig) == []
    # one panel per judged row, in the rows' order (a claim whose hot and cold verdicts differ has two)
    assert [ax.get_gid() for ax in fig.axes] == list(judged.id.astype(str))
    for r, ax in zip(judged.to_dict("records"), fig.axes):
        dot = next(line for line in ax.lines if line.get_marker() == "o")
        assert dot.get_xdata()[0] == pytest.approx(r["measured"]), r["id"]
        bar = ax.collections[-1].get_segments()[0]            # the errorbar's interval
        assert sorted(bar[:, 0]) == pytest.approx([r["low"], r["high"]]), r["id"]
        marks = sorted(line.get_xdata()[0] for line in ax.lines if line.get_linestyle() == "--")
        want = [1 - r["threshold"], 1 + r["threshold"]] if r["comparison"] == "within" else [r["threshold"]]
        assert marks == pytest.approx(want), r["id"]
        span = ax.patches[0]                                   # axvspan: a Rectangle (a Polygon before 3.9)
        green = [span.get_x(), span.get_x() + span.get_width()] if hasattr(span, "get_width") else span.get_xy()[:, 0]
        lo, hi = min(green), max(green)
        holds_side = r["measured"] if r["verdict"] == "holds" else None
        if holds_side is not None:
            assert lo <= holds_side <= hi, r["id"]           # a verdict that holds sits in the green
        if r["verdict"] == "does not hold":             # on the threshold of a strict '>' or '<' is not green
            edge_holds = r["comparison"] in (">=", "<=")
            assert not (lo < r["measured"] < hi or (edge_holds and r["measured"] in (lo, hi))), r["id"]
        assert ax.get_xscale() == ("log" if strip.scale(r).log else "linear")
    plt.close(fig)
    # the same figure in the index's claims table (SVG): the dot read back through its axis
    for r in judged.to_dict("records"):
        svg = str(strip.svg(r))
        lo, hi = float(re.search(r"data-lo='([^']+)'", svg)[1]), float(re.search(r"data-hi='([^']+)'", svg)[1])
        log = re.search(r"data-log='(\d)'", svg)[1] == "1"
        pad, width = float(re.search(r"data-pad='([^']+)'", svg)[1]), float(re.search(r"data-width='([^']+)'", svg)[1])
        f = (float(re.search(r"<circle class='value'[^>]* cx='([^']+)'", svg)[1]) - pad) / width
        back = lo * (hi / lo) ** f if log else lo + f * (hi - lo)
        assert back == pytest.approx(r["measured"], rel=0.02 if log else 0, abs=0 if log else 0.01 * (hi - lo)), r["id"]
        assert "<line class='threshold'" in svg and "<rect class='holds'" in svg


def test_bars_start_at_zero_unless_the_values_span_decades():
    near = pd.DataFrame({"case": ["a"] * 5 + ["b"] * 5, "ns": [3800.0] * 5 + [5200.0] * 5})
    ax = figures.case_bars(near, "case", "ns", title="near").figure.axes[0]
    assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0       # 3.8 against 5.2 us reads as 1.4x
    far = pd.DataFrame({"case": ["a"] * 5 + ["b"] * 5, "ns": [1e3] * 5 + [1e6] * 5})
    assert figures.case_bars(far, "case", "ns", title="far").figure.axes[0].get_yscale() == "log"
    plt.close("all")


def test_size_ticks_keep_apart_on_a_narrow_axis():
    df = pd.DataFrame([{"nbytes": 4096 << k, "ns": 1e3 * (k + 1), "policy": "p"} for k in range(15) for _ in range(3)])
    fig = figures.vs_size(df, "ns", hue="policy", title="narrow")
    fig.set_size_inches(3.2, 3)
    fig.canvas.draw()
    ax = fig.axes[0]
    boxes = sorted((t.get_window_extent() for t in ax.get_xticklabels() if t.get_text()), key=lambda b: b.x0)
    assert len(boxes) >= 2 and all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:])), [t.get_text() for t in ax.get_xticklabels()]
    plt.close(fig)


def test_the_terms_figure_shows_the_bare_model_beside_the_model_with_terms():
    """Notebook 13's closing figure: every step of real_terms per variant and nw with its interval,
    the bare model always among them; a step not measured named so in the legend, not drawn."""
    from pinpath.experiments.real_terms import TERMS
    from pinpath.report.replica_figures import terms_ratio
    rows = [{"variant": v, "nw": n, "step": k, "term": TERMS[k], "ratio": r, "ratio_lo": r - 0.05, "ratio_hi": r + 0.05}
            for v in ("plain", "app_pinned") for n in (16, 128) for k, r in enumerate((0.7, 0.92, 0.95, 0.98))]
    fig = terms_ratio(pd.DataFrame(rows))
    _check(fig, time_axis=False)
    assert figures.words(fig)["title"] and not figures.problems(fig), figures.problems(fig)
    assert _legend_words(fig) == ("the model with", ["nothing (the model alone)", *(f"+ {t}" for t in TERMS[1:])])
    assert {"plain, nw=16", "app_pinned, nw=128"} <= set(_texts(fig))
    bars = [c for c in fig.axes[0].collections if len(c.get_segments()) == 4]   # one interval per variant and nw
    assert len(bars) == len(TERMS) and all(round(s[1][0] - s[0][0], 6) == 0.1 for c in bars for s in c.get_segments())
    _legend_outside(fig)
    bare = pd.DataFrame(rows).assign(ratio=lambda d: d.ratio.where(d.step == 0))
    assert _legend_words(terms_ratio(bare))[1] == ["nothing (the model alone)", "+ present-only region (not measured)",
                                                   "+ bookkeeping (not measured)", "+ blocking wait (not measured)"]
    assert "no build" in " ".join(_texts(terms_ratio(pd.DataFrame([{"not_applicable": "no build"}]))))


def test_the_means_figure_shows_both_wake_states_per_point():
    """Notebook 13's figure of real_means: per variant and nw the ratio as the replica drew its wake
    state and in the real processes', each named in the legend, each with its interval."""
    from pinpath.experiments import real_means
    from pinpath.report.replica_figures import terms_ratio
    means = pd.DataFrame([{"variant": v, "nw": n, "ratio": r, "ratio_lo": r - 0.1, "ratio_hi": r + 0.1,
                           "ratio_state": 0.97, "ratio_state_lo": 0.95, "ratio_state_hi": 0.99}
                          for v, r in (("plain", 1.14), ("app_pinned", 0.81)) for n in (16, 128)])
    fig = terms_ratio(real_means.as_terms(means), legend_title="all terms by trimmed means,", bare_first=False)
    _check(fig, time_axis=False)
    assert _legend_words(fig) == ("all terms by trimmed means,", [real_means.AS_DRAWN, real_means.IN_REAL_STATE])
    bars = [c for c in fig.axes[0].collections if len(c.get_segments()) == 4]
    assert len(bars) == 2 and sorted(round(s[1][0] - s[0][0], 6) for c in bars for s in c.get_segments()[:1]) == [0.04, 0.2]
    old = real_means.as_terms(means.drop(columns=["ratio_state", "ratio_state_lo", "ratio_state_hi"]))
    assert old[old.term == real_means.IN_REAL_STATE].ratio.isna().all()     # a table from before the column
    reason = pd.DataFrame([{"not_applicable": "host: no real runtime"}])
    assert "host: no real runtime" in " ".join(_texts(terms_ratio(real_means.as_terms(reason))))
