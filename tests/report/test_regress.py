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
