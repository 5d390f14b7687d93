"""Parameter files (``params/<preset>.yaml``): read, validate against each notebook's
``parameters`` cell and against the schema of every parameter, and resolve sizes - all before
anything runs.

Every parameter a notebook may declare has a JSON schema in ``registry.PARAMS`` (``SCHEMA`` here):
its type, range, list length, allowed words, and whether a list must be sorted and free of repeats.
A preset only overrides the registry's defaults: a notebook it has no section for runs with them. A value
is refused in one sentence naming the parameter and where it came from (the file and
notebook, or the command line).
"""

from __future__ import annotations

import ast
import copy
import math
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .errors import BadParameter
from .registry import MAX_NBYTES, NOTEBOOKS, PARAMS
from .units import parse_nbytes

__all__ = ["PRESETS", "RESERVED", "SCHEMA", "OPS_BUDGET", "load_preset", "notebook_parameters", "resolve",
           "parse_override", "defaults", "estimated_ops"]

PRESETS = ("smoke", "default", "full")
RESERVED = ("PLATFORM", "RUN_DIR", "NOTEBOOK")   #: injected by the runner, not set in files
OPS_BUDGET = 20_000_000    #: the most timed operations (transfers, calls, regions) one notebook may ask for

#: every parameter a notebook may declare: its JSON schema (the registry's)
SCHEMA: dict[str, dict] = PARAMS
#: parameters whose values are sizes in bytes (written 4096, "4KiB", "1MiB", "800MB")
SIZE_PARAMS = frozenset(n for n in SCHEMA if n.endswith("NBYTES"))
#: counts that multiply into a notebook's number of timed operations
_COUNTS = ("REPEATS", "WARMUP", "INVOCATIONS", "STEPS", "TRANSFERS", "ITERATIONS", "SWEEP_STEPS", "PROCESSES", "CALLS")


def _sorted(validator, want, instance, schema):
    if not (want and isinstance(instance, list)):
        return
    try:
        in_order = instance == sorted(instance)
    except TypeError:        # items of several types: the items' own schema refuses them
        return
    if not in_order:
        yield jsonschema.ValidationError(f"{instance} must be in increasing order")


_Validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"sorted": _sorted})


MAX_DEPTH = 6     #: the deepest nesting of mappings and lists a parameter file needs (it uses 3)


class _Loader(yaml.SafeLoader):
    """Safe YAML that refuses what a parameter file never needs: duplicate keys (the last
    would win silently), aliases (a small file could expand without bound) and nesting deeper
    than MAX_DEPTH. ``where``: the file's name, or the --set it came from."""

    where, _depth = "", 0

    def compose_node(self, parent, index):
        mark = self.peek_event().start_mark
        if self.check_event(yaml.AliasEvent):
            raise BadParameter(f"{self.where}: aliases (*name) are not allowed in parameter files "
                               f"(line {mark.line + 1})")
        if self._depth >= MAX_DEPTH:
            raise BadParameter(f"{self.where}: nested deeper than {MAX_DEPTH} levels (line {mark.line + 1})")
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise BadParameter(f"{self.where}: {key!r} is given twice (line {key_node.start_mark.line + 1})")
            seen.add(key)
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node):
        """YAML 1.1's readings of a whole number that nobody writing a parameter means: a leading 0
        read as octal (``010`` is 8), ``1:30`` as base 60, ``_`` as nothing: refused, naming the value."""
        text = self.construct_scalar(node)
        digits = text.lstrip("+-")
        if ":" in text or "_" in text or (len(digits) > 1 and digits[0] == "0" and digits[1] not in "xXoO"):
            raise BadParameter(f"{self.where}: {text!r} is not a plain whole number (YAML would read it as "
                               f"{super().construct_yaml_int(node)}); write it without leading zeros, ':' or '_' "
                               f"(line {node.start_mark.line + 1})")
        return super().construct_yaml_int(node)


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def _load_yaml(text: str, where: str):
    """``text`` read as one YAML document with ``_Loader``; BadParameter naming ``where``."""
    loader = None
    try:
        loader = _Loader(text)         # its reader already refuses some characters
        loader.where = where
        return loader.get_single_data()
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark else ""
        raise BadParameter(f"{where}: not valid YAML{at}") from None
    except (RecursionError, ValueError, OverflowError) as e:   # a value YAML's constructors cannot make
        raise BadParameter(f"{where}: not valid YAML ({type(e).__name__})") from None
    finally:
        if loader is not None:
            loader.dispose()


def load_preset(params_dir: Path, preset: str) -> dict[str, dict[str, Any]]:
    """``{notebook stem: {NAME: value}}`` from ``params_dir/<preset>.yaml``."""
    path = Path(params_dir) / f"{preset}.yaml"
    if preset not in PRESETS:
        raise BadParameter(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    if not path.is_file():
        raise BadParameter(f"{path.name}: the parameter file of preset {preset!r} is missing")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadParameter(f"{path.name}: not UTF-8 text (byte {e.object[e.start]:#04x} at offset {e.start})") from None
    except OSError as e:
        raise BadParameter(f"{path.name}: cannot be read ({e.strerror or e})") from None
    data = _load_yaml(text, path.name)
    if not isinstance(data, dict) or not all(isinstance(k, str) and (v is None or isinstance(v, dict))
                                              for k, v in data.items()):
        raise BadParameter(f"{path.name}: must map each notebook name to a mapping of its parameters")
    return {k: v or {} for k, v in data.items()}


def notebook_parameters(nb_path: Path) -> dict[str, dict]:
    """The parameters cell of a notebook: ``{name: {"inferred_type_name", "default", "help"}}``;
    BadParameter in one sentence for a notebook that is not JSON or has no parameters cell."""
    import json
    import nbformat
    import papermill
    try:
        nb = nbformat.read(nb_path, as_version=4)
    except (json.JSONDecodeError, nbformat.reader.NotJSONError, UnicodeDecodeError):
        raise BadParameter(f"{Path(nb_path).name}: not a notebook (not JSON)") from None
    except Exception as e:   # nbformat's own validation errors
        raise BadParameter(f"{Path(nb_path).name}: not a valid notebook ({type(e).__name__})") from None
    if not any("parameters" in c.get("metadata", {}).get("tags", []) for c in nb.cells):
        raise BadParameter(f"{Path(nb_path).name}: has no cell tagged 'parameters'")
    return papermill.inspect_notebook(str(nb_path))


def parse_override(text: str) -> tuple[str, str, Any]:
    """``"01_c12_lock_copy.NBYTES=1GiB"`` -> (stem, name, value); the value is read as YAML (one
    line: several settings are several --set, or make's SET separated by ';')."""
    if any(not (c.isprintable() or c == " ") for c in text):
        raise BadParameter(f"--set {text!r}: a line break or control character; give one NOTEBOOK.NAME=VALUE per "
                           "--set (make: SET=\"A.X=1;B.Y=2\")")
    head, sep, value = text.partition("=")
    stem, dot, name = head.partition(".")
    if not sep or not dot or not stem.strip() or not name.strip():
        raise BadParameter(f"--set {text!r}: write NOTEBOOK.NAME=VALUE, e.g. 01_c12_lock_copy.NBYTES=1GiB")
    try:
        return stem.strip(), name.strip(), _load_yaml(value, f"--set {text!r}")
    except BadParameter as e:
        if "not valid YAML" in str(e):
            raise BadParameter(f"--set {text!r}: the value is not valid YAML") from None
        raise


def _parsed_sizes(name: str, value, where: str):
    if isinstance(value, list):
        return [parse_nbytes(v, name=f"{where}: {name}") for v in value]
    return parse_nbytes(value, name=f"{where}: {name}")


def _first_error(name: str, value, where: str) -> None:
    errors = sorted(_Validator(SCHEMA[name]).iter_errors(value), key=lambda e: list(e.path))
    if not errors:
        return
    e = errors[0]
    at = "".join(f"[{p}]" for p in e.path)
    msg = e.message
    if e.validator in ("minItems",):
        msg = "must list at least one value"
    elif e.validator == "uniqueItems":
        msg = f"{value} repeats a value"
    elif e.validator in ("type",) and e.validator_value == "array":
        msg = f"must be a list, got {type(value).__name__} {value!r}"
    elif e.validator in ("type",):
        msg = f"must be {e.validator_value}, got {type(e.instance).__name__} {e.instance!r}"
    raise BadParameter(f"{where}: {name}{at} {msg}")


def resolve(values: dict[str, Any], declared: dict[str, dict], *, where: str) -> dict[str, Any]:
    """Check ``values`` against the notebook's declared parameters and the schema; parse sizes.
    BadParameter naming the parameter and ``where`` (the file and notebook) for anything off."""
    out = {}
    for name, value in values.items():
        if name in RESERVED:
            raise BadParameter(f"{where}: {name} is set by the runner, not in a parameter file")
        if name not in declared:
            known = ", ".join(n for n in declared if n not in RESERVED)
            raise BadParameter(f"{where}: unknown parameter {name!r}; the notebook declares: {known}")
        if name not in SCHEMA:
            raise BadParameter(f"{where}: {name} has no schema in pinpath.params.SCHEMA, so its value cannot be checked")
        if isinstance(value, bool) and name != "VERIFY":
            raise BadParameter(f"{where}: {name} must be {SCHEMA[name].get('type', 'a word')}, got bool {value!r}")
        if name in SIZE_PARAMS:
            if isinstance(value, list) and not value:
                raise BadParameter(f"{where}: {name} must list at least one size")
            value = _parsed_sizes(name, value, where)
        value = _whole(SCHEMA[name], value)
        _first_error(name, value, where)
        out[name] = value
    return out


def _whole(schema: dict, value):
    """A whole-number float (3.0) where the schema wants an integer becomes that integer - one
    rule for the schema, the budget and the notebook; other floats stay and are refused."""
    if schema.get("type") == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if schema.get("type") == "array" and isinstance(value, list):
        return [_whole(schema["items"], v) for v in value]
    return value


def defaults(declared: dict[str, dict], stem: str | None = None) -> dict[str, Any]:
    """A notebook's defaults: the registry's for a notebook it lists (``stem``), else the values its
    parameters cell gives the parameters of the schema (papermill hands over each literal's text)."""
    if stem in NOTEBOOKS:
        return copy.deepcopy(dict(NOTEBOOKS[stem].params))
    out = {}
    for name, d in declared.items():
        if name in SCHEMA and name not in RESERVED:
            try:
                out[name] = ast.literal_eval(d.get("default", "None"))
            except (ValueError, SyntaxError):
                continue
    return out


def estimated_ops(merged: dict[str, Any]) -> int:
    """A notebook's timed operations, bounded from above: the product of its counts and of the
    lengths of its lists (``merged``: the notebook's defaults with the file's values over them)."""
    ops = 1
    for name, v in merged.items():
        if isinstance(v, list):
            ops *= max(1, len(v))
        elif name in _COUNTS and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            ops *= max(1, int(v) + (1 if name == "REPEATS" else 0))
    if "NW" in merged or "NW_VALUES" in merged:
        ops *= 2        # H2D and D2H per region
    return ops
