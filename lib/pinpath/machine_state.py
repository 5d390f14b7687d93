"""The state of the machine a figure is taken in, for experiments to put in their rows: the
timing thread's CPU and NUMA node, the GPU's NUMA node, the GPU's clocks and persistence mode.
Whatever cannot be read is recorded as unavailable, with why, never guessed.

- ``snapshot(device=0) -> dict``: the fields of ``FIELDS`` now (nvidia-smi asked once per call).
- ``row_fields(snap) -> dict``: the three placement fields experiments add to each row;
  ``placement(device) -> dict``: the same read now without asking nvidia-smi for clocks.
- ``pinned_to(cpu)``: a context in which the calling thread runs on ``cpu`` only (sched_setaffinity).
- ``cpus_by_node() -> {node: [cpu, ...]}``: the CPUs this process may run on, by NUMA node.
- ``gpu_irq_cpus() -> [cpu, ...]``: the CPUs the GPU's interrupts are delivered to (/proc/interrupts).
- ``place_process(where) -> Placed``: this process (every thread, and so every child it starts) on the
  CPUs of a placement (``PLACEMENTS``) against the GPU's interrupt CPU; ``placement_cpus`` its rule.
- ``cpulist("0-13,15") -> [cpu, ...]``: a Linux CPU list read; ``cpuspan(cpus)`` one written.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .errors import BadParameter

__all__ = ["FIELDS", "SMI_FIELDS", "GPU_IRQ_DRIVERS", "IRQ_SHARE", "IRQ_MIN", "PLACEMENTS", "Placed", "thread_cpu", "cpu_node",
           "cpulist", "cpuspan", "cpus_by_node", "gpu_node", "gpu_irq_cpus", "placement_cpus", "place_process", "unplaced",
           "gpu_readings", "snapshot", "placement", "row_fields", "pinned_to"]

#: nvidia-smi --query-gpu fields read each time (they change), and their names in a snapshot
SMI_FIELDS = {"clocks.sm": "sm_clock_mhz", "clocks.mem": "mem_clock_mhz", "clocks.max.sm": "sm_clock_max_mhz",
              "clocks.max.mem": "mem_clock_max_mhz", "persistence_mode": "persistence_mode", "pstate": "pstate",
              "clocks_event_reasons.active": "clock_event_reasons", "temperature.gpu": "temperature_c",
              "power.draw": "power_w"}
#: every key of a snapshot ("unavailable" says what could not be read, and why)
FIELDS = ("thread_cpu", "thread_node", "gpu_node", "gpu_node_from", *SMI_FIELDS.values(), "unavailable")
_SYS = Path("/sys/devices/system")


def thread_cpu() -> int:
    """The CPU the calling thread last ran on (field 39 of /proc/thread-self/stat); -1 if unknown."""
    try:
        stat = Path("/proc/thread-self/stat").read_text()
        return int(stat[stat.rindex(")") + 2:].split()[36])
    except (OSError, ValueError, IndexError):
        return -1


def cpu_node(cpu: int) -> int:
    """The NUMA node of ``cpu`` (its nodeN entry in sysfs); -1 where sysfs does not say."""
    for p in (_SYS / "cpu" / f"cpu{cpu}").glob("node[0-9]*"):
        return int(p.name[4:])
    return -1


def cpulist(text: str) -> list[int]:
    """A Linux CPU list ("0-13,15") as its CPUs; ValueError where it is not one."""
    out = []
    for part in filter(None, text.strip().split(",")):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def cpuspan(cpus) -> str:
    """CPUs as a Linux CPU list ("0-13,15"); "" for none."""
    out, run = [], []
    for c in sorted(set(cpus)) + [None]:
        if run and c is not None and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    return ",".join(out)


def cpus_by_node() -> dict[int, list[int]]:
    """The CPUs this process may run on, by NUMA node (-1: no NUMA information in sysfs)."""
    allowed = sorted(os.sched_getaffinity(0))
    out: dict[int, list[int]] = {}
    for cpu in allowed:
        out.setdefault(cpu_node(cpu), []).append(cpu)
    return dict(sorted(out.items()))


def _smi_index(device: int) -> str:
    """The index nvidia-smi knows the device by (it ignores CUDA_VISIBLE_DEVICES)."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
    visible = [v.strip() for v in first if v.strip()]
    return visible[device] if device < len(visible) else str(device)


def _smi(fields: list[str], device: int) -> tuple[list[str] | None, str]:
    """nvidia-smi's values of ``fields`` for ``device``, or None and why not."""
    if not shutil.which("nvidia-smi"):
        return None, "no nvidia-smi on PATH"
    try:
        r = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits",
                            "-i", _smi_index(device)], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"nvidia-smi did not answer ({e})"
    values = [v.strip() for v in r.stdout.strip().split(",")]
    if r.returncode != 0 or len(values) != len(fields):
        return None, f"nvidia-smi said: {(r.stdout.strip() or r.stderr.strip() or 'nothing').splitlines()[0]}"
    return values, ""


@functools.lru_cache(maxsize=None)
def gpu_node(device: int = 0) -> tuple[int, str]:
    """(the GPU's NUMA node, where that came from) from its PCI device's numa_node in sysfs
    (bus id from nvidia-smi); (-1, why not) where it cannot be read."""
    values, why = _smi(["pci.bus_id"], device)
    if values is None:
        return -1, f"gpu_node: {why}"
    domain, _, rest = values[0].lower().partition(":")
    path = Path("/sys/bus/pci/devices") / f"{domain[-4:]}:{rest}" / "numa_node"
    try:
        node = int(path.read_text().strip())
    except (OSError, ValueError):
        node = -1
    if node >= 0:
        return node, f"sysfs numa_node of PCI {domain[-4:]}:{rest}"
    # sysfs says -1 (no NUMA information) or cannot be read: nvidia-smi's topology may know
    try:
        r = subprocess.run(["nvidia-smi", "topo", "-C", "-i", _smi_index(device)], capture_output=True, text=True,
                           timeout=20)
        m = re.search(r"NUMA IDs? of closest CPU:\s*(\d+)", r.stdout)
    except (OSError, subprocess.TimeoutExpired):
        m = None
    if m:
        return int(m.group(1)), "nvidia-smi topo -C"
    return -1, f"gpu_node: {path} gives no node and nvidia-smi topo -C names none"


def gpu_readings(device: int = 0) -> tuple[dict[str, str], list[str]]:
    """The SMI_FIELDS now ({snapshot name: nvidia-smi's text}) and what was unavailable. A field this
    driver does not know is asked again alone, so one unknown field costs only itself."""
    names = list(SMI_FIELDS)
    values, why = _smi(names, device)
    if values is None and why.startswith("nvidia-smi said"):
        values = [(v or [""])[0] if v is not None else "" for v, _ in (_smi([f], device) for f in names)]
    if values is None:
        return {SMI_FIELDS[f]: "" for f in names}, [f"GPU clocks and persistence: {why}"]
    out, missing = {}, []
    for f, v in zip(names, values):
        ok = v and not v.startswith("[") and v not in ("N/A", "Not Supported")
        out[SMI_FIELDS[f]] = v if ok else ""
        if not ok:
            missing.append(f"{f}: {v or 'not known to this nvidia-smi'}")
    return out, missing


def snapshot(device: int = 0, *, gpu: bool = True) -> dict:
    """The FIELDS now, for the calling thread and GPU ``device`` (``gpu=False``: no GPU asked, its
    fields unavailable)."""
    cpu = thread_cpu()
    snap = {"thread_cpu": cpu, "thread_node": cpu_node(cpu) if cpu >= 0 else -1}
    if gpu:
        node, source = gpu_node(device)
        readings, missing = gpu_readings(device)
    else:
        node, source, readings, missing = -1, "gpu_node: not asked", {v: "" for v in SMI_FIELDS.values()}, ["no GPU asked"]
    snap.update(gpu_node=node, gpu_node_from=source if node >= 0 else "", **readings)
    snap["unavailable"] = "; ".join(([source] if node < 0 else []) + missing)
    return snap


def placement(device: int = 0) -> dict:
    """``row_fields`` without asking the GPU for its clocks: the calling thread's CPU and node now,
    the GPU's node (read once per process)."""
    cpu = thread_cpu()
    return {"thread_cpu": cpu, "thread_node": cpu_node(cpu) if cpu >= 0 else -1, "gpu_node": gpu_node(device)[0]}


def row_fields(snap: dict) -> dict:
    """What an experiment puts in each row: the timing thread's CPU and node, the GPU's node."""
    return {k: snap[k] for k in ("thread_cpu", "thread_node", "gpu_node")}


@contextmanager
def pinned_to(cpu: int):
    """The calling thread runs on ``cpu`` alone inside the block (its affinity is put back after)."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield cpu
    finally:
        os.sched_setaffinity(0, before)


#: the drivers whose interrupt lines in /proc/interrupts are the GPU's
GPU_IRQ_DRIVERS = ("nvidia", "amdgpu")
#: a GPU vector is one that carries the GPU's interrupts where it counted at least this share of the busiest one's
IRQ_SHARE = 0.1
IRQ_MIN = 100   #: fewer interrupts on every GPU line: the GPU has not waited on one yet, its CPU unknown


def gpu_irq_cpus(proc: Path = Path("/proc")) -> list[int]:
    """The CPUs the GPU's interrupts are delivered to now, the busiest vector's first: the lines of
    /proc/interrupts that name a GPU driver (``GPU_IRQ_DRIVERS``) and counted at least ``IRQ_SHARE``
    (10 %) of the interrupts of the busiest such line, most interrupts first, each its IRQ's
    ``effective_affinity_list`` (else ``smp_affinity_list``), without repeats; [] where none can be
    read, and where no line has counted IRQ_MIN yet (a GPU that has done no blocking wait: on a fresh
    H100 IRQ 44 had 12 on CPU 0 and IRQ 42, later its busy one, none). (A GPU has several vectors: on
    the H200 IRQ 42 had 1,704 interrupts on CPU 14, IRQ 44 had 12 on CPU 0, and the idle ones'
    affinities span many CPUs: CPU 14 alone is its interrupt CPU.)"""
    try:
        lines = (proc / "interrupts").read_text().splitlines()
    except OSError:
        return []
    active = []
    for line in lines:
        irq, _, rest = line.partition(":")
        if not irq.strip().isdigit() or not any(d in rest for d in GPU_IRQ_DRIVERS):
            continue
        counts = [int(w) for w in rest.split()[:len(lines[0].split())] if w.isdigit()]
        if sum(counts):
            active.append((-sum(counts), int(irq)))
    if not active or -min(active)[0] < IRQ_MIN:
        return []
    out: list[int] = []
    for n, irq in sorted(active):
        if -n < IRQ_SHARE * -min(active)[0]:
            break
        for name in ("effective_affinity_list", "smp_affinity_list"):
            try:
                cpus = cpulist((proc / "irq" / str(irq) / name).read_text())
            except (OSError, ValueError):
                continue
            out += [c for c in cpus if c not in out]
            break
    return out


#: where a process runs against the GPU's interrupt CPU(s): on the first of them, on the other CPUs,
#: or where the scheduler puts it (advise's ``WHERE`` adds "unknown")
PLACEMENTS = ("irq_cpu", "other_cpu", "unpinned")
_START_CPUS = frozenset(os.sched_getaffinity(0))   # what "unpinned" gives back, however often a process is placed


def unplaced() -> bool:
    """Whether this process still runs on every CPU it started with (nothing in it placed it)."""
    return frozenset(os.sched_getaffinity(0)) >= _START_CPUS


def placement_cpus(where: str, irq_cpus, allowed=None) -> tuple[list[int], str]:
    """(the CPUs of placement ``where``, why it cannot be had: "" where it can) of ``allowed`` (the
    CPUs this process started with where None) against ``irq_cpus`` (``gpu_irq_cpus``): "irq_cpu"
    the first interrupt CPU, "other_cpu" every CPU but the interrupt CPUs, "unpinned" all; where
    it cannot be had, all and why."""
    if where not in PLACEMENTS:
        raise BadParameter(f"placement {where!r} is not one of {', '.join(PLACEMENTS)}")
    allowed = sorted(_START_CPUS if allowed is None else allowed)
    if where == "unpinned":
        return allowed, ""
    if not irq_cpus:
        return allowed, (f"no {' or '.join(GPU_IRQ_DRIVERS)} interrupt line has counted {IRQ_MIN} interrupts in "
                         f"/proc/interrupts (no GPU, or one that has not yet woken a blocked wait)")
    cpus = [c for c in irq_cpus if c in allowed][:1] if where == "irq_cpu" else \
        [c for c in allowed if c not in irq_cpus]
    if not cpus:
        return allowed, (f"the GPU's interrupts go to CPU {cpuspan(irq_cpus)}, and this process may run on "
                         f"{'none of them' if where == 'irq_cpu' else 'no other'} (CPUs {cpuspan(allowed)})")
    return cpus, ""


@dataclass(frozen=True)
class Placed:
    """What ``place_process`` did: the placement asked, the one in force ("unpinned" where the asked
    one could not be had, ``why`` says why), the CPUs the process now runs on, the interrupt CPUs."""
    asked: str
    where: str
    cpus: tuple[int, ...]
    irq_cpus: tuple[int, ...]
    why: str = ""

    def words(self) -> str:
        """One sentence: "processes on CPUs 0-13,15, off the GPU's interrupt CPU 14" ..."""
        cpus, irq = cpuspan(self.cpus), f"CPU {cpuspan(self.irq_cpus)}"
        if self.where == "other_cpu":
            return f"processes on CPUs {cpus}, off the GPU's interrupt {irq}"
        if self.where == "irq_cpu":
            return f"processes on CPU {cpus}, the GPU's interrupt CPU" + \
                (f" (its interrupts go to {irq})" if len(self.irq_cpus) > 1 else "")
        said = f"processes unpinned, on CPUs {cpus}" + (f", the GPU's interrupts on {irq}" if self.irq_cpus else "")
        return said + (f" ({self.asked} asked: {self.why})" if self.why else "")


def _set_affinity(cpus) -> None:
    """Every thread of this process (so every thread and process it starts after) on ``cpus``."""
    os.sched_setaffinity(0, cpus)
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cpus)
        except OSError:   # a thread ended meanwhile, or one that may not be moved
            pass


def place_process(where: str, proc: Path = Path("/proc")) -> Placed:
    """This process placed at ``where`` (``PLACEMENTS``, ``placement_cpus``'s rule) against the GPU's
    interrupt CPUs read now; "unpinned" gives back the CPUs it started with. Where the placement
    cannot be had (no interrupt CPU found: no GPU, or a driver without lines) it runs unpinned and
    says why. Its model in-process and every child (real runs, model processes) inherit the CPUs."""
    irq = gpu_irq_cpus(proc)
    cpus, why = placement_cpus(where, irq)
    _set_affinity(cpus)
    return Placed(where, "unpinned" if why else where, tuple(sorted(os.sched_getaffinity(0))), tuple(irq), why)
