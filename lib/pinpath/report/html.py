"""Render executed notebooks and the run's index page as self-contained HTML (no CDN scripts)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

__all__ = ["render_notebook", "render_index", "external_scripts", "claims_section", "figures_section",
           "render_compare"]

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


_VERDICT_CLASS = {"holds": "holds", "does not hold": "nothold", "not applicable here": "na"}
_STYLE = """.holds{background:#e3f4e3}.nothold{background:#fbe3e3}.na{background:#eeeeee}
img.fig{max-width:48%;margin:.3em;border:1px solid #ddd}
body{font-family:system-ui,sans-serif;max-width:96em;margin:2em auto;padding:0 1em;color:#222}
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
    for title, body in extra_sections:
        parts.append(f"<h2>{esc(title)}</h2>{body}")
    rows = []
    for stem, v in nbs.items():
        cls = "ok" if v.get("status") == "ok" else "failed"
        rows.append((f"<a href='{esc(stem)}.html'>{esc(stem)}</a>", f"<span class='{cls}'>{esc(v.get('status', ''))}</span>",
                     f"{v.get('duration_s', 0):.1f} s", esc(str(v.get("error", "")))))
    parts.append("<h2>Notebooks</h2>" + _table(rows, ("notebook", "status", "wall time", "error")))
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


def claims_section(claims_df) -> str:
    """The claims table as HTML: one row per claim, the verdict coloured, the rule beneath."""
    esc = html.escape
    rows = []
    for r in claims_df.itertuples():
        cls = _VERDICT_CLASS.get(r.verdict, "na")
        rows.append((f"<b>{esc(r.id)}</b>", esc(r.who), esc(r.claim), esc(r.thread),
                     f"{esc(r.measured)}", esc(r.platform), f"<span class='{cls}'>{esc(r.verdict)}</span>",
                     f"{esc(r.why)}<br><small>rule: {esc(r.rule)}; <a href='{esc(r.notebook)}.html'>{esc(r.notebook)}</a></small>"))
    return _table(rows, ("id", "who", "claim", "thread's figure", "measured", "platform", "verdict", "why"))


def figures_section(run_dir: Path, per_notebook: int = 1) -> str:
    """The first figure(s) of each notebook, embedded (the page needs no other file)."""
    import base64
    out = []
    by_stem: dict[str, list[Path]] = {}
    for p in sorted((run_dir / "figures").glob("*.png")):
        by_stem.setdefault(p.name.split("-", 1)[0], []).append(p)
    for stem, paths in by_stem.items():
        for p in paths[:per_notebook]:
            data = base64.b64encode(p.read_bytes()).decode()
            out.append(f"<a href='{html.escape(stem)}.html'><img class='fig' alt='{html.escape(p.stem)}' "
                       f"title='{html.escape(p.stem)}' src='data:image/png;base64,{data}'></a>")
    return "\n".join(out) or "<p>No figures in this run.</p>"


def render_compare(path: Path, runs: list[tuple[dict, object]]) -> Path:
    """Claims of several runs side by side (e.g. host against H200): one verdict and measured
    figure per run and claim."""
    esc = html.escape
    head = ["id", "claim"] + [f"{m['run_id']}<br>({m['platform']}, {m['preset']})" for m, _ in runs]
    ids = list(runs[0][1].id)
    rows = []
    for cid in ids:
        cells = [f"<b>{esc(cid)}</b>", esc(runs[0][1].set_index("id").loc[cid, "claim"])]
        for _, df in runs:
            r = df.set_index("id").loc[cid]
            cls = _VERDICT_CLASS.get(r.verdict, "na")
            cells.append(f"<span class='{cls}'>{esc(r.verdict)}</span><br>{esc(r.measured)}")
        rows.append(cells)
    body = "<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>" + "".join(
        "<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>pinpath comparison</title><style>{_STYLE}</style>"
            f"</head><body><h1>pinpath: {len(runs)} runs side by side</h1><table>{body}</table></body></html>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page)
    return path
