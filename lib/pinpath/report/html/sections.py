"""The index's other sections: which policy pays, the headline figures, the fidelity of the Python
timings, the glossary."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Mapping

from markupsafe import Markup

from ... import layout
from ...atomic import write_text_atomic
from ...paths import PROJECT_ROOT
from ...units import fmt_ns
from .. import pays
from ..fmt import _isnum, binary_size, format_measured
from .page import _ENV, _text, device_words
from .scrub import Scrubber


def pays_section(run_dir: Path, manifest: Mapping) -> Markup:
    """Which policy pays: per direction and size, the cheapest policy and its interval, the
    runner-up, the break-even sizes (``pays``), computed from the run's policy sweep."""
    from ..rundata import RunData
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
