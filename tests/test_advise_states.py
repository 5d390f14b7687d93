"""tools/advise_states.py: prediction.csv's rows, with the wait states', made again from a stored advise
folder (the committed CUDA reference's advise); tools/advise_per_process.py on the same folder."""

import importlib.util
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from pinpath.advise.wake_state import late_cut

ROOT = Path(__file__).resolve().parents[1]
ADVISE = ROOT / "outputs" / "reference" / "cuda" / "advise"


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


AS, PP = _tool("advise_states"), _tool("advise_per_process")


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


@pytest.mark.skipif(not (ADVISE / "region" / "replay.csv").is_file(), reason="no committed advise with its replay")
def test_per_process_table_beside_the_pooled_prediction():
    t = PP.table(ADVISE, "stencil", "other_cpu")
    mix = AS.rows_of(ADVISE, "stencil", "other_cpu")
    mix = mix[(mix.kind == "variant") & (mix.state.isna() | (mix.state == ""))].set_index("variant")
    assert set(t.index) == set(mix.index) == {"plain", "app_pinned", "lock_mapped"}
    assert (t.pooled - mix.predicted_ns.reindex(t.index)).abs().max() < 1e-6   # the same prediction as advise's
    assert (t.real - mix.real_ns.reindex(t.index)).abs().max() < 1e-6          # beside the same real figure
    p, base, probe, _, pols = AS.inputs(ADVISE, "stencil")
    n = probe.process.nunique()
    # one process's own prediction: the replay with that process's probed copies only
    proc = sorted(probe.process.unique())[0]
    one = AS.predict(p, AS.pd.concat([base, AS.runtime_rows(probe[probe.process == proc], base)], ignore_index=True), pols)
    one = one.typical[one.typical.by == "step"].set_index("variant").predicted_ns
    assert abs(float(t.loc["plain", "processes"].split()[0]) * 1e3 - one["plain"]) < 100   # printed to 0.1 us
    for v, r in t.iterrows():
        each = [float(x) * 1e3 for x in r.processes.split()]
        assert len(each) == n and n >= 2
        assert abs(statistics.median(each) - r.per_process) < 100   # printed to 0.1 us
    assert t.loc["lock_mapped", "per_process"] == t.loc["plain", "per_process"]   # a no-op: plain's charges


@pytest.mark.skipif(not (ADVISE / "region-real.csv").is_file(), reason="no committed advise with its real figures")
def test_real_late_shares_split_on_the_real_steps_alone():
    real = AS.inputs(ADVISE, "region")[3]
    real = real[real.placement == "other_cpu"]
    shares = PP.late_shares(ADVISE, "region", "other_cpu")
    for variant, steps in real.groupby("variant"):
        if late_cut(steps.ns.to_numpy(dtype=float)) is None:
            assert variant not in set(shares.index.get_level_values("variant") if len(shares) else [])
            continue
        rows = shares.xs(variant, level="variant")
        cut_ns = rows.index.get_level_values("cut_us")[0] * 1e3   # printed to 0.1 us
        share = rows.droplevel("cut_us").stack()                  # (process, step) -> late share
        assert ((share >= 0) & (share <= 1)).all()
        n_steps = steps.groupby(["process", "step"]).size().reindex(share.index)
        late_steps = round(float((share * n_steps).sum()))
        # the same steps counted late by the real times alone, on either side of the rounded cut
        assert (steps.ns > cut_ns + 50).sum() <= late_steps <= (steps.ns > cut_ns - 50).sum()
