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


def test_a_real_figure_taken_elsewhere_than_the_prediction_says_so(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "advise").mkdir()
    (tmp_path / "manifest.json").write_text(json.dumps({"preset": "smoke", "duration_s": 1.0, "notebooks": {}}))
    (tmp_path / "advise" / "prediction.csv").write_text(
        "application,kind,variant,placement,predicted_placement,predicted_ns,predicted_low,predicted_high,real_ns,"
        "real_low,real_high,ratio,low,high,verdict\n"
        "stencil,variant,plain,irq_cpu,other_cpu,110892,108615,112255,188366,187877,198794,0.59,0.55,0.60,outside\n"
        "stencil,variant,plain,other_cpu,other_cpu,110892,108615,112255,103438,83094,107700,1.07,1.01,1.35,within 20 %\n")
    r = _run(tmp_path)
    assert r.returncode == 0, r.stderr
    assert "stencil plain [irq_cpu] (predicted at other_cpu): predicted 110.9 us" in r.stdout
    assert "stencil plain [other_cpu]: predicted" in r.stdout
