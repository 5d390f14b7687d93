"""Render executed notebooks and the run's index page as self-contained HTML (no CDN scripts)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

__all__ = ["render_notebook", "render_index", "external_scripts"]

_SCRIPT = re.compile(r"<script\b[^>]*>.*?</script>", re.IGNORECASE | re.DOTALL)
_NET = re.compile(r"(src|href)=[\"']?(https?:)?//|import\([\"']https?://|[\"']https?://[^\"']*\.m?js[\"']",
                  re.IGNORECASE)
_LINK = re.compile(r"<link\b[^>]*href=[\"']?(https?:)?//[^>]*>", re.IGNORECASE)


def external_scripts(text: str) -> list[str]:
    """Script blocks and stylesheet links of a page that would fetch something from the network."""
    return [m.group(0)[:120] for m in _SCRIPT.finditer(text) if _NET.search(m.group(0))] + \
        [m.group(0) for m in _LINK.finditer(text)]


def render_notebook(nb_path: Path, html_path: Path) -> None:
    """nbconvert's lab template with every CDN URL blanked: opens with no network."""
    import nbformat
    from nbconvert import HTMLExporter
    exporter = HTMLExporter(template_name="lab")
    for trait in ("mathjax_url", "require_js_url", "jquery_url", "widget_renderer_url", "mermaid_js_url"):
        if exporter.has_trait(trait):
            setattr(exporter, trait, "")
    body, _ = exporter.from_notebook_node(nbformat.read(nb_path, as_version=4))
    body = _strip_empty_scripts(body)
    html_path.parent.mkdir(parents=True, exist_ok=True)
    html_path.write_text(body)


def _strip_empty_scripts(body: str) -> str:
    """Drop script tags whose source was blanked, and the template's mermaid loader, which
    would fetch its layout engine from a CDN (the notebooks hold no diagrams)."""
    body = re.sub(r"<script[^>]*src=[\"'][\"'][^>]*>\s*</script>", "", body)
    return _SCRIPT.sub(lambda m: "" if _NET.search(m.group(0)) else m.group(0), body)


_STYLE = """body{font-family:system-ui,sans-serif;max-width:70em;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}.ok{color:#176117}.failed{color:#a40000;font-weight:bold}.banner{background:#fde8e8;border:1px solid #a40000;padding:.6em}
code,pre{font-size:90%}pre{background:#f7f7f7;padding:.6em;overflow-x:auto}"""


def _table(rows, head=None) -> str:
    out = ["<table>"]
    if head:
        out.append("<tr>" + "".join(f"<th>{html.escape(str(h))}</th>" for h in head) + "</tr>")
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def render_index(run_dir: Path, manifest: dict, extra_sections: list[tuple[str, str]] = ()) -> Path:
    """``report/index.html``: status of each notebook with links, failures with their error,
    extra sections (title, html) and the manifest in readable form."""
    esc = html.escape
    nbs = manifest.get("notebooks", {})
    failed = {k: v for k, v in nbs.items() if v.get("status") != "ok"}
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>pinpath run {esc(manifest['run_id'])}</title>"
             f"<style>{_STYLE}</style></head><body>",
             f"<h1>pinpath run <code>{esc(manifest['run_id'])}</code></h1>",
             f"<p>Preset <b>{esc(manifest['preset'])}</b> on platform <b>{esc(manifest['platform'])}</b> "
             f"({esc(str(manifest.get('runtime', {}).get('device', '')))}); "
             f"commit <code>{esc(str(manifest['git']['commit'])[:12])}</code>"
             f"{' (dirty)' if manifest['git'].get('dirty') else ''}; status <b>{esc(manifest['status'])}</b>.</p>"]
    if failed:
        parts.append("<div class='banner'><b>Notebooks failed:</b><ul>" + "".join(
            f"<li><a href='{esc(k)}.html'>{esc(k)}</a>: {esc(str(v.get('error', '')))}</li>" for k, v in failed.items())
            + "</ul></div>")
    rows = []
    for stem, v in nbs.items():
        cls = "ok" if v.get("status") == "ok" else "failed"
        rows.append((f"<a href='{esc(stem)}.html'>{esc(stem)}</a>", f"<span class='{cls}'>{esc(v.get('status', ''))}</span>",
                     f"{v.get('duration_s', 0):.1f} s", esc(str(v.get("error", "")))))
    parts.append("<h2>Notebooks</h2>" + _table(rows, ("notebook", "status", "wall time", "error")))
    for title, body in extra_sections:
        parts.append(f"<h2>{esc(title)}</h2>{body}")
    parts.append("<h2>Manifest</h2>" + _manifest_table(manifest))
    parts.append("</body></html>")
    path = run_dir / "report" / "index.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts))
    return path


def _manifest_table(manifest: dict) -> str:
    rows = []
    for key in ("run_id", "preset", "platform", "start", "end", "duration_s", "status", "git", "runtime",
                "runtime_selection", "harness_ns", "machine", "packages"):
        if key in manifest:
            value = manifest[key]
            text = json.dumps(value, indent=1, default=str) if isinstance(value, (dict, list)) else str(value)
            rows.append((f"<b>{html.escape(key)}</b>", f"<pre>{html.escape(text)}</pre>"))
    rows.append(("<b>parameters</b>", f"<pre>{html.escape(json.dumps(manifest.get('parameters', {}), indent=1))}</pre>"))
    return _table(rows)
