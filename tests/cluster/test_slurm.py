"""`make reproduce EXECUTOR=slurm` against a real one-node Slurm (tests/cluster/slurm_up.sh: Debian's
slurm-wlm, munge, slurmdbd on MariaDB), stopped again at the end (slurm_down.sh).

Runs only with PINPATH_SLURM_TESTS=1 (CI's Slurm step: root, apt, about 5 minutes); elsewhere
each test is skipped with that reason. Checked: bad input refused in one sentence before anything
is written; the smoke preset on host, every notebook a Slurm job (its id, node and state in the
manifest and in Slurm's accounting) and the report built; a notebook past its time limit and one
past its memory shown in the manifest and the report with Slurm's reason, the others' outputs
kept; a job sbatch refuses recorded in the manifest."""

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
NB = HERE / "notebooks"

pytestmark = [pytest.mark.slurm,
              pytest.mark.skipif(os.environ.get("PINPATH_SLURM_TESTS") != "1",
                                 reason="set PINPATH_SLURM_TESTS=1 to install and start a one-node Slurm (root, apt; "
                                        "about 5 minutes)")]

KILLED = {"00_quick": NB / "00_quick.ipynb", "01_sleep": NB / "01_sleep.ipynb", "02_oom": NB / "02_oom.ipynb"}
KILLED_PARAMS = "00_quick:\n  STEPS: 2\n01_sleep:\n  ITERATIONS: 600\n02_oom:\n  NBYTES: 2GiB\n"
#: what this test cluster can give a job: no GPU, two cores
SMALL = ["SLURM_GPUS=0", "SLURM_CPUS=1"]


def _say(capsys, text):
    with capsys.disabled():
        print(f"\n[slurm test] {text}", flush=True)


def _make(cl, root, *args, slurm, **popen):
    env = cl.env_for(root, SLURM_CONF=slurm["SLURM_CONF"], PINPATH_SLURM_POLL_S="5")
    argv = ["make", "--no-print-directory", "reproduce", "EXECUTOR=slurm", "PRESET=smoke", "PLATFORM=host", *args]
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            **popen)


def _finish(proc, timeout=900):
    out, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out


def _slurm_knows(job_id: str, env) -> str:
    """The job's state in Slurm's accounting (sacct), else in its completion log."""
    for argv in (["sacct", "-X", "-n", "-P", "-j", job_id, "-o", "State"],
                 ["sacct", "--completion", "-n", "-P", "-j", job_id, "-o", "State"]):
        r = subprocess.run(argv, capture_output=True, text=True, env=env)
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.split()[0]
    return ""


@pytest.fixture(scope="module")
def slurm():
    if shutil.which("make") is None:
        pytest.skip("no make on PATH")
    if subprocess.run(["make", "-q", "setup"], cwd=ROOT, capture_output=True).returncode != 0:
        pytest.skip("the environment is older than pyproject.toml: run `make setup` first (this test will not "
                    "rebuild it)")
    up = subprocess.run(["bash", str(HERE / "slurm_up.sh")], capture_output=True, text=True, timeout=900)
    if up.returncode == 77:
        pytest.skip(up.stderr.strip().splitlines()[-1])
    assert up.returncode == 0, up.stderr[-4000:]
    conf = up.stdout.strip().splitlines()[-1].split("=", 1)[1]
    env = {**os.environ, "SLURM_CONF": conf}
    accounting = "slurmdbd" in subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True,
                                               env=env).stdout
    try:
        yield {"SLURM_CONF": conf, "env": env, "accounting": accounting}
    finally:
        subprocess.run(["bash", str(HERE / "slurm_down.sh")], timeout=300)


@pytest.fixture(scope="module")
def killed_run(slurm, cl, tmp_path_factory):
    """Started before the smoke run and beside it (its notebooks mostly sleep): a notebook that
    outlasts a one-minute time limit, one that outgrows 1 GiB, and one that ends at once."""
    root = cl.project(tmp_path_factory.mktemp("killed"), KILLED, KILLED_PARAMS)
    t0 = time.monotonic()
    proc = _make(cl, root, *SMALL, "SLURM_TIME=1", "SLURM_MEM=1G", slurm=slurm)
    return root, proc, t0


def test_bad_input_is_refused_before_anything(slurm, cl, tmp_path, capsys):
    root = cl.project(tmp_path)
    cases = [(["SLURM_PARTITION=nope"], "pinpath: unknown Slurm partition 'nope'; known: debug"),
             (["SLURM_GPUS=1"], "Invalid generic resource (gres) specification"),
             (["SLURM_MEM=64T", "SLURM_GPUS=0"], "Slurm refuses a notebook job"),
             (["SLURM_TIME=soon"], "pinpath: time limit 'soon' is not a time")]
    if slurm["accounting"]:
        cases.append((["SLURM_ACCOUNT=nope", "SLURM_GPUS=0"], "pinpath: unknown Slurm account 'nope' for user root"))
    for args, said in cases:
        rc, out = _finish(_make(cl, root, *args, slurm=slurm), timeout=120)
        assert rc != 0 and said in out, (args, out[-2000:])
        assert [ln for ln in out.splitlines() if ln.startswith("pinpath: ")][-1].count(". ") == 0   # one sentence
        assert not (root / "outputs").exists(), args                                              # nothing written
    # no Slurm on PATH: only what make and the recipe need
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("make", "bash", "sh", "python3", "grep", "ldconfig", "env", "cat", "tr", "cut", "du"):
        if shutil.which(tool):
            (bin_dir / tool).symlink_to(shutil.which(tool))
    env = cl.env_for(root, PATH=str(bin_dir))
    r = subprocess.run(["make", "--no-print-directory", "reproduce", "EXECUTOR=slurm", "PRESET=smoke", "PLATFORM=host"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "pinpath: no sbatch on PATH" in r.stdout + r.stderr, r.stdout + r.stderr
    assert not (root / "outputs").exists()
    _say(capsys, f"bad input refused in one sentence, nothing written: {', '.join(a[0] for a, _ in cases)}, no sbatch "
                 "on PATH")


def test_a_job_sbatch_refuses_is_recorded_in_the_manifest(slurm, cl, tmp_path):
    """The check before submission catches this; here Snakemake is called directly, past it."""
    root = cl.project(tmp_path, {"00_quick": NB / "00_quick.ipynb"}, "00_quick:\n  STEPS: 2\n")
    env = cl.env_for(root, SLURM_CONF=slurm["SLURM_CONF"], PINPATH_SLURM_POLL_S="5", PINPATH_SLURM_GPUS="1")
    run_dir = Path(cl.pinpath("init", "--preset", "smoke", "--platform", "host", env=env).stdout.splitlines()[-1])
    r = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow" / "Snakefile"), "--directory",
                        str(root), "--workflow-profile", str(ROOT / "profiles" / "slurm"), "--config",
                        f"run_dir={run_dir}"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    entry = cl.manifest(run_dir)["notebooks"]["00_quick"]
    assert entry["status"] == "refused" and entry["slurm_state"] == "REFUSED"
    assert entry["error"] == "00_quick: Slurm refused the job: Invalid generic resource (gres) specification"
    assert "Slurm refused the job" in (run_dir / "report" / "index.html").read_text()


def test_smoke_preset_on_slurm(slurm, cl, killed_run, tmp_path, capsys):
    root = cl.project(tmp_path)
    t0 = time.monotonic()
    rc, out = _finish(_make(cl, root, *SMALL, "SLURM_TIME=15", "SLURM_MEM=3G", slurm=slurm))
    wall = time.monotonic() - t0
    assert rc == 0, out[-6000:]
    (run_dir,) = cl.runs(root)
    man = cl.manifest(run_dir)
    assert man["status"] == "ok"
    node = socket.gethostname().split(".")[0]
    jobs = {}
    for stem, e in man["notebooks"].items():
        assert e["status"] == "ok", (stem, e)
        jid = e["SLURM_JOB_ID"]
        assert e["SLURM_JOB_NODELIST"] == node, (stem, e)
        assert e.get("slurm_state", "COMPLETED") == "COMPLETED", (stem, e)
        assert _slurm_knows(jid, slurm["env"]) == "COMPLETED", (stem, jid)
        assert (run_dir / "slurm" / "rule_notebook" / stem / f"{jid}.log").is_file(), (stem, jid)
        assert (run_dir / "notebooks" / f"{stem}.ipynb").is_file() and (run_dir / "report" / f"{stem}.html").is_file()
        jobs[stem] = jid
    assert len(set(jobs.values())) == len(jobs) == len(list((cl.ROOT / "notebooks").glob("*.ipynb")))
    index = (run_dir / "report" / "index.html").read_text()
    assert all(stem in index for stem in jobs) and (run_dir / "report" / "claims.csv").is_file()
    _say(capsys, f"smoke on host through Slurm: {len(jobs)} notebooks ok in {wall:.0f} s wall; job ids: "
                 + ", ".join(f"{s}={j}" for s, j in jobs.items()))


def test_killed_notebooks_are_explained(slurm, cl, killed_run, capsys):
    root, proc, t0 = killed_run
    rc, out = _finish(proc)
    wall = time.monotonic() - t0
    assert rc != 0, out[-4000:]
    (run_dir,) = cl.runs(root)
    man = cl.manifest(run_dir)
    nbs = man["notebooks"]
    assert man["status"] == "failed"
    assert nbs["00_quick"]["status"] == "ok"                                   # the others' outputs are kept
    assert (run_dir / "notebooks" / "00_quick.ipynb").is_file() and (run_dir / "report" / "00_quick.html").is_file()
    sleep, oom = nbs["01_sleep"], nbs["02_oom"]
    assert (sleep["status"], sleep["slurm_state"]) == ("timeout", "TIMEOUT"), sleep
    assert sleep["error"].startswith(f"01_sleep: Slurm job {sleep['SLURM_JOB_ID']} on ")
    assert "reached its time limit of 1 min (state TIMEOUT" in sleep["error"]
    assert oom["status"] == "oom", oom
    assert oom["error"].startswith(f"02_oom: Slurm job {oom['SLURM_JOB_ID']} on ")
    assert "memory limit of 1G" in oom["error"]
    index = (run_dir / "report" / "index.html").read_text()
    assert "reached its time limit of 1 min" in index and "memory limit of 1G" in index
    for stem in ("01_sleep", "02_oom"):
        assert _slurm_knows(nbs[stem]["SLURM_JOB_ID"], slurm["env"]) in ("TIMEOUT", "FAILED", "OUT_OF_MEMORY",
                                                                         "CANCELLED")
    assert f"RESUME={run_dir.name}" in out
    _say(capsys, f"killed jobs explained ({wall:.0f} s wall): " + " | ".join(
        f"{s}: job {e['SLURM_JOB_ID']} {e['status']}" + (f" - {e['error']}" if e.get("error") else "")
        for s, e in nbs.items()))
