"""Sharing a run: summary.md as GFM, resized figures, a zip that opens offline; compare in Markdown."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import zipfile
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from pinpath.runfolder import find_run

from pinpath.errors import BadParameter
from pinpath.paths import PROJECT_ROOT
from pinpath.report import html as H
from pinpath.report import share as S

markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py parses the summary")

VERDICTS = ["holds", "does not hold", "inconclusive", "not applicable", "not measured"]
CHROMIUM = next((c for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None)


def claims(platform: str) -> pd.DataFrame:
    rows = []
    for i in range(1, 16):
        v = VERDICTS[i % 5]
        rows.append({"id": f"C{i}", "who": "ye-luo", "short": f"short {i} | with a pipe\nand a newline <b>x</b>",
                     "claim": f"claim {i} in full", "thread": "lock 35 us | unlock 7 us", "metric": "lock / query",
                     "measured": math.nan if v == "not measured" else 12.34, "low": 11.0, "high": 13.9,
                     "unit": "x", "comparison": ">=", "threshold": 10.0, "verdict": v, "why": "because",
                     "detail": "", "rule": "holds if >= 10x", "notebook": "03_c6_c7_c9_lock_cost",
                     "platform": platform})
    return pd.DataFrame(rows)


def _pays_tests():
    """tests/report/test_pays.py's sweep helpers (tests are not a package)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("_pays_tests", Path(__file__).with_name("test_pays.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def make_run(outputs: Path, run_id: str, platform: str = "cuda") -> tuple[Path, dict]:
    from PIL import Image
    run_dir = outputs / run_id
    for sub in ("report", "data", "figures", "notebooks"):
        (run_dir / sub).mkdir(parents=True)
    man = {"run_id": run_id, "preset": "smoke", "platform": platform, "status": "ok",
           "git": {"commit": "b4d2cc396755e509494d52d5d643d9efd0301925", "dirty": False},
           "runtime": {"device": "NVIDIA H200", "driver_version": "13.0"},
           "machine": {"hostname": "vm"}, "parameters": {},
           "notebooks": {"00_platform": {"status": "ok", "duration_s": 1.0},
                         "03_c6_c7_c9_lock_cost": {"status": "failed", "error": f"OSError: {run_dir}/x"}}}
    (run_dir / "manifest.json").write_text(json.dumps(man))
    claims(platform).to_csv(run_dir / "report" / "claims.csv", index=False)
    pd.DataFrame({"Name": ["cudaHostRegister", "cudaHostUnregister", "cudaMemcpyAsync", "cudaHostRegister"],
                  "Calls": [3840, 3840, 3840, 3840], "TotalDurationNs": [364514851, 225486743, 26534968, 46724804],
                  "AverageNs": [94925, 58720, 6910, 12167], "Percentage": [54.9, 33.9, 4.0, 1.1],
                  "user_pinned": [False, False, False, True], "category": ["lock", "unlock", "copy", "lock"]}
                 ).to_parquet(run_dir / "data" / "api_stats.parquet", index=False)
    for name, color in (("00_platform-bandwidth", "navy"), ("03_c6_c7_c9_lock_cost-calls", "darkred"),
                        ("03_c6_c7_c9_lock_cost-zz", "green")):
        Image.new("RGB", (1800, 600), color).save(run_dir / "figures" / f"{name}.png")
    (run_dir / "notebooks" / "00_platform.ipynb").write_text("{}")
    (run_dir / "report" / "00_platform.html").write_text("<!doctype html><title>00</title><p>nb</p>")
    H.render_index(run_dir, man)
    return run_dir, man


@pytest.fixture
def run(tmp_path):
    outputs = tmp_path / "outputs"
    run_dir, man = make_run(outputs, "20261202T131319Z-vm-cuda")
    (outputs / "latest").symlink_to(run_dir.name)
    return outputs, run_dir, man


def _md():
    return markdown_it.MarkdownIt("commonmark").enable("table").enable("strikethrough")


def _tables(tokens) -> list[list[list[str]]]:
    """Each table as rows of cell types ('th'/'td')."""
    tables, cur, row = [], None, None
    for t in tokens:
        if t.type == "table_open":
            cur = []
        elif t.type == "tr_open":
            row = []
        elif t.type in ("th_open", "td_open"):
            row.append(t.type[:2])
        elif t.type == "tr_close":
            cur.append(row)
        elif t.type == "table_close":
            tables.append(cur)
    return tables


def _images(tokens) -> list[str]:
    return [c.attrGet("src") for t in tokens if t.type == "inline" for c in (t.children or []) if c.type == "image"]


def _no_machine_paths(text: str, *roots) -> None:
    for r in (PROJECT_ROOT, *roots):
        assert str(r) not in text and str(Path(r).resolve()) not in text, r


def test_summary_reads_as_gfm(run, tmp_path):
    outputs, run_dir, _ = run
    share = S.share_run(find_run("latest", outputs))
    assert share == run_dir.resolve() / "share"
    text = (share / "summary.md").read_text()
    assert text.count("\n") < S.MAX_LINES
    tokens = _md().parse(text)
    assert not [t for t in tokens if t.type.startswith("html")]
    assert not [c for t in tokens if t.type == "inline" for c in t.children if c.type.startswith("html")]
    tables = _tables(tokens)
    assert len(tables) == 1                       # one table: the claims
    claims_t = tables[0]
    # id, claim, measured, verdict: narrow enough for a comment's column
    assert len(claims_t) == 1 + 15 and claims_t[0] == ["th"] * 4 and all(r == ["td"] * 4 for r in claims_t[1:])
    assert "| 12.3x (11.0\u201313.9) |" in text and "**does not hold**" in text
    assert "\u2026" not in text                    # nothing here is long enough to be cut
    images = _images(tokens)
    assert 1 <= len(images) <= 2 and all(not Path(i).is_absolute() and (share / i).is_file() for i in images)
    assert images == ["figures/verdicts.png", "figures/03_c6_c7_c9_lock_cost-calls.png"]   # the verdicts lead
    assert "attach them" in text
    assert "make reproduce PRESET=smoke PLATFORM=cuda" in text and "b4d2cc396755e509494d52d5d643d9efd0301925" in text
    assert "judged by" not in text                # measured and judged by the same commit
    assert "3 hold, 3 do not hold, 3 are inconclusive, 3 are not applicable, 3 are not measured" in text
    assert "03_c6_c7_c9_lock_cost (failed)" in text      # a notebook that did not run to the end is said
    _no_machine_paths(text, tmp_path)


def test_summary_counts_readings_and_says_why_when_claims_csv_has_them(run):
    _, run_dir, _ = run
    df = claims("cuda")
    df["why"] = [f"CUDA refuses the re-register in 0.8 us, claim {i}" for i in range(15)]
    df["reading"] = ["analogue" if i % 4 == 0 else "as meant" for i in range(15)]
    df["subject"] = "CUDA runtime/driver"
    df.to_csv(run_dir / "report" / "claims.csv", index=False)
    text = S.summary_markdown(run_dir, [])
    assert "as meant, " in text and "by an analogue, " in text
    assert "(analogue)" in text
    tables = _tables(_md().parse(text))
    assert len(tables) == 1 and {len(r) for r in tables[0]} == {4}
    # each why whole, a list item below the table
    assert all(f"- **C{i + 1}**: CUDA refuses the re-register in 0.8 us, claim {i}." in text for i in range(15))


def test_summary_keeps_long_whys_whole_and_says_which_policy_pays(run):
    _, run_dir, _ = run
    df = claims("cuda")
    long_why = ("a lock of pageable memory takes 62.4 us at 16 KiB, the runtime refuses a re-lock in 3.83 us; "
                "so a real lock costs 16.3x (95 % CI 12.2-24.0) the lock path, " * 3) + "which meets the claim's >= 10.0x"
    df["why"], df["reading"] = long_why, "analogue"
    df["verdict"] = "holds"   # judged claims: one why each (not applicable ones of one reason share one)
    df.to_csv(run_dir / "report" / "claims.csv", index=False)
    pays_tests = _pays_tests()
    small = {"stage_pooled": 5_000, "lock_always": 50_000, "prepinned": 4_000}
    large = {"stage_pooled": 400_000, "lock_always": 200_000, "prepinned": 100_000}
    pays_tests.sweep(pays_tests.grid(small, large)).to_parquet(run_dir / "data" / "engine_transfers.parquet")
    text = S.summary_markdown(run_dir, [])
    assert "\u2026" not in text and text.count("which meets the claim's >= 10.0x.") == 15
    assert "**Which policy pays** on `cuda` (NVIDIA H200)" in text
    assert "- d2h: 4 KiB `stage_pooled`" in text and "`stage_pooled` below about" in text
    assert text.index("Which policy pays") < text.index("| id | claim |")


def test_inline_summary_fits_a_comment_or_is_refused(run, monkeypatch):
    _, run_dir, _ = run
    from PIL import Image
    rng = __import__("numpy").random.default_rng(0)
    noisy = run_dir / "figures" / "03_c6_c7_c9_lock_cost-noise.png"     # noise: no PNG shrinks it far
    Image.fromarray(rng.integers(0, 255, (600, 1800, 3), dtype="uint8")).save(noisy)
    plain = run_dir / "figures" / "00_platform-bandwidth.png"
    text = S.summary_markdown(run_dir, [plain, plain], inline=True)
    assert len(text) <= S.COMMENT_CHARS and len(_images(_md().parse(text))) == 2
    with pytest.raises(BadParameter, match="even one figure inline .* 65,536 a tracker comment holds"):
        S.summary_markdown(run_dir, [noisy, noisy], inline=True)


def test_summary_says_when_judged_by_later_code_and_inlines_figures(run):
    _, run_dir, man = run
    man = {**man, "judged_by": {"commit": "c" * 40, "dirty": False}}
    (run_dir / "manifest.json").write_text(json.dumps(man))
    text = S.summary_markdown(run_dir, [run_dir / "figures" / "00_platform-bandwidth.png"], inline=True)
    assert "b4d2cc396755e509494d52d5d643d9efd0301925" in text and "judged by `" + "c" * 40 + "`" in text
    assert _images(_md().parse(text))[0].startswith("data:image/png;base64,") and "attach them" not in text


def test_summary_escapes_hostile_names(run):
    _, run_dir, man = run
    man = {**man, "preset": "x` <img src=x onerror=alert(1)> [a](javascript:alert(1)) `",
           "platform": "cuda``<b>", "runner": {"host": "h|<script>"}, "run_id": "r`id",
           "unreadable_data": ["<img src=x onerror=alert(2)>.parquet"],
           "notebooks": {"<img src=y onerror=alert(3)>": {"status": "failed"}}}
    (run_dir / "manifest.json").write_text(json.dumps(man))
    text = S.summary_markdown(run_dir, [])
    tokens = _md().parse(text)
    assert not [t for t in tokens if t.type.startswith("html")]
    inline = [c for t in tokens if t.type == "inline" for c in t.children]
    assert not [c for c in inline if c.type.startswith("html") or c.type == "link_open"]
    codes = [c.content for c in inline if c.type == "code_inline"]
    assert any("onerror=alert(1)" in c for c in codes) and "cuda``<b>" in codes   # whole, inside code spans
    assert "<img src=x onerror=alert(2)>" not in text.replace("\\<img", "")


def test_summary_says_what_is_missing_or_unreadable(run):
    _, run_dir, man = run
    (run_dir / "manifest.json").write_text(json.dumps({**man, "unreadable_data": ["lock_cost.parquet"]}))
    (run_dir / "report" / "claims.csv").write_bytes(b"\xff\xfe\x00garbage")
    text = S.summary_markdown(run_dir, [])
    assert "Data that could not be read (no claim is judged on it): lock_cost.parquet." in text
    assert "report/claims.csv could not be read" in text


def test_api_stats_is_read_by_its_exact_name(run):
    _, run_dir, _ = run
    (run_dir / "data" / "api_stats.parquet").rename(run_dir / "data" / "harness.08_c10_api_stats.parquet")
    assert S._api_stats(run_dir) is None


def test_figures_resized(run):
    _, run_dir, _ = run
    from PIL import Image
    (run_dir / "figures" / "04_broken-x.png").write_bytes(b"not a png")
    share = S.share_run(run_dir)
    figs = sorted((share / "figures").glob("*.png"))
    # every verdict's figure first, then the lock cost's headline figure
    assert [p.name for p in figs] == ["03_c6_c7_c9_lock_cost-calls.png", S.VERDICTS_PNG]
    for p in figs:
        with Image.open(p) as im:
            assert im.size[0] == 900 and (p.name == S.VERDICTS_PNG or im.size == (900, 300))


def test_zip_holds_only_final_files_with_slash_names(run):
    _, run_dir, _ = run
    (run_dir / "notebooks" / ".03_c6_c7_c9_lock_cost.partial.ipynb").write_text("{}")
    (run_dir / "figures" / "odd\\name.png").write_bytes(b"x")
    (run_dir / "data" / "x.parquet.tmp").write_bytes(b"x")
    share = S.share_run(run_dir)
    with zipfile.ZipFile(share / f"{run_dir.name}.zip") as z:
        names = z.namelist()
    assert not [n for n in names if "partial" in n or n.endswith(".tmp") or "\\" in n]
    assert f"{run_dir.name}/figures/odd_name.png" in names
    assert all(n.startswith(f"{run_dir.name}/") and ".." not in n.split("/") for n in names)


def test_zip_holds_the_run_and_opens_offline(run, tmp_path):
    _, run_dir, _ = run
    share = S.share_run(run_dir)
    S.share_run(run_dir)                         # again: the share folder never goes into the zip
    rid = run_dir.name
    zpath = share / f"{rid}.zip"
    with zipfile.ZipFile(zpath) as z:
        names = z.namelist()
        z.extractall(tmp_path / "unz")
    assert names[:2] == [f"{rid}/index.html", f"{rid}/report/index.html"]
    assert not [n for n in names if "/share/" in n or n.endswith(".tmp")]
    for need in ("manifest.json", "report/claims.csv", "data/api_stats.parquet", "notebooks/00_platform.ipynb",
                 "figures/00_platform-bandwidth.png", "report/00_platform.html"):
        assert f"{rid}/{need}" in names, need
    root = tmp_path / "unz" / rid
    assert "url=report/index.html" in (root / "index.html").read_text()     # the way in, for people
    index = (root / "report" / "index.html").read_text()
    assert H.external_scripts(index) == []
    refs = []

    class P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            refs.extend(v for k, v in attrs if k in ("href", "src") and v)
    P().feed(index)
    refs = [r for r in refs if r != H.THREAD_URL]      # the glossary's link to the thread: followed only if clicked
    local = [r for r in refs if not r.startswith(("#", "data:"))]
    assert local and all((root / "report" / r).is_file() for r in local), local
    assert not [r for r in refs if r.startswith(("http:", "https:", "//", "/"))]
    if CHROMIUM is None:
        pytest.skip("no chromium on this machine to open the unzipped report")
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          "--host-resolver-rules=MAP * ~NOTFOUND", f"--user-data-dir={tmp_path / 'profile'}",
                          "--dump-dom", (root / "report" / "index.html").as_uri()],
                         capture_output=True, text=True, timeout=60)
    assert "<h2>Claims</h2>" in dom.stdout and "C15" in dom.stdout, dom.stderr[-2000:]


def test_compare_markdown(tmp_path):
    a, man_a = make_run(tmp_path / "outputs", "run-a", "host")
    b, man_b = make_run(tmp_path / "outputs", "run-b", "cuda")
    ca, cb = claims("host"), claims("cuda")
    cb.loc[cb.id == "C3", "verdict"] = "holds"
    text = S.render_compare_markdown([(man_a, ca, a), (man_b, cb, b)])
    tables = _tables(_md().parse(text))
    assert len(tables) == 1 and len(tables[0]) == 16 and {len(r) for r in tables[0]} == {5}
    differing = [line for line in text.splitlines() if line.endswith("**differs** |")]
    assert len(differing) == 1 and differing[0].startswith("| **C3** |")
    assert "1 with verdicts that differ" in text
    _no_machine_paths(text, tmp_path)


def test_find_run_refuses_what_is_not_a_run(tmp_path):
    with pytest.raises(BadParameter, match="not a pinpath run"):
        find_run("nope", tmp_path)
    with pytest.raises(BadParameter, match="not a pinpath run"):
        S.share_run(tmp_path)


@pytest.mark.parametrize("raw, cell", [("a|b", "a\\|b"), ("two\nlines", "two lines"), ("<script>", "\\<script>"),
                                       ("memory_pool_allocate", "memory_pool_allocate"), ("_x_", "\\_x\\_"),
                                       (float("nan"), "")])
def test_md_cell(raw, cell):
    assert S.md_cell(raw) == cell


def test_the_command_line_prints_where_it_wrote(run, capsys, monkeypatch):
    from pinpath import __main__ as cli
    outputs, run_dir, _ = run
    monkeypatch.chdir(outputs.parent)
    assert cli.main(["share", str(run_dir)]) == 0
    out = capsys.readouterr().out.split()
    share = run_dir.resolve() / "share"
    assert out == [str(share / "summary.md"), str(share / f"{run_dir.name}.zip")]


def test_claims_not_applicable_for_one_reason_share_one_why(run):
    """On a machine without a GPU most claims are not applicable for the same reason: the summary
    says it once, naming them all, and every other why stays its own item."""
    _, run_dir, _ = run
    df = claims("cuda")
    na = "not applicable on host: the claim is about a GPU runtime"
    df["verdict"] = ["not applicable"] * 12 + ["holds"] * 3
    df["why"] = [na] * 10 + ["not applicable on host: the claim is about NVIDIA's runtime"] * 2 + ["same words"] * 3
    df.to_csv(run_dir / "report" / "claims.csv", index=False)
    text = S.summary_markdown(run_dir, [])
    ids = ", ".join(f"C{i + 1}" for i in range(10))
    assert text.count(na) == 1 and f"- **{ids}**: {na}." in text
    assert "- **C11, C12**: not applicable on host: the claim is about NVIDIA's runtime." in text
    assert text.count("same words") == 3      # judged claims keep one why each
