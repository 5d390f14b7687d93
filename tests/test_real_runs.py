"""tools/real-runs.sh (real_runs, sourced by h200-run.sh's advise step and tools/state-diag.sh): an
application's variants in interleaved processes, their rows joined into one CSV of real figures. Run
here with a stand-in program that prints what it was given, where it ran and how lock_mapped was set."""

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pinpath.advise.runtime_term import turn_order
from pinpath.advise.validate import read_real

ROOT = Path(__file__).resolve().parents[1]

STAND_IN = """#!/usr/bin/env bash
# prints a '#' fact, the header and two rows: ns is the process's first allowed CPU, lock the variable
echo "# variant=$2 args=$*"
echo "variant,step,ns,lock,args"
cpu=$(awk '/Cpus_allowed_list/ {print $2}' /proc/self/status)
for s in 0 1; do echo "$2,$s,${cpu%%[-,]*},${LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS:-0},${*:3}"; done
[ "$2" != fail ]   # a stand-in for a failing run where a test edits it
"""


def _run(tmp_path: Path, calls: str, stand_in_text: str = STAND_IN) -> subprocess.CompletedProcess:
    stand_in = tmp_path / "app"
    stand_in.write_text(stand_in_text)
    stand_in.chmod(0o755)
    script = f"""set -u
py() {{ PYTHONPATH={ROOT / 'lib'} {sys.executable} "$@"; }}
. {ROOT / 'tools' / 'real-runs.sh'}
{calls}"""
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "APP": str(stand_in)})


@pytest.mark.skipif(shutil.which("taskset") is None or len(os.sched_getaffinity(0)) < 2,
                    reason="no taskset here, or one CPU only (a pinned process could not be told from an unpinned one)")
def test_processes_interleaved_pinned_and_joined_under_one_header(tmp_path):
    first, cpu = min(os.sched_getaffinity(0)), max(os.sched_getaffinity(0))   # unpinned, the stand-in prints first
    r = _run(tmp_path, f"""REAL_RUNS_HEADER=1
{{ real_runs "$APP" here "$PWD/x" "{cpu} -" --steps 2 --paired && real_runs "$APP" there "$PWD/x" "{cpu},{first}" --steps 2; }} >real.csv""")
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "real.csv").read_text()
    assert text.count("variant,") == 1 and "#" not in text   # one header, the facts left out
    real = pd.read_csv(io.StringIO(text))
    assert list(real.columns) == ["variant", "step", "ns", "lock", "args", "process", "placement", "cpus"]
    assert len(real) == 3 * 3 * 2   # three processes of three variants, two rows each
    # each process ran the variants in turn_order's order for its turn
    here = real[real.placement == "here"]
    for p in (1, 2):
        order = here[here.process == p].drop_duplicates("variant").variant.tolist()
        assert order == turn_order(["plain", "app_pinned", "lock_mapped"], p - 1)
    # lock_mapped is the plain program with the runtime's variable set, and named lock_mapped
    assert (real.lock == real.variant.eq("lock_mapped").astype(int)).all()
    assert (real.args == "--steps 2 --paired").sum() == 12 and (real.args == "--steps 2").sum() == 6
    # pinned where a CPU set is given (ns: the stand-in's first allowed CPU), unpinned at "-"; cpus
    # space-separated (the CSV's own separator is the comma)
    here_pinned = here[here.process == 1]
    assert (here_pinned.cpus.astype(str) == str(cpu)).all() and (here_pinned.ns == cpu).all()
    assert here[here.process == 2].cpus.isna().all() and (here[here.process == 2].ns == first).all()
    there = real[real.placement == "there"]
    assert (there.cpus == f"{cpu} {first}").all() and (there.ns == first).all()
    assert sorted(p.name for p in tmp_path.glob("x-*-here-*.out")) == sorted(
        f"x-{v}-here-{p}.out" for v in ("plain", "app_pinned", "lock_mapped") for p in (1, 2))
    # pinpath advise reads it as it reads h200-run.sh's (the columns process and placement)
    assert set(read_real(tmp_path / "real.csv").placement) == {"here", "there"}


def test_a_failed_run_fails_the_call_and_keeps_the_others(tmp_path):
    failing = STAND_IN.replace('[ "$2" != fail ]', '[ "$2" != app_pinned ]')   # app_pinned exits 1
    r = _run(tmp_path, """real_runs "$APP" here "$PWD/y" "- -" >real.csv; echo "rc=$?" """, failing)
    assert "rc=1" in r.stdout
    real = pd.read_csv(tmp_path / "real.csv")
    assert len(real) == 2 * 3 * 2 and set(real.variant) == {"plain", "app_pinned", "lock_mapped"}   # all kept


def test_processes_numbered_from_real_runs_first(tmp_path):
    r = _run(tmp_path, """REAL_RUNS_FIRST=4 real_runs "$APP" here "$PWD/z" "- -" >real.csv""")
    assert r.returncode == 0, r.stderr
    real = pd.read_csv(tmp_path / "real.csv")
    assert sorted(real.process.unique()) == [4, 5]
    for p in (4, 5):   # the order of turn p - 1, as if the processes before had run in this call
        assert real[real.process == p].drop_duplicates("variant").variant.tolist() == \
            turn_order(["plain", "app_pinned", "lock_mapped"], p - 1)


def test_app_args_gives_each_application_as_advise_times_it(tmp_path):
    r = _run(tmp_path, """for a in region stencil species; do app_args $a; echo "$a|${args[*]}|${real[*]}|${construct[*]}"; done
app_args nothing; echo "rc=$?" """)
    lines = r.stdout.splitlines()
    assert lines[:3] == ["region|--nw 16 --steps 5|--paired|--construct region",
                         "stencil|--nx 4096 --ny 512 --steps 200 --checkpoint 50||",
                         "species|--species 16 --steps 200||"]
    assert lines[3] == "rc=1" and "no application nothing" in r.stderr
