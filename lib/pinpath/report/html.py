"""Render executed notebooks, the run's index page and the comparison of runs as HTML that
opens with no network (no CDN scripts).

Pages come from the Jinja2 templates in ``templates/`` with autoescape on: every text read
from a run folder (run id, preset, platform, errors, manifest values, claim texts) is
escaped, and absolute paths of this machine are rewritten relative to the run folder or the
checkout before anything is written. The ``*_section`` functions return ``markupsafe.Markup``
(trusted HTML); any other string given to a page as a section body is escaped as text.
Every file is written atomically (``atomic.write_text_atomic``).
"""

from __future__ import annotations

import base64
import math
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import jinja2
from markupsafe import Markup

from .. import layout
from ..paths import OUTPUTS_DIR, PROJECT_ROOT
from ..units import fmt_ns
from ..atomic import write_text_atomic
from . import pays, regress, strip
from .fmt import (READINGS, _exact_binary, _isnum, binary_size, format_measured, format_repeats, format_threshold,
                  verdict_groups)

__all__ = ["render_notebook", "render_index", "restate_conclusions", "external_scripts", "claims_section", "figures_section",
           "fidelity_section", "render_compare", "format_measured", "format_threshold", "verdict_word",
           "binary_size", "Scrubber", "VERDICTS", "STATUSES", "compare_rows"]

#: the verdict words, in the order the report counts them, with their CSS class
VERDICTS = {"holds": "v-holds", "does not hold": "v-nothold", "inconclusive": "v-inconclusive",
            "not applicable": "v-na", "not measured": "v-nm"}
_OLD_VERDICTS = {"not applicable here": "not applicable"}   # claims.csv of runs before the five words

#: notebook statuses of the manifest: CSS class and what the word means for a reader
STATUSES = {
    "ok": ("s-ok", "ran to the end"),
    "failed": ("s-failed", "a cell raised an error"),
    "leaked": ("s-leaked", "ran, but left locked memory or allocations behind"),
    "dead_kernel": ("s-dead", "the kernel died (crashed or was killed)"),
    "interrupted": ("s-interrupted", "stopped before the end (signal or user)"),
    "pending": ("s-pending", "not started"),
    "running": ("s-running", "was running when this page was written"),
    "stale": ("s-stale", "left over from a run that stopped; may be out of date"),
    "incomplete": ("s-pending", "some notebooks have not run: resume the run to finish it"),
}
_PROBLEM = ("failed", "leaked", "dead_kernel", "interrupted", "stale")

_SCRIPT = re.compile(r"<script\b[^>]*>.*?</script>", re.IGNORECASE | re.DOTALL)
_NET = re.compile(r"(src|href)=[\"']?(https?:)?//|import\([\"']https?://|[\"']https?://[^\"']*\.m?js[\"']",
                  re.IGNORECASE)
_LINK = re.compile(r"<link\b[^>]*href=[\"']?(https?:)?//[^>]*>", re.IGNORECASE)

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("pinpath.report", "templates"),
    autoescape=True,                      # every template here is HTML
    undefined=jinja2.StrictUndefined,
    trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
)

_NAME_JOINT = re.compile(r"(?<=[A-Za-z0-9])([_/])(?=[A-Za-z0-9])")


def soft_breaks(text) -> Markup:
    """``text`` escaped, with a line-break opportunity after each ``_`` or ``/`` inside a name
    (``memory_pool_allocate``): a narrow column wraps a name at its joints, never mid-word."""
    return Markup(_NAME_JOINT.sub(r"\1<wbr>", str(Markup.escape(text))))


_ENV.filters["soft"] = soft_breaks


# -- paths of this machine ----------------------------------------------------------------------
class Scrubber:
    """Rewrite absolute paths of this machine in text: the run folder's become relative to it,
    the checkout's relative to the checkout, installed packages' start at ``site-packages/``,
    the home folder becomes ``~`` and the temporary folder ``$TMPDIR``."""

    _SITE = re.compile(r"(?<![\w.-])/[^\s'\"<>:]*?/(site|dist)-packages/")

    def __init__(self, run_dir: str | os.PathLike | None = None) -> None:
        roots: list[tuple[str, str]] = []
        if run_dir is not None:
            for p in {Path(run_dir).absolute(), Path(run_dir).resolve()}:
                roots.append((str(p), ""))
                roots.append((str(p.parent), "../"))     # outputs/: the run's siblings
        for p in {Path(PROJECT_ROOT).absolute(), Path(PROJECT_ROOT).resolve()}:
            roots.append((str(p), ""))
        checkout = str(Path(PROJECT_ROOT).resolve()) + "/"
        prefix = str(Path(sys.prefix).resolve())
        # a virtual environment outside the checkout (inside it, it is relative like the rest)
        if prefix not in ("/", "/usr", "/usr/local") and not (prefix + "/").startswith(checkout):
            roots.append((sys.prefix, "<python>/"))
        roots.append((str(Path.home()), "~/"))
        roots.append((tempfile.gettempdir(), "$TMPDIR/"))
        # longest first, so a run folder wins over the checkout that holds it
        roots = [(r.rstrip("/"), s) for r, s in roots if r and r.rstrip("/")]
        self.roots = sorted(dict(roots).items(), key=lambda rs: -len(rs[0]))
        alt = "|".join(re.escape(r) for r, _ in self.roots)
        self._re = re.compile(rf"(?<![\w.-])({alt})(/|(?![\w.-]))")

    def __call__(self, text: str) -> str:
        if not isinstance(text, str) or "/" not in text:
            return text
        text = self._SITE.sub(lambda m: f"{m.group(1)}-packages/", text)

        def sub(m: re.Match) -> str:
            prefix = dict(self.roots)[m.group(1)]
            if m.group(2) == "/":
                return prefix or ""
            return prefix.rstrip("/") or "."
        return self._re.sub(sub, text)

    def tree(self, value: Any) -> Any:
        """The same, through dicts, lists and tuples."""
        if isinstance(value, Markup):
            return value
        if isinstance(value, str):
            return self(value)
        if isinstance(value, Mapping):
            return {self(str(k)): self.tree(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.tree(v) for v in value]
        return value


# -- numbers in words ---------------------------------------------------------------------------
def verdict_word(v) -> str:
    """One of the five verdict words (older spellings mapped; anything else kept as text)."""
    text = "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v).strip()
    return _OLD_VERDICTS.get(text, text) or "not measured"


def device_words(device) -> str:
    """The runtime's device for a reader: the host runtime's "none: host platform (...)" reads
    "no GPU: host platform (...)"."""
    text = _text(device)
    return "no GPU: " + text.split(":", 1)[1].strip() if text.lower().startswith("none:") else text


# -- page parts ---------------------------------------------------------------------------------
def external_scripts(text: str) -> list[str]:
    """Script blocks and stylesheet links of a page that would fetch something from the network."""
    return [m.group(0)[:120] for m in _SCRIPT.finditer(text) if _NET.search(m.group(0))] + \
        [m.group(0) for m in _LINK.finditer(text)]


def _text(x) -> str:
    """A cell of a frame as text ('' for missing)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return str(x)


_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,199}")    #: a notebook name a link may be made of (no "javascript:")
#: where a claims.csv with readings keeps the sentence on the intervals that decided (shown under the reason)
_INTERVAL_COLUMNS = ("rule_detail", "interval", "decided")


#: the committed reference whose verdicts stand beside the claims a run cannot judge
REFERENCE_DIR = OUTPUTS_DIR / "reference" / "h200"
#: verdicts that judge a claim; the others say it was not judged here
JUDGED = ("holds", "does not hold", "inconclusive")


def reference_verdicts(run_dir: Path | None, manifest: Mapping | None,
                       ref_dir: Path | None = None) -> tuple[str, dict[str, dict]]:
    """The committed reference's label ("from the committed reference (cuda, NVIDIA H200,
    commit fd7ef95)") and its claims by id, for a run on another platform ('' and {} for the
    reference itself, a run on the reference's platform, or where no reference is kept)."""
    ref_dir = Path(ref_dir or REFERENCE_DIR)
    try:
        import json
        import pandas as pd
        ref_man = json.loads(layout.path(ref_dir, "manifest").read_text())
        if run_dir is not None and Path(run_dir).resolve() == ref_dir.resolve():
            return "", {}
        if manifest is not None and str(manifest.get("platform")) == str(ref_man.get("platform")):
            return "", {}
        ref = pd.read_csv(layout.path(ref_dir, "claims"))
    except (OSError, ValueError, UnicodeDecodeError):
        return "", {}
    device = (ref_man.get("runtime") or {}).get("device") or "an unnamed device"
    commit = str((ref_man.get("judged_by") or ref_man.get("git") or {}).get("commit") or "unknown")[:7]
    label = f"from the committed reference ({ref_man.get('platform', '?')}, {device}, commit {commit})"
    return label, {str(r["id"]): r for r in ref.to_dict("records")}


def _ref_cell(rec: Mapping | None) -> dict | None:
    if rec is None:
        return None
    v = verdict_word(rec.get("verdict"))
    if v not in JUDGED:
        return None
    return {"verdict": v, "vclass": VERDICTS.get(v, "v-other"), "why": _text(rec.get("why")),
            "measured": format_measured(rec.get("measured"), rec.get("low"), rec.get("high"), _text(rec.get("unit")))}


_INFO = re.compile(r"^measured here for information: (.+?)(?: -> |; |$)")


def _for_information(detail: str) -> str:
    """What a claim it cannot judge measured here anyway (claims.csv's detail opens with it):
    "register / query of pageable memory: 0.0144x (95 % CI 0.0139–0.0166) [4 KiB]"; '' where
    nothing was."""
    m = _INFO.match(detail)
    return "" if not m or m.group(1).rstrip().endswith(")") and "not measured (" in m.group(1) else m.group(1)


def _claim_rows(claims_df, scrub: Scrubber, linkable: Iterable[str] | None,
                reference: Mapping[str, Mapping] | None = None) -> list[dict]:
    link = None if linkable is None else set(linkable)
    rows = []
    for rec in claims_df.to_dict("records"):
        g = lambda k: rec.get(k)   # noqa: E731 - columns of older claims.csv may be missing
        verdict = verdict_word(g("verdict"))
        nb = _text(g("notebook"))
        new = _text(g("reading")) != ""        # claims.csv with a reading: "why" is the data's own reason
        rows.append({
            "reading": READINGS.get(_text(g("reading")), _text(g("reading"))), "subject": _text(g("subject")),
            "analogue": _text(g("analogue")),
            "interval": next((_text(g(k)) for k in _INTERVAL_COLUMNS if _text(g(k))), "") if new else "",
            "id": _text(g("id")), "who": _text(g("who")), "short": _text(g("short")),
            "claim": _text(g("claim")), "thread": _text(g("thread")), "metric": _text(g("metric")),
            "measured": format_measured(g("measured"), g("low"), g("high"), _text(g("unit"))),
            "spread": format_repeats(g("n_repeats"), g("repeat_unit"), g("between_spread")),
            "numeric": _isnum(g("measured")),
            "bar": format_threshold(g("comparison"), g("threshold"), _text(g("unit"))),
            "verdict": verdict, "vclass": VERDICTS.get(verdict, "v-other"),
            "why": _text(g("why")), "detail": _text(g("detail")), "rule": _text(g("rule")),
            "notebook": nb, "nb_href": f"{nb}.html" if _PLAIN.fullmatch(nb) and (link is None or nb in link) else "",
            "platform": _text(g("platform")),
            "ref": _ref_cell((reference or {}).get(_text(g("id")))) if verdict not in JUDGED else None,
            "strip": strip.svg(rec) if verdict in JUDGED else "",
            "info": _for_information(_text(g("detail"))) if verdict not in JUDGED else "",
        })
    return [scrub.tree(r) for r in rows]


class _ClaimsHTML(Markup):
    """The claims table's HTML, remembering its frame: ``render_index`` renders it again
    knowing which notebook pages exist (a link to a missing page is never written)."""

    claims = None


def claims_section(claims_df, *, linkable: Iterable[str] | None = None,
                   reference: tuple[str, Mapping] = ("", {})) -> Markup:
    """The claims table: claim, the thread's figure, the measured figure with its interval,
    the verdict (coloured) and why, with the rule and other readings beneath.

    ``linkable``: the notebook stems that have an HTML page (None: link every notebook;
    ``render_index`` fills it in). ``reference``: (label, claims by id) of the committed
    reference, whose verdict is shown beside each claim this run cannot judge."""
    rows = _claim_rows(claims_df, Scrubber(), linkable, reference[1])
    groups = verdict_groups([r["verdict"] for r in rows],
                            [r["reading"] and next((k for k, v in READINGS.items() if v == r["reading"]), r["reading"])
                             for r in rows])
    summary = [(label, [(w, VERDICTS.get(w, "v-other"), n) for w, n in c.items() if n]) for label, c in groups]
    out = _ClaimsHTML(_ENV.get_template("_claims.html").render(rows=rows, summary=summary, ref_label=reference[0]))
    out.claims = claims_df
    return out


def glance_section(claims_df, reference: tuple[str, Mapping] = ("", {})) -> Markup:
    """Every claim named with its verdict, each linked to its row of the claims table: what a
    reader sees first. Claims this run cannot judge show the reference's verdict, labelled."""
    rows = _claim_rows(claims_df, Scrubber(), (), reference[1])
    return Markup(_ENV.get_template("_glance.html").render(rows=rows, ref_label=reference[0]))


def pays_section(run_dir: Path, manifest: Mapping) -> Markup:
    """Which policy pays: per direction and size, the cheapest policy and its interval, the
    runner-up, the break-even sizes (``pays``), computed from the run's policy sweep."""
    from .rundata import RunData
    data = RunData.read(Path(run_dir), names=pays.SOURCES)
    df = next((data.get(n) for n in pays.SOURCES if data.get(n) is not None), None)
    picks = pays.cheapest(df)
    runtime = manifest.get("runtime") or {}
    ctx = {"platform": _text(manifest.get("platform")), "device": device_words(runtime.get("device")),
           "rows": [p.words() for p in picks],
           "evens": [{"direction": d, "below": a, "above": b, "size": binary_size(round(n))}
                     for d, a, b, n in pays.break_evens(df, [p for p in picks if p.sure])],
           "prepared": [p for p in pays.PREPARED[:1] if any(p in x.prepared for x in picks)]}
    return Markup(_ENV.get_template("_pays.html").render(**ctx))


#: what the report's words mean (the glossary at the end of the index)
GLOSSARY = (
    ("d2h, h2d", "the direction of a copy: device to host, host to device."),
    ("lock, pin, register", "making host memory non-pageable so the device can copy it by DMA "
     "(cudaHostRegister / hipHostRegister / hsa_amd_memory_lock); unlock undoes it."),
    ("staging", "copying through a pinned buffer of the runtime's own instead of the user's memory."),
    ("grant", "giving the device access to a staging buffer (HSA's agents_allow_access)."),
    ("re-lock path", "what a runtime that always locks pays on memory already locked: a lock that is "
     "refused or granted again, and no unlock."),
    ("braces", "the timed region of C12's three cases in the thread: which calls the thread's "
     "figures enclose (lock + copy, with or without the wait); C12a and C12b are its two readings."),
    ("as meant", "the claim measured on the runtime it is about."),
    ("by an analogue", "the claim's mechanism measured on this platform's runtime (e.g. CUDA's register for "
     "HSA's lock); the verdict is about the analogue."),
    ("holds / does not hold", "the whole 95 % interval lies on one side of the claim's threshold."),
    ("inconclusive", "the interval straddles the threshold, or too few repeats."),
    ("not applicable", "this platform has no such mechanism, so the claim cannot be judged here."),
    ("not measured", "the notebook that measures it did not run or left no data."),
    ("95 % CI", "the bootstrap interval over independent repeats."),
)


def glossary_section(claims_href: str = "") -> Markup:
    """The glossary: the report's words and the nine policies, with links to CLAIMS.md
    (``claims_href``, where the report keeps a copy) and to the thread."""
    return Markup(_ENV.get_template("_glossary.html").render(
        terms=GLOSSARY, policies=list(pays.POLICY_WORDS.items()), claims_href=claims_href, thread_href=THREAD_URL))


def keep_claims_md(report: Path) -> str:
    """A copy of the checkout's CLAIMS.md in ``report/`` (what the claims and rules were when the
    run was judged; it travels with the zip); its link from the index, '' where there is none."""
    source = Path(PROJECT_ROOT) / "CLAIMS.md"
    target = Path(report) / "CLAIMS.md"
    if not source.is_file() or target.is_symlink():
        return ""
    write_text_atomic(target, source.read_text())
    return "CLAIMS.md"


#: the public thread the claims come from
THREAD_URL = "https://github.com/ROCm/aomp/issues/160"


def _headline_figures(run_dir: Path, per_notebook: int) -> list[Path]:
    by_stem: dict[str, list[Path]] = {}
    figs = layout.path(run_dir, "figures_dir")
    if not figs.is_dir():
        figs = layout.path(run_dir, "share_figures")       # a committed reference keeps only the shared ones
    for p in sorted(figs.glob("*.png")):
        by_stem.setdefault(p.name.split("-", 1)[0], []).append(p)
    return [p for paths in by_stem.values() for p in paths[:per_notebook]]


def figures_section(run_dir: Path, per_notebook: int = 1, *, embed: bool = True) -> Markup:
    """The first figure(s) of each notebook, each linked to its notebook's page where there is
    one. ``embed``: the PNGs inside the page (it needs no other file); else relative links
    ``../figures/NAME.png`` (the page must stay in the run folder's ``report/``)."""
    run_dir = Path(run_dir)
    figs = []
    for p in _headline_figures(run_dir, per_notebook):
        stem = p.name.split("-", 1)[0]
        src = (f"data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}" if embed
               else Path(os.path.relpath(p.absolute(), layout.path(run_dir, "report_dir").absolute())).as_posix())
        page = layout.path(run_dir, "page", stem, check=False)
        figs.append({"src": src, "name": p.stem, "stem": stem, "href": f"{stem}.html" if page.is_file() else ""})
    return Markup(_ENV.get_template("_figures.html").render(figures=figs))


def fidelity_section(fidelity_df) -> Markup:
    """``report/fidelity.csv``: each quantity timed through Python beside a native C timing."""
    rows = []
    names = {"platform": "platform", "kind": "memory kind", "backing": "backing", "quantity": "quantity"}
    same = {c: _text(fidelity_df[c].iloc[0]) for c in names
            if c in fidelity_df.columns and len(fidelity_df) and fidelity_df[c].nunique(dropna=False) == 1}
    for rec in fidelity_df.to_dict("records"):
        py, nat, ratio = rec.get("python_ns"), rec.get("native_ns"), rec.get("ratio")
        rows.append({
            "quantity": _text(rec.get("quantity")), "platform": _text(rec.get("platform")),
            "kind": _text(rec.get("kind")), "backing": _text(rec.get("backing")),
            "size": binary_size(rec["nbytes"]) if _isnum(rec.get("nbytes")) else _text(rec.get("nbytes")),
            "python": fmt_ns(py) if _isnum(py) else "",
            "native": fmt_ns(nat) if _isnum(nat) else "",
            "ratio": format_measured(ratio, unit="x") if _isnum(ratio) else _text(ratio),
            "null": fmt_ns(rec.get("null_call_ns")) if _isnum(rec.get("null_call_ns")) else "",
        })
    return Markup(_ENV.get_template("_fidelity.html").render(
        rows=Scrubber().tree(rows), ratio_head="Python \u00f7 native", hide=list(same),
        caption=Scrubber()(", ".join(f"{names[c]} {v}" for c, v in same.items()))))


# -- the manifest as a tree of tables -----------------------------------------------------------
def _leaf(key: str, value, parent: str = "") -> str:
    if value is None:
        return "not installed" if parent == "packages" else "\u2014"
    if isinstance(value, bool):
        return "yes" if value else "no"
    k = key.lower()
    if _isnum(value) and not isinstance(value, bool):
        if k.endswith("nbytes") and float(value) >= 1024:
            return f"{value} ({binary_size(value)})"
        if k.endswith("_ns"):
            return fmt_ns(value)
        if k.endswith("duration_s"):
            return f"{float(value):.1f} s"
    return str(value)


def _tree(key: str, value, depth: int = 0, parent: str = "") -> dict:
    """{'text': ...} or {'rows': [(key, node)]}: what the manifest macro draws."""
    if isinstance(value, Mapping):
        if not value:
            return {"text": "(none)"}
        return {"rows": [(str(k), _tree(str(k), v, depth + 1, key)) for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        if all(not isinstance(v, (Mapping, list, tuple)) for v in value):
            if key.upper().endswith("NBYTES") and all(_isnum(v) for v in value):
                return {"text": ", ".join(binary_size(v) if _exact_binary(v) else f"{v} B ({binary_size(v)})"
                                          for v in value)}
            return {"text": ", ".join(_leaf(key, v) for v in value) or "(none)"}
        if all(isinstance(v, (list, tuple)) and len(v) == 2 for v in value):
            return {"rows": [(str(a), _tree(str(a), b, depth + 1)) for a, b in value]}
        return {"rows": [(str(i), _tree(key, v, depth + 1)) for i, v in enumerate(value)]}
    return {"text": _leaf(key, value, parent)}


_MANIFEST_ORDER = ("git", "runtime", "runtime_selection", "harness_ns", "machine", "parameters", "packages")
_MANIFEST_TITLES = {"git": "code (git)", "runtime": "runtime and device", "runtime_selection": "runtime selection",
                    "harness_ns": "the harness's own cost", "machine": "machine", "parameters": "parameters per notebook",
                    "packages": "package versions"}
_MANIFEST_SUMMARY = ("run_id", "preset", "platform", "status", "start", "end", "duration_s")


def _manifest_blocks(manifest: Mapping) -> tuple[list[tuple[str, str]], list[dict]]:
    head = [(k, _leaf(k, manifest[k])) for k in _MANIFEST_SUMMARY if k in manifest]
    keys = [k for k in _MANIFEST_ORDER if k in manifest]
    keys += [k for k in manifest if k not in keys and k not in _MANIFEST_SUMMARY and k != "notebooks"]
    return head, [{"key": k, "title": _MANIFEST_TITLES.get(k, k), "node": _tree(k, manifest[k])} for k in keys]


# -- pages -------------------------------------------------------------------------------------
def _section_body(body) -> Markup:
    """A section body: ``Markup`` as given, anything else escaped as text."""
    return body if isinstance(body, Markup) else Markup("<p>{}</p>").format(str(body))


def _read_csv(path: Path):
    import pandas as pd
    return pd.read_csv(path, keep_default_na=True) if path.is_file() else None


def _read_csv_or_none(path: Path, unreadable: list[str]):
    """``_read_csv``; a file that cannot be read is added to ``unreadable`` (and is None)."""
    try:
        return _read_csv(path)
    except (ValueError, UnicodeDecodeError, OSError):
        unreadable.append(layout.rel("report", name=path.name, check=False))
        return None


def render_index(run_dir: Path, manifest: dict, extra_sections: Sequence[tuple[str, Any]] | None = None, *,
                 claims=None) -> Path:
    """Write ``report/index.html`` and return its path.

    The page: the run in one line, a banner for notebooks in trouble, the claims (``claims``,
    a claims frame, or else ``report/claims.csv``), the fidelity of the Python timings
    (``report/fidelity.csv``, when present), the headline figures, ``extra_sections``, each
    notebook's status (linked only where its HTML exists) and the manifest in collapsible blocks.

    ``extra_sections``: (title, body) pairs; a body that is ``Markup`` (what the ``*_section``
    functions return) goes in as HTML, any other text is escaped. A pair titled ``Claims``,
    ``Fidelity`` or ``Headline figures`` replaces that standard section in place.
    """
    run_dir = Path(run_dir)
    scrub = Scrubber(run_dir)
    report = layout.path(run_dir, "report_dir")
    nbs = manifest.get("notebooks", {}) or {}
    pages = {p.stem for p in report.glob("*.html")} if report.is_dir() else set()

    sections: dict[str, Markup] = {}
    unreadable = [str(x) for x in (manifest.get("unreadable_data") or [])]
    if claims is None:
        claims = _read_csv_or_none(layout.path(run_dir, "claims"), unreadable)
    reference = reference_verdicts(run_dir, manifest)
    has_claims = claims is not None and len(claims)
    if has_claims:
        sections["At a glance"] = glance_section(claims, reference)
    sections["Which policy pays"] = pays_section(run_dir, manifest)
    sections["Claims"] = (claims_section(claims, linkable=pages, reference=reference) if has_claims
                          else Markup("<p class='muted'>No claims table in this run (report/claims.csv is missing, "
                                      "empty or unreadable).</p>"))
    sections["Headline figures"] = figures_section(run_dir)
    fidelity = _read_csv_or_none(report / "fidelity.csv", unreadable)
    if fidelity is not None:
        sections["Fidelity"] = fidelity_section(fidelity)
    extras = []
    for title, body in extra_sections or ():
        if isinstance(body, _ClaimsHTML) and body.claims is not None:
            body = claims_section(body.claims, linkable=pages, reference=reference)
        if title in sections:
            sections[title] = _section_body(body)
        else:
            extras.append((str(title), _section_body(body)))
    ordered = [(t, b) for t, b in sections.items()] + extras + [("Glossary", glossary_section(keep_claims_md(report)))]

    notebooks = []
    for stem, v in nbs.items():
        status = str((v or {}).get("status", "") or "unknown")
        cls, meaning = STATUSES.get(status, ("s-other", ""))
        dur = (v or {}).get("duration_s")
        notebooks.append({"stem": stem, "href": f"{stem}.html" if stem in pages else "", "status": status,
                          "cls": cls, "meaning": meaning, "error": _text((v or {}).get("error")),
                          "duration": f"{float(dur):.1f} s" if _isnum(dur) else ""})
    trouble = [n for n in notebooks if n["status"] in _PROBLEM or n["status"] not in STATUSES]
    used = sorted({n["status"] for n in notebooks} & set(STATUSES), key=list(STATUSES).index)
    head, blocks = _manifest_blocks(manifest)
    git = manifest.get("git") or {}
    runtime = manifest.get("runtime") or {}
    ctx = {
        "run_id": _text(manifest.get("run_id")), "preset": _text(manifest.get("preset")),
        "platform": _text(manifest.get("platform")), "status": _text(manifest.get("status")),
        "status_cls": STATUSES.get(_text(manifest.get("status")), ("s-other", ""))[0],
        "device": device_words(runtime.get("device")), "driver": _text(runtime.get("nvidia_driver") or runtime.get("driver_version")),
        "commit": _text(git.get("commit"))[:12], "dirty": git.get("dirty"),
        "sections": [{"title": t, "anchor": re.sub(r"[^a-z0-9]+", "-", t.lower()).strip("-"), "body": b}
                     for t, b in ordered],
        "notebooks": notebooks, "trouble": trouble, "unreadable": unreadable,
        "left_out": left_out(run_dir, nbs, pages),
        "legend": [(s, *STATUSES[s]) for s in used],
        "manifest_head": head, "manifest_blocks": blocks,
    }
    page = _ENV.get_template("index.html").render(**scrub.tree(ctx))
    if claims is not None and len(claims):
        restate_conclusions(run_dir, claims)       # the notebooks' conclusions say what the claims table says
    path = layout.path(run_dir, "index")
    write_text_atomic(path, scrub(page))
    return path


def left_out(run_dir: Path, notebooks: Mapping, pages: set[str]) -> list[str]:
    """What this report folder does not keep (a committed reference keeps report/, data/ and
    share/ only), one phrase each, pointing to where its data are."""
    run_dir = Path(run_dir)
    out = []
    missing = [s for s in notebooks if s not in pages]
    if missing:
        where = " (their data are in <code>../data/</code>)" if layout.path(run_dir, "data_dir").is_dir() else ""
        out.append(f"the pages of {len(missing)} of {len(notebooks)} notebooks{where}")
    if notebooks and not layout.path(run_dir, "notebooks_dir").is_dir():
        out.append("the executed notebooks")
    if not layout.path(run_dir, "figures_dir").is_dir():
        kept = " (the headline figures are those of <code>../share/figures/</code>)" \
            if layout.path(run_dir, "share_figures").is_dir() else ""
        out.append(f"the notebooks' figures{kept}")
    return [Markup(x) for x in out]


_CONCLUSION = re.compile(r"<!-- pinpath:conclusion ([A-Za-z0-9 ]*) -->.*?<!-- /pinpath:conclusion -->", re.DOTALL)


def restate_conclusions(run_dir: Path, claims_df) -> list[str]:
    """Replace each notebook's conclusion (``tables.conclusion``, judged on that notebook's
    data alone) with the run's verdicts for the same claims, in the executed notebook and in
    its page, so that both say what ``report/claims.csv`` says. Returns the notebooks changed."""
    import json
    from nbconvert.filters.markdown_mistune import markdown2html_mistune
    from .tables import conclusion
    run_dir = Path(run_dir)
    by_id = {str(r): i for i, r in enumerate(claims_df["id"])} if "id" in claims_df.columns else {}

    def final(m: re.Match) -> str | None:
        ids = [i for i in m.group(1).split() if i in by_id]
        return conclusion(claims_df.iloc[[by_id[i] for i in ids]], final=True) if ids else None
    changed = []
    for nb in sorted(layout.path(run_dir, "notebooks_dir").glob("[0-9]*.ipynb")):
        if nb.is_symlink() or layout.path(run_dir, "page", nb.stem, check=False).is_symlink():
            continue          # a run folder is untrusted: nothing is written through a link
        try:
            doc = json.loads(nb.read_text())
        except (ValueError, OSError, UnicodeDecodeError):
            continue
        hit = False
        for cell in doc.get("cells", []):
            for o in cell.get("outputs", []) or []:
                md = (o.get("data") or {}).get("text/markdown")
                text = "".join(md) if isinstance(md, list) else md
                if isinstance(text, str) and _CONCLUSION.search(text):
                    o["data"]["text/markdown"] = _CONCLUSION.sub(lambda m: final(m) or m.group(0), text)
                    hit = True
        if not hit:
            continue
        write_text_atomic(nb, json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n")
        page = layout.path(run_dir, "page", nb.stem, check=False)
        if page.is_file():
            html = page.read_text()
            write_text_atomic(page, _CONCLUSION.sub(
                lambda m: (markdown2html_mistune(f).strip() if (f := final(m)) else m.group(0)), html))
        changed.append(nb.stem)
    return changed


#: added to a notebook page: a table's headers wrap, so that a wide table fits the page instead of
#: being cut at its right edge
_NOTEBOOK_STYLE = ("<style>.jp-RenderedHTMLCommon table{max-width:100%}"
                   ".jp-RenderedHTMLCommon th,.jp-RenderedHTMLCommon td{white-space:normal;overflow-wrap:break-word}</style>\n")


#: the tag of the cells the runner adds to a notebook (``session.INJECTED_TAG``, a layer above)
_INJECTED_TAG = "pinpath-injected"


def _kernel_sentence(text: str) -> str:
    """The runner's end-of-notebook check (a dict's repr) as a sentence; '' where it does not read."""
    import ast
    try:
        d = ast.literal_eval(text)
        before, after = binary_size(int(d["vmlck_before_nbytes"])), binary_size(int(d["vmlck_after_nbytes"]))
    except (ValueError, SyntaxError, KeyError, TypeError):
        return ""
    left = d.get("unreleased") or {}
    held = ", ".join(f"{k}: {v}" for k, v in left.items()) if left else "nothing left unreleased"
    return f"The runner's check at the end of this notebook: locked memory {before} before, {after} after; {held}."


def _reader_cells(nb) -> str:
    """Take the runner's cells out of ``nb`` (for its page); their finding as a sentence."""
    keep, said = [], ""
    for cell in nb.cells:
        if _INJECTED_TAG not in (cell.get("metadata", {}).get("tags") or []):
            keep.append(cell)
            continue
        for o in cell.get("outputs", []) or []:
            plain = (o.get("data") or {}).get("text/plain")
            said = _kernel_sentence("".join(plain) if isinstance(plain, list) else str(plain or "")) or said
    nb.cells = keep
    return said


def _notebook_title(nb, stem: str) -> str:
    """The notebook's first heading ("10 · C13: per-transfer runtime cost ..."), else its stem."""
    for cell in nb.cells:
        if cell.get("cell_type") == "markdown":
            m = re.match(r"\s*#+\s*(.+)", "".join(cell.get("source", "")))
            if m:
                return m.group(1).strip()
    return stem


def render_notebook(nb_path: Path, html_path: Path) -> None:
    """nbconvert's lab template with every CDN URL blanked: opens with no network. The page is
    titled by the notebook, leads back to the run's index, and says the runner's end-of-kernel
    check in a sentence (the runner's cells are left out of the page). Absolute paths of this
    machine (tracebacks, warnings) are rewritten."""
    import nbformat
    from nbconvert import HTMLExporter
    exporter = HTMLExporter(template_name="lab")
    for trait in ("mathjax_url", "require_js_url", "jquery_url", "widget_renderer_url", "mermaid_js_url"):
        if exporter.has_trait(trait):
            setattr(exporter, trait, "")
    nb = nbformat.read(nb_path, as_version=4)
    said = _reader_cells(nb)
    if said:
        nb.cells.append(nbformat.v4.new_markdown_cell(f"*{said}*"))
    title = _notebook_title(nb, Path(nb_path).stem)
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
    back = Markup("<nav class='pinpath-back' style='font:14px system-ui,sans-serif;margin:.6em 1.2em'>"
                  "<a href='index.html'>&larr; the run's report</a> &middot; {}</nav>").format(Path(nb_path).stem)
    body = _strip_empty_scripts(body).replace("</head>", _NOTEBOOK_STYLE + "</head>", 1)
    body = re.sub(r"<title>.*?</title>", str(Markup("<title>{} \u2014 pinpath</title>").format(title)), body, count=1,
                  flags=re.DOTALL)
    body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + "\n" + back, body, count=1)
    html_path = Path(html_path)
    write_text_atomic(html_path, Scrubber(html_path.parent.parent)(body))


def _strip_empty_scripts(body: str) -> str:
    """Drop script tags whose source was blanked, and the template's mermaid loader, which
    would fetch its layout engine from a CDN (the notebooks hold no diagrams)."""
    body = re.sub(r"<script[^>]*src=[\"'][\"'][^>]*>\s*</script>", "", body)
    return _SCRIPT.sub(lambda m: "" if _NET.search(m.group(0)) else m.group(0), body)


# -- several runs -----------------------------------------------------------------------------
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
