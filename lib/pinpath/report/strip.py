"""A claim's verdict as a figure: the quantity the verdict judges (claims.csv's ``measured``
with its 95 % interval), on an axis in the verdict's unit, beside the claim's threshold and the
side of it where the claim holds. ``scale(row)`` places a row once; ``svg(row)`` draws it as a
small inline SVG (the index's claims table), ``figures.verdicts`` with matplotlib (notebooks)."""

from __future__ import annotations

import math
from typing import Mapping, NamedTuple

from markupsafe import Markup, escape

from .fmt import _isnum, format_measured, format_threshold

__all__ = ["Scale", "scale", "svg", "WIDTH_PX", "HEIGHT_PX"]

WIDTH_PX, HEIGHT_PX = 200, 40
_PAD_PX = 8


class Scale(NamedTuple):
    lo: float               #: the axis' ends, in claims.csv's unit
    hi: float
    log: bool
    holds: tuple            #: (from, to): where the claim holds, clipped to the axis
    marks: tuple            #: threshold(s) drawn, in claims.csv's unit
    value: float
    low: float
    high: float
    unit: str

    def x(self, v: float, width: float = 1.0) -> float:
        """``v`` as a fraction of the axis (times ``width``)."""
        f = (math.log(v / self.lo) / math.log(self.hi / self.lo)) if self.log else (v - self.lo) / (self.hi - self.lo)
        return width * min(1.0, max(0.0, f))

    def inverse(self, f: float) -> float:
        return self.lo * (self.hi / self.lo) ** f if self.log else self.lo + f * (self.hi - self.lo)


def scale(row: Mapping) -> Scale | None:
    """Where a claims.csv row's figure goes; None where it has no measured value or no threshold."""
    v, lo, hi, t = (row.get(k) for k in ("measured", "low", "high", "threshold"))
    comp = str(row.get("comparison") or "").strip()
    if not (_isnum(v) and _isnum(t) and comp):
        return None
    v, t = float(v), float(t)
    lo = float(lo) if _isnum(lo) else v
    hi = float(hi) if _isnum(hi) else v
    unit = str(row.get("unit") or "")
    marks = (1 - t, 1 + t) if comp == "within" else (t,)
    points = [v, lo, hi, *marks]
    log = unit == "x" or (unit == "ns" and min(points) > 0 and max(points) / min(points) >= 20)
    if log and min(points) <= 0:
        log = False
    if log:
        a, b = min(points) / 2, max(points) * 2
    elif unit == "fraction":
        a, b = 0.0, max(1.0, max(points))
    else:
        a = 0.0 if min(points) >= 0 else min(points) * 1.2
        b = max(points) * 1.3 or 1.0
    if comp == "within":
        holds = marks
    elif comp in (">", ">="):
        holds = (t, b)
    else:
        holds = (a, t)
    return Scale(a, b, log, (max(a, holds[0]), min(b, holds[1])), marks, v, lo, hi, unit)


def _num(v: float) -> str:
    return f"{v:.1f}"


def svg(row: Mapping) -> Markup:
    """The row's figure as an inline SVG: the green band where the claim holds, the threshold as
    a dashed line labelled in the verdict's unit, the interval as a bar, the value as a dot.
    ``data-*`` attributes give the axis so that a reader (or a test) can read values back."""
    s = scale(row)
    if s is None:
        return Markup("")
    w = WIDTH_PX - 2 * _PAD_PX
    x = lambda v: _PAD_PX + s.x(v, w)      # noqa: E731
    unit = s.unit if s.unit != "count" else ""
    thr = format_threshold(row.get("comparison"), row.get("threshold"), unit)
    title = (f"{row.get('id', '')}: measured {format_measured(s.value, s.low, s.high, unit)}; holds if {thr}")
    y = 16
    parts = [
        f"<svg class='vstrip' role='img' width='{WIDTH_PX}' height='{HEIGHT_PX}' viewBox='0 0 {WIDTH_PX} {HEIGHT_PX}' "
        f"data-claim='{escape(row.get('id', ''))}' data-lo='{s.lo!r}' data-hi='{s.hi!r}' data-log='{int(s.log)}' "
        f"data-pad='{_PAD_PX}' data-width='{w}'>",
        f"<title>{escape(title)}</title>",
        f"<rect class='holds' x='{_num(x(s.holds[0]))}' y='4' width='{_num(max(0.0, x(s.holds[1]) - x(s.holds[0])))}' "
        f"height='24' fill='#dcf2dc'/>",
        f"<line x1='{_PAD_PX}' x2='{WIDTH_PX - _PAD_PX}' y1='{y}' y2='{y}' stroke='#c6cacf'/>",
    ]
    for m in s.marks:
        parts.append(f"<line class='threshold' data-v='{m!r}' x1='{_num(x(m))}' x2='{_num(x(m))}' y1='2' y2='30' "
                     f"stroke='#333' stroke-dasharray='3 2'/>")
    if len(s.marks) == 1:
        label, lx = format_measured(s.marks[0], unit=unit), x(s.marks[0])
    else:
        label, lx = f"1 \u00b1 {100 * (s.marks[1] - 1):.0f} %", x(1.0)
    anchor = "start" if lx < WIDTH_PX * 0.25 else ("end" if lx > WIDTH_PX * 0.75 else "middle")
    parts.append(f"<text x='{_num(lx)}' y='{HEIGHT_PX - 1}' font-size='10' text-anchor='{anchor}' fill='#333'>"
                 f"{escape(label)}</text>")
    parts.append(f"<line class='interval' x1='{_num(x(s.low))}' x2='{_num(x(s.high))}' y1='{y}' y2='{y}' "
                 f"stroke='#1f2328' stroke-width='3'/>")
    parts.append(f"<circle class='value' data-v='{s.value!r}' cx='{_num(x(s.value))}' cy='{y}' r='4' fill='#0b57b0'/>")
    parts.append("</svg>")
    return Markup("".join(parts))
