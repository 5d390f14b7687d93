"""pinpath.run's Slurm and Snakemake modules without a cluster: values a person types, what sacct, scontrol and the job
completion log say (recorded from Slurm 22.05), the finalize hook, Snakemake's log of refused
jobs, the check before submission, the profile."""

import json
from pathlib import Path

import pytest

from pinpath import __main__ as cli
from pinpath.run import jobs, jobstate, profile, slurm, snakelog, snakemake
from pinpath.run.jobstate import JobState
from pinpath.run.slurm import ClusterError

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


@pytest.mark.parametrize("text,minutes", [("90", 90), (90, 90), ("90m", 90), ("1h30m", 90), ("2h", 120),
                                          ("1d", 1440), ("45s", 1), ("01:30:00", 90), ("10:30", 11),
                                          ("1-00", 1440), ("1-02:30", 1590), ("0-00:00:30", 1)])
def test_time_limits(text, minutes):
    assert slurm.parse_minutes(text) == minutes


@pytest.mark.parametrize("text", ["soon", "", "0", "1h-2m", "1.5h"])
def test_bad_time_limits(text):
    with pytest.raises(ClusterError, match="time limit|at least one minute"):
        slurm.parse_minutes(text)


@pytest.mark.parametrize("text,mib", [("32000", 32000), ("500M", 500), ("16G", 16384), ("16GB", 16384),
                                      ("16GiB", 16384), ("1T", 1048576), ("1.5G", 1536), ("2048K", 2)])
def test_memory_sizes(text, mib):
    assert slurm.parse_mem_mb(text) == mib


@pytest.mark.parametrize("text", ["lots", "16 parsecs", "0", "0.1K"])
def test_bad_memory_sizes(text):
    with pytest.raises(ClusterError):
        slurm.parse_mem_mb(text)


SACCT_TIMEOUT = """8|TIMEOUT|None|0:0|vm|00:01:06|00:01:00|1G||
8.batch|CANCELLED||0:15|vm|00:01:06||||1204K
8.0|FAILED||1:0|vm|00:01:05||||200000K
"""
SACCT_OOM_SAMPLED = """6|FAILED|None|1:0|vm|00:00:09|00:01:00|1G||
6.batch|FAILED||1:0|vm|00:00:09||||176496K
6.0|CANCELLED by 0||0:9|vm|00:00:05||||2222368K
"""
SACCT_OOM_CGROUP = """41|OUT_OF_MEMORY|None|0:125|gpu07|00:02:10|01:00:00|32000M|rule_notebook_wildcards_02_c2_staging|
41.batch|OUT_OF_MEMORY||0:125|gpu07|00:02:10||||33554432K
"""
SACCT_CANCELLED = "77|CANCELLED by 1000|None|0:0|gpu01|00:00:31|01:00:00|32000M||\n"
SCONTROL_TIMEOUT = (
    "JobId=8 JobName=pinpath_a29d791d UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901752 Nice=0 "
    "Account=pinpath QOS=normal JobState=TIMEOUT Reason=TimeLimit Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 "
    "Reboot=0 ExitCode=0:15 RunTime=00:01:06 TimeLimit=00:01:00 TimeMin=N/A NodeList=vm BatchHost=vm NumNodes=1 "
    "NumCPUs=1 NumTasks=1 CPUs/Task=1 TRES=cpu=1,mem=1G,node=1,billing=1 Command=(null) WorkDir=/tmp/p "
    "Comment=rule_notebook_wildcards_01_sleep  StdErr=/tmp/p/outputs/R/slurm/rule_notebook/01_sleep/8.log "
    "StdIn=/dev/null StdOut=/tmp/p/outputs/R/slurm/rule_notebook/01_sleep/8.log Power= \n")
JOBCOMP = "8|TIMEOUT|0:0|vm|00:01:06|00:01:00\n"


def test_sacct_timeout():
    js = jobstate.parse_sacct(SACCT_TIMEOUT, "8")
    assert (js.state, js.status, js.node, js.time_limit, js.oom) == ("TIMEOUT", "timeout", "vm", "00:01:00", None)
    assert js.sentence("01_sleep") == ("01_sleep: Slurm job 8 on vm reached its time limit of 1 min "
                                       "(state TIMEOUT, after 00:01:06)")


def test_sacct_memory_kill_by_sampling_shows_in_the_steps():
    js = jobstate.parse_sacct(SACCT_OOM_SAMPLED, "6")
    assert js.state == "FAILED" and js.status == "oom"
    assert "step 6.0 reached 2.1 GiB resident, over the job's 1G" in js.sentence("02_oom")
    assert js.sentence("02_oom").startswith("02_oom: Slurm job 6 on vm was killed for outgrowing its memory limit of 1G")


def test_sacct_memory_kill_by_cgroup():
    js = jobstate.parse_sacct(SACCT_OOM_CGROUP, "41")
    assert (js.state, js.status, js.notebook) == ("OUT_OF_MEMORY", "oom", "02_c2_staging")
    assert "ran out of its memory limit of 32000M" in js.sentence(js.notebook)


def test_sacct_cancelled_and_unknown_job():
    js = jobstate.parse_sacct(SACCT_CANCELLED, "77")
    assert (js.state, js.status) == ("CANCELLED", "cancelled")
    assert "was cancelled" in js.sentence("05_x")
    assert jobstate.parse_sacct(SACCT_CANCELLED, "78") is None
    assert jobstate.parse_sacct("", "78") is None


def test_scontrol_and_jobcomp():
    js = jobstate.parse_scontrol(SCONTROL_TIMEOUT, "8")
    assert (js.state, js.reason, js.mem, js.notebook, js.source) == ("TIMEOUT", "TimeLimit", "1G", "01_sleep", "scontrol")
    assert js.log.endswith("slurm/rule_notebook/01_sleep/8.log")
    assert "(state TIMEOUT, reason TimeLimit, after 00:01:06)" in js.sentence("01_sleep")
    assert jobstate.parse_scontrol(SCONTROL_TIMEOUT, "9") is None
    jc = jobstate.parse_jobcomp(JOBCOMP, "8")
    assert (jc.state, jc.status, jc.source) == ("TIMEOUT", "timeout", "jobcomp")


def test_memory_kill_found_in_the_jobs_log(tmp_path):
    log = tmp_path / "6.log"
    log.write_text("srun: ...\nslurmstepd-vm: error: StepId=6.0 exceeded memory limit (2275704832 > 1073741824), "
                   "being killed\nslurmstepd-vm: error: Exceeded job memory limit\n")
    assert jobstate.oom_in_log(log) == "StepId=6.0 exceeded memory limit (2275704832 > 1073741824)"
    assert jobstate.oom_in_log(tmp_path / "missing.log") is None


def _fake_state(monkeypatch, js):
    monkeypatch.setattr(jobs, "job_state", lambda jid: js)


def test_resolve_part_of_a_killed_job(monkeypatch):
    _fake_state(monkeypatch, JobState("8", "TIMEOUT", "TimeLimit", "0:15", "vm", "00:01:06", "00:01:00", "1G",
                                      log="/x/outputs/R/slurm/rule_notebook/01_sleep/8.log",
                                      comment="rule_notebook_wildcards_01_sleep", source="scontrol"))
    part = {"status": "running", "pid": 1, "host": "vm", "SLURM_JOB_ID": "8", "SLURM_JOB_NODELIST": "vm"}
    told = jobs.resolve_part(part)
    assert told["status"] == "timeout" and told["slurm_state"] == "TIMEOUT" and told["slurm_reason"] == "TimeLimit"
    assert told["error"] == "01_sleep: Slurm job 8 on vm reached its time limit of 1 min (state TIMEOUT, " \
                            "reason TimeLimit, after 00:01:06)"
    assert told["slurm_log"] == "slurm/rule_notebook/01_sleep/8.log"      # inside the run folder, no machine path
    assert part["status"] == "running"                                    # the caller's dict is left alone
    assert jobs.resolve_part({**part, "notebook": "01_sleep_named"})["error"].startswith("01_sleep_named: ")


def test_resolve_part_keeps_the_notebooks_own_verdict(monkeypatch):
    _fake_state(monkeypatch, JobState("5", "FAILED", "NonZeroExitCode", "1:0", "vm"))
    told = jobs.resolve_part({"status": "failed", "error": "ValueError: x (cell In [3])", "SLURM_JOB_ID": "5"})
    assert (told["status"], told["error"], told["slurm_state"]) == ("failed", "ValueError: x (cell In [3])", "FAILED")
    _fake_state(monkeypatch, JobState("6", "COMPLETED", "None", "0:0", "vm"))
    told = jobs.resolve_part({"status": "ok", "SLURM_JOB_ID": "6"})
    assert (told["status"], told["slurm_state"]) == ("ok", "COMPLETED")


def test_resolve_part_cannot_tell(monkeypatch):
    assert jobs.resolve_part({"status": "running", "pid": 3}) is None           # not a Slurm job
    _fake_state(monkeypatch, None)
    assert jobs.resolve_part({"status": "running", "SLURM_JOB_ID": "9"}) is None  # Slurm forgot it
    _fake_state(monkeypatch, JobState("9", "RUNNING"))
    assert jobs.resolve_part({"status": "running", "SLURM_JOB_ID": "9"}) is None  # still running


SNAKEMAKE_LOG = """[Wed Dec  2 17:25:40 2026]
Error in rule notebook:
    message: SLURM sbatch failed. The error message was 'sbatch: error: Invalid generic resource (gres) specification'.
    sbatch call:
        sbatch --parsable --job-name pinpath_8a27 --gpus=1 --wrap="..."
For further error details see the cluster/cloud log and the log files of the involved rule(s).
    jobid: 2
    output: outputs/R/status/00_quick.json, outputs/R/notebooks/00_quick.ipynb, outputs/R/report/00_quick.html
    shell:
        python -m pinpath run-notebook outputs/R 00_quick
        (command exited with non-zero exit code)
[Wed Dec  2 16:50:56 2026]
Error in rule notebook:
    message: SLURM-job '8' failed, SLURM status is: 'FAILED'. Detailed failure reason unavailable (status command is not 'sacct').
    jobid: 3
    output: outputs/R/status/01_sleep.json, outputs/R/notebooks/01_sleep.ipynb, outputs/R/report/01_sleep.html
    log: outputs/R/slurm/rule_notebook/01_sleep/8.log (check log file(s) for error details)
    external_jobid: 8
[Wed Dec  2 16:50:57 2026]
Error in rule notebook:
    message: None
    jobid: 4
    output: outputs/R/status/02_ran.json, outputs/R/notebooks/02_ran.ipynb, outputs/R/report/02_ran.html
Exiting because a job execution failed. Look above for error messages
"""


def test_jobs_that_never_started_their_notebook(tmp_path, monkeypatch):
    assert snakelog.unstarted_in_log(SNAKEMAKE_LOG) == {
        "00_quick": {"refused": "Invalid generic resource (gres) specification"},
        "01_sleep": {"job_id": "8", "message": "SLURM-job '8' failed, SLURM status is: 'FAILED'. Detailed failure "
                                               "reason unavailable (status command is not 'sacct')."}}
    run = tmp_path / "R"
    (run / "status").mkdir(parents=True)
    (run / "status" / "02_ran.json").write_text('{"status": "failed"}')
    log = tmp_path / "snakemake.log"
    log.write_text(SNAKEMAKE_LOG)
    _fake_state(monkeypatch, JobState("8", "FAILED", "NonZeroExitCode", "1:0", "vm", "00:00:01"))
    said = snakelog.record_unstarted(run, [str(log)])
    assert said == {"00_quick": "00_quick: Slurm refused the job: Invalid generic resource (gres) specification",
                    "01_sleep": "01_sleep: Slurm job 8 on vm failed with exit code 1:0 (state FAILED, reason "
                                "NonZeroExitCode, after 00:00:01) before the notebook started"}
    part = json.loads((run / "status" / "00_quick.json").read_text())
    assert (part["status"], part["slurm_state"]) == ("refused", "REFUSED")
    part = json.loads((run / "status" / "01_sleep.json").read_text())
    assert (part["status"], part["SLURM_JOB_ID"], part["SLURM_JOB_NODELIST"]) == ("failed", "8", "vm")
    assert json.loads((run / "status" / "02_ran.json").read_text()) == {"status": "failed"}   # it had its own
    assert snakelog.record_unstarted(run, None) == {}


def test_check_without_slurm_is_one_sentence(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ClusterError, match=r"^no sbatch on PATH: run on a login node of the Slurm cluster"):
        slurm.check({"runtime": 60, "mem_mb": 1000})
    assert cli.main(["slurm", "check"]) == 2


def test_bad_values_are_refused_before_anything(capsys):
    assert cli.main(["run", "--executor", "slurm", "--time", "soon"]) == 2
    assert "time limit 'soon' is not a time" in capsys.readouterr().err
    assert cli.main(["run", "--executor", "pbs"]) == 2
    assert "unknown executor 'pbs'; known: local, snakemake, slurm" in capsys.readouterr().err
    assert cli.main(["run", "--executor", "snakemake", "--gpus", "two"]) == 2
    with pytest.raises(SystemExit) as e:          # argparse's refusal: the same one sentence and status
        cli.main(["run", "--executor", "snakemake", "--cell-timeout", "-3"])
    assert e.value.code == 2 and "must be a positive number of seconds, got -3" in capsys.readouterr().err


def test_profile_defaults_and_overrides(cl):
    cl.needs_snakemake()
    assert profile.slurm_resources({}) == {"gpu": 1, "cpus_per_task": 8, "runtime": 60, "mem_mb": 32000}
    env = {"PINPATH_SLURM_PARTITION": "gpu", "PINPATH_SLURM_ACCOUNT": "proj42", "PINPATH_SLURM_GPUS": "2",
           "PINPATH_SLURM_CPUS": "16", "PINPATH_SLURM_TIME_MIN": "90", "PINPATH_SLURM_MEM_MB": "64000"}
    assert profile.slurm_resources(env) == {"slurm_partition": "gpu", "slurm_account": "proj42", "gpu": 2,
                                            "cpus_per_task": 16, "runtime": 90, "mem_mb": 64000}


def test_profiles_keep_failed_outputs_and_go_on():
    import yaml
    for name in ("local", "slurm"):
        prof = yaml.safe_load((ROOT / "profiles" / name / "config.yaml").read_text())
        assert prof["keep-going"] and prof["keep-incomplete"] and prof["rerun-incomplete"], name
    prof = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.yaml").read_text())
    assert prof["executor"] == "slurm" and prof["slurm-keep-successful-logs"]
    assert prof["slurm-delete-logfiles-older-than"] == 0       # the logs live in the run folder
    assert set(profile.ENV_NAMES.values()) <= set((ROOT / "profiles" / "slurm" / "config.yaml").read_text().split('"'))


@pytest.mark.parametrize("executor, missing", [("snakemake", "snakemake"), ("slurm", "snakemake_executor_plugin_slurm")])
def test_without_snakemake_is_one_sentence(executor, missing, monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == missing else real(name, *a))
    with pytest.raises(ClusterError, match=r"is not installed in this environment: `make setup EXTRAS=test,cuda,cluster`"):
        snakemake.run_workflow(executor=executor, preset="smoke", platform="host")


def test_slurm_is_asked_about_a_finished_job_once(tmp_path, monkeypatch):
    """runfolder.merge keeps resolve_part's answer in the part: a second finalize, a re-judgement
    or a resume read it there; a job that still runs is asked about again."""
    from pinpath import runfolder as rf
    said = {"7": JobState("7", "COMPLETED", "None", "0:0", "vm"),
            "8": JobState("8", "TIMEOUT", "TimeLimit", "0:15", "vm", "00:01:06", "00:01:00", "1G"),
            "9": JobState("9", "RUNNING")}
    asked = []
    monkeypatch.setattr(jobs, "job_state", lambda jid: asked.append(jid) or said[jid])
    run = tmp_path / "R"
    (run / "status").mkdir(parents=True)
    parts = {"00_quick": {"status": "ok", "SLURM_JOB_ID": "7"},
             "01_sleep": {"status": "running", "pid": 1, "host": "vm", "SLURM_JOB_ID": "8"},
             "02_long": {"status": "running", "pid": 1, "host": "vm", "SLURM_JOB_ID": "9"},
             "03_here": {"status": "ok"}}
    for stem, part in parts.items():
        rf.write_part(run, stem, part)
    for _ in range(3):
        got = rf.merge(run, {"notebooks": dict.fromkeys(parts, {})}, jobs.resolve_part)["notebooks"]
    assert sorted(asked) == ["7", "8", "9", "9", "9"]
    assert (got["00_quick"]["status"], got["00_quick"]["slurm_state"]) == ("ok", "COMPLETED")
    assert (got["01_sleep"]["status"], got["01_sleep"]["slurm_reason"]) == ("timeout", "TimeLimit")
    assert rf.read_part(run, "01_sleep")["status"] == "timeout"             # kept in the part itself
    assert got["02_long"]["status"] == "running" and "slurm_state" not in rf.read_part(run, "02_long")
    assert got["03_here"] == {"status": "ok"}
