"""The manifest as a tree of tables (the index's collapsible blocks)."""

from __future__ import annotations

from typing import Mapping

from ...units import fmt_ns
from ..fmt import _exact_binary, _isnum, binary_size


def _leaf(key: str, value, parent: str = "") -> str:
    if value is None:
        return "not installed" if parent == "packages" else "\u2014"
    if isinstance(value, bool):
        return "yes" if value else "no"
    k = key.lower()
    if _isnum(value) and not isinstance(value, bool):
        if k.endswith("nbytes") and float(value) >= 1024:
            return f"{value} ({binary_size(value)})"
        if k.endswith("_ns"):
            return fmt_ns(value)
        if k.endswith("duration_s"):
            return f"{float(value):.1f} s"
    return str(value)


def _tree(key: str, value, depth: int = 0, parent: str = "") -> dict:
    """{'text': ...} or {'rows': [(key, node)]}: what the manifest macro draws."""
    if isinstance(value, Mapping):
        if not value:
            return {"text": "(none)"}
        return {"rows": [(str(k), _tree(str(k), v, depth + 1, key)) for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        if all(not isinstance(v, (Mapping, list, tuple)) for v in value):
            if key.upper().endswith("NBYTES") and all(_isnum(v) for v in value):
                return {"text": ", ".join(binary_size(v) if _exact_binary(v) else f"{v} B ({binary_size(v)})"
                                          for v in value)}
            return {"text": ", ".join(_leaf(key, v) for v in value) or "(none)"}
        if all(isinstance(v, (list, tuple)) and len(v) == 2 for v in value):
            return {"rows": [(str(a), _tree(str(a), b, depth + 1)) for a, b in value]}
        return {"rows": [(str(i), _tree(key, v, depth + 1)) for i, v in enumerate(value)]}
    return {"text": _leaf(key, value, parent)}


_MANIFEST_ORDER = ("git", "runtime", "runtime_selection", "harness_ns", "machine", "parameters", "packages")
_MANIFEST_TITLES = {"git": "code (git)", "runtime": "runtime and device", "runtime_selection": "runtime selection",
                    "harness_ns": "the harness's own cost", "machine": "machine", "parameters": "parameters per notebook",
                    "packages": "package versions"}
_MANIFEST_SUMMARY = ("run_id", "preset", "platform", "status", "start", "end", "duration_s")


def _manifest_blocks(manifest: Mapping) -> tuple[list[tuple[str, str]], list[dict]]:
    head = [(k, _leaf(k, manifest[k])) for k in _MANIFEST_SUMMARY if k in manifest]
    keys = [k for k in _MANIFEST_ORDER if k in manifest]
    keys += [k for k in manifest if k not in keys and k not in _MANIFEST_SUMMARY and k != "notebooks"]
    return head, [{"key": k, "title": _MANIFEST_TITLES.get(k, k), "node": _tree(k, manifest[k])} for k in keys]
