"""Where a prediction, a trace and the real times were taken, against the GPU: the CPUs a process
may run on relative to the CPU(s) the GPU's interrupts are delivered to, and their NUMA nodes
against the GPU's. The same application timed on the interrupt CPU and off it can run in two
modes (the stencil on the H200, NEXT.md): a prediction describes the placement it was made in.

``where`` is one of WHERE: "irq_cpu" (every CPU it may run on receives the GPU's interrupts),
"other_cpu" (none does), "unpinned" (some do: the scheduler decides), "unknown" (no interrupt CPU
found, or the CPUs not told); the words h200-run.sh's real figures use in their placement column.

- ``here(gpu=True) -> Placement``: this process now (what advise's replay and runtime probe run on).
- ``of_cpus("0-13,15") -> Placement``: CPUs given (a trace's, ``advise --trace-cpus``), against
  this node's interrupt CPUs and GPU node.
- ``placement_lines(predicted, trace, real) -> [sentence]``: what the advice says, with a warning
  where they differ.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .. import machine_state as ms
from ..errors import BadParameter

__all__ = ["WHERE", "Placement", "here", "of_cpus", "placement_lines"]

WHERE = (*ms.PLACEMENTS, "unknown")
_WORDS = {"irq_cpu": "on the GPU's interrupt CPU", "other_cpu": "off the GPU's interrupt CPU",
          "unpinned": "free to run on the GPU's interrupt CPU and others",
          "unknown": "at an unknown place against the GPU's interrupt CPU"}


@dataclass(frozen=True)
class Placement:
    cpus: tuple[int, ...]       # the CPUs the process may run on; () unknown
    irq_cpus: tuple[int, ...]   # the CPUs the GPU's interrupts go to; () none found
    nodes: tuple[int, ...]      # the NUMA nodes of ``cpus`` (-1: sysfs says none)
    gpu_node: int               # the GPU's NUMA node; -1 unknown

    @property
    def where(self) -> str:
        if not self.cpus or not self.irq_cpus:
            return "unknown"
        on = set(self.cpus) & set(self.irq_cpus)
        return "irq_cpu" if on == set(self.cpus) else "other_cpu" if not on else "unpinned"

    @property
    def node(self) -> str:
        """The nodes against the GPU's: "GPU's node", "other node", "both" or "unknown"."""
        known = {n for n in self.nodes if n >= 0}
        if self.gpu_node < 0 or not known:
            return "unknown"
        return "GPU's node" if known == {self.gpu_node} else "other node" if self.gpu_node not in known else "both"

    def words(self) -> str:
        cpus = f"CPU(s) {ms.cpuspan(self.cpus)}" if self.cpus else "CPUs not known"
        irq = f" {ms.cpuspan(self.irq_cpus)}" if self.irq_cpus else ""
        where = _WORDS[self.where].replace("interrupt CPU", f"interrupt CPU{irq}") if irq else _WORDS[self.where]
        nodes = ",".join(str(n) for n in sorted(set(self.nodes))) if self.nodes else "?"
        node = {"GPU's node": "the GPU's", "other node": f"not the GPU's ({self.gpu_node})",
                "both": f"the GPU's ({self.gpu_node}) and others"}.get(self.node, "the GPU's node unknown")
        return f"{cpus}, {where}; NUMA node {nodes}, {node}"


def _make(cpus, irq_cpus=None, gpu_node=None, gpu: bool = True) -> Placement:
    irq = ms.gpu_irq_cpus() if irq_cpus is None else list(irq_cpus)
    if gpu_node is None:
        gpu_node = ms.gpu_node()[0] if gpu else -1
    return Placement(tuple(sorted(cpus)), tuple(irq), tuple(sorted({ms.cpu_node(c) for c in cpus})), int(gpu_node))


def here(*, gpu: bool = True, irq_cpus=None, gpu_node=None) -> Placement:
    """This process's placement now (``gpu`` False: the GPU's node not asked)."""
    return _make(os.sched_getaffinity(0), irq_cpus, gpu_node, gpu)


def of_cpus(text: str, *, gpu: bool = True, irq_cpus=None, gpu_node=None) -> Placement:
    """The placement of the CPUs in ``text`` (a Linux CPU list), against this node's GPU."""
    try:
        cpus = ms.cpulist(text)
    except ValueError:
        cpus = []
    if not cpus:
        raise BadParameter(f"--trace-cpus takes a CPU list such as 0-13,15, got {text!r}")
    return _make(cpus, irq_cpus, gpu_node, gpu)


def placement_lines(predicted: Placement, trace: Placement | None, real=()) -> list[str]:
    """The advice's sentences: where the prediction was made and the trace taken, a warning where
    they differ (relative to the interrupt CPU, or in NUMA node), and where real figures (their
    placements, h200-run.sh's words) were taken elsewhere than the prediction."""
    out = [f"The prediction was measured here on {predicted.words()} (placement `{predicted.where}`)."]
    if trace is None:
        out.append("Where the trace was taken is not known (`--trace-cpus` says it): the prediction describes the "
                   "application run where this prediction was measured.")
    else:
        out.append(f"The trace was taken on {trace.words()} (placement `{trace.where}`).")
        differ = [what for what, a, b in (("against the GPU's interrupt CPU", predicted.where, trace.where),
                                          ("in NUMA node", predicted.node, trace.node))
                  if a != b and "unknown" not in (a, b)]
        if differ:
            out.append(f"**Placement differs** {' and '.join(differ)}: the prediction is of the application run as "
                       f"the prediction was measured (`{predicted.where}`), not as it was traced (`{trace.where}`); "
                       "the same application can run in another mode there (a process on the GPU's interrupt CPU "
                       "shares it with the interrupt handler). Run `pinpath advise` pinned as the application runs "
                       "(taskset) for a prediction of that placement.")
    other = sorted({str(p) for p in real if str(p) and str(p) != predicted.where})
    if other and predicted.where != "unknown":
        out.append(f"The real figures at placement {', '.join(f'`{p}`' for p in other)} were taken elsewhere than "
                   f"the prediction (`{predicted.where}`): prediction.csv's `predicted_placement` says so beside "
                   "their verdicts.")
    return out
