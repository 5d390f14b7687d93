"""The HTML pages: escaped, no machine paths, no network, readable verdicts and statuses."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from markupsafe import Markup

from pinpath.paths import PROJECT_ROOT
from pinpath.report import html as H
from pinpath.report.html.claims_table import _for_information
from pinpath.atomic import replacing, write_text_atomic

FIXTURES = Path(__file__).resolve().parents[1] / "notebooks"
EVIL = "<script>alert('x')</script>"
VERDICT_WORDS = ["holds", "does not hold", "inconclusive", "not applicable", "not measured"]
STATUS_WORDS = ["ok", "failed", "leaked", "dead_kernel", "interrupted", "pending", "running", "stale"]
UNITS = ["x", "ns", "%", "count", "GB/s", ""]


def claims_frame(platform: str = "cuda", evil: bool = False) -> pd.DataFrame:
    """A claims frame as pinpath.report.claims writes it: C1..C15, every verdict word and unit."""
    rows = []
    for i in range(1, 16):
        unit = UNITS[i % len(UNITS)]
        verdict = VERDICT_WORDS[i % len(VERDICT_WORDS)]
        measured = {"x": 12.34, "ns": 35_120.0, "%": 45.2, "count": 803.0, "GB/s": 55.31, "": 0.731}[unit]
        none = verdict == "not measured"
        rows.append({
            "id": f"C{i}", "who": "ye-luo" if i % 2 else "JonChesterfield",
            "claim": f"Claim {i} in full: locking costs more than a query | with a pipe" + (EVIL if evil else ""),
            "short": f"claim {i} in a few words" + (EVIL if evil and i == 1 else ""),
            "thread": "lock 35 us, unlock 7 us", "metric": "median lock time over sizes",
            "measured": math.nan if none else measured, "low": math.nan if none else measured * 0.9,
            "high": math.nan if none else measured * 1.1, "unit": unit, "comparison": ">=", "threshold": 10.0,
            "verdict": verdict,
            "why": ("the lock costs at least ten times the query at every size, which is what the thread says; "
                    "a long reason gets the room it needs") + (EVIL if evil else ""),
            "detail": "at 4 KiB 62 us, at 1 MiB 111 us", "rule": "holds if lock / query >= 10 at every size",
            "notebook": "03_c6_c7_c9_lock_cost" if i % 3 else "99_missing_page", "platform": platform,
        })
    return pd.DataFrame(rows)


def manifest(run_id: str, statuses=STATUS_WORDS, platform: str = "cuda", preset: str = "smoke", error: str = "") -> dict:
    nbs = {}
    for i, s in enumerate(statuses):
        e = {"status": s, "duration_s": 1.5 * i}
        if s not in ("ok", "pending", "running"):
            e["error"] = error or f"ValueError: broken {s}"
        nbs[f"{i:02d}_nb_{s}"] = e
    return {"run_id": run_id, "preset": preset, "platform": platform, "status": "failed",
            "start": "2026-12-02T13:13:19+00:00", "end": "2026-12-02T13:17:19+00:00", "duration_s": 240.0,
            "git": {"commit": "b4d2cc396755e509494d52d5d643d9efd0301925", "dirty": True},
            "runtime": {"platform": platform, "device": "NVIDIA H200", "driver_version": "13.0"},
            "harness_ns": {"null_call_ns": 181.3}, "machine": {"hostname": "vm", "mem_total_nbytes": 135128870912,
                                                                "env": {}},
            "packages": {"numpy": "2.4.6", "hip-python": None},
            "parameters": {"00_nb_ok": {"SIZES_NBYTES": [4096, 1048576, 800000000], "REPEATS": 3}},
            "notebooks": nbs}


def _png(path: Path, color=(40, 90, 160)) -> None:
    from PIL import Image
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (1400, 700), color).save(path)


def make_run(root: Path, run_id: str = "20261202T131319Z-vm-cuda", *, evil: bool = False,
             platform: str = "cuda", preset: str = "smoke", statuses=STATUS_WORDS) -> tuple[Path, dict]:
    """A small run folder: manifest, claims.csv, fidelity.csv, figures, some notebook pages."""
    run_dir = root / "outputs" / (run_id if not evil else "evil-run")
    man = manifest(run_id, statuses, platform, preset,
                   error=f"OSError: cannot open {run_dir}/data/x.parquet; see {PROJECT_ROOT}/lib/pinpath/x.py")
    for sub in ("report", "data", "notebooks"):
        (run_dir / sub).mkdir(parents=True)
    (run_dir / "manifest.json").write_text(json.dumps(man, indent=1))
    claims_frame(platform, evil).to_csv(run_dir / "report" / "claims.csv", index=False)
    pd.DataFrame([{"quantity": "lock", "platform": platform, "kind": "heap", "backing": "4k", "nbytes": 4096,
                   "python_ns": 62_000.0, "native_ns": 51_000.0, "ratio": 62 / 51, "null_call_ns": 210.0},
                  {"quantity": "query", "platform": platform, "kind": "heap", "backing": "thp", "nbytes": 2 << 20,
                   "python_ns": 900.0, "native_ns": 400.0, "ratio": 2.25, "null_call_ns": 210.0}]
                 ).to_csv(run_dir / "report" / "fidelity.csv", index=False)
    for stem in ("00_nb_ok", "03_c6_c7_c9_lock_cost"):
        (run_dir / "report" / f"{stem}.html").write_text("<!doctype html><title>nb</title><p>notebook</p>")
    _png(run_dir / "figures" / "00_nb_ok-bandwidth.png")
    _png(run_dir / "figures" / "03_c6_c7_c9_lock_cost-calls.png", (160, 60, 40))
    _png(run_dir / "figures" / "03_c6_c7_c9_lock_cost-zz-second.png", (60, 160, 40))
    return run_dir, man


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs, self.scripts, self.text = [], 0, []

    def handle_starttag(self, tag, attrs):
        self.scripts += tag == "script"
        self.refs += [v for k, v in attrs if k in ("href", "src") and v]

    def handle_data(self, data):
        self.text.append(data)


def parse(page: str) -> _Links:
    p = _Links()
    p.feed(page)
    return p


def no_machine_paths(text: str, *roots: Path) -> None:
    for r in (PROJECT_ROOT, *roots):
        for form in {str(Path(r).absolute()), str(Path(r).resolve())}:
            assert form not in text, f"{form} appears in the output"


# -- tests -------------------------------------------------------------------------------------
def test_atomic_write_replaces_and_leaves_no_temp(tmp_path):
    p = tmp_path / "sub" / "a.html"
    write_text_atomic(p, "one")
    write_text_atomic(p, "two \u2013 dash")
    assert p.read_text(encoding="utf-8") == "two \u2013 dash"
    with pytest.raises(RuntimeError):
        with replacing(p) as tmp:
            tmp.write_text("half")
            raise RuntimeError("crash")
    assert p.read_text(encoding="utf-8") == "two \u2013 dash"
    assert [x.name for x in p.parent.iterdir()] == ["a.html"]


@pytest.mark.parametrize("value, low, high, unit, text", [
    (12.34, 11.0, 13.91, "x", "12.3x (95 % CI 11.0\u201313.9)"),
    (35_120.0, 33_100.0, 37_200.0, "ns", "35.1 us (95 % CI 33.1\u201337.2 us)"),
    (2.5e6, math.nan, math.nan, "ns", "2.50 ms"),
    (45.2, 40.0, 50.0, "%", "45.2 % (95 % CI 40.0\u201350.0 %)"),
    (803.0, 800.0, 806.0, "count", "803 (95 % CI 800\u2013806)"),
    (55.31, 55.1, 55.4, "GB/s", "55.3 GB/s (95 % CI 55.1\u201355.4 GB/s)"),
    (math.nan, math.nan, math.nan, "x", ""),
    ("text of an older run", None, None, "", "text of an older run"),
])
def test_format_measured(value, low, high, unit, text):
    assert H.format_measured(value, low, high, unit) == text


def test_binary_size_never_decimal():
    assert H.binary_size(4096) == "4 KiB" and H.binary_size(800_000_000) == "763 MiB"
    assert H.binary_size(1 << 30) == "1 GiB" and H.binary_size(100) == "100 B"


def test_index_escapes_everything_from_the_run(tmp_path):
    run_dir, man = make_run(tmp_path, evil=True)
    man["run_id"], man["preset"], man["platform"] = EVIL, EVIL, "cuda" + EVIL
    man["runtime"]["device"] = EVIL
    man["parameters"][EVIL] = {EVIL: EVIL}
    page = H.render_index(run_dir, man).read_text()
    p = parse(page)
    assert p.scripts == 0 and "<script>" not in page
    assert "&lt;script&gt;" in page
    assert "alert(&#39;x&#39;)" in page
    assert H.external_scripts(page) == []


def test_index_has_no_machine_path(tmp_path):
    run_dir, man = make_run(tmp_path)
    page = H.render_index(run_dir, man).read_text()
    no_machine_paths(page, run_dir, tmp_path)
    assert "cannot open data/x.parquet" in page and "see lib/pinpath/x.py" in page


def test_index_reads_claims_fidelity_and_links_only_existing_pages(tmp_path):
    run_dir, man = make_run(tmp_path)
    page = H.render_index(run_dir, man).read_text()
    p = parse(page)
    text = " ".join(p.text)
    for word in VERDICT_WORDS:
        assert f"'badge {H.VERDICTS[word]}'>{word}</span>" in page, word
    for word in STATUS_WORDS:
        assert f">{word}</span>" in page, word
    assert "12.3x (95 % CI 11.1\u201313.6)" in text and "35.1 us (95 % CI 31.6\u201338.6 us)" in text
    assert "holds if \u2265 10.0x" in text
    local = [r for r in p.refs if not r.startswith(("#", "data:", H.THREAD_URL))]
    assert local and all((run_dir / "report" / r).is_file() for r in local), local
    assert "href='03_c6_c7_c9_lock_cost.html'" in page and "99_missing_page.html" not in page
    assert "href='00_nb_ok.html'" in page and "href='01_nb_failed.html'" not in page
    banner = page.split("class='banner'", 1)[1].split("</div>", 1)[0]
    assert all(f"_nb_{s}" in banner for s in ("failed", "leaked", "dead_kernel", "interrupted", "stale"))
    assert not any(f"_nb_{s}" in banner for s in ("ok", "pending", "running"))
    assert "Python \u00f7 native" in page and "2.25x" in page and "2 MiB" in page
    assert page.count("data:image/png;base64") == 2          # the first figure of each notebook
    assert "not installed" in page and "800000000 B (763 MiB)" in page


def test_extra_sections_escaped_unless_markup(tmp_path):
    run_dir, man = make_run(tmp_path)
    page = H.render_index(run_dir, man, [("Notes", EVIL), ("Claims", H.claims_section(claims_frame())),
                                         ("Trusted", Markup("<p class='t'>fine</p>"))]).read_text()
    assert "&lt;script&gt;" in page and "<p class='t'>fine</p>" in page
    assert page.count("<h2>Claims</h2>") == 1


def test_index_without_claims_or_figures(tmp_path):
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    page = H.render_index(run_dir, {"run_id": "r", "notebooks": {}}).read_text()
    assert "No claims table" in page and "No figures" in page


def test_older_claims_csv_still_renders(tmp_path):
    old = claims_frame()[["id", "who", "claim", "thread", "platform", "verdict", "why", "rule", "notebook"]]
    old = old.assign(measured="stage_per_copy per transfer: alloc 1.00", verdict="not applicable here")
    section = H.claims_section(old)
    assert "stage_per_copy per transfer: alloc 1.00" in section and ">not applicable</span>" in section


def test_compare_marks_differences_and_links_runs(tmp_path):
    a, man_a = make_run(tmp_path, "run-a", platform="host")
    b, man_b = make_run(tmp_path, "run-b", platform="cuda")
    for d, m in ((a, man_a), (b, man_b)):
        H.render_index(d, m)
    ca, cb = claims_frame("host"), claims_frame("cuda")
    cb.loc[cb.id == "C2", "verdict"] = "holds"
    cb.loc[cb.id == "C7", "verdict"] = "does not hold"
    out = tmp_path / "outputs" / "compare.html"
    H.render_compare(out, [(man_a, ca, a), (man_b, cb)])      # the second found beside compare.html
    page = out.read_text()
    assert page.count("<tr>") == 16 and H.external_scripts(page) == []
    assert "href='run-a/report/index.html'" in page and "href='run-b/report/index.html'" in page
    rows = re.findall(r"<tr>(.*?)</tr>", page, re.S)[1:]
    marked = [re.search(r"id(?: differs)?'>(C\d+)", r).group(1) for r in rows if "differs'>" in r]
    assert marked == ["C2", "C7"]
    no_machine_paths(page, tmp_path)


def test_compare_escapes(tmp_path):
    m = manifest(EVIL)
    out = tmp_path / "c.html"
    H.render_compare(out, [(m, claims_frame(evil=True)), (m, claims_frame())])
    page = out.read_text()
    assert "<script>" not in page and parse(page).scripts == 0


def test_scrubber():
    s = H.Scrubber(PROJECT_ROOT / "outputs" / "r1")
    root = str(PROJECT_ROOT)
    assert s(f"{root}/outputs/r1/data/a.parquet") == "data/a.parquet"
    assert s(f"{root}/outputs/r2/x") == "../r2/x"
    assert s(f"{root}/lib/pinpath/x.py and {root}") == "lib/pinpath/x.py and ."
    alike = s(f"{root}x/y")                           # another folder that merely starts alike
    assert alike.endswith(f"/{PROJECT_ROOT.name}x/y") and alike in (f"{root}x/y", s(f"{PROJECT_ROOT.parent}") + f"/{PROJECT_ROOT.name}x/y")
    assert s("/usr/lib/python3/site-packages/numpy/core.py") == "site-packages/numpy/core.py"


def test_render_notebook_is_offline(tmp_path):
    html_path = tmp_path / "run" / "report" / "00_ok.html"
    H.render_notebook(FIXTURES / "00_ok.ipynb", html_path)
    page = html_path.read_text()
    assert H.external_scripts(page) == [] and "cdn." not in page.lower()
    no_machine_paths(page, tmp_path)


def test_notebook_page_is_titled_leads_back_and_says_the_runners_check(tmp_path):
    import nbformat
    nb = nbformat.read(FIXTURES / "00_ok.ipynb", as_version=4)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell("# 03 · C6, C7, C9: what a lock costs\n\nwords"))
    check = nbformat.v4.new_code_cell("pinpath.session.finish(RUN_DIR, NOTEBOOK)", metadata={"tags": ["pinpath-injected"]})
    check.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "{'vmlck_before_nbytes': 0,\n "
                     "'vmlck_after_nbytes': 8192, 'mmap_threshold_nbytes': 131072, 'unreleased': {}}"}, execution_count=3)]
    nb.cells.append(check)
    src = tmp_path / "03_x.ipynb"
    nbformat.write(nb, src)
    html_path = tmp_path / "run" / "report" / "03_x.html"
    H.render_notebook(src, html_path)
    page = html_path.read_text()
    assert "<title>03 \u00b7 C6, C7, C9: what a lock costs \u2014 pinpath</title>" in page
    assert "<a href='index.html'>" in page
    assert "vmlck_before_nbytes" not in page and "{&#39;" not in page        # no raw dict
    assert "locked memory 0 B before, 8 KiB after; nothing left unreleased." in page


CHROMIUM = next((c for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None)


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine to open the page")
def test_index_opens_in_headless_chromium_offline(tmp_path):
    run_dir, man = make_run(tmp_path, evil=True)
    index = H.render_index(run_dir, man)
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          '--host-resolver-rules=MAP * ~NOTFOUND', f"--user-data-dir={tmp_path / 'profile'}",
                          "--dump-dom", index.as_uri()], capture_output=True, text=True, timeout=60).stdout
    assert "<h2>Claims</h2>" in dom and "claim 1 in a few words" in dom
    assert "alert(" not in dom.replace("alert('x')", "") and "<script>alert" not in dom


def test_claims_section_given_by_the_runner_links_only_existing_pages(tmp_path):
    """The runner's call today: render_index(run_dir, man, [("Claims", claims_section(df)), ...])."""
    run_dir, man = make_run(tmp_path)
    page = H.render_index(run_dir, man, [("Claims", H.claims_section(claims_frame())),
                                         ("Headline figures", H.figures_section(run_dir))]).read_text()
    assert "href='03_c6_c7_c9_lock_cost.html'" in page and "99_missing_page.html" not in page
    assert page.count("<h2>Claims</h2>") == 1 and page.count("<h2>Headline figures</h2>") == 1


def test_notebook_conclusions_restated_from_the_claims_table(tmp_path):
    """The conclusion a notebook wrote from its own data is replaced, in the executed notebook
    and its page, by the run's verdicts: the two can never disagree."""
    import nbformat
    from nbconvert.filters.markdown_mistune import markdown2html_mistune
    from pinpath.report import tables
    run_dir, man = make_run(tmp_path)
    df = claims_frame()
    local = df[df.id == "C11"].assign(verdict="not measured", measured=math.nan)
    md = tables.conclusion(local)
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("Markdown(tables.conclusion(judged))")
    cell.outputs = [nbformat.v4.new_output("execute_result", {"text/markdown": md, "text/plain": "<Markdown>"},
                                           execution_count=1)]
    nb.cells = [cell]
    stem = "09_c11_hazard_limits"
    nbformat.write(nb, run_dir / "notebooks" / f"{stem}.ipynb")
    (run_dir / "report" / f"{stem}.html").write_text(f"<html><body><div>{markdown2html_mistune(md)}</div></body></html>")
    assert "C11 not measured" in md
    df.loc[df.id == "C11", "why"] = EVIL
    H.render_index(run_dir, man, claims=df)
    final = df.set_index("id").loc["C11", "verdict"]
    page = (run_dir / "report" / f"{stem}.html").read_text()
    text = nbformat.read(run_dir / "notebooks" / f"{stem}.ipynb", 4).cells[0].outputs[0].data["text/markdown"]
    for out in (page, text):
        assert f"C11 {final}" in out and "C11 not measured" not in out and "What the run found" in out
        assert "<script>" not in out
    H.render_index(run_dir, man, claims=df)              # again: the same page
    assert (run_dir / "report" / f"{stem}.html").read_text() == page


def test_index_order_fidelity_collapsed_and_unreadable_data_said(tmp_path):
    run_dir, man = make_run(tmp_path)
    man["unreadable_data"] = ["lock_cost.parquet"]
    (run_dir / "report" / "fidelity.csv").write_text(
        "quantity,platform,kind,backing,nbytes,python_ns,native_ns,ratio,null_call_ns\n"
        "lock,cuda,heap,4k,4096,100,90,1.1,10\nquery,cuda,heap,thp,8192,100,90,1.1,10\n")
    page = H.render_index(run_dir, man).read_text()
    assert page.index("<h2>Claims</h2>") < page.index("<h2>Headline figures</h2>") < page.index("<h2>Fidelity</h2>")
    fid = page[page.index("<h2>Fidelity</h2>"):]
    assert "<details class='block'>" in fid and "<details class='block' open" not in fid.split("</details>")[0]
    assert "Every row: platform cuda, memory kind heap." in fid and "<th>platform</th>" not in fid.split("</table>")[0]
    assert "<th>backing</th>" in fid                    # a column that varies stays
    assert "Data that could not be read" in page and "lock_cost.parquet" in page
    (run_dir / "report" / "claims.csv").write_bytes(b"\xff\xfe\x00\x01garbage\n\x00")
    page = H.render_index(run_dir, man).read_text()
    assert "report/claims.csv" in page.split("Data that could not be read")[1].split("</div>")[0]


def test_claims_with_reading_show_the_reason_and_count_meant_and_analogues_apart(tmp_path):
    run_dir, man = make_run(tmp_path)
    df = claims_frame()
    df["why"] = [f"CUDA refuses a re-register in 0.8 us, row {i}" for i in range(15)]
    df["rule_detail"] = "every test holds with its whole interval on the claim's side"
    df["reading"] = ["analogue" if i % 3 == 0 else "as meant" for i in range(15)]
    df["subject"] = "HSA/ROCT"
    page = H.render_index(run_dir, man, claims=df).read_text()
    assert "as meant:</span>" in page and "by an analogue:</span>" in page
    assert "<span class='why'>CUDA refuses a re-register in 0.8 us, row 4</span>" in page
    assert page.index("row 4</span>") < page.index("every test holds with its whole interval", page.index("row 4</span>"))
    assert "about HSA/ROCT" in page
    old = H.render_index(run_dir, man).read_text()        # claims.csv without them: one row of counts, no labels
    assert "class='reading-label'" not in old and "about HSA" not in old


def test_notebook_tables_in_units_without_missing_markers_or_scientific_notation():
    from pinpath.report import tables
    df = pd.DataFrame({"nbytes": [4096, 800_000_000], "median_ns": [1234.5, math.nan], "ratio": [1.144107, 90083.0],
                       "error": [pd.NA, "712"], "granted": [True, False], "extra": [{"a": None}, [1, 2]],
                       "tiny": [1.2e-5, 3.0]})
    html = tables.table_html(df)
    text = re.sub(r"<[^>]+>", " ", html)
    for good in ("4 KiB", "763 MiB", "1.23 us", "1.14", "90083", "yes", "no", "a: \u2014", "1, 2", "0.000012"):
        assert good in text, good
    assert not re.search(r"\bNaN\b|\bNone\b|&lt;NA&gt;|<NA>|\d[eE][+-]\d", text), text
    assert "<script" not in tables.table_html(pd.DataFrame({"x": [EVIL]}))


def test_long_notebook_tables_show_twenty_rows_and_link_the_whole_csv(tmp_path):
    from pinpath.report import tables
    (tmp_path / "data").mkdir()
    tables.setup_display(tmp_path, "03_x")
    try:
        html = tables.table_html(pd.DataFrame({"nbytes": [4096 * (i + 1) for i in range(45)], "ns": range(45)}))
        assert html.count("<tr>") <= 1 + tables.MAX_ROWS and "The first 20 of 45 rows" in html
        assert "href='../data/03_x.table-1.csv'" in html
        assert len(pd.read_csv(tmp_path / "data" / "03_x.table-1.csv")) == 45
        assert "of" not in tables.table_html(pd.DataFrame({"a": [1, 2]}))       # a short table is whole
    finally:
        tables.setup_display()


def test_each_notebook_opens_with_what_it_measures_and_why():
    """The first paragraph under each notebook's title: what it measures, then why, in about two
    sentences, before the thread's quotes."""
    for nb in sorted((PROJECT_ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        src = "".join(json.loads(nb.read_text())["cells"][0]["source"])
        title, first = src.split("\n\n")[:2]
        assert title.startswith("# ") and first.startswith("This notebook "), nb.name
        assert 2 <= len(re.findall(r"[.:](\s|$)", first)) <= 3 and len(first) < 500, (nb.name, first)


def test_conclusion_says_a_verdict_word_once():
    from pinpath.report import tables
    df = pd.DataFrame([{"id": "C6", "verdict": "not applicable", "reading": "not applicable", "platform": "host",
                        "why": "not applicable on host: the claim is about NVIDIA's runtime", "thread": "t",
                        "metric": "register / query", "measured": math.nan, "low": math.nan, "high": math.nan, "unit": "x"},
                       {"id": "C7", "verdict": "holds", "reading": "analogue", "platform": "cuda", "why": "it meets 2x",
                        "thread": "t", "metric": "m", "measured": 1.5, "low": 1.2, "high": 1.8, "unit": "x", "who": "w"}])
    md = tables.conclusion(df, final=True)
    assert md.count("not applicable") == 1 and "**C6** not applicable on host: the claim is about NVIDIA" in md
    assert "**C7 holds** (by an analogue) on cuda: m = 1.50x (95 % CI 1.20\u20131.80). it meets 2x." in md
    df["who"] = "w"
    assert list(tables.beside(df).measured) == ["\u2014", "1.50x (95 % CI 1.20\u20131.80)"]   # no verdict word here


def test_a_claim_not_judged_here_shows_what_was_measured_anyway():
    detail = ("measured here for information: register / query of pageable memory: 0.0144x (95 % CI 0.0139\u20130.0166) "
              "[4 KiB] -> inconclusive (only 3 independent repeats)")
    assert _for_information(detail) == "register / query of pageable memory: 0.0144x (95 % CI 0.0139\u20130.0166) [4 KiB]"
    assert _for_information("measured here for information: a / b: not measured (no staging data in this run); "
                              "c: not measured (no x data)") == ""
    df = pd.DataFrame([{"id": "C6", "verdict": "not applicable", "platform": "host", "detail": detail, "why": "w"}])
    body = str(H.claims_section(df))
    assert "the operating system&#39;s share: register / query of pageable memory: 0.0144x" in body


def test_a_claim_judged_in_each_cache_state_has_an_anchor_a_label_and_its_reference_per_row(tmp_path):
    """A claim whose cold and hot verdicts differ has a row for each (cold first, as judge_states
    writes them): each its own anchor and label; a run with the hot row alone (most runs, the host)
    finds the reference's hot row, not its cold one; the notebook's conclusion names both."""
    df = claims_frame()
    hot = df[df["id"] == "C4"].assign(metric="query_then_lock / lock_always on pinned memory [4 KiB d2h]",
                                      verdict="inconclusive", state="cache hot; timing thread not pinned")
    df["state"] = "cache hot; timing thread not pinned"
    df.loc[3, ["metric", "verdict", "state"]] = ["query / lock of pageable memory [4 KiB]", "holds",
                                                 "cache cold and hot; timing thread not pinned"]
    df = pd.concat([df.iloc[:4], hot, df.iloc[4:]], ignore_index=True)
    glance, table = str(H.glance_section(df)), str(H.claims_section(df))
    assert "href='#claim-C4-cold'" in glance and "href='#claim-C4'" in glance
    assert "id='claim-C4-cold'" in table and "id='claim-C4'" in table
    assert len(re.findall(r"id='claim-[^']+'", table)) == len(set(re.findall(r"id='claim-[^']+'", table))) == len(df)
    assert ": cache cold</span>" in glance and ": cache hot</span>" in glance
    assert "this row: cache cold: query / lock of pageable memory" in table
    assert glance.count("claim 3 in a few words</span>") == 1             # a claim with one row gets no label
    # the host run: C4 once, hot; the reference has both rows
    run = claims_frame(platform="host").assign(verdict="not applicable", state="cache hot; timing thread not pinned")
    reference = H.reference_verdicts(None, {"platform": "host"}, _reference_dir(tmp_path, df))
    row = str(H.glance_section(run, reference)).split("href='#claim-C4'", 1)[1].split("</li>", 1)[0]
    assert "reference: <span class='badge v-inconclusive'>inconclusive" in row, row
    from pinpath.report.tables import conclusion
    said = conclusion(df[df["id"] == "C4"], final=True)
    assert "**C4 (cold) holds**" in said and "**C4 inconclusive**" in said and said.count("C4: ") == 1


def _reference_dir(tmp_path: Path, claims: pd.DataFrame) -> Path:
    """A committed reference's folder as reference_verdicts reads it: manifest and claims.csv."""
    ref = tmp_path / "ref"
    (ref / "report").mkdir(parents=True)
    (ref / "manifest.json").write_text(json.dumps(manifest("ref", platform="cuda")))
    claims.to_csv(ref / "report" / "claims.csv", index=False)
    return ref
