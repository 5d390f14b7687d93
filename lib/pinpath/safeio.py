"""Reading what a run folder or a trace holds, which a hostile hand may have made: regular files
only (a FIFO would block the reader), at most a given size, JSON no deeper than ``MAX_DEPTH``,
fields of the types their readers use. Each refusal is one sentence naming the file (and the
field)."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

from .errors import BadParameter

__all__ = ["read_bytes", "read_text", "read_json", "check_fields", "NUMBER", "OPT_STR", "MAX_JSON_NBYTES",
           "MAX_DEPTH"]

MAX_JSON_NBYTES = 16 << 20      #: a manifest or status part is kilobytes; a megabyte is already odd
MAX_DEPTH = 64                  #: the deepest a manifest nests is about 5
NUMBER, OPT_STR = "number", "text or null"     #: field types beside the Python ones


def read_bytes(path: str | os.PathLike, max_nbytes: int) -> bytes:
    """The bytes of ``path``, a regular file of at most ``max_nbytes``: opened without blocking
    (a FIFO is refused, not waited on), read no further than the cap. FileNotFoundError for a
    missing file; BadParameter for anything else that is wrong."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise BadParameter(f"{path}: cannot be read ({e.strerror or e})") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BadParameter(f"{path}: is not a regular file (a FIFO, device or folder), so it is not read")
        try:
            data = f.read(max_nbytes + 1)
        except OSError as e:
            raise BadParameter(f"{path}: cannot be read ({e.strerror or e})") from None
    if len(data) > max_nbytes:
        raise BadParameter(f"{path}: is larger than the {max_nbytes} bytes such a file may have")
    return data


def read_text(path: str | os.PathLike, max_nbytes: int, errors: str = "strict") -> str:
    try:
        return read_bytes(path, max_nbytes).decode("utf-8-sig", errors=errors)
    except UnicodeDecodeError:
        raise BadParameter(f"{path}: is not UTF-8 text") from None


def _depth(value) -> int:
    deepest, todo = 0, [(value, 1)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, (dict, list)):
            deepest = max(deepest, d)
            if d > MAX_DEPTH:
                return d
            todo += [(c, d + 1) for c in (v.values() if isinstance(v, dict) else v)]
    return deepest


def read_json(path: str | os.PathLike, max_nbytes: int = MAX_JSON_NBYTES, what: str = "JSON file"):
    """The JSON document in ``path`` (``read_bytes``' checks), nested at most ``MAX_DEPTH`` deep;
    BadParameter naming the file for one that is not JSON."""
    text = read_text(path, max_nbytes)
    try:
        value = json.loads(text, parse_constant=lambda c: math.nan)
    except RecursionError:
        raise BadParameter(f"{path}: the {what} nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as e:
        raise BadParameter(f"{path}: unreadable {what} ({type(e).__name__})") from None
    if _depth(value) > MAX_DEPTH:
        raise BadParameter(f"{path}: the {what} nests deeper than {MAX_DEPTH} levels")
    return value


def _is(value, kind) -> bool:
    if kind == NUMBER:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < 1e300
    if kind == OPT_STR:
        return value is None or isinstance(value, str)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool) and abs(value) < 1 << 63
    return isinstance(value, kind)


def check_fields(obj: dict, kinds: dict, where: str) -> dict:
    """``obj`` where each of its fields named in ``kinds`` has that kind (a type, ``NUMBER``,
    ``OPT_STR``, or a tuple of these); BadParameter naming ``where`` and the field otherwise.
    A field that is absent is left to its reader's default."""
    for key, kind in kinds.items():
        if key in obj and not any(_is(obj[key], k) for k in (kind if isinstance(kind, tuple) else (kind,))):
            want = " or ".join(getattr(k, "__name__", k) for k in (kind if isinstance(kind, tuple) else (kind,)))
            raise BadParameter(f"{where}: the field {key!r} is a {type(obj[key]).__name__}, not a {want}")
    return obj
