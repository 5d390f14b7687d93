"""tools/advise_states.py: prediction.csv's rows, with the wait states', made again from a stored advise
folder (the committed CUDA reference's advise)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ADVISE = ROOT / "outputs" / "reference" / "cuda" / "advise"
spec = importlib.util.spec_from_file_location("advise_states", ROOT / "tools" / "advise_states.py")
AS = importlib.util.module_from_spec(spec)
spec.loader.exec_module(AS)


def test_a_folder_without_the_files_says_which(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "advise_states.py"), str(tmp_path), "region"],
                       capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "lib"), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 1 and "lacks region.info, region-real.csv, region/replay.csv" in r.stderr


@pytest.mark.skipif(not (ADVISE / "region" / "replay.csv").is_file(), reason="no committed advise with its replay")
def test_the_references_region_has_a_variant_checked_in_each_state():
    t = AS.rows_of(ADVISE, "region", "other_cpu")
    rows = t[(t.state != "") & t.state.notna() & (t.kind == "variant")]
    checked = rows.dropna(subset=["real_ns"]).groupby("variant").state.agg(set)
    split = [v for v, got in checked.items() if got == {"soon", "late"}]
    assert split, f"no variant with real figures in both states: {checked.to_dict()}"
    states = rows[rows.variant == split[0]].set_index("state")
    # a late copy waits about 25 us longer, in the probe and in the application
    assert states.loc["late", "predicted_ns"] > states.loc["soon", "predicted_ns"] + 15000
    assert states.loc["late", "real_ns"] > states.loc["soon", "real_ns"] + 15000
    assert 0 < states.real_late_share.iat[0] < 1 and 0 < states.probe_late_share.iat[0] < 1
