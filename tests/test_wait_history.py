"""tools/wait_history.py, .cu and _omp.cpp: a blocking wait's late share and median per op, history and process
(issue 33 item 3), and the two programs' arguments and byte checks where this machine can build them."""

import importlib.util
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

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
    wide = WH.overview(rows)["d2h_240KiB"]
    assert list(wide.index) == ["none", "kern2ms"]
    names = ["sleep2ms", "busy200us", "kern2000us", "none", "kern20us", "busy2ms", "sleep200us"]
    assert sorted(names, key=WH.history_key) == ["none", "kern20us", "kern2000us", "busy200us", "busy2ms",
                                                 "sleep200us", "sleep2ms"]
    assert wide.loc["kern2ms", ("blocking", "range")].startswith("38.0 (")   # both processes late: ~38 us


def test_each_processs_share_of_waits_woken_on_another_cpu():
    rows = pd.concat([_rows("none", 1, 0.0, False), _rows("none", 2, 0.0, False)], ignore_index=True)
    steady = rows["index"] >= WH.CARRY
    rows["cpu_before"] = 3
    # process 1 returns on CPU 5 after every other steady op, process 2 always where it began; a block's
    # first CARRY ops (not steady) moved in both, and do not count
    rows["cpu_after"] = np.where(~steady, 7, np.where((rows.process == 1) & (rows["index"] % 2 == 0), 5, 3))
    t = WH.table(rows)
    assert t.process_moved.iat[0].split() == ["0.50", "0.00"]


def test_one_group_gives_no_late_share(tmp_path):
    rows = _rows("none", 1, 0.0, False)
    t = WH.table(rows)
    assert t.attrs["cuts_us"]["blocking/d2h_240KiB"] is None
    assert t.steady_late.isna().all() and t.process_late.eq("").all()
    assert 8.5 < float(t.process_median_us.iat[0]) < 9.5   # the medians hold where no late share can
    assert "process_moved" not in t.columns   # rows from before the CPUs were written
    rows.to_csv(tmp_path / "history.csv", index=False)
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "wait_history.py"), "analyse", str(tmp_path)],
                       capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "lib")}, timeout=60)
    assert r.returncode == 0 and "'blocking/d2h_240KiB': None" in r.stdout, r.stderr
    short = rows[rows["index"] < 2]   # blocks of two: no steady part to judge
    assert WH.table(short).process_median_us.eq("").all()
    (tmp_path / "history.csv").unlink()
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "wait_history.py"), "analyse", str(tmp_path)],
                       capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "lib")}, timeout=60)
    assert r.returncode == 1 and "no rows" in r.stdout


LLVM = Path("/usr/lib/llvm-19")
HAS_OFFLOAD = shutil.which("clang++-19") and (LLVM / "lib/libomptarget.so").exists()


@pytest.fixture(scope="module")
def omp_exe(tmp_path_factory):
    """tools/wait_history_omp.cpp for the host offload target (x86_64: its own memory, copies that move)."""
    exe = tmp_path_factory.mktemp("omp") / "wait_history_omp"
    subprocess.run(["clang++-19", "-O1", "-std=c++17", "-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu",
                    str(ROOT / "tools" / "wait_history_omp.cpp"), "-o", str(exe)], check=True)
    return exe


@pytest.mark.skipif(not HAS_OFFLOAD, reason="no clang++-19 with libomptarget here")
def test_the_omp_program_times_every_history_and_op_on_the_host_offload_target(omp_exe):
    env = {**os.environ, "LD_LIBRARY_PATH": str(LLVM / "lib")}
    r = subprocess.run([str(omp_exe), "--variant", "plain", "7", "1", "2", "3", "none,busy20,kern50,sleep30"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = pd.read_csv(io.StringIO(r.stdout))
    assert len(rows) == 2 * 4 * 6 * 3   # rounds x histories x ops x block
    assert set(rows.history) == {"none", "busy20us", "kern50us", "sleep30us"} and set(rows["mode"]) == {"omp_plain"}
    assert set(rows.process) == {7} and (rows.ns > 0).all()
    assert (rows.cpu_before >= 0).all() and (rows.cpu_after >= 0).all()   # the CPUs around each op
    k10 = rows[rows.op == "k10_d2h_240KiB"].ns
    assert k10.min() >= 9_000   # the region spins 10 us inside the clock (the host's omp_get_wtime: 1 us steps)
    # each buffer's physical layout, one line each: frame runs where pagemap names frames (root), else "unknown"
    layout = re.findall(r"process 7 buffer (240KiB|1MiB) pages (\d+) present (\d+) (frame_runs [1-9]\d*|frames unknown)",
                        r.stderr)
    assert [(b, p, q) for b, p, q, _ in layout] == [("240KiB", "60", "60"), ("1MiB", "256", "256")], r.stderr


@pytest.mark.skipif(not HAS_OFFLOAD, reason="no clang++-19 with libomptarget here")
def test_the_omp_programs_byte_check_fails_where_nothing_moves(omp_exe):
    """The host fallback shares the host's memory: the zeroed destination stays zero, and the check says so."""
    env = {**os.environ, "LD_LIBRARY_PATH": str(LLVM / "lib"), "OMP_TARGET_OFFLOAD": "DISABLED"}
    r = subprocess.run([str(omp_exe), "--variant", "plain", "--allow-host", "1", "1", "1", "2", "none"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 1 and "bytes differ" in r.stderr
    for histories in ("busy", ",none", "none,,kern20", "none,", "kern20,kern20", "kern+20", "kern 20"):
        bad = subprocess.run([str(omp_exe), "--variant", "plain", "1", "1", "1", "2", histories], capture_output=True,
                             text=True, env=env, timeout=60)
        assert bad.returncode == 2 and "bad arguments" in bad.stderr, histories


@pytest.mark.skipif(not shutil.which("nvcc"), reason="no nvcc here")
def test_the_cuda_program_refuses_a_bad_history_list_before_it_touches_the_gpu(tmp_path):
    exe = tmp_path / "wait_history"
    subprocess.run(["nvcc", "-O0", "-o", str(exe), str(ROOT / "tools" / "wait_history.cu")], check=True, timeout=300)
    for histories in ("none,busyx", "nonex", "kern0", "sleep2000000", "kern20,kern20", "none,,busy5", "kern-5"):
        r = subprocess.run([str(exe), "blocking", "1", "1", "1", "16", histories], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 2 and "bad arguments" in r.stderr, histories
    for mode in ("_reg", "blocking_regx", "reg", "blocking_reg_reg", "blockingreg"):   # MODE[_reg] and nothing else
        r = subprocess.run([str(exe), mode, "1", "1", "1"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "bad arguments" in r.stderr, mode
