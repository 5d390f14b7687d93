"""tools/wait_history.py: a blocking wait's late share per op, history and process (issue 33 item 3)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("wait_history", ROOT / "tools" / "wait_history.py")
WH = importlib.util.module_from_spec(spec)
spec.loader.exec_module(WH)


def _rows(history: str, process: int, late_share: float, first_late: bool, n_blocks: int = 8,
          block: int = 16) -> pd.DataFrame:
    """Blocks of one history: index 0 late or soon as told, the rest late at ``late_share``."""
    rng = np.random.default_rng(process * 100 + len(history))
    rows = []
    for b in range(n_blocks):
        for i in range(block):
            late = first_late if i == 0 else rng.random() < late_share
            rows.append({"mode": "blocking", "process": process, "round": b, "history": history,
                         "op": "d2h_240KiB", "index": i, "ns": (38_000 if late else 9_000) + rng.normal(0, 300),
                         "placement": "range"})
    return pd.DataFrame(rows)


def test_late_shares_per_history_block_part_and_process(tmp_path):
    rows = pd.concat([_rows("none", 1, 0.1, True), _rows("none", 2, 0.0, True),
                      _rows("kern2ms", 1, 0.9, False), _rows("kern2ms", 2, 1.0, False)], ignore_index=True)
    t = WH.table(rows).set_index("history")
    assert 20e3 < t.attrs["cuts_us"]["blocking/d2h_240KiB"] * 1e3 < 35e3
    assert t.loc["none", "steady_late"] < 0.15 and t.loc["kern2ms", "steady_late"] > 0.85
    assert t.loc["none", "first_late"] == 1.0 and t.loc["kern2ms", "first_late"] == 0.0   # index 0 apart
    assert t.loc["kern2ms", "process_late"].split()[1] == "1.00"
    assert t.loc["none", "process_late"].split()[1] == "0.00"
    late_median = [float(x) for x in t.loc["kern2ms", "process_median_us"].split()]
    assert len(late_median) == 2 and all(37 < x < 39 for x in late_median)   # each process's own median
    rows.to_csv(tmp_path / "history.csv", index=False)
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "wait_history.py"), "analyse", str(tmp_path)],
                       capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "lib")}, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "kern2ms" in r.stdout and "d2h_240KiB" in r.stdout


def test_one_group_gives_no_late_share(tmp_path):
    rows = _rows("none", 1, 0.0, False)
    t = WH.table(rows)
    assert t.attrs["cuts_us"]["blocking/d2h_240KiB"] is None
    assert t.steady_late.isna().all() and t.process_late.eq("").all()
    assert 8.5 < float(t.process_median_us.iat[0]) < 9.5   # the medians hold where no late share can
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "wait_history.py"), "analyse", str(tmp_path)],
                       capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "lib")}, timeout=60)
    assert r.returncode == 1 and "no rows" in r.stdout
