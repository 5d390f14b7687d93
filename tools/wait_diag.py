"""Which state makes notebook 13's blocking-wait processes run in two modes at nw=16 (issue 33 item 2)?

On the H100 of outputs/reference/cuda-b, at nw=16, the replica's copies in fresh processes in the
blocking wait (CU_CTX_SCHED_BLOCKING_SYNC, as LLVM's CUDA plugin sets it) took 6.3 us in one process
and 28.5-33.1 us in two (app_pinned's transfer part); on the H200 of outputs/reference/cuda, 7.0-7.2 us
in all three. This runs the same processes (wait_mode.wait_model, the notebook's own code, both wait
modes interleaved), placed as notebook 13 places them (PLACEMENT other_cpu: every CPU but the GPU's
interrupt CPU), and samples every 2 ms the CPU each thread of each process runs on, and the GPU's
interrupt counts per CPU before and after. Per process: its mode, its transfer part (median over
its steady invocations) and where its threads ran, so a mode can be named by a state. Then a sweep:
one process per mode pinned to each single CPU in turn (the interrupt CPU first, then alternately far
from and near to it; stopped after SWEEP_S), to see whether a mode follows the CPU.

Usage (a GPU node, from the repository root): PYTHONPATH=lib python3 tools/wait_diag.py OUT_DIR [PROCESSES] [NW]
Writes OUT_DIR/wait_model.csv (the processes' invocations, pid per row), OUT_DIR/threads.csv (pid,
tid, comm, cpu, samples), OUT_DIR/sweep.csv (the sweep's invocations, its CPU per row), OUT_DIR/irq.txt
and OUT_DIR/cpus.txt (topology, idle states, frequency); prints one line per process.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pandas as pd

from pinpath import machine_state, open_runtime
from pinpath.errors import RuntimeUnavailable
from pinpath.experiments import replica_compare, wait_mode

VARIANTS = ["plain", "app_pinned"]
INVOCATIONS = 384   # params/full.yaml's 13_real_runtime
STEPS = 1           # its WAIT_STEPS
SWEEP_S = 150       # the per-CPU sweep stops starting processes after this long


def _stat(path: Path) -> tuple[str, list[str]] | None:
    """(comm, the fields after it: fields[0] is stat's field 3) of a /proc stat file; None once gone."""
    try:
        stat = path.read_text()
    except OSError:
        return None
    return stat[stat.index("(") + 1:stat.rindex(")")], stat.rsplit(")", 1)[1].split()


def _children(parent: int) -> list[int]:
    """The pids whose parent is ``parent`` (the wait-mode processes are this process's children)."""
    return [int(d.name) for d in Path("/proc").iterdir()
            if d.name.isdigit() and (st := _stat(d / "stat")) and int(st[1][1]) == parent]


def _thread_cpus(pid: int) -> list[tuple[int, str, int]]:
    """(tid, comm, the CPU it last ran on) of each thread of ``pid``; [] once it has gone."""
    out = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for t in tasks:
        if st := _stat(t / "stat"):
            out.append((int(t.name), st[0], int(st[1][36])))   # field 39 of stat: processor
    return out


class Sampler(threading.Thread):
    """Every ``period_s``, the CPU of every thread of this process's children (the children looked
    up again every ``refresh`` samples: a scan of /proc costs more than a sample, and takes a CPU
    the processes may run on)."""

    def __init__(self, period_s: float = 0.002, refresh: int = 25):
        super().__init__(daemon=True)
        self.period_s, self.refresh, self.stop, self.seen = period_s, refresh, threading.Event(), Counter()

    def run(self) -> None:
        me, pids, k = os.getpid(), [], 0
        while not self.stop.is_set():
            if k % self.refresh == 0:
                pids = _children(me)
            k += 1
            for pid in pids:
                for tid, comm, cpu in _thread_cpus(pid):
                    self.seen[(pid, tid, comm, cpu)] += 1
            time.sleep(self.period_s)


def _gpu_irq_lines() -> str:
    return "".join(line for line in Path("/proc/interrupts").read_text().splitlines(True)
                   if any(d in line for d in machine_state.GPU_IRQ_DRIVERS) or line.lstrip().startswith("CPU"))


def _cpu_facts() -> str:
    """The CPUs' topology (each one's package, core, NUMA node), idle states and frequency, as read."""
    lines = []
    for cpu in sorted(Path("/sys/devices/system/cpu").glob("cpu[0-9]*"), key=lambda d: int(d.name[3:])):
        topo = {f: (cpu / "topology" / f).read_text().strip() for f in
                ("physical_package_id", "core_id", "thread_siblings_list") if (cpu / "topology" / f).exists()}
        node = next((n.name for n in cpu.glob("node[0-9]*")), "?")
        idle = [(s / "name").read_text().strip() + "/" + (s / "latency").read_text().strip() + "us"
                for s in sorted(cpu.glob("cpuidle/state[0-9]*"))]
        khz = cpu / "cpufreq" / "scaling_cur_freq"
        lines.append(f"{cpu.name} {node} {topo} idle={idle or 'none'} "
                     f"kHz={khz.read_text().strip() if khz.exists() else '?'}")
    gov = Path("/sys/devices/system/cpu/cpuidle/current_governor_ro")
    lines.append(f"cpuidle driver/governor: {(gov.parent / 'current_driver').read_text().strip() if gov.exists() else '?'}"
                 f"/{gov.read_text().strip() if gov.exists() else '?'}")
    return "\n".join(lines) + "\n"


def _sweep_order(cpus: list[int], irq: list[int]) -> list[int]:
    """The interrupt CPU first, then the others alternately farthest from and nearest to it."""
    first = [c for c in irq[:1] if c in cpus]
    rest = sorted((c for c in cpus if c not in first), key=lambda c: abs(c - (first or [0])[0]))
    order = []
    while rest:
        order.append(rest.pop())
        if rest:
            order.append(rest.pop(0))
    return first + order


def _summary(waited: pd.DataFrame, key: str) -> pd.DataFrame:
    """Per (variant, process): its mode, its CPU key, its transfer part and invocation (medians, us)."""
    steady = waited[~((waited.step == 0) & (waited.invocation < 1))]
    steady = steady.assign(transfer_ns=steady.ns - steady.kernel_only_ns)
    return (steady.groupby(["variant", key, "wait"], sort=True)
            .agg(transfer_us=("transfer_ns", lambda v: v.median() / 1e3), invocation_us=("ns", lambda v: v.median() / 1e3))
            .reset_index())


def sweep(rt, plan, out: Path, nw: int, irq: list[int]) -> None:
    """One process per wait mode pinned to each single CPU (``_sweep_order``), until SWEEP_S."""
    start_cpus = sorted(os.sched_getaffinity(0) | set(irq))
    frames, t0 = [], time.monotonic()
    for cpu in _sweep_order(start_cpus, irq):
        if time.monotonic() - t0 > SWEEP_S:
            print(f"sweep: stopped after {SWEEP_S} s")
            break
        try:
            os.sched_setaffinity(0, {cpu})
        except OSError as e:
            print(f"sweep: CPU {cpu} not allowed ({e})")
            continue
        w = wait_mode.wait_model(rt, plan, nw_values=[nw], steps=STEPS, invocations=INVOCATIONS,
                                 processes_per_mode=1, verify="none")
        if "not_applicable" in w.columns:
            print(f"sweep: CPU {cpu} not measured: {w.not_applicable.iloc[0]}")
            continue
        frames.append(w.assign(cpu=cpu))
    os.sched_setaffinity(0, start_cpus)
    if frames:
        got = pd.concat(frames, ignore_index=True)
        got.to_csv(out / "sweep.csv", index=False)
        print(f"sweep (pinned to one CPU; the interrupt CPU {irq[:1]}), {time.monotonic() - t0:.0f} s:")
        print(_summary(got, "cpu").to_string(index=False, float_format=lambda v: f"{v:.1f}"))


def main(out_dir: str, processes: int = 6, nw: int = 16) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cpus.txt").write_text(_cpu_facts())
    placed = machine_state.place_process("other_cpu")
    print(f"placement: {placed.words()}")
    try:
        rt = open_runtime("cuda")
    except RuntimeUnavailable as e:
        sys.exit(f"wait_diag: needs a CUDA GPU ({e})")
    plan = replica_compare.model_plan(replica_compare.plan_vendor("auto"), VARIANTS)
    irq_before = _gpu_irq_lines()
    sampler = Sampler()
    sampler.start()
    t0 = time.monotonic()
    waited = wait_mode.wait_model(rt, plan, nw_values=[nw], steps=STEPS, invocations=INVOCATIONS,
                                  processes_per_mode=processes, verify="first")
    sampler.stop.set()
    sampler.join()
    (out / "irq.txt").write_text(f"before\n{irq_before}after\n{_gpu_irq_lines()}")
    if "not_applicable" in waited.columns:
        sys.exit(f"wait_diag: not measured: {waited.not_applicable.iloc[0]}")
    waited.to_csv(out / "wait_model.csv", index=False)
    threads = pd.DataFrame([(p, t, c, cpu, n) for (p, t, c, cpu), n in sampler.seen.items()],
                           columns=["pid", "tid", "comm", "cpu", "samples"])
    threads.to_csv(out / "threads.csv", index=False)
    print(f"{2 * processes} processes in {time.monotonic() - t0:.0f} s; the GPU's interrupt CPU(s): "
          f"{machine_state.gpu_irq_cpus()}")
    for r in _summary(waited, "pid").itertuples():
        main_cpus = threads[(threads.pid == r.pid) & (threads.tid == r.pid)].set_index("cpu").samples
        where = ", ".join(f"CPU {c}: {n}" for c, n in main_cpus.sort_values(ascending=False).items()) or "not sampled"
        print(f"{r.variant:11s} pid {r.pid} {r.wait:8s} transfer part {r.transfer_us:6.1f} us, "
              f"invocation {r.invocation_us:6.1f} us; main thread on {where}")
    sweep(rt, plan, out, nw, machine_state.gpu_irq_cpus())


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:4]))
