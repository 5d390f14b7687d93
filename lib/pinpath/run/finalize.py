"""The end of a run: fold the notebooks' parts into the manifest, judge the claims, build the
report; and the marks a run gets when it is stopped or cannot be written."""

from __future__ import annotations

import signal
from pathlib import Path

from .. import atomic
from .. import manifest as mf
from .. import paths
from .. import runfolder as rf
from ..errors import PinpathError, RunFailed
from .jobs import resolve_part
from .signals import on_signals

__all__ = ["finalize", "mark", "unwritable"]


def finalize(run_dir: Path, *, interrupted_at: str | None = None, out_dir: Path | None = None,
             reference_ok: bool = False) -> dict:
    """Fold the notebooks' parts into the manifest, judge the claims, build the report; point
    ``latest`` of ``out_dir`` (default: outputs/) at the run where the run is one of its folders.
    ``runfolder.open_for_write`` guards the folder (a committed reference only with ``reference_ok``)."""
    with rf.open_for_write(run_dir, "finalize", reference_ok=reference_ok) as (run_dir, man, _):
        return _finalize(run_dir, man, interrupted_at, out_dir)


def _finalize(run_dir: Path, man: dict, interrupted_at: str | None, out_dir: Path | None) -> dict:
    from ..report import claims
    from ..report.html import render_index

    man = rf.merge(run_dir, man, resolve_part)
    statuses = [v.get("status") for v in man["notebooks"].values()]
    if interrupted_at is not None:
        man["status"], man["interrupted_at"] = "interrupted", interrupted_at
    elif all(s == "ok" for s in statuses):
        man["status"] = "ok"
    elif all(s in ("ok", "pending", "running") for s in statuses):
        man["status"] = "incomplete"       # nothing failed; some notebooks have not run (yet)
    else:
        man["status"] = "failed"
    now = mf.git_state(paths.PROJECT_ROOT)
    rejudged = bool(man.get("end")) and man.get("git", {}).get("commit") != now.get("commit")
    if rejudged:
        man["judged_by"] = now          # a run finalized again by newer code says so
    else:
        man["end"] = mf.utc_now()
    man["duration_s"] = round(sum(float(v.get("duration_s", 0) or 0) for v in man["notebooks"].values()), 1)
    rf.write_manifest(run_dir, man)
    data, unreadable = claims.load_run(run_dir)          # every data set read once, for both uses
    judged = claims.judge(list(claims.CLAIMS), data, man["platform"], man["notebooks"])
    if rf.is_reference(run_dir):      # a verdict another committed reference gives differently says so
        from ..report.regress import noted
        judged = noted(judged, run_dir)
    atomic.write_text_atomic(rf.path(run_dir, "claims"), judged.to_csv(index=False))
    fid = _fidelity(data, man["platform"])
    if fid is not None:
        atomic.write_text_atomic(rf.path(run_dir, "report", name="fidelity.csv"), fid.to_csv(index=False))
    engine_fid = data.get("engine_fidelity")   # the native engine against plain C (notebook 00)
    if engine_fid is not None and len(engine_fid):
        cols = ["policy", "direction", "nbytes", "engine_ns", "plain_ns", "ratio", "low", "high"]
        atomic.write_text_atomic(rf.path(run_dir, "report", name="engine_fidelity.csv"), engine_fid[cols].to_csv(index=False))
    if unreadable:
        man["unreadable_data"] = unreadable
        rf.write_manifest(run_dir, man)
    render_index(run_dir, man, claims=judged)
    out_dir = Path(out_dir or paths.OUTPUTS_DIR)
    if not rejudged and run_dir.resolve().parent == out_dir.resolve():   # never latest elsewhere,
        rf.point_latest(out_dir, run_dir.name)        # nor for an old run judged again
    return man


def _fidelity(data: dict, platform: str):
    """``report/fidelity.csv``'s rows: the Python figures beside the C ones, from the lock-cost
    data sets of the run (``claims.load_run``'s; None where the run has no C figures)."""
    from ..report import tables
    frames = []
    for name in ("lock_cost", "query_cost"):
        lc = data.get(name)
        if lc is not None and "source" in lc and (lc.source == "native").any():
            frames.append(tables.fidelity(lc, data.harness_for(name), platform))
    if not frames:
        return None
    import pandas as pd
    return pd.concat(frames, ignore_index=True).drop_duplicates(["quantity", "kind", "backing", "nbytes"])


def mark(run_dir: Path, status: str, **extra) -> bool:
    """Record ``status`` in the manifest at once, signals ignored meanwhile; False where even that
    cannot be written (a full or read-only disk: ``pinpath runs`` shows the run stale once its
    runner is gone)."""
    with on_signals(signal.SIG_IGN):
        try:
            man = rf.merge(run_dir, rf.read_manifest(run_dir), resolve_part)
            man.update(status=status, end=man.get("end") or mf.utc_now(), **extra)
            rf.write_manifest(run_dir, man)
            return True
        except (OSError, PinpathError):
            return False


def unwritable(run_dir: Path, e: OSError, status: str = "failed") -> RunFailed:
    """Mark the run ``status``; the sentence that says which file could not be written, and
    whether the mark could."""
    marked = mark(run_dir, status, error=f"{e.filename or run_dir}: {e.strerror or e}")
    said = (f"is marked {status}" if marked else
            f"could not be marked {status} either, so its manifest still says running (`pinpath runs` shows it stale)")
    return RunFailed(f"{e.filename or run_dir}: cannot be written ({e.strerror or e}); the run {run_dir.name} {said}")


