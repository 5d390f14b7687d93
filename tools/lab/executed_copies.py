#!/usr/bin/env python3
"""Copy the executed notebooks of the committed reference runs (outputs/reference/<name>/notebooks/)
to build/lab/executed/<name>/ as '<stem> (executed, <name>).ipynb', read-only, so that JupyterLab
shows them beside the clean notebooks under names of their own. Run by `make lab`."""

import shutil
import stat
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
dest = root / "build" / "lab" / "executed"
if dest.exists():
    for p in dest.rglob("*"):
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    shutil.rmtree(dest)
n = 0
for nb in sorted((root / "outputs" / "reference").glob("*/notebooks/[0-9]*.ipynb")):
    name = nb.parent.parent.name
    out = dest / name / f"{nb.stem} (executed, {name}).ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(nb, out)
    out.chmod(0o444)
    n += 1
print(f"lab: {n} executed reference notebooks, read-only, in {dest.relative_to(root)}/")
