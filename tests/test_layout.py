"""The run folder's layout is spelled once, in lib/pinpath/layout.py: no other module of
lib/pinpath, nor workflow/Snakefile, uses a literal run-folder part ("data", "status",
"report/claims.csv", ...) as a path."""

import ast
import json
import re
from pathlib import Path

from pinpath import layout

LIB = Path(__file__).resolve().parents[1] / "lib" / "pinpath"
SNAKEFILE = LIB.parents[1] / "workflow" / "Snakefile"
_DIRS = {"data", "report", "share", "figures", "status", "notebooks"}
_SLASHED = re.compile(r"^(\.aside-|/?(data|report|share|figures|status|notebooks)/)"
                      r"|(manifest\.json|runner\.lock|index\.html|summary\.md|claims\.csv)$")
_CALLS = {"Path", "PurePath", "inside", "glob", "rglob", "joinpath", "open", "with_name", "relative_to"}
#: literals that look like a run's parts but name something else, with what they name
NOT_THE_RUN = {
    ("advise/main.py", "summary.md"): "an advise folder's summary",
    ("advise/report.py", "summary.md"): "an advise folder's summary",
    ("experiments/offload_build.py", "manifest.json"): "the offload build's manifest",
    ("paths.py", "notebooks"): "the project's notebooks/",
    ("report/rocprof.py", "data"): "the package's data/",
    ("report/html/index.py", "index.html"): "the page's template",
}


def path_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of each string literal (f-string pieces too; docstrings and phrases with a
    space left out) that names a run-folder part and is used as a path: an operand of ``/``, an
    argument of a path call, or a file name or ``part/...``."""
    tree = ast.parse(source)
    parent = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    out = []
    for n in ast.walk(tree):
        if not (isinstance(n, ast.Constant) and isinstance(n.value, str)) or id(n) in docs or " " in n.value:
            continue
        whole = parent[n] if isinstance(parent.get(n), ast.JoinedStr) else n
        up = parent.get(whole)
        func = getattr(up, "func", None)
        as_path = (isinstance(up, ast.BinOp) and isinstance(up.op, ast.Div)) or (
            isinstance(up, ast.Call) and whole in up.args and getattr(func, "id", getattr(func, "attr", "")) in _CALLS)
        if (n.value in _DIRS and as_path) or _SLASHED.search(n.value):
            out.append((n.lineno, n.value))
    return sorted(out)


def test_the_layout_is_spelled_once():
    found = {f"{p.relative_to(LIB).as_posix()}:{line}": text
             for p in sorted(LIB.rglob("*.py")) if p.name != "layout.py"
             for line, text in path_literals(p.read_text()) if (p.relative_to(LIB).as_posix(), text) not in NOT_THE_RUN}
    assert not found, f"run-folder paths spelled outside pinpath/layout.py (use layout.path/rel): {found}"


_RULE = re.compile(r"^(?:rule|checkpoint)\s+(\w+)\s*:\s*$")
_TOP = re.compile(r"^(localrules|wildcard_constraints|ruleorder|onstart|onsuccess|onerror)\s*:\s*(.*)$")
_DIRECTIVE = re.compile(r"^(\s+)(\w+)\s*:\s*(.*)$")


def snakefile_as_python(source: str) -> tuple[str, list[int]]:
    """A Snakefile as Python that ``ast`` reads, and the Snakefile's line of each of its lines: a
    rule becomes a function whose directives (``input:``, ``output:``, ``shell:`` ...) are calls
    of their values, a handler (``onerror:``) a function, ``localrules: a, b`` a call."""
    out: list[str] = []
    where: list[int] = []
    open_at, in_rule = None, False     # the indent of an open directive's call; inside a rule

    def emit(text: str, n: int) -> None:
        out.append(text)
        where.append(n)
    for n, line in enumerate(source.splitlines(), 1):
        body, indent = line.strip(), len(line) - len(line.lstrip())
        if body and not body.startswith("#"):
            if open_at is not None and indent <= open_at:
                emit(" " * open_at + ")", n)
                open_at = None
            in_rule = in_rule and indent > 0
        top, rule = _TOP.match(line), _RULE.match(line)
        directive = _DIRECTIVE.match(line) if in_rule and indent == 4 else None
        if rule:
            emit(f"def _rule_{rule[1]}():", n)
            in_rule = True
        elif top and top[1].startswith("on"):
            emit(f"def _{top[1]}(log):", n)
        elif top or directive:
            m = top or directive
            pad, key, value = ("", m[1], m[2]) if top else (m[1], m[2], m[3])
            if value:      # one line: rule names (localrules) as text, a value as an argument
                emit(f"{pad}_{key}({value!r})" if top else f"{pad}_{key}({value})", n)
            else:
                emit(f"{pad}_{key}(", n)
                open_at = len(pad)
        else:
            emit(line, n)
    if open_at is not None:
        emit(" " * open_at + ")", len(where))
    return "\n".join(out) + "\n", where


def test_the_snakefile_takes_the_layout_s_paths():
    python, where = snakefile_as_python(SNAKEFILE.read_text())
    assert "def _rule_finalize():" in python and "_output(" in python     # read as rules, not as text
    found = {where[line - 1]: text for line, text in path_literals(python)}
    assert not found, f"workflow/Snakefile spells run-folder paths (use layout, its `at`): {found}"


def test_the_snakefile_s_rules_read_and_write_the_layout_s_paths(tmp_path):
    """The Snakefile's Python run on a run folder (Snakemake's names stubbed): each rule's inputs
    and outputs, its wildcard filled, are the layout's paths."""
    run, stems = tmp_path / "run", ["00_platform", "01_c12_lock_copy"]
    run.mkdir()
    layout.path(run, "manifest").write_text(json.dumps({"notebooks": dict.fromkeys(stems, {})}))
    python, _ = snakefile_as_python(SNAKEFILE.read_text())
    rules: dict[str, dict] = {}
    ns = {"config": {"run_dir": str(run)}, "__name__": "snakefile",
          "expand": lambda pattern, stem: [pattern.format(stem=s) for s in stem]}
    for key in ("input", "output", "params", "shell", "wildcard_constraints", "localrules"):
        ns[f"_{key}"] = lambda *a, _key=key, **k: rules.setdefault(ns.get("_at", ""), {}).update({_key: (a, k)})
    exec(compile(python, str(SNAKEFILE), "exec"), ns)
    for name in ("all", "notebook", "finalize"):
        ns["_at"] = name
        ns[f"_rule_{name}"]()
    spelled = lambda values: [v.format(stem="S") for v in values]   # noqa: E731
    at = lambda what: str(layout.path(run, what, "S" if "{stem}" in layout.LAYOUT[what] else ""))   # noqa: E731
    assert spelled(rules["all"]["input"][0]) == [at("index")]
    assert spelled(rules["notebook"]["output"][1].values()) == [at("part"), at("notebook"), at("page")]
    assert rules["finalize"]["input"][0][0] == [str(layout.path(run, "part", s)) for s in stems]
    assert spelled(rules["finalize"]["output"][0]) == [at("index"), at("claims")]


def test_a_path_the_snakefile_spells_is_caught():
    src = ('rule notebook:\n'
           '    input:\n'
           '        _not_ok,\n'
           '    output:\n'
           '        part=f"{RUN}/status/{{stem}}.json",\n'
           '    shell: "run {wildcards.stem:q}"\n'
           '\n'
           'localrules: all\n'
           'onerror:\n'
           '    try:\n'
           '        x = Path(RUN, "report")\n'
           '    except OSError:\n'
           '        pass\n')
    python, where = snakefile_as_python(src)
    assert [(where[line - 1], text) for line, text in path_literals(python)] == [(5, "/status/{stem}.json"), (11, "report")]


def test_a_spelled_path_is_caught():
    src = ('"""docs name report/claims.csv"""\n'
           'a = run / "status" / f"{stem}.json"\n'
           'b = Path(run, "data")\n'
           'c = run / "report" / "claims.csv"\n'
           'd = man["status"]\n'
           'e = "report/claims.csv is missing"\n'
           'f = f".aside-{stem}"\n')
    assert path_literals(src) == [(2, "status"), (3, "data"), (4, "claims.csv"), (4, "report"), (7, ".aside-")]


def test_every_layout_path_stays_inside_the_run():
    for what, spelled in layout.LAYOUT.items():
        rel = layout.rel(what, stem="s" if "{stem}" in spelled else "", name="n" if "{name}" in spelled else "")
        assert not rel.startswith("/") and ".." not in rel.split("/"), what
