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
    assert r.stdout.count("== ") == len(refs) and "Traceback" not in r.stderr


def test_a_run_without_a_parts_data_says_so(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "manifest.json").write_text(json.dumps({"preset": "smoke", "duration_s": 1.0, "notebooks": {}}))
    r = _run(tmp_path)
    assert r.returncode == 0, r.stderr
    assert "fidelity: not in this run" in r.stdout and "replica: not in this run" in r.stdout
    assert "advise: no advise/prediction.csv" in r.stdout
    assert _run(tmp_path / "nowhere").returncode == 2


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
