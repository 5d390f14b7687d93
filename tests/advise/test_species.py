"""The third offload application (species.cpp: many small arrays mapped in and out every step, and a
counter on the stack): built for the host with g++ -fopenmp (its target constructs fall back to the
host) and its values against numpy's; built for libomptarget's host offload target, its trace as
advise reads it."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from pinpath.experiments.real_runtime import parse_facts


@pytest.fixture(scope="module")
def species(gnu_build):
    return gnu_build("species")


def _run(binary, *args, env=None):
    env = env or {**os.environ, "OMP_TARGET_OFFLOAD": "DISABLED", "OMP_NUM_THREADS": "2"}
    return subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True, env=env, timeout=60)


def _numpy_species(sizes, species, steps):
    out = []
    for i in range(species):
        n = sizes[i % len(sizes)] // 8
        a = 1.0 + ((np.arange(n) * 7 + i * 13) % 101) / 64.0
        for _ in range(steps):
            a = (a + 1.0) * 0.5 + 1.0
        out.append(a)
    return out


@pytest.mark.parametrize("variant", ["plain", "app_pinned"])
def test_species_matches_numpy(species, variant):
    sizes, S, steps = [64, 512, 2048], 5, 4
    r = _run(species, "--species", S, "--sizes", ",".join(map(str, sizes)), "--steps", steps, "--variant", variant,
             "--allow-host", "--markers")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    facts = parse_facts(l for l in lines if l.startswith("#"))
    want = _numpy_species(sizes, S, steps)
    assert facts["wrong"] == 0 and facts["counted"] == 1 and facts["values"] == sum(len(a) for a in want)
    assert facts["register"] == ("mlock" if variant == "app_pinned" else "none")
    rows = [l.split(",") for l in lines if not l.startswith("#")]
    assert rows[0] == ["variant", "species", "step", "ns", "transfer_ns", "hits"]
    assert [int(x[2]) for x in rows[1:]] == list(range(steps))
    assert all(int(x[5]) == facts["values"] and 0 < int(x[4]) <= int(x[3]) for x in rows[1:])
    assert r.stderr.count("pinpath-region: invocation step=") == steps and "pinpath-region: teardown" in r.stderr


def test_species_refuses_a_host_run_and_bad_options(species):
    r = _run(species, "--steps", 1)
    assert r.returncode == 3 and "ran on the host" in r.stderr
    for bad, says in ((("--sizes", "12"), "--sizes takes multiples of 8"), (("--species", 0), "--species must be"),
                      (("--variant", "pinned"), "--variant is"), (("--nw", 1), "unknown option --nw")):
        r = _run(species, *bad)
        assert r.returncode == 2 and r.stderr.startswith(f"species: {says}"), r.stderr


def test_species_trace_through_the_host_libomptarget(tmp_path, host_offload):
    """Its LIBOMPTARGET_INFO=32 trace: per step every species' array in and out and the stack counter;
    advise names the counter a stack variable and every array the application's."""
    from pinpath.advise import pattern, read_trace
    from pinpath.experiments import real_runtime as rr
    build = host_offload("species")
    env = {**rr.runtime_env(build), "LIBOMPTARGET_INFO": "32"}
    r = _run(build.binary, "--species", 3, "--steps", 4, "--markers", env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    (tmp_path / "species.info").write_text(r.stderr)
    p = pattern(read_trace(tmp_path / "species.info"))
    steps = p.transfers[p.transfers.step >= 0]
    assert steps.groupby("step").size().tolist() == [2 * (3 + 1)] * 4
    own = p.buffers.groupby("name").owner.agg(set).to_dict()
    assert own["hits"] == {"stack"} and own["p[0:m]"] == {"application"}
    assert (p.buffers[p.buffers.name == "p[0:m]"].transfers == 8).all()
