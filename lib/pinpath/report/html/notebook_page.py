"""A notebook's page: nbconvert's lab template that opens with no network."""

from __future__ import annotations

import re
from pathlib import Path

from markupsafe import Markup

from ...atomic import write_text_atomic
from ..fmt import binary_size
from .page import _NET, _SCRIPT
from .scrub import Scrubber

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
