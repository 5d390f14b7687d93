#!/usr/bin/env python3
"""The stencil's halo updates under three host uses, with and without its kernels (issue 33 item 3):
a diagnostic of advise's runtime term, no verdict (tools/halo_cross.cpp says what it times).

  build      tools/halo_cross.cpp -> build/halo-cross/halo_cross-<arch> (tools/offload_tool.py: the
             bundle's compiler and flags; make offload-bundle first), carried with build/offload
  analyse DIR   per process (variant, repeat) and case (host use, kernels): each copy's median over
             rounds and the four halos' sum; then, per case, the median over processes with their
             range, plain against app_pinned and their difference (what advise predicts for the
             stencil), and the pageable copies by direction

Usage: python3 tools/halo_cross.py build | analyse DIR
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import offload_tool  # noqa: E402  (a sibling tool)

SOURCE = ROOT / "tools/halo_cross.cpp"


def build() -> Path:
    return offload_tool.build(SOURCE, ROOT / "build/halo-cross")


CASE = ["host_use", "kernels"]


def table(d: Path):
    """(each copy's median over rounds, the four halos' sum of them) per process and case."""
    import pandas as pd

    frames = []
    for p in sorted(d.glob("halo-*-*.csv")):
        rep = int(p.stem.rsplit("-", 1)[1])
        text = "".join(l for l in p.open() if not l.startswith("#"))
        if text.strip():
            frames.append(pd.read_csv(io.StringIO(text)).assign(rep=rep))
    if not frames:
        sys.exit(f"halo_cross: no halo-*.csv with rows in {d}")
    t = pd.concat(frames, ignore_index=True)
    per_copy = t.groupby(["variant", "rep", *CASE, "copy", "direction"]).ns.median().reset_index()
    return per_copy, per_copy.groupby(["variant", "rep", *CASE]).ns.sum().reset_index()


def analyse(d: Path) -> None:
    per_copy, step = table(d)
    case = CASE
    us = lambda s: s / 1e3   # noqa: E731
    over = step.groupby([*case, "variant"]).ns.agg(["median", "min", "max"]).apply(us).unstack("variant")
    variants = [v for v in ("plain", "app_pinned") if v in set(step.variant)]
    wide = step.pivot_table(index=[*case, "rep"], columns="variant", values="ns")
    both = len(variants) == 2
    if both:   # per repeat: the two variants' processes of one repeat ran one after the other
        diff = (wide["app_pinned"] - wide["plain"]).groupby(level=case).agg(["median", "min", "max"]).apply(us)
    else:
        print(f"only {', '.join(variants)} ran: no difference between the variants")
    print("four halos per step, us: median over processes (min, max)")
    for key in over.index:
        cells = [f"{v} {over.loc[key, ('median', v)]:6.1f} ({over.loc[key, ('min', v)]:.1f}-"
                 f"{over.loc[key, ('max', v)]:.1f})" for v in variants]
        tail = ""
        if both:
            dl = diff.loc[key]
            tail = f"; app_pinned - plain {dl['median']:+.1f} ({dl['min']:+.1f} to {dl['max']:+.1f})"
        print(f"  {key[0]:5} kernels={key[1]}: " + ", ".join(cells) + tail)
    print("each copy, plain, us: median over processes")
    pc = per_copy[per_copy.variant == "plain"].groupby([*case, "copy", "direction"]).ns.median().apply(us)
    print(pc.unstack(["copy", "direction"]).round(1).to_string())


def main(argv: list[str]) -> int:
    if argv[:1] == ["build"]:
        build()
    elif argv[:1] == ["analyse"] and len(argv) == 2:
        analyse(Path(argv[1]))
    else:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
