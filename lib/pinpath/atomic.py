"""Writes that a reader never sees half of: a temporary name in the same folder, then rename."""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

__all__ = ["write_text", "write_json", "replacing"]


@contextmanager
def replacing(path: Path | str) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path``, on failure it
    is removed and ``path`` is left as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: Path | str, text: str) -> None:
    with replacing(path) as tmp:
        tmp.write_text(text)


def write_json(path: Path | str, value) -> None:
    write_text(path, json.dumps(value, indent=2, default=str) + "\n")
