"""A diagnostic's own OpenMP offload program (tools/*.cpp), built here with the compiler and flags
build/offload/manifest.json records for the bundle's applications: the GPU node has no LLVM, so it is
built here (after `make offload-bundle`) and carried to the node beside build/offload. Its folder's
sources.sha256 names what it was built from, for `sha256sum -c` on the node: a stale carried binary is
refused there."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def command(manifest: dict, source: Path, out: Path) -> list[str]:
    """The bundle's build command (build/offload/manifest.json) with ``source`` and ``out``."""
    cmd = list(manifest["build_command"])
    at = cmd.index("-o") - 1   # ... SOURCE -o BINARY: the region's, swapped for this one's
    return [manifest["compiler"], *cmd[1:at], str(source), "-o", str(out)]


def build(source: Path, folder: Path, also: tuple[Path, ...] = ()) -> Path:
    """``source`` -> ``folder``/<its stem>-<arch>; ``folder``/sources.sha256 over it, ``also`` (the
    headers of its own it includes) and the offload applications' headers."""
    m = json.loads((ROOT / "build/offload/manifest.json").read_text())
    out = folder / f"{source.stem}-{m['arch']}"
    folder.mkdir(parents=True, exist_ok=True)
    cmd = command(m, source, out)
    print(" ".join(cmd))
    subprocess.run(cmd, check=True, cwd=ROOT)
    sources = [source, *also, *sorted((ROOT / "lib/pinpath/native/offload").glob("*.h"))]
    (folder / "sources.sha256").write_text("".join(
        f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.relative_to(ROOT)}\n" for f in sources))
    return out
