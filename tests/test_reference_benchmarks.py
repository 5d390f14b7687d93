"""tools/reference-benchmarks.py reads the benchmark figures of run folders: the committed
references give every part, and a run without a part's data says so instead of failing."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "reference-benchmarks.py"


def _run(*args):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, timeout=120)


def test_the_references_give_every_benchmark():
    refs = sorted(p for p in (ROOT / "outputs" / "reference").iterdir() if (p / "manifest.json").is_file())[:2]
    assert refs, "no committed reference"
    r = _run(*refs)
    assert r.returncode == 0, r.stderr
    for part in ("preset full:", "engine against plain C:", "pinned direct copy against the bare loop",
                 "replica against the real libomptarget", "advise, predicted against real"):
        assert part in r.stdout
    heads = [line for line in r.stdout.splitlines() if line.startswith("== ")]
    assert heads == [f"== {ref}" for ref in refs] + (["== both"] if len(refs) == 2 else [])
    assert "Traceback" not in r.stderr
    if len(refs) == 2:   # two references: the claims of both, with their agreement
        assert "agreement of cuda and cuda-b: " in r.stdout


def test_a_run_without_a_parts_data_says_so(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "manifest.json").write_text(json.dumps({"preset": "smoke", "duration_s": 1.0, "notebooks": {}}))
    r = _run(tmp_path)
    assert r.returncode == 0, r.stderr
    assert "fidelity: not in this run" in r.stdout and "replica: not in this run" in r.stdout
    assert "advise: no advise/prediction.csv" in r.stdout
    assert _run(tmp_path / "nowhere").returncode == 2


def test_the_replica_line_gives_the_model_alone_and_with_each_measured_term(tmp_path):
    """A run with real_terms (numbers made up for the test): the bare ratio stays, each step beside it."""
    import pandas as pd
    (tmp_path / "data").mkdir()
    (tmp_path / "manifest.json").write_text(json.dumps({"preset": "full", "duration_s": 1.0, "notebooks": {}}))
    pd.DataFrame([{"variant": "plain", "nw": 128, "policy": "driver_pageable", "model_median_ns": 200e3,
                   "real_median_ns": 285e3, "real_lo_ns": 260e3, "real_hi_ns": 300e3, "real_processes": 5,
                   "ratio": 0.70, "ratio_lo": 0.66, "ratio_hi": 0.78}]).to_parquet(tmp_path / "data" / "real_ratio.parquet")
    pd.DataFrame([{"variant": "plain", "nw": 128, "step": k, "term": t, "ratio": r, "ratio_lo": r - 0.04,
                   "ratio_hi": r + 0.04} for k, t, r in ((0, "model", 0.70), (1, "present-only region", 0.91),
                                                         (2, "bookkeeping", float("nan")))]
                 ).to_parquet(tmp_path / "data" / "real_terms.parquet")
    out = _run(tmp_path).stdout
    assert "model/real 0.700 (0.660-0.780)" in out
    assert "with measured terms: + present-only region 0.910 (0.870-0.950); + bookkeeping not measured" in out
    pd.DataFrame([{"variant": "plain", "nw": 128, "ratio": 0.98, "ratio_lo": 0.9, "ratio_hi": 1.05,
                   "ratio_unpaired": 0.95, "late_real": 0.3, "late_replica": 0.25}]
                 ).to_parquet(tmp_path / "data" / "real_means.parquet")
    assert ("by trimmed means, against the same --paired processes: in the wake state the replica drew 0.980 "
            "(0.900-1.050); the unpaired: 0.950; late share real 0.30, replica 0.25") in _run(tmp_path).stdout
    pd.DataFrame([{"variant": "plain", "nw": 128, "ratio": 0.8, "ratio_lo": 0.7, "ratio_hi": 0.9, "ratio_state": 0.97,
                   "ratio_state_lo": 0.93, "ratio_state_hi": 1.01, "ratio_unpaired": 0.95, "late_real": 0.47,
                   "late_replica": 0.21, "note": "", "in_real_state": True},
                  {"variant": "plain", "nw": 128, "ratio": 0.98, "ratio_lo": 0.9, "ratio_hi": 1.05,
                   "ratio_state": float("nan"), "ratio_state_lo": float("nan"), "ratio_state_hi": float("nan"),
                   "ratio_unpaired": 0.95, "late_real": float("nan"), "late_replica": float("nan"), "note": "why",
                   "in_real_state": None},
                  {"variant": "plain", "nw": 128, "ratio": 0.9, "ratio_lo": 0.8, "ratio_hi": 1.0, "ratio_state": 0.9,
                   "ratio_state_lo": 0.8, "ratio_state_hi": 1.0, "ratio_unpaired": 0.9, "late_real": 0.3,
                   "late_replica": 0.0, "note": "as drawn", "in_real_state": False}]
                 ).to_parquet(tmp_path / "data" / "real_means.parquet")
    out = _run(tmp_path).stdout
    assert ("in the real processes' wake state 0.970 (0.930-1.010), in the wake state the replica drew 0.800 "
            "(0.700-0.900); the unpaired: 0.950; late share real 0.47, replica 0.21") in out
    assert "in the real processes' wake state no figure (why); in the wake state the replica drew 0.980" in out
    assert out.count("the copies make one group") == 1
    assert out.count("(the replica's copies as drawn: its groups do not pair with the real ones')") == 1


def test_two_runs_give_the_claims_table_of_both_with_their_agreement(tmp_path):
    """Given two runs, the claims of both, claim by claim; a run against itself agrees on every claim."""
    ref = sorted(p for p in (ROOT / "outputs" / "reference").iterdir() if (p / "manifest.json").is_file())[0]
    n = len(open(ref / "report" / "claims.csv").read().strip().splitlines()) - 1
    r = _run(ref, ref)
    assert r.returncode == 0, r.stderr
    both = r.stdout.split("== both\n", 1)[1]
    assert f"agreement of {ref.name} and {ref.name}: " in both and "DIFFER" not in both
    assert f"{n} of {n} claims agree" in both and "C12a: agree" in both
    (tmp_path / "data").mkdir()
    (tmp_path / "manifest.json").write_text(json.dumps({"preset": "smoke", "duration_s": 1.0, "notebooks": {}}))
    r = _run(ref, tmp_path)
    assert r.returncode == 0 and "claims table: not in both runs (claims.csv)" in r.stdout


PREDICTION_HEADER = ("application,kind,variant,placement,predicted_placement,predicted_ns,predicted_low,predicted_high,"
                     "real_ns,real_low,real_high,ratio,low,high,verdict")


def _advise_run(tmp_path, prediction_csv: str):
    """A run folder with nothing but a manifest and advise/prediction.csv; the tool's output."""
    (tmp_path / "data").mkdir()
    (tmp_path / "advise").mkdir()
    (tmp_path / "manifest.json").write_text(json.dumps({"preset": "smoke", "duration_s": 1.0, "notebooks": {}}))
    (tmp_path / "advise" / "prediction.csv").write_text(prediction_csv)
    return _run(tmp_path)


def test_a_real_figure_taken_elsewhere_than_the_prediction_says_so(tmp_path):
    r = _advise_run(tmp_path,
        PREDICTION_HEADER + "\n"
        "stencil,variant,plain,irq_cpu,other_cpu,110892,108615,112255,188366,187877,198794,0.59,0.55,0.60,outside\n"
        "stencil,variant,plain,other_cpu,other_cpu,110892,108615,112255,103438,83094,107700,1.07,1.01,1.35,within 20 %\n")
    assert r.returncode == 0, r.stderr
    assert "stencil plain [irq_cpu] (predicted at other_cpu): predicted 110.9 us" in r.stdout
    assert "stencil plain [other_cpu]: predicted" in r.stdout


def test_a_row_of_one_wait_state_says_which_and_both_late_shares(tmp_path):
    r = _advise_run(tmp_path,
        PREDICTION_HEADER + ",state,probe_late_share,real_late_share\n"
        "region,variant,app_pinned,other_cpu,other_cpu,11655,10531,19341,17905,14392,34889,0.65,0.3,1.34,outside,,,\n"
        "region,variant,app_pinned,other_cpu,other_cpu,40467,39000,42000,36934,36658,37555,1.10,1.0,1.2,within 20 %,"
        "late,0.18,0.48\n")
    assert r.returncode == 0, r.stderr
    assert "region app_pinned [other_cpu]: predicted 11.7 us" in r.stdout
    assert "region app_pinned [other_cpu] (waits late: 48% of the real late, 18% of the probe's): predicted 40.5 us" in r.stdout
