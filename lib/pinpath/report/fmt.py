"""How measured figures read in reports: a value with its 95 % interval in its unit, a
threshold, a size in binary units. One formatter for the claims, the tables, the HTML and
the Markdown summary."""

from __future__ import annotations

import math

from ..units import _decimals, binary_size

__all__ = ["format_measured", "format_threshold", "binary_size"]   # binary_size: the report's size formatter

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


