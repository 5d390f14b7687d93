"""The run's index page, ``report/index.html``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from markupsafe import Markup

from ... import layout
from ...atomic import write_text_atomic
from ..fmt import _isnum
from .claims_table import _ClaimsHTML, claims_section, glance_section, reference_verdicts
from .conclusions import restate_conclusions
from .manifest_tree import _manifest_blocks
from .page import _ENV, _PROBLEM, STATUSES, _text, device_words
from .scrub import Scrubber
from .sections import fidelity_section, figures_section, glossary_section, keep_claims_md, pays_section


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
