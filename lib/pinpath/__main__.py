"""``pinpath`` command line, the only one: argument parsing only; the work is in ``pinpath.run``
(plan, the local, snakemake and slurm executors, finalize), ``pinpath.compare`` and ``pinpath.report``.

Every refusal is one sentence on stderr and exit code 2, with nothing written."""

from __future__ import annotations

import signal
import sys


def _stopped_early(signum, frame):
    """A signal while the command line is still being imported: one line, no traceback."""
    print(f"pinpath: stopped by signal {signal.Signals(signum).name}", file=sys.stderr)
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    for _s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(_s, _stopped_early)

import argparse  # noqa: E402 - after the early handlers
from pathlib import Path  # noqa: E402

from .errors import BadParameter, PinpathError, printable
from .params import PRESETS
from .vocab import Platform

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    def error(self, message):   # one sentence, exit 2, like every other refusal
        print(f"pinpath: {printable(message)}", file=sys.stderr)
        sys.exit(2)


def _seconds(text: str) -> int | None:
    from .run.plan import cell_timeout_s
    try:
        return cell_timeout_s(text)
    except PinpathError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _slurm_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--partition", default="", help="Slurm partition (default: the profile's, else the cluster's)")
    p.add_argument("--account", default="", help="Slurm account (default: the profile's, else none)")
    p.add_argument("--gpus", default="", help="GPUs per notebook job (default: the profile's, 1)")
    p.add_argument("--cpus", default="", help="CPUs per notebook job (default: the profile's, 8)")
    p.add_argument("--time", default="", help="time limit per notebook job: 90, 1h30m, 01:30:00 (default: 60 min)")
    p.add_argument("--mem", default="", help="memory per notebook job: 32G, 500M (default: 32000 MiB)")


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="pinpath", description="Reproduce the aomp H2D/D2H thread's measurements.")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    for name, help_ in (("run", "validate, then execute the notebooks of a preset into outputs/<run-id>/"),
                        ("validate", "check the parameter files and notebooks of a preset; run nothing"),
                        ("init", "validate, then make a run folder whose notebooks are pending; print its path")):
        p = sub.add_parser(name, help=help_)
        p.add_argument("--preset", default="", help=f"one of {', '.join(PRESETS)} (default: default; with --resume, the run's)")
        p.add_argument("--platform", default="auto", help=f"one of {', '.join(m.value for m in Platform)} (default: auto)")
        p.add_argument("--notebooks", default="", help="comma-separated notebook stems (default: all)")
        p.add_argument("--outputs", type=Path, default=None, help="folder of runs (default: outputs/)")
        p.add_argument("--set", action="append", default=[], metavar="NOTEBOOK.NAME=VALUE",
                       help="one parameter of one notebook, e.g. 01_c12_lock_copy.NBYTES=1GiB (repeatable)")
        if name == "run":
            p.add_argument("--executor", default="local",
                           help="local (this process, the default), snakemake (the workflow on this machine) or "
                                "slurm (one Slurm job per notebook)")
            p.add_argument("--cell-timeout", type=_seconds, default=None, help="seconds a cell may run (default: no limit)")
            p.add_argument("--resume", default="", help="a run id (or folder) whose notebooks that are not ok run again")
            p.add_argument("--stop-by", type=_seconds, default=None, metavar="SECONDS",
                           help="start no notebook that would not end within SECONDS of the run (by the longest it "
                                "took in earlier runs of the preset, references included, with a margin): the run "
                                "ends incomplete and --resume runs the rest (local executor; default: no limit)")
            _slurm_options(p)
            p.add_argument("snakemake_args", nargs="*", help="after --: more Snakemake options (e.g. --dry-run)")
        if name == "init":
            p.add_argument("--run-id", default=None, help="the run folder's name (default: time, host, platform)")
    p = sub.add_parser("run-notebook", help="execute one notebook into an existing run folder")
    p.add_argument("run_dir", type=Path)
    p.add_argument("stem")
    p.add_argument("--cell-timeout", type=_seconds, default=None, help="seconds a cell may run")
    p = sub.add_parser("finalize", help="fold the notebooks' statuses into the manifest, judge the claims, build the report")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--reference", action="store_true",
                   help="judge a committed reference (outputs/reference/*) again: rewrites its manifest and report")
    sub.add_parser("list", help="list the notebooks and presets")
    p = sub.add_parser("compare", help="render the claims of two or more runs side by side")
    p.add_argument("runs", nargs="+", type=Path, help="run folders (outputs/<run-id>)")
    p.add_argument("--out", type=Path, default=Path("outputs/compare.html"), help="HTML file to write")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 if a claim's verdict changed and the two runs' intervals do not overlap")
    p = sub.add_parser("agree", help="two runs (two references) claim by claim: verdicts, figures, repeats and "
                                     "their spread, mechanisms, and whether they agree")
    p.add_argument("runs", nargs=2, type=Path, help="two run folders (e.g. outputs/reference/cuda outputs/reference/cuda-b)")
    p.add_argument("--out", type=Path, default=None, help="CSV file to write the table to")
    p = sub.add_parser("share", help="write share/summary.md, share/figures/ and share/<run-id>.zip inside a run folder")
    p.add_argument("run", nargs="?", default="latest", help="run folder or run id under outputs/ (default: latest)")
    p.add_argument("--outputs", type=Path, default=None, help="folder of runs (default: outputs/)")
    p.add_argument("--inline", action="store_true",
                   help="embed the figures in summary.md as data URIs (for trackers that accept them)")
    p = sub.add_parser("advise", help="replay an application's transfer trace under every policy and advise")
    p.add_argument("trace", type=Path, help="LIBOMPTARGET_INFO=40 (or 32) stderr, rocprofv3 memory-copy CSV or rocprof hsa_stats.csv")
    p.add_argument("--out", type=Path, default=None, help="output folder (default: outputs/advise-<time>/)")
    p.add_argument("--platform", default="auto", help=f"one of {', '.join(m.value for m in Platform)} (default: auto)")
    p.add_argument("--vendor", default="auto", help="whose runtime to model: nvidia, amd, host (default: the platform's)")
    p.add_argument("--repeats", type=int, default=10, help="replays of each class (at least 5; default 10)")
    p.add_argument("--real", type=Path, default=None, help="real times per step or invocation for prediction.csv: a CSV with variant, ns, or the stdout of stencil or region --paired (their transfer_ns)")
    p.add_argument("--application", default=None, help="the application's name in prediction.csv (default: the trace's)")
    p.add_argument("--engine", default="auto", help="replay engine: auto (native where it runs), native, python")
    p.add_argument("--no-runtime-term", action="store_true",
                   help="leave out the offload runtime's own cost per copy (probed with the offload build's updates)")
    p.add_argument("--offload-dir", type=Path, default=None, help="the offload build (default: build/offload/)")
    p.add_argument("--construct", default="update",
                   help="how the application makes its copies, for the runtime term: update (target update, the "
                        "default) or region (map clauses of target regions); a trace does not say")
    p.add_argument("--trace-cpus", default=None,
                   help="the CPUs the traced application ran on (a CPU list such as 0-13,15): advise says where the "
                        "trace was taken against the GPU's interrupt CPU and NUMA node, beside where it measured")
    p.add_argument("--designs", action="store_true",
                   help="also replay the trace under each of the engine's nine policies, as runtime designs (for "
                        "runtime developers; not settings a user can set): designs.csv")
    p = sub.add_parser("runs", help="list the runs under outputs/ with their status")
    p.add_argument("--outputs", type=Path, default=None, help="folder of runs (default: outputs/)")
    slurm = sub.add_parser("slurm", help="ask Slurm: would it accept the notebook jobs, what became of a job")
    ssub = slurm.add_subparsers(dest="slurm_cmd", required=True, parser_class=_Parser)
    p = ssub.add_parser("check", help="would Slurm accept the notebook jobs? (nothing is submitted)")
    _slurm_options(p)
    p = ssub.add_parser("job", help="what Slurm says about a job, in one sentence")
    p.add_argument("job_id")
    p.add_argument("--notebook", default="", help="the notebook's name for the sentence (default: from the job)")
    return ap


def _only(text: str) -> list[str] | None:
    """Comma-separated stems; None (all) for nothing; empty or repeated names are left in, for
    run.plan.plan to refuse."""
    return [s.strip() for s in text.split(",")] if text.strip() else None


_SLURM_KEYS = ("partition", "account", "gpus", "cpus", "time", "mem")


def _slurm(args) -> int:
    """``pinpath slurm check`` and ``pinpath slurm job``."""
    from .run import jobs, profile, slurm
    if args.slurm_cmd == "job":
        js = jobs.job_state(args.job_id)
        if js is None:
            print(f"{args.notebook or 'job'}: Slurm knows nothing of job {args.job_id}")
            return 1
        print(js.sentence(args.notebook or js.notebook or "job"))
        return 0
    res = profile.slurm_resources(profile.env_for_profile(profile.options({k: getattr(args, k) for k in _SLURM_KEYS})))
    found = slurm.check(res)
    for note in found.notes:
        print(f"pinpath: {note}", file=sys.stderr, flush=True)
    print(f"ok: Slurm accepts the notebook jobs ({slurm.describe(res, found.partition, found.account)}): {found.sbatch}")
    return 0


def _run(args, out_dir: Path):
    """``pinpath run``: the local executor in this process (its run folder and manifest), or the
    exit status of the snakemake and slurm executors."""
    from .run import local, profile, snakemake
    if args.executor != "local":
        if args.stop_by is not None:
            raise BadParameter("--stop-by (STOP_BY) is for the local executor; a Slurm job has its own time limit "
                               "(--time, SLURM_TIME)")
        opts = profile.options({k: getattr(args, k) for k in _SLURM_KEYS})
        return snakemake.run_workflow(executor=args.executor, preset=args.preset, platform=args.platform,
                                      only=_only(args.notebooks), outputs=args.outputs, resume=args.resume,
                                      sets=args.set, cell_timeout_s=args.cell_timeout, options=opts,
                                      snakemake_args=args.snakemake_args)
    if args.snakemake_args:
        raise BadParameter(f"{' '.join(args.snakemake_args)!r}: Snakemake options need --executor snakemake or slurm")
    if args.resume:
        return local.resume(args.resume, out_dir=out_dir, cell_timeout_s=args.cell_timeout, preset=args.preset,
                            platform=args.platform, only=_only(args.notebooks), overrides=args.set,
                            stop_by_s=args.stop_by)
    return local.run(args.preset or "default", args.platform, only=_only(args.notebooks), out_dir=out_dir,
                     cell_timeout_s=args.cell_timeout, overrides=args.set, stop_by_s=args.stop_by)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .run.signals import on_signals, threading_main
    if threading_main():
        signal.signal(signal.SIGINT, signal.default_int_handler)     # KeyboardInterrupt again, for the runner
    with on_signals(signums=(signal.SIGTERM,)):    # SIGTERM as SIGINT: one line, exit 143 (130); then as it was
        return _main(args)


def _main(args) -> int:
    from .run.signals import Interrupted, on_signals
    try:
        from . import compare, paths, runfolder      # inside: a signal while these import is one line too
        from .run import finalize, plan
        if args.cmd == "list":
            for nb in plan.available_notebooks():
                print(nb.stem)
            print("presets:", ", ".join(PRESETS))
            return 0
        if args.cmd == "compare":
            from .report import regress
            path, checked = compare.compare(args.runs, args.out)
            print(printable(path))
            print(printable("\n".join(regress.lines(checked)), keep="\n"))
            return 1 if args.strict and len(regress.regressions(checked)) else 0
        if args.cmd == "agree":
            from .report import regress
            checked = compare.agreement(*args.runs, args.out)
            print(printable("\n".join(regress.agreement_lines(checked)), keep="\n"))
            return 0
        if args.cmd == "runs":
            for rid, man, status in runfolder.list_runs(args.outputs or paths.OUTPUTS_DIR):
                man = man or {}
                print(printable(f"{rid}  {status:11} {man.get('preset', '?'):8} {man.get('platform', '?'):5} "
                                f"{man.get('duration_s', '?')} s"))
            return 0
        if args.cmd == "advise":
            from .advise.main import advise
            res = advise(args.trace, out=args.out, platform=args.platform, vendor=args.vendor, repeats=args.repeats,
                         real=args.real, application=args.application, engine=args.engine,
                         runtime_term=not args.no_runtime_term, offload_dir=args.offload_dir,
                         construct=args.construct, designs=args.designs, trace_cpus=args.trace_cpus,
                         wait_as_runtime=True)
            print(printable("\n".join(f"- {a}" for a in res["advice"]), keep="\n"))
            print(printable(f"advice: {res['html']}; summary: {res['summary']}"))
            return 0
        if args.cmd == "share":
            from .report.share import share_run
            run_dir = runfolder.find_run(args.run, args.outputs or paths.OUTPUTS_DIR)
            with runfolder.open_for_write(run_dir, "share") as (run_dir, _, _):
                share = share_run(run_dir, inline=args.inline)
            print(printable(runfolder.path(run_dir, "summary")))
            print(printable(share / f"{share.parent.name}.zip"))
            return 0
        if args.cmd == "slurm":
            return _slurm(args)
        if args.cmd == "run-notebook":
            from .run.local import run_one
            part = run_one(args.run_dir, args.stem, cell_timeout_s=args.cell_timeout)
            print(printable(f"{args.stem}: {part['status']}" + (f" - {part['error']}" if part.get("error") else "")))
            return 0 if part["status"] == "ok" else 1
        if args.cmd == "finalize":
            with on_signals():
                man = finalize.finalize(args.run_dir, reference_ok=args.reference)
            print(printable(f"{man['status']}: {args.run_dir}; report: {runfolder.path(args.run_dir, 'index')}"))
            return 0 if man["status"] == "ok" else 1
        out_dir = args.outputs or paths.OUTPUTS_DIR
        if args.cmd in ("validate", "init"):
            p = plan.plan(args.preset or "default", args.platform, only=_only(args.notebooks), overrides=args.set)
            if args.cmd == "validate":
                for notice in p.notices:
                    print(f"notice: {printable(notice)}")
                print(f"ok: {len(p.notebooks)} notebook(s), preset {p.preset}, platform {p.platform}")
                return 0
            for notice in p.notices:
                print(f"notice: {printable(notice)}", file=sys.stderr)
            print(plan.init_run(p, out_dir, args.run_id))
            return 0
        done = _run(args, out_dir)
        if isinstance(done, int):           # the snakemake and slurm executors said their own summary
            return done
        run_dir, man = done
    except (Interrupted, KeyboardInterrupt) as e:      # a signal outside a run, or a second one in its end
        print(f"pinpath: {printable(e) if str(e) else 'stopped by signal SIGINT'}", file=sys.stderr)
        return 128 + getattr(e, "signum", signal.SIGINT)
    except PinpathError as e:
        print(f"pinpath: {printable(e)}", file=sys.stderr)
        return 2
    except OSError as e:                     # a full or read-only disk outside a run's own writes
        print(f"pinpath: {printable(e.filename or 'a file')}: cannot be written or read ({e.strerror or e})",
              file=sys.stderr)
        return 1
    print(printable(f"{man['status']}: {run_dir} ({man['duration_s']} s); report: {runfolder.path(run_dir, 'index')}"))
    return {"ok": 0, "interrupted": 130}.get(man["status"], 1)


if __name__ == "__main__":
    sys.exit(main())
