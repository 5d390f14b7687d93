"""``pinpath run --stop-by S``: start no notebook that would not end within S seconds of the run.

A machine lent for a fixed time (a batch job's wall time, a device call's limit) loses the
notebook it is stopped in: a signal marks the run interrupted and that notebook's work is gone.
With a stop-by, the runner instead leaves a notebook pending when the longest it took before
(``longest_s``, with a margin) does not fit in what is left; the run ends ``incomplete`` and ``RESUME=`` runs
the rest. The runner's finalize (report) comes after the last notebook: leave it some seconds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import runfolder as rf

__all__ = ["MARGIN", "longest_s", "StopBy"]

MARGIN = 1.4    # the full preset's notebooks took up to 1.37x as long on one H100 as on another (2026-12-06)


def _runs(out_dir: Path):
    """The manifests of the runs under ``out_dir`` and of the committed references beside them."""
    for folder in (out_dir, out_dir / rf.REFERENCE):
        if folder.is_dir():
            yield from (man for _, man, _ in rf.list_runs(folder) if man)


def longest_s(preset: str, platform: str, out_dir: Path) -> dict[str, float]:
    """Each notebook's longest ok time in the runs of ``preset`` on ``platform`` (those under
    ``out_dir`` and its committed references)."""
    longest: dict[str, float] = {}
    for man in _runs(Path(out_dir)):
        if man.get("preset") != preset or man.get("platform") != platform:
            continue
        for stem, part in (man.get("notebooks") or {}).items():
            if isinstance(part, dict) and part.get("status") == "ok" and isinstance(part.get("duration_s"), (int, float)):
                longest[stem] = max(longest.get(stem, 0.0), float(part["duration_s"]))
    return longest


@dataclass
class StopBy:
    """What is left of ``limit_s`` seconds from when the runner began (``None``: no limit); the
    earlier runs are read once, at the first notebook."""
    limit_s: int | None
    preset: str
    platform: str
    out_dir: Path
    start: float = field(default_factory=time.monotonic)
    _longest_s: dict[str, float] | None = field(default=None, repr=False)

    def refuses(self, stem: str) -> str:
        """Why ``stem`` is not started (``""``: it is): its longest earlier time times ``MARGIN``
        exceeds what is left; a notebook no run has timed is started."""
        if self.limit_s is None:
            return ""
        if self._longest_s is None:
            self._longest_s = longest_s(self.preset, self.platform, self.out_dir)
        left_s = self.limit_s - (time.monotonic() - self.start)
        took_s = self._longest_s.get(stem)
        if took_s is None or took_s * MARGIN <= left_s:
            return ""
        return (f"not started: it took up to {_s(took_s)} s before (with the margin {_s(took_s * MARGIN)} s), "
                f"{_s(max(left_s, 0))} s of the stop-by's {self.limit_s} s are left")


def _s(seconds: float) -> str:
    return f"{seconds:.1f}" if seconds < 10 else f"{seconds:.0f}"
