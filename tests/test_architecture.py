"""ARCHITECTURE.md stays true: every file or folder it names in backticks exists, and no module of
lib/pinpath imports one that imports it back (lazy imports inside functions included)."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_EXT = re.compile(r"\.(py|md|c|h|cpp|yaml|ipynb|json|sh|toml|csv)$")


def named_paths(text: str) -> list[str]:
    """Backticked words that are paths: they hold a "/" or end in a file's extension
    (placeholders in <angle brackets> and code such as `claims.judge([...])` are left out)."""
    return [w for w in re.findall(r"`([^`\s]+)`", text)
            if re.fullmatch(r"[\w.*/-]+", w) and ("/" in w or _EXT.search(w))]


def missing(text: str, root: Path) -> list[str]:
    """The named paths that do not exist under ``root``; a bare name (`platform.h`) may also be
    a file the text names elsewhere with its folder."""
    names = named_paths(text)
    full = {Path(n).name for n in names if "/" in n}
    return [n for n in names
            if not (list(root.glob(n)) if "*" in n else (root / n).exists()) and not ("/" not in n and n in full)]


def test_named_paths_exist():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    assert len(named_paths(text)) > 40          # the check reads the map as written, not an empty list
    assert not missing(text, ROOT), f"ARCHITECTURE.md names files that do not exist: {missing(text, ROOT)}"


def test_a_missing_path_is_caught():
    text = ("see `lib/pinpath/nope.py`, `tools/claims-doc`, `params/*.yaml`, `README.md`, `nope.md` and "
            "`trace.py` (bare, not named in full), not `claims.judge([...])` nor `NN_<claims>.ipynb`")
    assert named_paths(text) == ["lib/pinpath/nope.py", "tools/claims-doc", "params/*.yaml", "README.md", "nope.md",
                                 "trace.py"]
    assert missing(text, ROOT) == ["lib/pinpath/nope.py", "nope.md", "trace.py"]


def test_the_run_modules_import_only_those_listed_before_them():
    """lib/pinpath/run/__init__.py lists its modules in import order: each may import only earlier ones."""
    run = ROOT / "lib" / "pinpath" / "run"
    order = re.findall(r"``(\w+)``", (run / "__init__.py").read_text().split('"""')[1].split(":", 1)[1])
    order = [m for m in dict.fromkeys(order) if (run / f"{m}.py").is_file()]
    assert sorted(order) == sorted(p.stem for p in run.glob("*.py") if p.stem != "__init__")
    for i, mod in enumerate(order):
        text = (run / f"{mod}.py").read_text()
        used = set(re.findall(r"^\s*from \.(\w+) import", text, re.M))
        used |= {n for names in re.findall(r"^\s*from \. import ([\w, ]+)", text, re.M) for n in names.replace(" ", "").split(",")}
        assert used <= set(order[:i]), f"run/{mod}.py imports {sorted(used - set(order[:i]))}, listed after it"


def _imports() -> dict[str, set[str]]:
    """Module -> the pinpath modules it imports (anywhere in its text), by dotted name."""
    lib = ROOT / "lib"
    mods = {".".join(p.relative_to(lib).with_suffix("").parts).removesuffix(".__init__"): p
            for p in (lib / "pinpath").rglob("*.py")}
    out = {}
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rpartition(".")[0]
        found = set()
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.ImportFrom):
                base = ".".join(pkg.split(".")[:len(pkg.split(".")) - n.level + 1] + [n.module or ""]).strip(".") \
                    if n.level else n.module
                found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in n.names}
            elif isinstance(n, ast.Import):
                found |= {a.name for a in n.names}
        out[m] = {f for f in found if f in mods and f != m}
    return out


def test_no_import_circle():
    edges, circles = _imports(), []
    for start in edges:   # a path from a module's imports back to it
        seen, todo = set(), list(edges[start])
        while todo:
            m = todo.pop()
            if m == start and not start.startswith(tuple(f"{x}." for x in edges[start])):
                circles.append(start)
                break
            if m not in seen:
                seen.add(m)
                todo += [n for n in edges[m] if not start.startswith(n + ".")]   # a package's own __init__ re-exports
    assert not circles, f"import circles through {sorted(circles)}"


def c_sources() -> list[Path]:
    """The C libraries' sources, .c and .h (lib/pinpath/native; not the offload programs under it)."""
    native = ROOT / "lib/pinpath/native"
    return sorted([*native.glob("*.c"), *native.glob("*.h")])


def platform_ifs(c_source: str) -> list[str]:
    """The preprocessor conditions of a C source that name a platform (``PINPATH_HOST`` ...)."""
    return re.findall(r"^\s*#\s*(?:if|ifdef|ifndef|elif)\b.*PINPATH_\w+.*$", c_source, re.M)


def test_the_c_libraries_read_the_platform_only_through_platform_h():
    """ARCHITECTURE.md says so: what engine.c, ptime.c and state.c choose by platform is a name of
    platform.h's table (a libc feature test such as MADV_HUGEPAGE is no platform's name)."""
    assert platform_ifs("#if defined(PINPATH_HOST)\n  #elif PINPATH_CUDA\n#if LOCKS_BY_PAGE\n#ifdef MADV_HUGEPAGE\n") == \
        ["#if defined(PINPATH_HOST)", "  #elif PINPATH_CUDA"]
    sources = {p.name: p.read_text() for p in c_sources() if p.name != "platform.h"}
    assert {"engine.c", "ptime.c", "state.c"} <= set(sources)
    included = {h for text in sources.values() for h in re.findall(r'^#include "([\w.]+)"', text, re.M)}
    assert "engine_steps.h" in included and included - {"platform.h"} <= set(sources)   # engine.c's parts too
    assert not {name: platform_ifs(text) for name, text in sources.items() if platform_ifs(text)}


#: a module longer than this is split along its jobs (ARCHITECTURE.md: "under about 500 lines")
MAX_LINES = 550


def long_modules(root: Path, most: int = MAX_LINES, files=None) -> dict[str, int]:
    """The ``files`` under ``root`` (its Python modules if None) longer than ``most`` lines, with their lengths."""
    sizes = {p.relative_to(root).as_posix(): len(p.read_text().splitlines())
             for p in (root.rglob("*.py") if files is None else files)}
    return {p: n for p, n in sizes.items() if n > most}


def test_no_module_is_over_about_500_lines():
    lib = ROOT / "lib" / "pinpath"
    assert long_modules(lib, 300)              # the check reads the modules: some are near the limit
    assert not long_modules(lib), f"split these along their jobs: {long_modules(lib)}"


def test_no_c_source_is_over_about_500_lines():
    native = ROOT / "lib" / "pinpath" / "native"
    assert long_modules(native, 300, c_sources())   # the check reads the sources: some are near the limit
    assert not long_modules(native, files=c_sources()), \
        f"split these along their jobs: {long_modules(native, files=c_sources())}"
