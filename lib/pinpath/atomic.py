"""Write a file so that a reader sees the old content or the new, never half of one: write a
temporary name in the same folder, flush it to disk, then rename it over the target."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Iterator

__all__ = ["write_text_atomic", "write_bytes_atomic", "write_json_atomic", "replacing", "replacing_folder"]


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


@contextlib.contextmanager
def replacing_folder(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a fresh, empty temporary folder beside ``path``; on a clean exit it takes the place
    of ``path`` (a folder there before is renamed away first and removed after, so a reader sees
    the old folder or the new one, never a half-written one, and nothing old goes before the new
    is whole); on an exception it is removed and ``path`` is left as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    stem = f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}"
    tmp, old = path.with_name(stem + ".tmp"), path.with_name(stem + ".old")
    tmp.mkdir()
    try:
        yield tmp
        had = path.exists() or path.is_symlink()
        if had:
            os.rename(path, old)
        os.rename(tmp, path)
        if had:
            old.unlink() if old.is_symlink() else shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


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
