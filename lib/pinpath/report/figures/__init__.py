"""Seaborn figures with words and units on the axes; every function returns the figure, drawn
by a figure-level interface (relplot, catplot, or the objects interface) and titled by ``_titled``.

Conventions: sizes in binary units only (KiB, MiB, GiB) on log-2 axes; times in human units
(ns, us, ms, s) on log axes wherever the values span decades; legends outside the axes; the
thread's figure can be drawn as a labelled reference line through ``reference=``, e.g.
``reference=[("thread: lock 35 us", 35_000)]`` (a time in nanoseconds).

The package, one job a module: ``labels`` (the words a figure gives: ``theme``, ``words``,
``problems``), ``axes`` (byte and time axes, reference lines, legends, titles), ``lines``
(``vs_size``, ``vs_threads``, ``lock_cost_by_backing``), ``bars`` (``case_bars``, ``phase_bars``,
``overlap_bars``, ``stats_bars``, ``limits_bars``), ``rows`` (``timeline``, ``answers_grid``) and
``verdict_panels`` (``verdicts``); the notebooks call them as ``figures.<name>``.
"""

from ...units import binary_size
from .bars import case_bars, limits_bars, overlap_bars, phase_bars, stats_bars
from .labels import LABELS, problems, theme, words
from .lines import lock_cost_by_backing, vs_size, vs_threads
from .rows import answers_grid, timeline
from .verdict_panels import verdicts

__all__ = ["theme", "words", "problems", "vs_size", "phase_bars", "case_bars", "timeline", "vs_threads", "overlap_bars",
           "answers_grid", "stats_bars", "limits_bars", "lock_cost_by_backing", "verdicts", "binary_size", "LABELS"]
