"""Absolute paths of this machine rewritten before a page is written."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping

from markupsafe import Markup

from ...paths import PROJECT_ROOT


class Scrubber:
    """Rewrite absolute paths of this machine in text: the run folder's become relative to it,
    the checkout's relative to the checkout, installed packages' start at ``site-packages/``,
    the home folder becomes ``~`` and the temporary folder ``$TMPDIR``."""

    _SITE = re.compile(r"(?<![\w.-])/[^\s'\"<>:]*?/(site|dist)-packages/")

    def __init__(self, run_dir: str | os.PathLike | None = None) -> None:
        roots: list[tuple[str, str]] = []
        if run_dir is not None:
            for p in {Path(run_dir).absolute(), Path(run_dir).resolve()}:
                roots.append((str(p), ""))
                roots.append((str(p.parent), "../"))     # outputs/: the run's siblings
        for p in {Path(PROJECT_ROOT).absolute(), Path(PROJECT_ROOT).resolve()}:
            roots.append((str(p), ""))
        checkout = str(Path(PROJECT_ROOT).resolve()) + "/"
        prefix = str(Path(sys.prefix).resolve())
        # a virtual environment outside the checkout (inside it, it is relative like the rest)
        if prefix not in ("/", "/usr", "/usr/local") and not (prefix + "/").startswith(checkout):
            roots.append((sys.prefix, "<python>/"))
        roots.append((str(Path.home()), "~/"))
        roots.append((tempfile.gettempdir(), "$TMPDIR/"))
        # longest first, so a run folder wins over the checkout that holds it
        roots = [(r.rstrip("/"), s) for r, s in roots if r and r.rstrip("/")]
        self.roots = sorted(dict(roots).items(), key=lambda rs: -len(rs[0]))
        alt = "|".join(re.escape(r) for r, _ in self.roots)
        self._re = re.compile(rf"(?<![\w.-])({alt})(/|(?![\w.-]))")

    def __call__(self, text: str) -> str:
        if not isinstance(text, str) or "/" not in text:
            return text
        text = self._SITE.sub(lambda m: f"{m.group(1)}-packages/", text)

        def sub(m: re.Match) -> str:
            prefix = dict(self.roots)[m.group(1)]
            if m.group(2) == "/":
                return prefix or ""
            return prefix.rstrip("/") or "."
        return self._re.sub(sub, text)

    def tree(self, value: Any) -> Any:
        """The same, through dicts, lists and tuples."""
        if isinstance(value, Markup):
            return value
        if isinstance(value, str):
            return self(value)
        if isinstance(value, Mapping):
            return {self(str(k)): self.tree(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.tree(v) for v in value]
        return value
