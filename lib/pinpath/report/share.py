"""Share a run: a Markdown summary to paste into an issue comment, its headline figures at a
width that reads well there, and the whole run folder as one zip that opens offline.

``share_run(run_dir)`` writes, inside the run folder::

    share/summary.md        platform line, claims table, lock/unlock beside the thread's rocprof rows,
                            headline figures, how to reproduce (under 80 lines)
    share/figures/*.png     the headline figures, about 900 px wide
    share/<run-id>.zip      <run-id>/ with report/, notebooks/, data/, figures/, manifest.json
                            (not share/); <run-id>/index.html leads to report/index.html

``render_compare_markdown(runs)`` is the Markdown form of ``html.render_compare``.
Command line: ``python -m pinpath.report.share [RUN]`` (RUN: a run folder or run id; default
``outputs/latest``).
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import sys
import zipfile
from collections import Counter
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..errors import BadParameter
from ..paths import OUTPUTS_DIR
from ..runfolder import find_run
from ..atomic import replacing, write_bytes_atomic, write_text_atomic
from . import regress
from .html import VERDICTS, Scrubber, compare_rows, format_measured, verdict_word

__all__ = ["share_run", "summary_markdown", "render_compare_markdown", "zip_run", "resize_figures",
           "headline_figures", "lock_unlock_table", "md_cell", "HEADLINE_ORDER", "main"]

#: notebooks whose first figure heads the summary, in this order (stem prefixes)
HEADLINE_ORDER = ("03_", "01_", "02_", "08_", "06_", "04_")
MAX_LINES = 80
_LONE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")   # could open or close emphasis
_SKIP = {"share", "__pycache__", ".ipynb_checkpoints"}
_STORED = {".png", ".parquet", ".zip", ".gz", ".jpg", ".jpeg"}      # already compressed


# -- Markdown pieces --------------------------------------------------------------------------
def md_cell(value, *, code: bool = False, limit: int | None = None) -> str:
    """Text made safe for one GFM table cell: one line, pipes escaped, no raw HTML, no
    accidental emphasis or links. ``code``: as a code span (for call names)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    text = " ".join(str(value).split())
    if limit and len(text) > limit:
        text = text[: limit - 1].rstrip() + "\u2026"
    if code:
        return "`" + text.replace("`", "'").replace("|", "\\|") + "`" if text else ""
    for ch in "\\`*[]<|~":
        text = text.replace(ch, "\\" + ch)
    return _LONE_UNDERSCORE.sub(r"\\_", text)    # memory_pool_allocate stays readable


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[int] = ()) -> list[str]:
    align = ["---:" if i in right else "---" for i in range(len(head))]
    return ["| " + " | ".join(head) + " |", "| " + " | ".join(align) + " |"] + \
        ["| " + " | ".join(r) + " |" for r in rows]


def _claims(run_dir: Path) -> pd.DataFrame | None:
    p = run_dir / "report" / "claims.csv"
    return pd.read_csv(p) if p.is_file() else None


def _claims_rows(claims: pd.DataFrame, scrub: Scrubber) -> list[list[str]]:
    rows = []
    for r in claims.to_dict("records"):
        short = r.get("short")
        if not isinstance(short, str) or not short.strip():
            short = r.get("claim")
        measured = format_measured(r.get("measured"), r.get("low"), r.get("high"),
                                   r.get("unit") if isinstance(r.get("unit"), str) else "")
        if r.get("unit") == "count" and measured and isinstance(r.get("metric"), str):
            measured = f"{measured} ({r['metric']})"      # a bare count says nothing without what it counts
        verdict = verdict_word(r.get("verdict"))
        rows.append([f"**{md_cell(r.get('id'))}**", md_cell(scrub(str(short or "")), limit=70),
                     md_cell(scrub(str(r.get("thread") or "")), limit=60),
                     md_cell(scrub(measured), limit=70) or "\u2014",
                     f"**{verdict}**" if verdict == "does not hold" else md_cell(verdict)])
    return rows


def _verdict_counts(claims: pd.DataFrame) -> str:
    n = Counter(verdict_word(v) for v in claims.verdict)
    parts = [f"{n[w]} {w}" for w in VERDICTS if n[w]] + [f"{c} {w}" for w, c in n.items() if w not in VERDICTS]
    return ", ".join(parts) + f" (of {len(claims)})"


def _api_stats(run_dir: Path) -> pd.DataFrame | None:
    data = run_dir / "data"
    exact = data / "api_stats.parquet"
    found = [exact] if exact.is_file() else sorted(data.glob("*api_stats*.parquet"))
    return pd.read_parquet(found[0]) if found else None


def lock_unlock_table(run_dir: Path, platform: str = "") -> list[list[str]]:
    """Rows of the lock/unlock table in rocprof's columns: for each of "no user pinning" and
    "user pinning", the thread's rows (ye-luo's hsa_stats.csv) then ours (data/api_stats.parquet,
    categories lock and unlock)."""
    from .rocprof import thread_stats
    ours = _api_stats(run_dir)
    rows = []
    for pinned in (False, True):
        parts = [("thread (AMD, rocprof)", thread_stats(with_user_pinning=pinned))]
        if ours is not None and {"user_pinned", "category"} <= set(ours.columns):
            mine = ours[(ours.user_pinned.astype(bool) == pinned) & ours.category.isin(["lock", "unlock"])]
            parts.append((f"this run ({platform})" if platform else "this run", mine))
        for source, df in parts:
            for r in df.to_dict("records"):
                avg = float(r["AverageNs"])
                rows.append(["yes" if pinned else "no", md_cell(source), md_cell(r["Name"], code=True),
                             f"{int(r['Calls'])}", f"{int(r['TotalDurationNs'])}",
                             f"{int(avg)} ({format_measured(avg, unit='ns')})", f"{float(r['Percentage']):.2f}"])
    return rows


def headline_figures(run_dir: Path, limit: int = 5, order: Sequence[str] = HEADLINE_ORDER) -> list[Path]:
    """The first figure of the notebooks named by ``order`` (stem prefixes), then of the
    others, at most ``limit``."""
    firsts: dict[str, Path] = {}
    for p in sorted((Path(run_dir) / "figures").glob("*.png")):
        firsts.setdefault(p.name.split("-", 1)[0], p)
    def rank(stem: str) -> tuple[int, str]:
        return next((i for i, pre in enumerate(order) if stem.startswith(pre)), len(order)), stem
    return [firsts[s] for s in sorted(firsts, key=rank)][:limit]


def summary_markdown(run_dir: Path, figures: Sequence[str] | None = None) -> str:
    """``share/summary.md`` as text: GFM that reads well pasted into a comment; paths relative
    to ``share/`` (``figures/NAME.png``); under 80 lines."""
    run_dir = Path(run_dir)
    scrub = Scrubber(run_dir)
    man = scrub.tree(json.loads((run_dir / "manifest.json").read_text()))
    git, rt = man.get("git") or {}, man.get("runtime") or {}
    commit = str(git.get("commit") or "unknown")
    dirty = git.get("dirty")
    state = " with uncommitted changes" if dirty else ("" if dirty is False else ", state unknown")
    platform, preset = str(man.get("platform", "?")), str(man.get("preset", "?"))
    out = [f"### pinpath run `{md_cell(man.get('run_id'), code=True).strip('`')}`", "",
           f"**{md_cell(platform)}** on {md_cell(rt.get('device') or 'an unnamed device')}, driver "
           f"{md_cell(rt.get('nvidia_driver') or rt.get('driver_version') or 'none')}; preset **{md_cell(preset)}**; commit `{commit[:12]}`{state}; "
           f"run status {md_cell(man.get('status', '?'))}.", ""]
    claims = _claims(run_dir)
    if claims is not None and len(claims):
        out += [f"**Claims:** {_verdict_counts(claims)}.", ""]
        out += _table(["id", "claim", "thread's figure", "measured here (95 % CI)", "verdict"],
                      _claims_rows(claims, scrub))
    else:
        out += ["No claims table in this run (report/claims.csv is missing)."]
    out += ["", "**Lock and unlock in rocprof's layout** (thread: ye-luo's `hsa_stats.csv`; ours: the replica's "
                "traced calls" + ("" if _api_stats(run_dir) is not None else ", missing from this run") + ")", ""]
    out += _table(["user pinning", "from", "Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage"],
                  lock_unlock_table(run_dir, platform), right=(3, 4, 5, 6))
    names = list(figures) if figures is not None else [p.name for p in headline_figures(run_dir)]
    if names:
        out += ["", "**Figures**", ""]
        out += [f"![{md_cell(Path(n).stem.replace('_', ' '))}](figures/{n})" for n in names]
    out += ["", f"Reproduce: `git checkout {commit}` then `make reproduce PRESET={preset} PLATFORM={platform}`. "
                f"The whole run, offline: `{run_dir.name}.zip` (open `{run_dir.name}/index.html`)."]
    text = scrub("\n".join(out)) + "\n"
    if text.count("\n") >= MAX_LINES:
        raise AssertionError(f"summary.md has {text.count(chr(10))} lines, more than {MAX_LINES - 1}")
    return text


def resize_figures(paths: Sequence[Path], out_dir: Path, width: int = 900) -> list[Path]:
    """Copies of ``paths`` in ``out_dir``, scaled down to ``width`` pixels wide where wider."""
    from PIL import Image
    out = []
    for p in paths:
        with Image.open(p) as im:
            if im.width > width:
                im = im.resize((width, max(1, round(im.height * width / im.width))), Image.Resampling.LANCZOS)
            buf = io.BytesIO()
            im.save(buf, format="PNG", optimize=True)
        out.append(write_bytes_atomic(Path(out_dir) / p.name, buf.getvalue()))
    return out


_REDIRECT = """<!doctype html>
<html lang='en'><head><meta charset='utf-8'><meta http-equiv='refresh' content='0; url=report/index.html'>
<title>pinpath run</title></head>
<body><p>The report of this run: <a href='report/index.html'>report/index.html</a>.</p></body></html>
"""


def zip_run(run_dir: Path, out_zip: Path) -> Path:
    """The run folder as ``out_zip``: entries under ``<run-id>/``, ``<run-id>/index.html`` first
    (it leads to ``report/index.html``), then the report, then the rest; ``share/``, temporary
    files and links are left out."""
    run_dir = Path(run_dir)
    rid = run_dir.name
    files = []
    for p in sorted(run_dir.rglob("*")):
        rel = p.relative_to(run_dir)
        if (rel.parts[0] in _SKIP or any(part in _SKIP for part in rel.parts) or p.is_symlink()
                or not p.is_file() or p.name.endswith(".tmp")):
            continue
        files.append(rel)
    first = [r for r in files if r.as_posix() == "report/index.html"]
    files = first + [r for r in files if r.parts[0] == "report" and r not in first] + \
        [r for r in files if r.parts[0] != "report"]
    with replacing(out_zip) as tmp:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
            if not (run_dir / "index.html").exists():
                z.writestr(f"{rid}/index.html", _REDIRECT)
            for rel in files:
                kind = zipfile.ZIP_STORED if rel.suffix.lower() in _STORED else zipfile.ZIP_DEFLATED
                z.write(run_dir / rel, f"{rid}/{rel.as_posix()}", compress_type=kind)
    return Path(out_zip)


def share_run(run_dir: Path, *, width: int = 900, limit: int = 5) -> Path:
    """Write ``share/summary.md``, ``share/figures/`` and ``share/<run-id>.zip`` inside the run
    folder; return the ``share`` folder."""
    run_dir = Path(run_dir).resolve()
    if not (run_dir / "manifest.json").is_file():
        raise BadParameter(f"{run_dir.name}: not a pinpath run (no manifest.json)")
    share = run_dir / "share"
    figs = resize_figures(headline_figures(run_dir, limit), share / "figures", width)
    write_text_atomic(share / "summary.md", summary_markdown(run_dir, [p.name for p in figs]))
    zip_run(run_dir, share / f"{run_dir.name}.zip")
    return share


# -- several runs ---------------------------------------------------------------------------
def render_compare_markdown(runs: Sequence[tuple]) -> str:
    """The claims of two or more runs side by side as GFM: one verdict (and measured figure)
    per run and claim, rows whose verdicts differ marked. ``runs`` as for ``render_compare``."""
    heads, rows = compare_rows(runs)
    scrub = Scrubber()
    ndiff = sum(r["differs"] for r in rows)
    head = ["id", "claim"] + [f"`{md_cell(h['run_id'], code=True).strip('`')}` ({md_cell(h['platform'])}, "
                              f"{md_cell(h['preset'])})" for h in heads] + ["differs"]
    body = []
    for r in rows:
        cells = []
        for c in r["cells"]:
            v = c["verdict"] or "not in this run"
            cells.append(md_cell(v) + (f" \u2014 {md_cell(scrub(c['measured']), limit=50)}" if c["measured"] else ""))
        mark = "**differs**" if r["differs"] else ""
        cid = f"**{md_cell(r['id'])}**" if r["differs"] else md_cell(r["id"])
        body.append([cid, md_cell(scrub(r["short"]), limit=60)] + cells + [mark])
    out = [f"### pinpath: {len(heads)} runs side by side", "",
           f"{len(rows)} claims; " + (f"**{ndiff} with verdicts that differ** between the runs." if ndiff
                                      else "the verdicts agree on every claim."), ""]
    out += _table(head, body)
    out += ["", scrub(regress.markdown(regress.check(runs)))]
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pinpath.report.share [RUN]``: share a run, print where the summary went."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        share = share_run(find_run(args[0] if args else None, OUTPUTS_DIR))
    except BadParameter as e:
        print(f"pinpath: {e}", file=sys.stderr)
        return 2
    rel = os.path.relpath(share, Path.cwd())
    print(f"{rel}/summary.md\n{rel}/{share.parent.name}.zip")
    return 0


if __name__ == "__main__":
    sys.exit(main())
