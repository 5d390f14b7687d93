"""Render executed notebooks, the run's index page and the comparison of runs as HTML that
opens with no network (no CDN scripts).

Pages come from the Jinja2 templates in ``templates/`` with autoescape on: every text read
from a run folder (run id, preset, platform, errors, manifest values, claim texts) is
escaped, and absolute paths of this machine are rewritten relative to the run folder or the
checkout before anything is written. The ``*_section`` functions return ``markupsafe.Markup``
(trusted HTML); any other string given to a page as a section body is escaped as text.
Every file is written atomically (``atomic.write_text_atomic``).

The package, one job a module: ``page`` (the templates and the words every page shares),
``scrub`` (paths of this machine), ``claims_table`` (the claims table and the claims at a
glance), ``sections`` (which policy pays, headline figures, fidelity, glossary),
``manifest_tree``, ``index`` (the run's index page), ``conclusions`` (the notebooks'
conclusions restated), ``notebook_page`` and ``compare_page``; this module exports what the
rest of pinpath uses.
"""

from ..fmt import binary_size, format_measured, format_threshold
from .claims_table import claims_section, glance_section, reference_verdicts
from .compare_page import compare_rows, render_compare
from .conclusions import restate_conclusions
from .index import left_out, render_index
from .notebook_page import render_notebook
from .page import JUDGED, STATUSES, VERDICTS, device_words, external_scripts, verdict_word
from .scrub import Scrubber
from .sections import THREAD_URL, fidelity_section, figures_section, glossary_section, pays_section

__all__ = ["render_notebook", "render_index", "restate_conclusions", "external_scripts", "claims_section", "figures_section",
           "fidelity_section", "render_compare", "format_measured", "format_threshold", "verdict_word",
           "binary_size", "Scrubber", "VERDICTS", "STATUSES", "compare_rows", "JUDGED", "device_words",
           "reference_verdicts", "glance_section", "pays_section", "glossary_section", "left_out", "THREAD_URL"]
