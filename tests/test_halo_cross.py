"""tools/halo_cross.py and tools/halo_cross.cpp: the stencil's halo updates under three host uses, a
diagnostic: its per-process table, the build command taken from the bundle's, and (where this
machine has clang++-19 with libomptarget) the program itself on the host fallback."""

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("halo_cross", ROOT / "tools" / "halo_cross.py")
HC = importlib.util.module_from_spec(spec)
spec.loader.exec_module(HC)
HEADER = "variant,host_use,kernels,round,copy,direction,ns"


def _process(path: Path, variant: str, ns_by_round: list[int]) -> None:
    rows = [f"{variant},{use},{k},{r},{c},{'h2d' if c >= 2 else 'd2h'},{ns + 1000 * c}"
            for r, ns in enumerate(ns_by_round) for use in ("app", "probe", "nopre") for k in (0, 1)
            for c in range(4)]
    path.write_text(f"# variant={variant}\n{HEADER}\n" + "\n".join(rows) + "\n")


def test_table_takes_each_copy_median_then_sums_the_four(tmp_path, capsys):
    _process(tmp_path / "halo-plain-1.csv", "plain", [20000, 30000, 40000])      # medians 30, 31, 32, 33 us
    _process(tmp_path / "halo-app_pinned-1.csv", "app_pinned", [10000, 20000, 90000])   # 20, 21, 22, 23 us
    per_copy, step = HC.table(tmp_path)
    assert len(per_copy) == 2 * 6 * 4 and len(step) == 2 * 6
    by = step.set_index(["variant", "host_use", "kernels"]).ns
    assert by["plain", "app", 1] == 126000 and by["app_pinned", "probe", 0] == 86000
    HC.analyse(tmp_path)
    out = capsys.readouterr().out
    assert "app   kernels=1: plain  126.0 (126.0-126.0), app_pinned   86.0" in out
    assert "app_pinned - plain -40.0 (-40.0 to -40.0)" in out


def test_one_variant_alone_says_there_is_no_difference(tmp_path, capsys):
    _process(tmp_path / "halo-plain-2.csv", "plain", [20000])
    HC.analyse(tmp_path)
    out = capsys.readouterr().out
    assert "only plain ran" in out and "app_pinned - plain" not in out


def test_no_rows_is_an_error(tmp_path):
    (tmp_path / "halo-plain-1.csv").write_text("# on_device=1\n")
    with pytest.raises(SystemExit, match="no halo"):
        HC.table(tmp_path)


def test_command_swaps_the_region_for_this_source():
    manifest = {"compiler": "/usr/lib/llvm-19/bin/clang++", "arch": "sm_90",
                "build_command": ["clang++", "-O2", "--offload-arch=sm_90", "-DPINPATH_VENDOR=1",
                                  "lib/pinpath/native/offload/region.cpp", "-o", "build/offload/region-sm_90"]}
    cmd = HC.offload_tool.command(manifest, HC.SOURCE, Path("out/halo"))
    assert cmd == ["/usr/lib/llvm-19/bin/clang++", "-O2", "--offload-arch=sm_90", "-DPINPATH_VENDOR=1",
                   str(HC.SOURCE), "-o", "out/halo"]


LLVM = Path("/usr/lib/llvm-19")


@pytest.mark.skipif(not (shutil.which("clang++-19") and (LLVM / "lib/libomptarget.so").exists()),
                    reason="no clang++-19 with libomptarget here")
def test_the_program_runs_on_the_host_fallback(tmp_path):
    exe = tmp_path / "halo_cross"
    subprocess.run(["clang++-19", "-O1", "-std=c++17", "-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu",
                    str(HC.SOURCE), "-o", str(exe)], check=True)
    env = {**os.environ, "LD_LIBRARY_PATH": str(LLVM / "lib"), "OMP_TARGET_OFFLOAD": "DISABLED"}
    r = subprocess.run([str(exe), "--allow-host", "--rounds", "2", "--nx", "64", "--ny", "8"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stdout.splitlines() if not l.startswith("#")]
    assert lines[0] == HEADER and len(lines) == 1 + 2 * 6 * 4
    assert {l.split(",")[1] for l in lines[1:]} == {"app", "probe", "nopre"}
    bad = subprocess.run([str(exe), "--rounds", "0"], capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 2 and "--rounds" in bad.stderr
