#!/usr/bin/env python3
"""Where a notebook's time goes: its code cells run in this process, with a preset's parameters
(as the runner resolves them), each cell timed and profiled; the slowest cells' costliest
functions are printed. Nothing is written to outputs/ (RUN_DIR is empty).

Usage: tools/profile-notebook.py NOTEBOOK [PRESET] [--platform P] [--top N] [--set NAME=VALUE ...]
e.g.   tools/profile-notebook.py 02_c2_staging full --platform cuda
"""

from __future__ import annotations

import argparse
import cProfile
import contextlib
import io
import json
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

from pinpath import params  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebook", help="a notebook's stem, e.g. 02_c2_staging")
    ap.add_argument("preset", nargs="?", default="default")
    ap.add_argument("--platform", default="auto")
    ap.add_argument("--top", type=int, default=12, help="functions shown per slow cell")
    ap.add_argument("--cells", type=int, default=3, help="slow cells profiled in the output")
    ap.add_argument("--set", action="append", default=[], help="NAME=VALUE (YAML), as the runner's --set")
    args = ap.parse_args(argv)
    path = ROOT / "notebooks" / f"{args.notebook}.ipynb"
    if not path.exists():
        ap.error(f"no notebook {path.name} in notebooks/")
    declared = params.notebook_parameters(path)
    values = params.defaults(declared, args.notebook)
    values.update(params.load_preset(ROOT / "params", args.preset).get(args.notebook, {}))
    for item in args.set:
        _, name, value = params.parse_override(f"{args.notebook}.{item}")
        values[name] = value
    values = params.resolve(values, declared, where=f"{args.preset}/{args.notebook}")
    values.update(PLATFORM=args.platform, RUN_DIR="", NOTEBOOK=args.notebook)
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    ns: dict = {"__name__": "__main__"}
    timed = []
    for i, cell in enumerate(cells):
        src = "".join(cell["source"])
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            ns.update(values)
            continue
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        try:
            with contextlib.redirect_stdout(io.StringIO()):   # what the cell displays
                exec(compile(src, f"<cell {i}>", "exec"), ns)
        finally:
            prof.disable()
        wall = time.perf_counter() - t0
        timed.append((wall, i, src.splitlines()[0][:80] if src else "", prof))
        print(f"cell {i:2d}: {wall:7.2f} s  {timed[-1][2]}", flush=True)
    print(f"total {sum(t[0] for t in timed):.1f} s")
    for wall, i, head, prof in sorted(timed, key=lambda t: -t[0])[:args.cells]:
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(args.top)
        body = buf.getvalue()
        print(f"\n== cell {i} ({wall:.1f} s): {head}\n" + body[body.find("   ncalls"):])
    return 0


if __name__ == "__main__":
    sys.exit(main())
