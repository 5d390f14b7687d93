"""``pinpath`` command line: argument parsing only; the work is in ``pinpath.runner``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import PinpathError
from .params import PRESETS
from .vocab import Platform

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="pinpath", description="Reproduce the aomp H2D/D2H thread's measurements.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, help_ in (("run", "validate, then execute the notebooks of a preset into outputs/<run-id>/"),
                        ("validate", "check the parameter files and notebooks of a preset; run nothing")):
        p = sub.add_parser(name, help=help_)
        p.add_argument("--preset", default="default", help=f"one of {', '.join(PRESETS)} (default: default)")
        p.add_argument("--platform", default="auto", help=f"one of {', '.join(m.value for m in Platform)} (default: auto)")
        p.add_argument("--notebooks", default="", help="comma-separated notebook stems (default: all)")
        p.add_argument("--outputs", type=Path, default=None, help="folder of runs (default: outputs/)")
        p.add_argument("--cell-timeout", type=int, default=None, help="seconds a cell may run (default: no limit)")
    sub.add_parser("list", help="list the notebooks and presets")
    p = sub.add_parser("compare", help="render the claims of two or more runs side by side")
    p.add_argument("runs", nargs="+", type=Path, help="run folders (outputs/<run-id>)")
    p.add_argument("--out", type=Path, default=Path("outputs/compare.html"), help="HTML file to write")
    p = sub.add_parser("runs", help="list the runs under outputs/ with their status")
    p.add_argument("--outputs", type=Path, default=None, help="folder of runs (default: outputs/)")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from . import runner
    try:
        if args.cmd == "list":
            for nb in runner.available_notebooks():
                print(nb.stem)
            print("presets:", ", ".join(PRESETS))
            return 0
        if args.cmd == "compare":
            print(runner.compare(args.runs, args.out))
            return 0
        if args.cmd == "runs":
            for rid, man in runner.list_runs(args.outputs or runner.OUTPUTS_DIR):
                print(f"{rid}  {man.get('status', '?'):8} {man.get('preset', '?'):8} {man.get('platform', '?'):5} "
                      f"{man.get('duration_s', '?')} s")
            return 0
        only = [s for s in args.notebooks.split(",") if s] or None
        if args.cmd == "validate":
            p = runner.plan(args.preset, args.platform, only=only)
            print(f"ok: {len(p.notebooks)} notebook(s), preset {p.preset}, platform {p.platform}")
            return 0
        kw = {"out_dir": args.outputs} if args.outputs else {}
        run_dir, man = runner.run(args.preset, args.platform, only=only, cell_timeout_s=args.cell_timeout, **kw)
    except PinpathError as e:
        print(f"pinpath: {e}", file=sys.stderr)
        return 2
    print(f"{man['status']}: {run_dir} ({man['duration_s']} s); report: {run_dir / 'report' / 'index.html'}")
    return 0 if man["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
