"""Claims of several runs side by side (``pinpath compare``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from ... import layout
from ...atomic import write_text_atomic
from .. import regress
from ..fmt import format_measured
from .page import _ENV, VERDICTS, _text, verdict_word
from .scrub import Scrubber


def _unpack(run) -> tuple[dict, Any, Path | None]:
    man, df, *rest = run
    return man, df, (Path(rest[0]) if rest and rest[0] is not None else None)


def compare_rows(runs: Sequence[tuple]) -> tuple[list[dict], list[dict]]:
    """What the comparison shows, for HTML and Markdown alike: one dict per run (id, platform,
    preset, run folder) and one per claim id found in any run (its cells per run, and whether
    the verdicts differ)."""
    heads, frames = [], []
    for run in runs:
        man, df, run_dir = _unpack(run)
        heads.append({"run_id": _text(man.get("run_id")), "platform": _text(man.get("platform")),
                      "preset": _text(man.get("preset")), "device": _text((man.get("runtime") or {}).get("device")),
                      "run_dir": run_dir})
        frames.append({regress.row_key(r): r for r in df.to_dict("records")})   # a split cold row kept apart
    ids = list(dict.fromkeys(i for f in frames for i in f))
    rows = []
    for cid in ids:
        first = next(f[cid] for f in frames if cid in f)
        cells = []
        for f in frames:
            r = f.get(cid)
            if r is None:
                cells.append({"verdict": "", "vclass": "v-none", "measured": "", "why": "not in this run"})
                continue
            v = verdict_word(r.get("verdict"))
            cells.append({"verdict": v, "vclass": VERDICTS.get(v, "v-other"), "why": _text(r.get("why")),
                          "measured": format_measured(r.get("measured"), r.get("low"), r.get("high"),
                                                      _text(r.get("unit")))})
        rows.append({"id": cid, "short": _text(first.get("short")) or _text(first.get("claim")),
                     "claim": _text(first.get("claim")), "thread": _text(first.get("thread")),
                     "cells": cells, "differs": len({c["verdict"] for c in cells}) > 1})
    return heads, rows


def render_compare(out_path: Path, runs: Sequence[tuple]) -> Path:
    """Claims of several runs side by side (e.g. host against H200): one verdict and measured
    figure per run and claim; rows whose verdicts differ are marked.

    ``runs``: (manifest, claims frame) or (manifest, claims frame, run folder) per run; each
    run's column header links to its ``report/index.html``, relative to ``out_path``, where
    that page exists (without a run folder it is looked for at ``<out_path's folder>/<run_id>``).
    """
    out_path = Path(out_path)
    heads, rows = compare_rows(runs)
    for h in heads:
        run_dir = h.pop("run_dir") or out_path.parent / h["run_id"]
        index = layout.path(run_dir, "index")
        h["href"] = Path(os.path.relpath(index.absolute(), out_path.parent.absolute())).as_posix() \
            if index.is_file() else ""
    scrub = Scrubber(out_path.parent)
    page = _ENV.get_template("compare.html").render(
        heads=scrub.tree(heads), rows=scrub.tree(rows), ndiff=sum(r["differs"] for r in rows),
        legend=list(VERDICTS.items()), regression=scrub.tree(regress.lines(regress.check(runs))))
    write_text_atomic(out_path, scrub(page))
    return out_path
