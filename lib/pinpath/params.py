"""Parameter files (``params/<preset>.yaml``): read, validate against each notebook's
``parameters`` cell, and resolve sizes - all before anything runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import BadParameter, UnknownName
from .experiments.sweep import VERIFY_MODES
from .osinfo import meminfo_nbytes
from .units import parse_nbytes
from .vocab import MemoryKind, Policy, choose

__all__ = ["PRESETS", "RESERVED", "load_preset", "notebook_parameters", "resolve"]

PRESETS = ("smoke", "default", "full")
RESERVED = ("PLATFORM", "RUN_DIR", "NOTEBOOK")   #: injected by the runner, not set in files
_TYPES = {"int": (int,), "float": (float, int), "str": (str,), "bool": (bool,), "list": (list,),
          "dict": (dict,)}


def load_preset(params_dir: Path, preset: str) -> dict[str, dict[str, Any]]:
    """``{notebook stem: {NAME: value}}`` from ``params_dir/<preset>.yaml``."""
    path = Path(params_dir) / f"{preset}.yaml"
    if preset not in PRESETS:
        raise BadParameter(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    if not path.is_file():
        raise BadParameter(f"{path}: the parameter file of preset {preset!r} is missing")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise BadParameter(f"{path}: not valid YAML{where}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise BadParameter(f"{path}: must map each notebook name to a mapping of its parameters")
    return data


def notebook_parameters(nb_path: Path) -> dict[str, dict]:
    """The parameters cell of a notebook: ``{name: {"inferred_type_name", "default", "help"}}``."""
    import papermill
    return papermill.inspect_notebook(str(nb_path))


def _is_size_name(name: str) -> bool:
    return name.endswith("NBYTES")


#: parameters whose values are words of the vocabulary, by the end of their name
_WORDS = (("POLICY", Policy, "policy"), ("POLICIES", Policy, "policy"), ("KIND", MemoryKind, "memory kind"),
          ("KINDS", MemoryKind, "memory kind"))


def _check_words(name: str, value, where: str) -> None:
    for suffix, enum, what in _WORDS:
        if name.endswith(suffix):
            for v in value if isinstance(value, list) else [value]:
                try:
                    choose(enum, v, what)
                except UnknownName as e:
                    raise BadParameter(f"{where}: {name}: {e}") from None
    if name == "VERIFY" and value not in VERIFY_MODES:
        raise BadParameter(f"{where}: VERIFY must be one of {', '.join(VERIFY_MODES)}, got {value!r}")


def resolve(values: dict[str, Any], declared: dict[str, dict], *, where: str) -> dict[str, Any]:
    """Check ``values`` against the declared parameters and parse sizes.

    Unknown name, wrong type or a bad size raises BadParameter naming the parameter
    and ``where`` (the file and notebook).
    """
    out = {}
    mem_nbytes = meminfo_nbytes("MemTotal") or None
    for name, value in values.items():
        if name in RESERVED:
            raise BadParameter(f"{where}: {name} is set by the runner, not in a parameter file")
        if name not in declared:
            known = ", ".join(n for n in declared if n not in RESERVED)
            raise BadParameter(f"{where}: unknown parameter {name!r}; the notebook declares: {known}")
        if _is_size_name(name):
            sizes = value if isinstance(value, list) else [value]
            if isinstance(value, list) and not value:
                raise BadParameter(f"{where}: {name} must list at least one size")
            parsed = [parse_nbytes(v, name=f"{where}: {name}") for v in sizes]
            for v, n in zip(sizes, parsed):
                if mem_nbytes and n > mem_nbytes:
                    raise BadParameter(f"{where}: {name} = {v!r} is more than this host's memory ({mem_nbytes} bytes)")
            out[name] = parsed if isinstance(value, list) else parsed[0]
            continue
        want = declared[name].get("inferred_type_name", "")
        types = _TYPES.get(want.replace("typing.", "").lower().split("[")[0])
        if types and (not isinstance(value, types) or (bool not in types and isinstance(value, bool))):
            raise BadParameter(f"{where}: {name} must be {want}, got {type(value).__name__} {value!r}")
        _check_words(name, value, where)
        out[name] = value
    return out
