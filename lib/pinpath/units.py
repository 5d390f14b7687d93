"""Bytes and nanoseconds: parse once, format only for people."""

from __future__ import annotations

import math
import re

from .errors import BadParameter

__all__ = ["KiB", "MiB", "GiB", "bounded_int", "INT64_MAX", "parse_nbytes", "fmt_nbytes", "binary_size", "fmt_ns", "gb_per_s", "PAGE_NBYTES"]

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
_UNITS = {"": 1, "b": 1, "kib": KiB, "mib": MiB, "gib": GiB, "tib": 1 << 40,
          "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "k": KiB, "m": MiB, "g": GiB}
_SIZE = re.compile(r"^\s*(-?[0-9]+(?:\.[0-9]+)?(?:e[0-9]+)?)\s*([a-z]*)\s*$", re.IGNORECASE)


INT64_MAX = (1 << 63) - 1


def bounded_int(text, what: str, limit: int = INT64_MAX) -> int:
    """The whole number ``text`` (digits, as a trace or file spells it) if it is from 0 to ``limit``
    (default: what an int64 column holds); BadParameter naming ``what`` otherwise, before a
    number of a hundred digits reaches a frame or a multiplication."""
    s = str(text).strip()
    if not s.isdigit() or not s.isascii() or len(s) > 19 or int(s) > limit:
        raise BadParameter(f"{what}: {s[:24]!r}{'...' if len(s) > 24 else ''} is not a whole number from 0 to {limit}")
    return int(s)


def _page_nbytes() -> int:
    import mmap
    return mmap.PAGESIZE


PAGE_NBYTES = _page_nbytes()


def parse_nbytes(value, *, name: str = "size") -> int:
    """Turn ``4096``, ``"4KiB"``, ``"1e8"`` or ``"800MB"`` into a whole number of bytes.

    Raises BadParameter naming ``name`` for anything that is not a positive size.
    """
    if isinstance(value, bool):
        raise BadParameter(f"{name}: {value!r} is not a size in bytes")
    if isinstance(value, int):
        nbytes = value
    elif isinstance(value, float) and value.is_integer():
        nbytes = int(value)
    elif isinstance(value, str) and (m := _SIZE.match(value)) and m.group(2).lower() in _UNITS:
        amount = float(m.group(1)) * _UNITS[m.group(2).lower()]
        if not amount.is_integer():
            raise BadParameter(f"{name}: {value!r} is not a whole number of bytes")
        nbytes = int(amount)
    else:
        raise BadParameter(f"{name}: {value!r} is not a size (write e.g. 4096, '4KiB', '1MiB', '800MB')")
    if nbytes <= 0:
        raise BadParameter(f"{name}: {value!r} must be a positive number of bytes")
    return nbytes


def fmt_nbytes(nbytes: int) -> str:
    """``4096`` -> ``'4 KiB'``; decimal sizes like 800000000 -> ``'800 MB'``."""
    nbytes = int(nbytes)
    exact = [(nbytes // scale, unit) for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB), ("GB", 10**9),
                                                         ("MB", 10**6), ("kB", 10**3))
             if nbytes >= scale and nbytes % scale == 0]
    if exact:
        amount, unit = min(exact)
        return f"{amount} {unit}"
    if nbytes >= MiB:
        return f"{nbytes / MiB:.1f} MiB"
    if nbytes >= KiB:
        return f"{nbytes / KiB:.1f} KiB"
    return f"{nbytes} B"


def fmt_ns(ns: float) -> str:
    """``62000`` -> ``'62 us'``; ``999.7`` -> ``'1 us'``."""
    ns = float(ns)
    if ns != ns:
        return "n/a"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3), ("ns", 1.0)):
        v = float(f"{ns / scale:.3g}")     # rounded first: 999.7 ns is '1 us', never '1e+03 ns'
        if abs(v) >= 1 or unit == "ns":
            return f"{v:.3g} {unit}"
    return "n/a"


def gb_per_s(nbytes: float, ns: float) -> float:
    """Decimal GB/s of moving ``nbytes`` in ``ns`` nanoseconds."""
    return float(nbytes) / float(ns) if ns > 0 else float("nan")


def _decimals(x: float) -> int:
    """Decimals that give about three significant digits, never scientific notation."""
    a = abs(x)
    if a >= 100 or a == 0:
        return 0
    if a >= 10:
        return 1
    if a >= 1:
        return 2
    return min(6, 2 - math.floor(math.log10(a)))



def binary_size(nbytes: float) -> str:
    """Bytes in binary units only: 4096 -> '4 KiB', 800000000 -> '763 MiB'."""
    n = float(nbytes)
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            v = n / scale
            return f"{v:.{0 if v == int(v) else _decimals(v)}f} {unit}"
    return f"{n:.0f} B"
