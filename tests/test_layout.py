"""The run folder's layout is spelled once, in lib/pinpath/layout.py: no other module of
lib/pinpath uses a literal run-folder part ("data", "status", "report/claims.csv", ...) as a path."""

import ast
import re
from pathlib import Path

from pinpath import layout

LIB = Path(__file__).resolve().parents[1] / "lib" / "pinpath"
_DIRS = {"data", "report", "share", "figures", "status", "notebooks"}
_SLASHED = re.compile(r"^(\.aside-|(data|report|share|figures|status|notebooks)/)"
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
