"""The claims table and the claims at a glance, with the committed reference's verdicts beside the
claims a run cannot judge."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Mapping

from markupsafe import Markup

from ... import layout
from ...paths import OUTPUTS_DIR
from .. import strip
from ..regress import arm, row_key
from ..fmt import READINGS, _isnum, format_measured, format_repeats, format_threshold, verdict_groups
from .page import _ENV, JUDGED, VERDICTS, _text, verdict_word
from .scrub import Scrubber


_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,199}")    #: a notebook name a link may be made of (no "javascript:")
#: where a claims.csv with readings keeps the sentence on the intervals that decided (shown under the reason)
_INTERVAL_COLUMNS = ("rule_detail", "interval", "decided")


#: the committed reference whose verdicts stand beside the claims a run cannot judge
REFERENCE_DIR = OUTPUTS_DIR / "reference" / "cuda"


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
    return label, {row_key(r): r for r in ref.to_dict("records")}     # a split claim's cold row apart


def anchor(rec: Mapping) -> str:
    """A claims.csv row's anchor in the index: its id, "-cold" after it for the cold row of a claim
    judged apart in each cache state (``regress.row_key``)."""
    return re.sub(r"[^A-Za-z0-9]+", "-", row_key(dict(rec))).strip("-")


def _metric_head(metric: str) -> str:
    """A metric without its bracketed sizes: what tells a claim's rows apart in the table."""
    return metric.split(" [", 1)[0].strip()


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
    recs = claims_df.to_dict("records")
    ids = [_text(r.get("id")) for r in recs]
    for rec in recs:
        split = ids.count(_text(rec.get("id"))) > 1      # judged apart in each cache state: a row per state
        state = ("cache cold" if arm(rec) else "cache hot") if split else ""
        g = lambda k: rec.get(k)   # noqa: E731 - columns of older claims.csv may be missing
        verdict = verdict_word(g("verdict"))
        nb = _text(g("notebook"))
        new = _text(g("reading")) != ""        # claims.csv with a reading: "why" is the data's own reason
        rows.append({
            "reading": READINGS.get(_text(g("reading")), _text(g("reading"))), "subject": _text(g("subject")),
            "analogue": _text(g("analogue")),
            "interval": next((_text(g(k)) for k in _INTERVAL_COLUMNS if _text(g(k))), "") if new else "",
            "id": _text(g("id")), "key": anchor(rec), "who": _text(g("who")), "short": _text(g("short")),
            "part": f"{state}: {_metric_head(_text(g('metric')))}" if state else "", "part_short": state,
            "claim": _text(g("claim")), "thread": _text(g("thread")), "metric": _text(g("metric")),
            "measured": format_measured(g("measured"), g("low"), g("high"), _text(g("unit"))),
            "spread": format_repeats(g("n_repeats"), g("repeat_unit"), g("between_spread")),
            "numeric": _isnum(g("measured")),
            "bar": format_threshold(g("comparison"), g("threshold"), _text(g("unit"))),
            "verdict": verdict, "vclass": VERDICTS.get(verdict, "v-other"),
            "why": _text(g("why")), "detail": _text(g("detail")), "rule": _text(g("rule")),
            "notebook": nb, "nb_href": f"{nb}.html" if _PLAIN.fullmatch(nb) and (link is None or nb in link) else "",
            "platform": _text(g("platform")),
            "ref": _ref_cell((reference or {}).get(row_key(rec))) if verdict not in JUDGED else None,
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
