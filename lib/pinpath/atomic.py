"""Write a file so that a reader sees the old content or the new, never half of one: write a
temporary name in the same folder, flush it to disk, then rename it over the target."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from pathlib import Path
from typing import Iterator

__all__ = ["write_text_atomic", "write_bytes_atomic", "write_json_atomic", "replacing"]


@contextlib.contextmanager
def replacing(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a fresh temporary path beside ``path``; on a clean exit it is renamed over
    ``path``, on an exception it is removed and ``path`` is left as it was.

    For writers that want a file name (``zipfile.ZipFile``, ``Figure.savefig``)::

        with replacing(out / "run.zip") as tmp:
            with zipfile.ZipFile(tmp, "w") as z: ...
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        yield tmp
        if tmp.exists():
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; the file gets the usual permissions (umask)."""
    path = Path(path)
    with replacing(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    return path


def write_text_atomic(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (UTF-8 unless told); return the path."""
    return write_bytes_atomic(path, text.encode(encoding))


def write_json_atomic(path: str | os.PathLike, value) -> Path:
    """``value`` as indented JSON (anything else as its string), atomically."""
    return write_text_atomic(path, json.dumps(value, indent=2, default=str) + "\n")
