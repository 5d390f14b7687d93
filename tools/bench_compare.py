#!/usr/bin/env python3
"""pinpath's native figures against a plain C program, in one job (issue #9, "Benchmarks").

For each size, tools/bench_calls.c (a plain C program, built against the same headers and
libraries as pinpath's native library) times lock, query, re-lock, unlock and a query of
pageable memory on its own malloc'd buffer; then pinpath's native library
(pinpath.nativelib) times the same calls on a buffer malloc'd the same way in this process
(same mmap threshold, touched with the same bytes, backing read from /proc/self/smaps).
The table gives the medians, their ratio and the goal: pinpath's figure within
max(10 %, 0.3 us) of the plain program's, for lock, unlock, re-lock and query.

On CUDA the caller's lock (before re-lock and query) is made through cuda.bindings when it
imports, so the table also shows that the library's runtime sees cuda.bindings'
registrations (re-lock 712, query "registered"). ``--observe-copies`` adds a CUPTI look at
pageable and pinned H2D copies (pinpath.runtimes.cupti_).

    python3 tools/bench_compare.py                       # host (mlock): root, or ulimit -l large enough
    python3 tools/bench_compare.py --platform cuda --observe-copies
"""

from __future__ import annotations

import argparse
import ctypes
import io
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lib"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from pinpath import libc, nativelib, osinfo  # noqa: E402
from pinpath.units import fmt_nbytes, parse_nbytes  # noqa: E402

GOAL_OPS = ("lock", "unlock", "relock", "query")
OPS = ("null", *GOAL_OPS, "query_pageable")
DEFAULT_SIZES = "4KiB,1MiB,64MiB,800MB"
FILL = 0x5A

_libc = ctypes.CDLL(None, use_errno=True)
_libc.malloc.restype, _libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
_libc.free.restype, _libc.free.argtypes = None, (ctypes.c_void_p,)


def reps_for(nbytes: int, reps: int) -> int:
    """Fewer reps for large buffers, whose calls take milliseconds."""
    if nbytes <= 1 << 20:
        return reps
    if nbytes <= 64 << 20:
        return max(5, reps // 3)
    return max(3, reps // 10)


def backing(ptr: int) -> str:
    vma = osinfo.find_vma(ptr)
    return "unknown" if vma is None else ("thp" if vma.anon_huge_nbytes > 0 else "4k")


# -- the plain program ---------------------------------------------------------------------
def run_plain(exe: Path, nbytes: int, reps: int, warmup: int, device: int, first: bool = True) -> pd.DataFrame:
    r = subprocess.run([str(exe), "-r", str(reps), "-w", str(warmup), "-d", str(device), str(nbytes)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"bench_calls failed ({r.returncode}): {r.stderr.strip()[:300]}")
    df = pd.read_csv(io.StringIO(r.stdout), keep_default_na=False)
    if not first:
        df = df[df.op != "null"]
    df["source"] = "plain"
    return df


# -- pinpath's native library --------------------------------------------------------------
class OuterLock:
    """The caller's own lock before re-lock and query: the library's untimed lock, as pinpath's
    lock-cost experiment makes it; with ``bindings`` on CUDA, cuda.bindings' (a second runtime
    instance in the process: the table then shows what that costs the library's queries)."""

    def __init__(self, lib: nativelib.NativeLib, device: int, bindings: bool = False):
        self.lib, self.rt, self.how = lib, None, "the native library (untimed)"
        if lib.platform == "cuda" and bindings:
            try:
                from cuda.bindings import runtime as rt
            except ImportError:
                return
            for call, out in (("cudaSetDevice", rt.cudaSetDevice(device)), ("cudaFree", rt.cudaFree(0))):
                if int(out[0]) != 0:
                    raise SystemExit(f"cuda.bindings: {call} returned {int(out[0])}")
            self.rt, self.how = rt, "cuda.bindings (cudaHostRegister)"

    def lock(self, ptr: int, nbytes: int) -> int:
        if self.rt is None:
            return self.lib.lock_once(ptr, nbytes)
        return int(self.rt.cudaHostRegister(ptr, nbytes, self.rt.cudaHostRegisterDefault)[0])

    def unlock(self, ptr: int, nbytes: int) -> int:
        if self.rt is None:
            return self.lib.unlock_once(ptr, nbytes)
        return int(self.rt.cudaHostUnregister(ptr)[0])


def run_pinpath(lib: nativelib.NativeLib, outer: OuterLock, nbytes: int, reps: int, warmup: int,
                notes: list[str], first: bool = True) -> pd.DataFrame:
    ptr = _libc.malloc(nbytes)
    if not ptr:
        raise SystemExit(f"malloc({nbytes}) failed")
    rows = []

    def add(op, timed, n=nbytes, back="-"):
        rows.extend({"op": op, "nbytes": n, "backing": back, "repeat": i, "ns": int(ns), "rc": int(rc)}
                    for i, (ns, rc) in enumerate(zip(timed.ns, timed.rc)))
    try:
        ctypes.memset(ptr, FILL, nbytes)
        back = backing(ptr)
        if first:
            add("null", lib.null(reps, warmup=warmup), 0)
        add("lock", lib.lock(ptr, nbytes, reps, warmup=warmup), back=back)
        add("unlock", lib.unlock(ptr, nbytes, reps, warmup=warmup), back=back)
        rc = outer.lock(ptr, nbytes)
        if rc != 0:
            notes.append(f"{fmt_nbytes(nbytes)}: the caller's lock through {outer.how} returned {rc}; "
                         "re-lock and query not timed")
        else:
            try:
                if lib.has_query:
                    add("query", lib.query(ptr, reps, warmup=warmup), back=back)
                    seen = lib.is_locked(ptr)
                    notes.append(f"{fmt_nbytes(nbytes)}: locked through {outer.how}; the library's runtime "
                                 f"says {'registered' if seen else 'NOT registered'}")
                add("relock", lib.relock(ptr, nbytes, reps, warmup=warmup), back=back)
            finally:
                urc = outer.unlock(ptr, nbytes)
                if urc != 0:
                    notes.append(f"{fmt_nbytes(nbytes)}: the caller's unlock returned {urc}")
        if lib.has_query:
            add("query_pageable", lib.query(ptr, reps, warmup=warmup), back=back)
    finally:
        _libc.free(ptr)
    df = pd.DataFrame(rows)
    df["source"] = "pinpath"
    return df


# -- the table -----------------------------------------------------------------------------
def _rc_text(s: pd.Series) -> str:
    counts = s.value_counts()
    return "/".join(str(v) for v in counts.index[:2])


def _verdict(diff_ns: float, limit_ns: float, noise_ns: float) -> str:
    """ok: within the goal; miss~: outside it but inside the plain program's own spread
    between rounds (noise, not evidence); MISS: outside both."""
    if abs(diff_ns) <= limit_ns:
        return "ok"
    return "miss~" if noise_ns == noise_ns and abs(diff_ns) <= noise_ns else "MISS"


def compare(raw: pd.DataFrame) -> pd.DataFrame:
    """Medians over every round, the goal, and the plain program's own spread: the range of
    its per-round medians over their median (a difference inside it is noise)."""
    out = []
    for (op, nbytes), g in raw.groupby(["op", "nbytes"], sort=False):
        p, q = g[g.source == "plain"], g[g.source == "pinpath"]
        if p.empty or q.empty:
            continue
        pm, qm = float(p.ns.median()), float(q.ns.median())
        per_round = p.groupby("round").ns.median()
        spread = (per_round.max() - per_round.min()) / pm if pm and len(per_round) > 1 else float("nan")
        limit = max(0.10 * pm, 300.0)
        bp, bq = p.backing.iloc[0], q.backing.iloc[0]
        rp, rq = _rc_text(p.rc), _rc_text(q.rc)
        out.append({"op": op, "size": fmt_nbytes(nbytes) if nbytes else "-", "nbytes": nbytes,
                    "backing": bp if bp == bq else f"{bp}/{bq}",
                    "plain_us": pm / 1e3, "pinpath_us": qm / 1e3, "diff_us": (qm - pm) / 1e3,
                    "ratio": qm / pm if pm else float("nan"), "limit_us": limit / 1e3,
                    "goal": _verdict(qm - pm, limit, spread * pm) if op in GOAL_OPS else "",
                    "plain_spread": spread,
                    "rc": rp if rp == rq else f"{rp} vs {rq}", "n": f"{len(p)}/{len(q)}"})
    order = {op: i for i, op in enumerate(OPS)}
    df = pd.DataFrame(out)
    return df.sort_values(["nbytes", "op"], key=lambda c: c.map(order) if c.name == "op" else c).reset_index(drop=True)


def print_table(table: pd.DataFrame) -> None:
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.drop(columns="nbytes").to_string(index=False, float_format=lambda v: f"{v:.3f}"))


# -- CUPTI ---------------------------------------------------------------------------------
def observe_copies(lib: nativelib.NativeLib, device: int, nbytes: int = 64 << 20) -> None:
    """H2D of pageable memory, of the same memory registered through cuda.bindings, and a
    C12 case-2 copy issued by the native library: what CUPTI says each source was."""
    from pinpath.runtimes import cupti_
    reason = cupti_.why_not()
    if reason:
        print(f"copy paths: unobserved ({reason})")
        return
    from cuda.bindings import runtime as rt

    def ok(out):
        if int(out[0]) != 0:
            raise SystemExit(f"cuda.bindings call failed: {out[0]}")
        return out[1] if len(out) > 1 else None
    ok(rt.cudaSetDevice(device))
    host = np.full(nbytes, FILL, np.uint8)
    dev = ok(rt.cudaMalloc(nbytes))
    stream = ok(rt.cudaStreamCreate())
    H2D = rt.cudaMemcpyKind.cudaMemcpyHostToDevice
    obs = cupti_.CopyObserver()
    labels = {}
    try:
        obs.start()
        with obs.tag(1):
            ok(rt.cudaMemcpyAsync(dev, host.ctypes.data, nbytes, H2D, stream))
        labels[1] = "pageable, cuda.bindings"
        ok(rt.cudaStreamSynchronize(stream))
        ok(rt.cudaHostRegister(host.ctypes.data, nbytes, rt.cudaHostRegisterDefault))
        try:
            with obs.tag(2):
                ok(rt.cudaMemcpyAsync(dev, host.ctypes.data, nbytes, H2D, stream))
            labels[2] = "registered, cuda.bindings"
            ok(rt.cudaStreamSynchronize(stream))
            with obs.tag(3):
                lib.c12(2, host, int(dev), nbytes, 1, stream=stream)
            labels[3] = "registered, native C12 case 2"
        finally:
            ok(rt.cudaHostUnregister(host.ctypes.data))
        df = obs.flush()
    except cupti_.CuptiUnavailable as e:
        print(f"copy paths: unobserved ({e})")
        return
    finally:
        obs.stop()
        rt.cudaStreamDestroy(stream)
        rt.cudaFree(dev)
    df["what"] = df.transfer_id.map(labels)
    cols = ["transfer_id", "what", "bytes", "copy_kind", "src_kind", "dst_kind", "device_ns"]
    print(f"\nCUPTI memcpy records ({fmt_nbytes(nbytes)} H2D):")
    print(df[cols].to_string(index=False))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--platform", default="host", choices=("host", "cuda"))
    ap.add_argument("--sizes", default=DEFAULT_SIZES, help=f"comma-separated sizes (default {DEFAULT_SIZES})")
    ap.add_argument("--reps", type=int, default=30, help="reps at <= 1 MiB (fewer for larger sizes)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternate plain and pinpath this many times, fresh buffers each (default 3)")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--csv", help="write every timed call here")
    ap.add_argument("--observe-copies", action="store_true", help="cuda: CUPTI on pageable and pinned copies")
    ap.add_argument("--strict", action="store_true", help="exit 1 when the goal is missed")
    ap.add_argument("--outer-bindings", action="store_true",
                    help="cuda: make the caller's lock through cuda.bindings instead of the library")
    args = ap.parse_args(argv)
    sizes = [parse_nbytes(s.strip(), name="--sizes") for s in args.sizes.split(",") if s.strip()]

    t0 = time.monotonic()
    try:
        lib = nativelib.load(args.platform, args.device)
        exe = nativelib.build_program(args.platform, HERE / "bench_calls.c")
        lib.null(1)                                  # starts the runtime (CUDA: device and context)
    except nativelib.NativeUnavailable as e:
        print(f"not available: {e}")
        return 2
    libc.fix_mmap_threshold()   # as bench_calls.c: >= 128 KiB is always its own mapping
    soft, _ = osinfo.memlock_limit_nbytes()
    info = lib.describe()
    print(f"platform {args.platform}; library {Path(info['path']).name} (headers: {info['headers_from']}; "
          f"{info['library'] or 'libc'}); RLIMIT_MEMLOCK soft {soft}; THP {osinfo.thp_mode()}")
    if args.platform == "host" and os.geteuid() != 0 and 0 <= soft < max(sizes):
        print(f"note: RLIMIT_MEMLOCK ({soft} bytes) is below {fmt_nbytes(max(sizes))} and this is not root: "
              "larger locks are refused (ENOMEM); raise ulimit -l or run as root")
    outer = OuterLock(lib, args.device, bindings=args.outer_bindings)
    notes: list[str] = []
    frames = []
    for rnd in range(args.rounds):
        for k, n in enumerate(sizes):
            reps = reps_for(n, args.reps)
            frames.append(run_plain(exe, n, reps, args.warmup, args.device, k == 0).assign(round=rnd))
            frames.append(run_pinpath(lib, outer, n, reps, args.warmup, notes if rnd == 0 else [], k == 0)
                          .assign(round=rnd))
    raw = pd.concat(frames, ignore_index=True)
    if args.csv:
        raw.to_csv(args.csv, index=False)
    table = compare(raw)
    print_table(table)
    for note in notes:
        print("note:", note)
    goal = table[table.goal != ""]
    missed = goal[goal.goal != "ok"]
    print(f"goal (pinpath within max(10 %, 0.3 us) of plain C): {len(goal) - len(missed)}/{len(goal)} met, "
          f"{(goal.goal == 'miss~').sum()} missed inside plain's own spread between rounds (miss~), "
          f"in {time.monotonic() - t0:.1f} s")
    if args.observe_copies and args.platform == "cuda":
        observe_copies(lib, args.device)
    return 1 if args.strict and (goal.goal == "MISS").any() else 0


if __name__ == "__main__":
    sys.exit(main())
