"""Share a run: a Markdown summary to paste into an issue comment, its headline figures at a
width that reads well there, and the whole run folder as one zip that opens offline.

``share_run(run_dir)`` writes, inside the run folder::

    share/summary.md        platform line, the verdicts counted, one claims table, what data is
                            missing, two figures, how to reproduce (about 40 lines)
    share/figures/*.png     those figures, about 900 px wide (to attach to the comment): every
                            verdict's figure (verdicts.png) and the first headline figure
    share/<run-id>.zip      <run-id>/ with report/, notebooks/, data/, figures/, manifest.json
                            (not share/); <run-id>/index.html leads to report/index.html

``render_compare_markdown(runs)`` is the Markdown form of ``html.render_compare``.
Command line: ``pinpath share [--inline] [RUN]`` (RUN: a run folder or run id; default ``outputs/latest``).
"""

from __future__ import annotations

import base64
import io
import math
import re
import zipfile
from pathlib import Path
from typing import Sequence
from urllib.parse import quote

import pandas as pd

from .. import layout
from ..errors import BadParameter
from ..atomic import replacing, write_bytes_atomic, write_text_atomic
from ..safeio import read_json
from . import regress
from .fmt import binary_size, cut_words, format_measured, verdict_sentence
from .html import JUDGED, Scrubber, compare_rows, device_words, reference_verdicts, verdict_word
from .rundata import RunData

__all__ = ["share_run", "summary_markdown", "render_compare_markdown", "zip_run", "resize_figures",
           "headline_figures", "lock_unlock_table", "md_cell", "HEADLINE_ORDER"]

#: notebooks whose first figure heads the summary, in this order (stem prefixes)
HEADLINE_ORDER = ("03_", "01_", "02_", "08_", "06_", "04_")
MAX_LINES = 80
MAX_FIGURES = 2
#: what a tracker comment holds (GitHub's limit); ``--inline`` beyond it is refused
COMMENT_CHARS = 65_536
#: widths tried for inline figures, widest first, until the summary fits a comment
INLINE_WIDTHS = (900, 760, 640, 520)
_LONE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")   # could open or close emphasis
_SKIP = {layout.SHARE, "__pycache__", ".ipynb_checkpoints"}
_TEMPORARY = re.compile(r"\.tmp$|\.partial\.ipynb$|^\.latest")       # written while a run runs: not final
_ODD = re.compile(r"[\\\x00-\x1f\x7f]")
_STORED = {".png", ".parquet", ".zip", ".gz", ".jpg", ".jpeg"}      # already compressed


# -- Markdown pieces --------------------------------------------------------------------------
def md_cell(value, *, code: bool = False, limit: int | None = None) -> str:
    """Text made safe for one GFM table cell: one line, pipes escaped, no raw HTML, no
    accidental emphasis or links. ``code``: as a code span (for call names)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    text = " ".join(str(value).split())
    if limit:
        text = cut_words(text, limit)
    if code:
        return "`" + text.replace("`", "'").replace("|", "\\|") + "`" if text else ""
    for ch in "\\`*[]<|~":
        text = text.replace(ch, "\\" + ch)
    return _LONE_UNDERSCORE.sub(r"\\_", text)    # memory_pool_allocate stays readable


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[int] = ()) -> list[str]:
    align = ["---:" if i in right else "---" for i in range(len(head))]
    return ["| " + " | ".join(head) + " |", "| " + " | ".join(align) + " |"] + \
        ["| " + " | ".join(r) + " |" for r in rows]


def md_code(value, *, in_table: bool = False) -> str:
    """``value`` as a Markdown code span that nothing in it can end: the fence is longer than
    any run of backticks inside, one line, pipes escaped inside a table cell."""
    text = " ".join(str(value).split()) or "?"
    runs = [len(m) for m in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if runs else ""
    if in_table:
        text = text.replace("|", "\\|")
    return f"{fence}{pad}{text}{pad}{fence}"


def _claims(run_dir: Path) -> tuple[pd.DataFrame | None, str]:
    """report/claims.csv, and why it could not be read ('' when it was)."""
    p = layout.path(run_dir, "claims")
    if not p.is_file():
        return None, f"{layout.rel('claims')} is missing"
    try:
        return pd.read_csv(p), ""
    except (ValueError, UnicodeDecodeError, OSError) as e:
        return None, f"{layout.rel('claims')} could not be read ({type(e).__name__})"


def _str(r: dict, key: str) -> str:
    v = r.get(key)
    return " ".join(v.split()) if isinstance(v, str) else ""


_GROUP = re.compile(r"\s*\[[^\]]*\]\s*$")     # a metric's group label, "[4 KiB d2h]": the table has no room


def _claims_rows(claims: pd.DataFrame, scrub: Scrubber, reference: dict | None = None) -> list[list[str]]:
    """The table's rows: id, claim, measured (value and interval), verdict; a claim this run
    cannot judge gets the committed reference's verdict beside its own."""
    rows = []
    for r in claims.to_dict("records"):
        measured = format_measured(r.get("measured"), r.get("low"), r.get("high"), _str(r, "unit")) or "\u2014"
        verdict = verdict_word(r.get("verdict"))
        vcell = f"**{verdict}**" if verdict == "does not hold" else md_cell(verdict)
        if _str(r, "reading") == "analogue":
            vcell += " (analogue)"
        ref = (reference or {}).get(regress.row_key(r)) if verdict not in JUDGED else None
        if ref is not None and verdict_word(ref.get("verdict")) in JUDGED:
            vcell += f"; reference: {md_cell(verdict_word(ref.get('verdict')))}"
        rows.append([f"**{md_cell(regress.row_key(r))}**", md_cell(scrub(_str(r, "short") or _str(r, "claim"))),
                     md_cell(scrub(measured.replace("(95 % CI ", "("))), vcell])     # the header says 95 % CI
    return rows


def _why_list(claims: pd.DataFrame, scrub: Scrubber) -> list[str]:
    """Each claim's why, whole, as a list item (a table cell would cut it or stretch the table);
    claims not applicable for one and the same reason (the host platform: most of them) share one item."""
    out, shared = [], {}
    for r in claims.to_dict("records"):
        why = _str(r, "why")
        if not why:
            continue
        if verdict_word(r.get("verdict")) == "not applicable":
            if why in shared:
                shared[why].append(md_cell(r.get("id")))
                continue
            shared[why] = ids = [md_cell(r.get("id"))]
            out.append((ids, why))
        else:
            out.append(([md_cell(r.get("id"))], why))
    return [f"- **{', '.join(ids)}**: {md_cell(scrub(why))}" + ("" if why.endswith(".") else ".") for ids, why in out]


def pays_markdown(run_dir: Path, man: dict) -> list[str]:
    """"Which policy pays" in a few lines: per direction, the cheapest policy at each size with
    its time and interval, and the break-even sizes (``pays``); [] where the run has no sweep."""
    from . import pays
    data = RunData.read(run_dir, names=pays.SOURCES)
    df = next((data.get(n) for n in pays.SOURCES if data.get(n) is not None), None)
    picks = pays.cheapest(df)
    if not picks:
        return []
    platform = str(man.get("platform", "?"))
    where = ("on the host platform (no GPU: the operating system's share only)" if platform == "host" else
             f"on {md_code(platform)} ({md_cell(device_words((man.get('runtime') or {}).get('device')) or 'an unnamed device')})")
    out = [f"**Which policy pays** {where}: the cheapest policy for pageable memory per copy, its time per "
           "transfer (95 % interval); \"tie\": the next one's interval overlaps.", ""]
    for d in sorted({p.direction for p in picks}):
        cells = []
        for p in (x for x in picks if x.direction == d):
            w = p.words()
            cells.append(f"{w['size']} `{p.policy}` {w['time']}" + ("" if p.sure else f", tie with `{p.runner_up}`"))
        out.append(f"- {d}: " + "; ".join(cells) + ".")
    evens = pays.break_evens(df, [p for p in picks if p.sure])
    if evens:
        out.append("- break-even: " + "; ".join(f"{d} `{a}` below about {binary_size(round(n))}, `{b}` above"
                                                for d, a, b, n in evens) + ".")
    out.append("- the policies are defined in CLAIMS.md and in the report's glossary (`report/index.html`).")
    return out + [""]


def _verdict_counts(claims: pd.DataFrame) -> str:
    verdicts = [verdict_word(v) for v in claims.verdict]
    readings = claims["reading"] if "reading" in claims.columns else None
    return f"{len(claims)} claims: " + verdict_sentence(verdicts, readings)


def _api_stats(run_dir: Path) -> pd.DataFrame | None:
    """The run's api_stats data set, or None."""
    return RunData.read(run_dir, names=("api_stats",)).get("api_stats")


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
            counted = mine.counted.fillna(False).astype(bool) if "counted" in mine else pd.Series(False, index=mine.index)
            run = f"this run ({platform})" if platform else "this run"
            parts += [(run, mine[~counted])] + ([(f"{run}, re-locks counted by pinpath", mine[counted])] if counted.any() else [])
        for source, df in parts:
            for r in df.to_dict("records"):
                avg = float(r["AverageNs"])
                rows.append(["yes" if pinned else "no", md_cell(source), md_cell(r["Name"], code=True),
                             f"{int(r['Calls'])}", f"{int(r['TotalDurationNs'])}",
                             f"{int(avg)} ({format_measured(avg, unit='ns')})", f"{float(r['Percentage']):.2f}"])
    return rows


def headline_figures(run_dir: Path, limit: int = MAX_FIGURES, order: Sequence[str] = HEADLINE_ORDER, *,
                     paths: Sequence[Path] | None = None) -> list[Path]:
    """The first figure of the notebooks named by ``order`` (stem prefixes), then of the
    others, at most ``limit`` (``paths``: choose among these instead of the run's figures)."""
    firsts: dict[str, Path] = {}
    for p in sorted(paths if paths is not None else layout.path(run_dir, "figures_dir").glob("*.png")):
        firsts.setdefault(p.name.split("-", 1)[0], p)
    def rank(stem: str) -> tuple[int, str]:
        return next((i for i, pre in enumerate(order) if stem.startswith(pre)), len(order)), stem
    return [firsts[s] for s in sorted(firsts, key=rank)][:limit]


def missing_data(man: dict) -> list[str]:
    """What a run lacks, one sentence each: data sets that could not be read, notebooks that
    did not run to the end (their data may be missing)."""
    out = []
    bad = [str(b) for b in (man.get("unreadable_data") or [])]
    if bad:
        out.append(f"Data that could not be read (no claim is judged on it): {', '.join(bad)}.")
    trouble = [f"{stem} ({(v or {}).get('status', 'unknown')})" for stem, v in (man.get("notebooks") or {}).items()
               if (v or {}).get("status") != "ok"]
    if trouble:
        out.append(f"Notebooks that did not run to the end (their data may be missing): {', '.join(trouble)}.")
    return out


def _small_png(path: Path, width: int) -> bytes:
    """``path`` at most ``width`` px wide, in 64 colours: a figure small enough to inline."""
    from PIL import Image
    with Image.open(path) as im:
        im = im.convert("RGB")
        if im.width > width:
            im = im.resize((width, max(1, round(im.height * width / im.width))), Image.Resampling.LANCZOS)
        buf = io.BytesIO()
        im.quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def _image(path: Path, inline_width: int | None) -> str:
    alt = md_cell(path.stem.replace("_", " ").replace("-", ": ", 1))
    if inline_width:
        return f"![{alt}](data:image/png;base64,{base64.b64encode(_small_png(path, inline_width)).decode()})"
    return f"![{alt}](figures/{quote(path.name)})"


def summary_markdown(run_dir: Path, figures: Sequence[str | Path] | None = None, *, inline: bool = False) -> str:
    """``share/summary.md`` as text: GFM that fits an issue comment's column (under
    ``MAX_LINES`` lines; which policy pays; one narrow table of id, claim, measured, verdict;
    each claim's why whole in a list below it; at most ``MAX_FIGURES`` figures). ``figures``:
    names in ``share/figures/`` or paths; ``inline``: the figures as data URIs instead of files
    to attach, made smaller (then fewer, the first kept) until the whole fits ``COMMENT_CHARS``
    (refused, with ``BadParameter``, where even one does not). Every name taken from the run is escaped; run id,
    preset, platform and host are code spans that nothing in them can end."""
    run_dir = Path(run_dir)
    paths = [Path(f) if isinstance(f, Path) else layout.path(run_dir, "share_figures") / str(f)
             for f in (figures if figures is not None else headline_figures(run_dir, paths=_figure_files(run_dir)))]
    paths = paths[:MAX_FIGURES]
    if not inline or not paths:
        return _summary(run_dir, paths, None)
    for n in range(len(paths), 0, -1):          # every figure, smaller; then fewer, the first kept
        for width in INLINE_WIDTHS:
            text = _summary(run_dir, paths[:n], width)
            if len(text) <= COMMENT_CHARS:
                return text
    raise BadParameter(f"summary.md with even one figure inline is {len(text):,} characters at "
                       f"{INLINE_WIDTHS[-1]} px, more than the {COMMENT_CHARS:,} a tracker comment holds: "
                       "write it without --inline and attach the figures (share/figures/)")


def _summary(run_dir: Path, paths: Sequence[Path], inline_width: int | None) -> str:
    scrub = Scrubber(run_dir)
    man = scrub.tree(read_json(layout.path(run_dir, "manifest"), what="manifest"))
    git, rt = man.get("git") or {}, man.get("runtime") or {}
    commit = str(git.get("commit") or "unknown")
    judged = str((man.get("judged_by") or {}).get("commit") or commit)
    dirty = git.get("dirty")
    state = " (it had uncommitted changes)" if dirty else ("" if dirty is False else " (its state is unknown)")
    platform, preset = str(man.get("platform", "?")), str(man.get("preset", "?"))
    host = (man.get("runner") or {}).get("host") or (man.get("machine") or {}).get("hostname")
    driver = rt.get("nvidia_driver") or rt.get("driver_version")
    device = device_words(rt.get("device"))
    out = [f"### pinpath run {md_code(man.get('run_id') or run_dir.name)}", "",
           f"Platform {md_code(platform)}" + (f" ({md_cell(device)})" if device.startswith("no GPU")
                                               else f" on {md_cell(device or 'an unnamed device')}")
           + (f", driver {md_cell(driver)}" if driver else "") + (f", host {md_code(host)}" if host else "")
           + f"; preset {md_code(preset)}; run status {md_code(man.get('status', '?'))}.", ""]
    claims, why_not = _claims(run_dir)
    out += pays_markdown(run_dir, man)
    if claims is not None and len(claims):
        label, reference = reference_verdicts(run_dir, man)
        out += [f"**{_verdict_counts(claims)}.**", ""]
        out += _table(["id", "claim", "measured here (95 % CI)", "verdict"], _claims_rows(claims, scrub, reference))
        if label and any("; reference: " in r[3] for r in _claims_rows(claims, scrub, reference)):
            out += ["", f"*reference: the verdict {md_cell(label)}, for a claim this run cannot judge.*"]
        whys = _why_list(claims, scrub)
        if whys:
            out += ["", "Why, claim by claim:", ""] + whys
    else:
        out += [f"No claims table in this run ({why_not or 'report/claims.csv is empty'})."]
    notes = missing_data(man)
    if notes:
        out += [""] + [md_cell(n) for n in notes]
    if paths:
        out += ["", " ".join(_image(p, inline_width) for p in paths)]
        if not inline_width:
            out += ["", "*The figures are files in `share/figures/`: attach them to the comment (drag them in), "
                        "or write this summary with `--inline` where the tracker accepts data URIs.*"]
    out += ["", f"Reproduce: {md_code(f'git checkout {commit}')}{state}, then "
                + md_code(f"make reproduce PRESET={preset} PLATFORM={platform}")
                + ("." if judged == commit else
                   f". These data were measured at that commit and judged by {md_code(judged)} "
                   f"(`python -m pinpath finalize <run>` judges them again)."),
            "", f"The whole run, offline: `{md_cell(run_dir.name)}.zip` (unzip it, then open `report/index.html`)."]
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


def _entry(rid: str, rel: Path) -> str:
    """A zip entry name: ``<run-id>/`` then the run's relative path, ``/``-separated; a
    backslash or control character in a name becomes ``_`` (an unzipper on Windows would take
    a backslash for a folder)."""
    return "/".join(_ODD.sub("_", part) for part in (rid, *rel.parts))


def zip_run(run_dir: Path, out_zip: Path) -> Path:
    """The run folder as ``out_zip``: entries under ``<run-id>/``, ``<run-id>/index.html`` first
    (it leads to ``report/index.html``), then the report, then the rest; ``share/``, temporary
    files and links are left out."""
    run_dir = Path(run_dir)
    rid = run_dir.name
    files = []
    for p in sorted(run_dir.rglob("*")):
        rel = p.relative_to(run_dir)
        if (any(part in _SKIP for part in rel.parts) or p.is_symlink() or not p.is_file()
                or _TEMPORARY.search(p.name)):
            continue
        files.append(rel)
    first = [r for r in files if r.as_posix() == layout.rel("index")]
    files = first + [r for r in files if r.parts[0] == layout.rel("report_dir") and r not in first] + \
        [r for r in files if r.parts[0] != layout.rel("report_dir")]
    with replacing(out_zip) as tmp:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
            if not layout.path(run_dir, "redirect").exists():
                z.writestr(_entry(rid, Path(layout.rel("redirect"))), _REDIRECT)
            for rel in files:
                kind = zipfile.ZIP_STORED if rel.suffix.lower() in _STORED else zipfile.ZIP_DEFLATED
                z.write(run_dir / rel, _entry(rid, rel), compress_type=kind)
    return Path(out_zip)


def _readable_images(paths: Sequence[Path]) -> list[Path]:
    """The PNGs among ``paths`` that open (a damaged figure is left out, not a traceback)."""
    from PIL import Image
    good = []
    for p in paths:
        if p.is_symlink() or not p.is_file():    # a FIFO would block, a link leads elsewhere
            continue
        try:
            with Image.open(p) as im:
                im.verify()
            good.append(p)
        except (OSError, ValueError, SyntaxError):
            continue
    return good


def _figure_files(run_dir: Path) -> list[Path]:
    """The run's figures; a kept reference's shared ones where it keeps no ``figures/``."""
    source = layout.path(run_dir, "figures_dir")
    source = source if source.is_dir() else layout.path(run_dir, "share_figures")
    return sorted(p for p in source.glob("*.png") if p.name != VERDICTS_PNG)


#: the figure of every verdict (``figures.verdicts``), first in the summary
VERDICTS_PNG = "verdicts.png"


def verdicts_figure(run_dir: Path, out: Path, width: int = 900) -> Path | None:
    """Every judged claim's figure (value, interval, threshold: what its verdict judges) from
    report/claims.csv as ``out``, ``width`` px wide; None where no claim has a figure."""
    claims, _ = _claims(Path(run_dir))
    if claims is None or not len(claims):
        return None
    import matplotlib.pyplot as plt
    from . import figures
    figures.theme()
    fig = figures.verdicts(claims, title="each verdict's figure: the measured value (dot) and its 95 % interval "
                                         "(bar) against the claim's threshold (dashed); green: where the claim holds")
    if fig is None:
        return None
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=width / fig.get_figwidth())
    plt.close(fig)
    return write_bytes_atomic(out, buf.getvalue())


def share_run(run_dir: Path, *, width: int = 900, limit: int = MAX_FIGURES, inline: bool = False) -> Path:
    """Write ``share/summary.md``, ``share/figures/`` and ``share/<run-id>.zip`` inside the run
    folder; return the ``share`` folder. ``inline``: the summary's figures as data URIs."""
    run_dir = Path(run_dir).resolve()
    if not layout.path(run_dir, "manifest").is_file():
        raise BadParameter(f"{run_dir.name}: not a pinpath run (no {layout.MANIFEST})")
    share = layout.path(run_dir, "share_dir")
    pngs = _figure_files(run_dir)
    heads = _readable_images([p for p in pngs if p in headline_figures(run_dir, 99, paths=pngs)])
    verdicts = verdicts_figure(run_dir, layout.path(run_dir, "share_figures") / VERDICTS_PNG, width)
    figs = ([verdicts] if verdicts else []) + resize_figures(
        headline_figures(run_dir, limit - bool(verdicts), paths=heads), layout.path(run_dir, "share_figures"), width)
    for old in layout.path(run_dir, "share_figures").glob("*.png"):
        if old not in figs:
            old.unlink()                  # figures of an earlier share that the summary no longer shows
    write_text_atomic(layout.path(run_dir, "summary"), summary_markdown(run_dir, figs, inline=inline))
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
