"""The regression check of ``make compare``: figures apart beyond both intervals, verdicts that
changed, and ``--strict``'s exit status, on small claims.csv files written here."""

from __future__ import annotations

import pandas as pd
import pytest

from pinpath import __main__ as cli
from pinpath import compare
from pinpath.report import regress
from pinpath.report.share import render_compare_markdown

HEAD = "id,metric,measured,low,high,unit,verdict\n"


def _csv(tmp_path, name: str, body: str):
    d = tmp_path / name / "report"
    d.mkdir(parents=True)
    (d / "claims.csv").write_text(HEAD + body)
    return tmp_path / name


def _runs(*dirs):
    return [({"run_id": d.name, "platform": "cuda", "preset": "full"}, regress.read_claims(d), d) for d in dirs]


A = ("C3,lock / stage,0.15,0.12,0.22,x,holds\n"        # B: overlaps, same verdict
     "C7,re-lock / query,5.3,3.6,7.0,x,does not hold\n"  # B: apart, verdict changed -> regression
     "C2,share,0.59,0.40,0.60,fraction,inconclusive\n"   # B: overlaps, verdict changed -> not a regression
     "C13,re-lock path,5087,4811,5296,ns,holds\n"        # B: apart, same verdict
     "C8,still locked,,,,count,not applicable\n")        # no figure on either side
B = ("C3,lock / stage,0.20,0.17,0.30,x,holds\n"
     "C7,re-lock / query,1.5,1.2,1.9,x,holds\n"
     "C2,share,0.52,0.51,0.53,fraction,holds\n"
     "C13,re-lock path,3000,2900,3100,ns,holds\n"
     "C8,still locked,,,,count,not applicable\n")


def test_each_claim_is_judged_against_both_intervals(tmp_path):
    a, b = _csv(tmp_path, "A", A), _csv(tmp_path, "B", B)
    got = regress.check(_runs(a, b)).set_index("id")
    assert list(got.index) == ["C3", "C7", "C2", "C13", "C8"]
    assert got.overlap.tolist()[:4] == [True, False, True, False] and pd.isna(got.overlap["C8"])
    assert got.verdict_changed.tolist() == [False, True, True, False, False]
    assert got.regression.tolist() == [False, True, False, False, False]
    assert list(regress.regressions(regress.check(_runs(a, b))).id) == ["C7"]
    assert (got.base_run.iloc[0], got.run.iloc[0]) == ("A", "B")
    text = "\n".join(regress.lines(regress.check(_runs(a, b))))
    assert "4 figure(s) in both runs, 2 with overlapping intervals; 2 verdict(s) changed; 1 regression(s)" in text
    assert "C7 (A -> B): does not hold -> holds" in text and "C3 (A" not in text


def test_a_figure_without_interval_is_a_point_and_a_missing_claim_is_said(tmp_path):
    a = _csv(tmp_path, "A", "C1,count,1,,,count,holds\nC4,q / l,0.5,0.4,0.6,x,holds\n")
    b = _csv(tmp_path, "B", "C1,count,1,1,1,count,holds\nC5,kinds,3,3,3,count,holds\n")
    got = regress.check(_runs(a, b)).set_index("id")
    assert bool(got.overlap["C1"]) and not got.verdict_changed["C1"]
    assert got.verdict["C4"] == "not in this run" and got.base_verdict["C5"] == "not in this run"
    assert not got.regression.any()
    one = regress.check_frames(regress.read_claims(a / "report" / "claims.csv"),
                               pd.DataFrame([{"id": "C1", "measured": 2.0, "low": 1.5, "high": 2.5,
                                              "verdict": "does not hold"}]))
    assert one.set_index("id").regression["C1"]


def test_markdown_of_the_comparison_carries_the_check(tmp_path):
    md = render_compare_markdown(_runs(_csv(tmp_path, "A", A), _csv(tmp_path, "B", B)))
    assert "### Regression check" in md and "- **C7 (A -> B): does not hold -> holds; 5.30x" in md
    assert "- C2 (A -> B): inconclusive -> holds" in md


@pytest.mark.parametrize("strict,body,rc", [(True, B, 1), (False, B, 0), (True, A, 0)])
def test_strict_exits_1_only_on_a_regression(tmp_path, monkeypatch, capsys, strict, body, rc):
    a, b = _csv(tmp_path, "A", A), _csv(tmp_path, "B", body)
    out = tmp_path / "compare.html"
    monkeypatch.setattr(compare, "compare", lambda dirs, path: (path, regress.check(_runs(*dirs))))
    assert cli.main(["compare", str(a), str(b), "--out", str(out), *(["--strict"] if strict else [])]) == rc
    printed = capsys.readouterr().out
    assert printed.startswith(str(out)) and "regression check:" in printed


# -- two references: rows keyed by claim and cold arm, agreement, and the why that says they differ ----
SPLIT = ("id,metric,measured,low,high,unit,verdict,reading,n_repeats,repeat_unit,between_spread,why,state\n"
         "C2,share [4 KiB h2d],0.9,0.8,0.95,fraction,holds,analogue,5,round,0.01,the share is 90 %,"
         "cache hot; timing thread not pinned\n"
         "C2,share [4 KiB h2d],0.3,0.2,0.4,fraction,does not hold,analogue,5,round,0.02,the share is 30 %,"
         "cache cold; timing thread not pinned\n"
         "C12a,case 1 / case 2 [case 3 / case 2; re-lock counted by pinpath (analogue of ROCT's count)],1.01,0.9,1.1,x,"
         "holds,analogue,5,process,0.2,case 3 takes 1.01x case 2,cache hot; timing thread not pinned\n")
SPLIT_B = SPLIT.replace("0.3,0.2,0.4,fraction,does not hold", "0.35,0.25,0.45,fraction,does not hold") \
               .replace("1.01,0.9,1.1,x,holds", "3.7,3.2,4.1,x,does not hold")


def _split(tmp_path, name, body):
    d = tmp_path / name / "report"
    d.mkdir(parents=True)
    (d / "claims.csv").write_text(body)
    return pd.read_csv(d / "claims.csv")


def test_a_split_cold_row_is_kept_apart_and_agreement_needs_verdict_and_overlap(tmp_path):
    a, b = _split(tmp_path, "A", SPLIT), _split(tmp_path, "B", SPLIT_B)
    got = regress.check_frames(a, b, base_run="h200", run="h200-b")
    assert list(zip(got.id, got.arm)) == [("C2", ""), ("C2", "cold"), ("C12a", "")]
    assert got.agree.tolist() == [True, True, False] and got.verdict_changed.tolist() == [False, False, True]
    c12 = got.iloc[2]
    assert c12.base_repeats == "over 5 processes (between-process spread 20 %)"
    assert c12.mechanism == "by an analogue; case 3 / case 2; re-lock counted by pinpath (analogue of ROCT's count)"
    text = "\n".join(regress.agreement_lines(got))
    assert text.startswith("agreement of h200 and h200-b: 2 of 3 claims agree")
    assert "C2 (cold): agree" in text and "C12a: DIFFER" in text and "h200-b: does not hold; 3.70x" in text
    _, rows = __import__("pinpath.report.html", fromlist=["compare_rows"]).compare_rows(
        [({"run_id": "A"}, a), ({"run_id": "B"}, b)])
    assert [r["id"] for r in rows] == ["C2", "C2 (cold)", "C12a"]   # the comparison page keeps both rows of C2


def test_the_why_says_where_the_other_reference_gives_another_verdict_and_noting_twice_changes_nothing(tmp_path):
    a, b = _split(tmp_path, "A", SPLIT), _split(tmp_path, "B", SPLIT_B)
    once = regress.note_disagreements(a, b, "h200-b (NVIDIA H200, commit abc1234)")
    assert once.why.iloc[0] == "the share is 90 %" and once.why.iloc[1] == "the share is 30 %"
    assert once.why.iloc[2] == ("case 3 takes 1.01x case 2; the verdict differs between the references: h200-b "
                                "(NVIDIA H200, commit abc1234) gives does not hold (3.70x (95 % CI 3.20–4.10) over 5 "
                                "processes (between-process spread 20 %))")
    assert regress.note_disagreements(once, b, "h200-b (NVIDIA H200, commit abc1234)").why.tolist() == once.why.tolist()
    assert regress.note_disagreements(once, a, "h200").why.iloc[2] == "case 3 takes 1.01x case 2"   # agreeing again


def test_keeping_a_second_reference_notes_both_references(tmp_path):
    import json
    refs = tmp_path / "reference"
    for name, body in (("h200", SPLIT), ("h200-b", SPLIT_B)):
        _split(refs, name, body)
        (refs / name / "manifest.json").write_text(json.dumps({"runtime": {"device": "NVIDIA H200"},
                                                                "git": {"commit": "0123456789"}}))
    written = regress.note_references(refs / "h200-b")
    assert sorted(p.name for p in written) == ["h200", "h200-b"]
    a, b = (regress.read_claims(refs / n) for n in ("h200", "h200-b"))
    assert "the verdict differs between the references: h200-b (NVIDIA H200, commit 0123456)" in a.why.iloc[2]
    assert "the verdict differs between the references: h200 (NVIDIA H200, commit 0123456)" in b.why.iloc[2]
    assert regress.note_references(refs / "h200-b") == []    # nothing new to say


def test_agree_prints_and_writes_the_table(tmp_path, monkeypatch, capsys):
    for name, body in (("A", SPLIT), ("B", SPLIT_B)):
        _split(tmp_path, name, body)
    monkeypatch.setattr(compare, "_judged", lambda d: ({"run_id": d.name}, regress.read_claims(d)))
    out = tmp_path / "agree.csv"
    assert cli.main(["agree", str(tmp_path / "A"), str(tmp_path / "B"), "--out", str(out)]) == 0
    assert "agreement of A and B: 2 of 3 claims agree" in capsys.readouterr().out
    assert pd.read_csv(out).agree.tolist() == [True, True, False]
