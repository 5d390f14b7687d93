"""The notebook kernel's side of a run: what the kernel held when it started and when it ended.

The runner adds two cells to every notebook it executes: ``start()`` after the parameters
and ``finish(RUN_DIR, NOTEBOOK)`` at the end. ``finish`` writes ``status/<stem>.kernel.json``
with every lock and allocation acquired and not released (counted per resource and pointer,
with multiplicity, over every runtime the kernel opened) and the process's locked memory
(VmLck) before and after. A notebook that fails never reaches ``finish``; its status says so.
"""

from __future__ import annotations

from . import atomic, layout, libc, osinfo
from .trace import process_balance

__all__ = ["start", "finish", "START_SOURCE", "FINISH_SOURCE", "INJECTED_TAG"]

INJECTED_TAG = "pinpath-injected"
START_SOURCE = "# added by the pinpath runner: what this kernel holds at the start\nimport pinpath.session\npinpath.session.start()"
FINISH_SOURCE = ("# added by the pinpath runner: locks and allocations left behind, locked memory before and after\n"
                 "pinpath.session.finish(RUN_DIR, NOTEBOOK)")

_start: dict = {}


def start() -> None:
    _start.update(vmlck_nbytes=osinfo.vmlck_nbytes(), balance=process_balance())


def finish(run_dir: str, stem: str) -> dict:
    """Write and return the kernel's balance; with an empty ``run_dir`` only return it."""
    before = _start.get("balance", {})
    now = process_balance()
    left = {k: n - before.get(k, 0) for k, n in now.items() if n != before.get(k, 0)}
    report = {"vmlck_before_nbytes": _start.get("vmlck_nbytes", 0), "vmlck_after_nbytes": osinfo.vmlck_nbytes(),
              "mmap_threshold_nbytes": libc.mmap_threshold_nbytes(), "unreleased": left}
    if run_dir:
        atomic.write_json_atomic(layout.path(run_dir, "kernel", stem), report)
    return report
