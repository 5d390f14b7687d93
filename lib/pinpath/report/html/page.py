"""What every page shares: the Jinja2 templates (autoescape on), the verdict and status words with
their CSS classes, a frame's cell as text, and the check that a page fetches nothing from the network."""

from __future__ import annotations

import math
import re

import jinja2
from markupsafe import Markup

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

#: verdicts that judge a claim; the others say it was not judged here
JUDGED = ("holds", "does not hold", "inconclusive")


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
