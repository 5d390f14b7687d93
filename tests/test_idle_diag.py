"""tools/awake.sh (CPUs kept from halting by SCHED_IDLE spinners) and tools/idle_diag.py (the region's
invocations per condition, placement and variant, each process's median and late share)."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("idle_diag", ROOT / "tools" / "idle_diag.py")
ID = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ID)


def test_awake_spinners_run_at_sched_idle_on_their_cpu_and_stop():
    cpu = min(os.sched_getaffinity(0))
    script = f""". {ROOT / 'tools' / 'awake.sh'}
awake_on "{cpu}"
for p in "${{AWAKE_PIDS[@]}}"; do echo "pid $p"; awk '{{print "policy", $41}}' /proc/$p/stat; taskset -cp $p; done
awake_off
echo "left ${{#AWAKE_PIDS[@]}}" """
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    pid = int(r.stdout.split("pid ", 1)[1].split()[0])
    assert "policy 5" in r.stdout                       # SCHED_IDLE
    assert f"current affinity list: {cpu}" in r.stdout
    assert "left 0" in r.stdout and not Path(f"/proc/{pid}").exists()


def _rows(condition: str, place: str, process: int, late_share: float, n: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(process)
    late = rng.random(n) < late_share
    transfer = np.where(late, 34_000, 8_000) + rng.normal(0, 300, n)
    return pd.DataFrame({"variant": "app_pinned", "ns": transfer + 36_000, "transfer_ns": transfer,
                         "process": process, "placement": f"{condition}:{place}"})


def test_per_process_late_shares_and_medians():
    real = pd.concat([_rows("asis", "range", 1, 0.1), _rows("asis", "range", 2, 0.9),
                      _rows("all", "one", 3, 0.5)], ignore_index=True)
    pp = ID.per_process(real).set_index("process")
    assert 8 < pp.attrs["cuts_us"]["app_pinned"] < 34
    assert abs(pp.late[1] - 0.1) < 0.06 and abs(pp.late[2] - 0.9) < 0.06 and abs(pp.late[3] - 0.5) < 0.1
    assert pp.region_us[1] < 46 and pp.region_us[2] > 68          # each process's median in its own state
    assert (pp.loc[3, ["condition", "placement"]] == ["all", "one"]).all()
    s = ID.summary(ID.per_process(real))
    assert s.loc[("range", "app_pinned", "asis"), "n"] == 2


def test_without_paired_the_whole_invocation_is_split(tmp_path):
    real = pd.concat([_rows("asis", "range", 1, 0.3), _rows("asis", "range", 2, 0.3)], ignore_index=True)
    real.drop(columns="transfer_ns").to_csv(tmp_path / "real.csv", index=False)
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "idle_diag.py"), "analyse", str(tmp_path)],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "lib")})
    assert r.returncode == 0, r.stderr
    cut_us = float(re.search(r"'app_pinned': ([0-9.]+)", r.stdout).group(1))
    assert 44 < cut_us < 70                     # the cut on whole invocations: soon 44 us, late 70 us
    assert "asis" in r.stdout and "range" in r.stdout
