"""``pinpath run --stop-by S``: start no notebook that would not end within S seconds of the run.

A machine lent for a fixed time (a batch job's wall time, a device call's limit) loses the
notebook it is stopped in: a signal marks the run interrupted and that notebook's work is gone.
With a stop-by, the runner instead leaves a notebook pending when the longest it took before
(``expected_s``) does not fit in what is left; the run ends ``incomplete`` and ``RESUME=`` runs
the rest. The runner's finalize (report) comes after the last notebook: leave it some seconds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import runfolder as rf

__all__ = ["MARGIN", "expected_s", "StopBy"]

MARGIN = 1.4    # the full preset's notebooks took up to 1.37x as long on one H100 as on another (2026-12-06)


def _runs(out_dir: Path):
    """The manifests of the runs under ``out_dir`` and of the committed references beside them."""
    for folder in (out_dir, out_dir / rf.REFERENCE):
        if folder.is_dir():
            yield from (man for _, man, _ in rf.list_runs(folder) if man)


def expected_s(stem: str, preset: str, platform: str, out_dir: Path) -> float | None:
    """The longest time ``stem`` ran ok in a run of the same preset and platform (the runs under
    ``out_dir`` and its committed references), times ``MARGIN``; None where none ran it."""
    seen = [float(part["duration_s"]) for man in _runs(Path(out_dir))
            if man.get("preset") == preset and man.get("platform") == platform
            for s, part in (man.get("notebooks") or {}).items()
            if s == stem and isinstance(part, dict) and part.get("status") == "ok"
            and isinstance(part.get("duration_s"), (int, float))]
    return max(seen) * MARGIN if seen else None


@dataclass
class StopBy:
    """What is left of ``limit_s`` seconds from when the runner began (``None``: no limit)."""
    limit_s: int | None
    preset: str
    platform: str
    out_dir: Path
    start: float = field(default_factory=time.monotonic)

    def refuses(self, stem: str) -> str:
        """Why ``stem`` is not started (``""``: it is): its expected time exceeds what is left."""
        if self.limit_s is None:
            return ""
        left_s = self.limit_s - (time.monotonic() - self.start)
        need_s = expected_s(stem, self.preset, self.platform, self.out_dir)
        if need_s is None or need_s <= left_s:
            return ""
        return (f"not started: it took up to {_s(need_s / MARGIN)} s before (with the margin {_s(need_s)} s), "
                f"{_s(max(left_s, 0))} s of the stop-by's {self.limit_s} s are left")


def _s(seconds: float) -> str:
    return f"{seconds:.1f}" if seconds < 10 else f"{seconds:.0f}"
