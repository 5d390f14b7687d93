"""The notebooks' conclusions restated with the run's final verdicts."""

from __future__ import annotations

import re
from pathlib import Path

from ... import layout
from ...atomic import write_text_atomic

_CONCLUSION = re.compile(r"<!-- pinpath:conclusion ([A-Za-z0-9 ]*) -->.*?<!-- /pinpath:conclusion -->", re.DOTALL)


def restate_conclusions(run_dir: Path, claims_df) -> list[str]:
    """Replace each notebook's conclusion (``tables.conclusion``, judged on that notebook's
    data alone) with the run's verdicts for the same claims, in the executed notebook and in
    its page, so that both say what ``report/claims.csv`` says. Returns the notebooks changed."""
    import json
    from nbconvert.filters.markdown_mistune import markdown2html_mistune
    from ..tables import conclusion
    run_dir = Path(run_dir)
    by_id: dict[str, list[int]] = {}          # a claim judged apart in each cache state has a row per state
    for k, r in enumerate(claims_df["id"] if "id" in claims_df.columns else []):
        by_id.setdefault(str(r), []).append(k)

    def final(m: re.Match) -> str | None:
        ids = [i for i in dict.fromkeys(m.group(1).split()) if i in by_id]
        return conclusion(claims_df.iloc[[k for i in ids for k in by_id[i]]], final=True) if ids else None
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
