"""Which state makes notebook 13's blocking-wait processes run in two modes at nw=16 (issue 33 item 2)?

On the H100 of outputs/reference/cuda-b, at nw=16, the replica's copies in fresh processes in the
blocking wait (CU_CTX_SCHED_BLOCKING_SYNC, as LLVM's CUDA plugin sets it) took 6.3 us in one process
and 28.5-33.1 us in two (app_pinned's transfer part); on the H200 of outputs/reference/cuda, 7.0-7.2 us
in all three. This runs the same processes (wait_mode.wait_model, the notebook's own code, both wait
modes interleaved), placed as notebook 13 places them (PLACEMENT other_cpu: every CPU but the GPU's
interrupt CPU), and samples every 2 ms the CPU each thread of each process runs on, and the GPU's
interrupt counts per CPU before and after. Per process: its mode, its transfer part (median over
its steady invocations) and where its threads ran, so a mode can be named by a state.

Usage (a GPU node, from the repository root): PYTHONPATH=lib python3 tools/wait_diag.py OUT_DIR [PROCESSES] [NW]
Writes OUT_DIR/wait_model.csv (the processes' invocations, pid per row), OUT_DIR/threads.csv (pid,
tid, comm, cpu, samples) and OUT_DIR/irq.txt; prints one line per process.
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


def main(out_dir: str, processes: int = 6, nw: int = 16) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
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
    steady = waited[~((waited.step == 0) & (waited.invocation < 1))]
    steady = steady.assign(transfer_ns=steady.ns - steady.kernel_only_ns)
    for (variant, pid), g in steady.groupby(["variant", "pid"], sort=True):
        main_cpus = threads[(threads.pid == pid) & (threads.tid == pid)].set_index("cpu").samples
        where = ", ".join(f"CPU {c}: {n}" for c, n in main_cpus.sort_values(ascending=False).items()) or "not sampled"
        print(f"{variant:11s} pid {pid} {g.wait.iloc[0]:8s} transfer part {g.transfer_ns.median() / 1e3:6.1f} us, "
              f"invocation {g.ns.median() / 1e3:6.1f} us; main thread on {where}")


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:4]))
