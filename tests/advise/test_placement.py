"""Where the prediction was measured and the trace taken, against the GPU's interrupt CPU and NUMA
node (issue 33 item 3): said on the advice page, a column of prediction.csv, a warning where they
differ."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from pinpath.advise.placement import of_cpus, placement_lines
from pinpath.errors import BadParameter


def test_where_against_the_interrupt_cpu():
    at = lambda cpus: of_cpus(cpus, irq_cpus=[14], gpu_node=0)   # noqa: E731
    assert at("14").where == "irq_cpu"
    assert at("0-13,15").where == "other_cpu"
    assert at("0-15").where == "unpinned"
    assert of_cpus("3", irq_cpus=[], gpu_node=0).where == "unknown"   # no interrupt CPU found
    p = at("0-13,15")
    assert p.cpus == tuple(range(14)) + (15,) and "CPU(s) 0-13,15" in p.words() and "interrupt CPU 14" in p.words()
    with pytest.raises(BadParameter, match="--trace-cpus takes a CPU list"):
        of_cpus("fourteen")


def test_the_nodes_against_the_gpus():
    p = of_cpus("0", irq_cpus=[14], gpu_node=0)
    node = p.nodes[0]
    if node < 0:
        pytest.skip("this machine's sysfs names no NUMA node")
    assert p.node == "GPU's node"
    assert of_cpus("0", irq_cpus=[14], gpu_node=node + 1).node == "other node"
    assert of_cpus("0", irq_cpus=[14], gpu_node=-1).node == "unknown"


def test_a_trace_taken_elsewhere_is_warned_about():
    predicted = of_cpus("0-13,15", irq_cpus=[14], gpu_node=0)
    same = placement_lines(predicted, of_cpus("0-13", irq_cpus=[14], gpu_node=0))
    assert len(same) == 2 and "placement `other_cpu`" in same[0] and not any("differs" in s for s in same)
    other = placement_lines(predicted, of_cpus("14", irq_cpus=[14], gpu_node=0))
    warn = [s for s in other if s.startswith("**Placement differs**")]
    assert len(warn) == 1 and "against the GPU's interrupt CPU" in warn[0] and "`irq_cpu`" in warn[0]
    untold = placement_lines(predicted, None)
    assert "Where the trace was taken is not known" in untold[1]
    # real figures of another placement than the prediction's
    real = placement_lines(predicted, None, {"irq_cpu", "other_cpu"})
    assert any("at placement `irq_cpu` were taken elsewhere" in s for s in real)
    assert not any("taken elsewhere" in s for s in placement_lines(predicted, None, {"other_cpu"}))


def test_advise_says_both_placements(write, tr, tmp_path, monkeypatch):
    """On the host, with the GPU's interrupt CPU set outside this process's CPUs: the prediction is
    off it, a trace said to be on it is warned about, and prediction.csv names the prediction's."""
    from pinpath.__main__ import main
    from pinpath.advise import placement
    irq = max(os.sched_getaffinity(0)) + 1
    monkeypatch.setattr(placement.ms, "gpu_irq_cpus", lambda *a, **k: [irq])
    real = tmp_path / "real.csv"
    pd.DataFrame([{"variant": v, "ns": 1000.0 + k, "process": k, "placement": pl}
                  for v in ("plain", "app_pinned", "lock_mapped") for k in range(1, 6)
                  for pl in ("irq_cpu", "other_cpu")]).to_csv(real, index=False)
    out = tmp_path / "adv"
    rc = main(["advise", str(write("run.err", tr.info_trace(steps=2, invocations=1))), "--platform", "host",
               "--out", str(out), "--repeats", "5", "--no-runtime-term", "--trace-cpus", str(irq), "--real", str(real)])
    assert rc == 0
    md = (out / "summary.md").read_text()
    assert "placement `other_cpu`" in md and "The trace was taken on CPU(s)" in md
    assert "**Placement differs** against the GPU's interrupt CPU" in md
    assert "at placement `irq_cpu` were taken elsewhere" in md
    pred = pd.read_csv(out / "prediction.csv")
    assert set(pred.predicted_placement) == {"other_cpu"} and set(pred.placement) == {"irq_cpu", "other_cpu"}
    # a --trace-cpus that is no CPU list is refused before anything runs
    assert main(["advise", str(write("r2.err", tr.info_trace())), "--platform", "host", "--out",
                 str(tmp_path / "adv2"), "--trace-cpus", "x"]) == 2
    assert not (tmp_path / "adv2").exists()
