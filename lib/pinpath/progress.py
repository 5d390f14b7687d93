"""Progress inside a notebook, on a side channel: an experiment reports its steps; the runner
prints them while the notebook runs. The executed notebook stays free of progress output.

The runner sets ``PINPATH_PROGRESS_FILE`` for the kernel; without it (interactive use, tests)
``step`` does nothing.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Callable

__all__ = ["step", "ENV", "Watcher"]

ENV = "PINPATH_PROGRESS_FILE"
_MIN_INTERVAL_S = 2.0
_last: dict[str, float] = {}
_lock = threading.Lock()


def step(label: str, done: int, total: int) -> None:
    """Say that ``done`` of ``total`` steps of ``label`` are finished (at most every 2 s per
    label, and always the last one)."""
    path = os.environ.get(ENV)
    if not path:
        return
    now = time.monotonic()
    with _lock:
        if done < total and now - _last.get(label, 0.0) < _MIN_INTERVAL_S:
            return
        _last[label] = now
        with open(path, "a") as f:
            f.write(f"{label}: {done}/{total}\n")


class Watcher:
    """Follows a progress file in a thread and hands each new line to ``say``."""

    def __init__(self, path: Path, say: Callable[[str], None], prefix: str = "", every_s: float = 1.0) -> None:
        self.path, self.say, self.prefix, self.every_s = Path(path), say, prefix, every_s
        self._stop = threading.Event()
        self._offset = 0
        self._thread = threading.Thread(target=self._run, name="pinpath-progress", daemon=True)

    def __enter__(self) -> "Watcher":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._read()

    def _read(self) -> None:
        try:
            with open(self.path) as f:
                f.seek(self._offset)
                text = f.read()
                self._offset = f.tell()
        except OSError:
            return
        for line in text.splitlines():
            self.say(self.prefix + line)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self._read()
