"""The second offload application, built for the host with g++ -fopenmp (its target constructs
fall back to the host) and run with OMP_TARGET_OFFLOAD=DISABLED: its numbers against numpy's."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from pinpath.experiments.real_runtime import parse_facts


@pytest.fixture(scope="module")
def stencil(gnu_build):
    return gnu_build("stencil")


def _run(binary, *args):
    env = {**os.environ, "OMP_TARGET_OFFLOAD": "DISABLED", "OMP_NUM_THREADS": "2"}
    return subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True, env=env, timeout=60)


def _numpy_stencil(nx: int, ny: int, steps: int) -> tuple[np.ndarray, list[float]]:
    i = np.arange(nx * ny, dtype=np.uint64)
    g = (1.0 + ((i * np.uint64(2654435761)) % np.uint64(1000)).astype(float) / 1000.0).reshape(ny, nx)
    sums = []
    for _ in range(steps):
        g[ny - 1], g[0] = g[1].copy(), g[ny - 2].copy()
        new = 0.25 * (((g[:-2, 1:-1] + g[2:, 1:-1]) + g[1:-1, :-2]) + g[1:-1, 2:])
        g[1:-1, 1:-1] = new
        sums.append(float(g.sum()))
    return g, sums


@pytest.mark.parametrize("variant", ["plain", "app_pinned"])
def test_stencil_matches_numpy(stencil, variant):
    nx, ny, steps, ck = 48, 20, 7, 3
    r = _run(stencil, "--nx", nx, "--ny", ny, "--steps", steps, "--checkpoint", ck, "--variant", variant,
             "--allow-host", "--markers")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    facts = parse_facts(l for l in lines if l.startswith("#"))
    assert facts["wrong"] == 0 and facts["on_device"] == 0 and facts["register_rc"] == 0
    assert facts["register"] == ("mlock" if variant == "app_pinned" else "none")
    g, sums = _numpy_stencil(nx, ny, steps)
    assert float(facts["final_sum"]) == pytest.approx(g.sum(), rel=1e-12)
    rows = [l.split(",") for l in lines if not l.startswith("#")][1:]
    assert [int(r[3]) for r in rows] == list(range(steps))
    ck_rows = [(int(r[3]), float(r[7])) for r in rows if r[6] == "true"]
    assert [s for s, _ in ck_rows] == [2, 5]
    for s, total in ck_rows:
        assert total == pytest.approx(sums[s], rel=1e-12)
    assert r.stderr.count("pinpath-region: invocation step=") == steps and "pinpath-region: teardown" in r.stderr


def test_stencil_refuses_a_host_run_and_bad_options(stencil):
    r = _run(stencil, "--nx", 8, "--ny", 8, "--steps", 1)
    assert r.returncode == 3 and "ran on the host" in r.stderr
    r = _run(stencil, "--nx", 2)
    assert r.returncode == 2 and r.stderr.startswith("stencil: --nx")
    for bad, says in ((("--nx", "12x"), "--nx needs an integer, got 12x"), (("--variant", "pinned"), "--variant is"),
                      (("--halo", 1), "unknown option --halo"), (("--steps",), "option --steps needs a value")):
        r = _run(stencil, *bad)
        assert r.returncode == 2 and r.stderr.startswith(f"stencil: {says}"), r.stderr
