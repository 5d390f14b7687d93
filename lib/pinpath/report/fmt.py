"""How measured figures read in reports: a value with its 95 % interval in its unit, a
threshold, a size in binary units. One formatter for the claims, the tables, the HTML and
the Markdown summary."""

from __future__ import annotations

import math

from ..units import _decimals, binary_size

__all__ = ["format_measured", "format_threshold", "format_repeats", "UNITS", "binary_size", "count_verdicts", "cut_words",
           "verdict_groups", "verdict_sentence", "VERDICT_ORDER", "READINGS"]   # binary_size: the report's size formatter

_NS_SCALES = (("s", 1e9), ("ms", 1e6), ("us", 1e3), ("ns", 1.0))


def _isnum(x) -> bool:
    try:
        return x is not None and not isinstance(x, bool) and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _exact_binary(nbytes: float) -> bool:
    """Whether ``binary_size`` shows the size exactly (a whole number of its unit)."""
    n = float(nbytes)
    scale = next((s for s in (1 << 40, 1 << 30, 1 << 20, 1 << 10) if abs(n) >= s), 1)
    return n % scale == 0


#: a repeat unit (claims.csv's ``repeat_unit``) in the plural
UNITS = {"process": "processes", "round": "rounds"}


def format_repeats(n_repeats, unit, between_spread=None) -> str:
    """"over 5 processes (between-process spread 12 %)": how many repeats of ``unit`` stand behind
    a figure and the spread between them (IQR / median of their medians); '' for a figure of
    fewer than two repeats or without a unit."""
    if not _isnum(n_repeats) or float(n_repeats) < 2 or not isinstance(unit, str) or not unit:
        return ""
    one = unit if unit in UNITS else "repeat"
    spread = f" (between-{one} spread {100 * float(between_spread):.0f} %)" if _isnum(between_spread) else ""
    return f"over {int(n_repeats)} {UNITS.get(one, 'repeats')}{spread}"


def format_measured(value, low=None, high=None, unit: str = "") -> str:
    """A measured figure with its 95 % interval in words: ``12.3x (95 % CI 11.0–13.9)``,
    ``35.0 us (95 % CI 33.1–37.2 us)``. Empty when there is no figure; text is returned as is
    (claims.csv of older runs hold text)."""
    if not _isnum(value):
        return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
    v = float(value)
    lo, hi = (float(x) if _isnum(x) else None for x in (low, high))
    unit = "" if unit is None or (isinstance(unit, float) and math.isnan(unit)) else str(unit)
    if unit == "fraction":   # a share of 1, shown in per cent
        v, lo, hi, unit = 100 * v, *(None if x is None else 100 * x for x in (lo, hi)), "%"
    suffix, scale = unit, 1.0
    if unit == "ns":
        suffix, scale = next((u, s) for u, s in _NS_SCALES if abs(v) >= s or s == 1.0)
    d = _decimals(v / scale)
    if unit == "count" and v == int(v) and all(x is None or x == int(x) for x in (lo, hi)):
        d = 0

    def num(x: float) -> str:
        return f"{x / scale:,.{d}f}".replace(",", "\u2009") if unit == "count" else f"{x / scale:.{d}f}"
    glue = {"x": "x", "": "", "count": ""}.get(unit, f" {suffix}")
    main = f"{num(v)}{glue}"
    if lo is None or hi is None or lo == hi == v:   # an exact figure (a count) has no interval to show
        return main
    tail = "" if unit in ("x", "", "count") else glue
    return f"{main} (95 % CI {num(lo)}\u2013{num(hi)}{tail})"


def format_threshold(comparison, threshold, unit: str = "") -> str:
    """``>= 10x``, ``<= 2.00 us``: the rule's bar in words; empty without a threshold."""
    if not _isnum(threshold) or not isinstance(comparison, str) or not comparison:
        return ""
    if comparison.strip() == "within":      # |value - 1| <= threshold
        return f"within {100 * float(threshold):.0f} % of 1"
    sign = {">=": "\u2265", "<=": "\u2264", ">": ">", "<": "<"}.get(comparison.strip(), comparison.strip())
    return f"{sign} {format_measured(threshold, unit=unit)}"




#: a verdict word as the predicate of a count: (one, several)
_PREDICATES = {"holds": ("holds", "hold"), "does not hold": ("does not hold", "do not hold"),
               "inconclusive": ("is inconclusive", "are inconclusive"),
               "not applicable": ("is not applicable", "are not applicable"),
               "not measured": ("is not measured", "are not measured")}


def count_verdicts(counts) -> str:
    """``{'holds': 10, 'does not hold': 2}`` -> ``'10 hold, 2 do not hold'``: verdict counts in
    correct English, in the order given, zero counts left out."""
    parts = []
    for word, n in counts.items():
        if not n:
            continue
        one, several = _PREDICATES.get(word, (f"is {word}", f"are {word}"))
        parts.append(f"{n} {one if n == 1 else several}")
    return ", ".join(parts)


def cut_words(text: str, limit: int) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters (an ellipsis marks the
    cut); never mid-word."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    head = text[: limit].rsplit(" ", 1)[0].rstrip(" ,;:(-")
    return (head or text[: limit]) + " \u2026"


#: the verdict words, in the order the report counts them
VERDICT_ORDER = ("holds", "does not hold", "inconclusive", "not applicable", "not measured")
#: a claim's reading (claims.csv's ``reading``): how the runs measure it, as the reports say it
READINGS = {"as meant": "as meant", "analogue": "by an analogue", "not applicable": "not applicable here"}


def verdict_groups(verdicts, readings=None) -> list[tuple[str, dict]]:
    """Verdict counts per reading: ``[('as meant', {'holds': 7, ...}), ('by an analogue', ...)]``;
    one group named ``''`` when there are no readings (claims.csv of runs before the column)."""
    readings = list(readings) if readings is not None else [""] * len(list(verdicts))
    groups: dict[str, dict] = {}
    for v, r in zip(verdicts, readings):
        r = "" if not isinstance(r, str) else r.strip()
        label = READINGS.get(r, r)
        c = groups.setdefault(label, {w: 0 for w in VERDICT_ORDER})
        c[v] = c.get(v, 0) + 1
    order = list(READINGS.values())
    return sorted(groups.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))


def verdict_sentence(verdicts, readings=None) -> str:
    """``'as meant, 7 hold, 1 does not hold; by an analogue, 3 hold; not applicable here, 2'`` (or,
    without readings, ``'10 hold, 2 do not hold'``)."""
    parts = []
    for label, c in verdict_groups(verdicts, readings):
        if label == READINGS["not applicable"] and set(k for k, n in c.items() if n) <= {"not applicable"}:
            parts.append(f"{label}, {sum(c.values())}")       # "15 are not applicable" says it twice
        else:
            parts.append((f"{label}, " if label else "") + count_verdicts(c))
    return "; ".join(parts)
