"""tools/wake_mix.py (issue 33 item 2's diagnostic): the cut between the soon and late wakes, and the
per-side figures it prints, on synthetic data (inputs of the test, not measurements)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pinpath.schema import REAL_PHASES, frame

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("wake_mix", ROOT / "tools" / "wake_mix.py")
wake_mix = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wake_mix)


def _run(tmp_path: Path, late_real: float, late_replica: float) -> Path:
    """A run folder with both sides at nw=16: soon copies 8 us, late 35 us, in the given shares."""
    rows_p, rows_w = [], []
    for p in range(3):
        for i in range(41):
            late = i < 40 * late_real
            rows_p.append({"variant": "plain", "nw": 16, "process": p, "traced": False, "step": 0, "invocation": i,
                           "ns": 30_000 + (35_000 if late else 8_000), "kernel_ns": 30_000})
            late = i < 40 * late_replica
            rows_w.append({"variant": "plain", "nw": 16, "repeat": p, "wait": "blocking", "step": 0, "invocation": i,
                           "ns": 20_000 + (35_000 if late else 8_000), "kernel_only_ns": 20_000})
    (tmp_path / "data").mkdir()
    pd.DataFrame(rows_p).to_parquet(tmp_path / "data" / "real_present.parquet")
    pd.DataFrame(rows_w).to_parquet(tmp_path / "data" / "real_wait_model.parquet")
    # the unpaired processes: every invocation 50 us; the bookkeeping 1 us
    pd.DataFrame([{"variant": "plain", "nw": 16, "process": p, "traced": False, "step": 0, "invocation": i,
                   "ns": 50_000} for p in range(3) for i in range(41)]
                 ).to_parquet(tmp_path / "data" / "real_invocations.parquet")
    # no traced --paired run: the bookkeeping is left out
    pd.DataFrame([{"variant": "plain", "nw": 16, "process": 0}]).to_parquet(tmp_path / "data" / "real_runs.parquet")
    frame([], REAL_PHASES).to_parquet(tmp_path / "data" / "real_present_phases.parquet")
    return tmp_path


def test_each_side_gets_its_groups_and_late_share(tmp_path):
    out = wake_mix.report(_run(tmp_path, 0.5, 0.25))
    assert "plain nw=16: cut 21.5 us" in out
    real, replica = (next(line for line in out.splitlines() if line.strip().startswith(s)) for s in ("real", "replica"))
    # invocation 0 (late) is the warm-up, left out: 19 of 40 late in each real process (0.475), 9 of 40 replica
    assert "soon    8.0 us, late   35.0 us; late share 0.47" in real and "0.47, 0.47, 0.47" in real
    assert "late share 0.23" in replica
    # trimmed means (1st-99th percentile: every invocation here is inside): model 30 + replica copies
    # (31 of 40 at 8 us, 9 at 35 us: 14.075 us) against the paired region (21 of 40 at 38, 19 at 65 us)
    c = wake_mix.composed(tmp_path).iloc[0]
    assert c.model_ns == pytest.approx(44_075) and c.real_ns == pytest.approx(50_825) and c.real_unpaired_ns == 50_000
    # in the real processes' wake state: the replica's 8 and 35 us groups weighted 21 : 19, the real region
    assert c.copies_state_ns == pytest.approx(8_000 + 19 / 40 * 27_000) and c.ratio_state == pytest.approx(1.0)
    assert "plain nw=16: 1.000, 0.867 and 0.881 (model 50.8 and 44.1 us, real 50.8 and 50.0 us)" in out


def test_the_command_line_names_what_it_needs(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "wake_mix.py")], capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT / "lib")})
    assert r.returncode != 0 and "Usage:" in r.stderr
