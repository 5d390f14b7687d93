"""C15. As meant: the real libomptarget running N ``target nowait`` regions against the same regions
each waited (``native/offload/overlap.cpp``, fresh processes), with the CUDA streams its plugin used
(``native/offload/cudalog.c``, a traced run). For information: the same chains of H2D, kernel and
D2H on one raw queue and spread over several (H2D and D2H only where the runtime launches no
kernels): whether the GPU overlaps streams at all."""

from __future__ import annotations

import os
import re
import subprocess
import time
from contextlib import ExitStack
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd

from ..kernels import NSPLINES, out_nbytes, replica_expected
from ..memkinds import host_buffer
from ..errors import NotAvailable, PinpathError, VerificationFailed
from ..runtimes.base import has, need
from ..schema import OVERLAP, OVERLAP_REAL, OVERLAP_STREAMS, frame
from ..vocab import Capability, Direction, MemoryKind
from .sweep import Sweep, poison

__all__ = ["overlap", "overlap_or_reason", "real_overlap", "real_overlap_or_reason", "parse_call_log",
           "call_log_shim"]
_now = time.perf_counter_ns


def overlap(rt, *, nbytes: int = 16 << 20, chains: int = 8, queues=(1, 2, 4), repeats: int = 3) -> pd.DataFrame:
    """Each chain: H2D of ``nbytes`` from pinned memory, the replica kernel reading the
    first walkers of it, D2H of its output (``nbytes`` rounded to whole walkers). The
    chains go round-robin on 1, 2, 4 ... queues, each queue held by one latch until
    everything is enqueued, so enqueue time stays out; the wall time runs from the latch's
    release to the last queue's completion. Outputs are checked on the first repeat.

    Where ``rt`` has no kernels a chain is the H2D and a D2H of the same device
    buffer back (``nbytes``), checked against the H2D's input; the ``kernel`` column says
    which. A runtime without a latch cannot run this; it raises NotAvailable with the
    reason, which the notebook reports as not applicable."""
    need(rt, Capability.LATCH)
    kernel = has(rt, Capability.KERNELS)
    if kernel:
        rt.prepare_kernels()
    nw = max(1, nbytes // out_nbytes(1))
    d2h_nbytes = out_nbytes(nw) if kernel else nbytes
    sweep = Sweep(repeats=repeats, warmup=1, verify="first", platform=rt.name)
    with ExitStack() as stack:
        ins = [stack.enter_context(host_buffer(MemoryKind.PINNED, nbytes, rt=rt, seed=i)) for i in range(chains)]
        outs = [stack.enter_context(host_buffer(MemoryKind.PINNED, d2h_nbytes, rt=rt, seed=50 + i)) for i in range(chains)]
        d_in = [stack.enter_context(rt.device_buffer(nbytes)).ptr for _ in range(chains)]
        d_out = [stack.enter_context(rt.device_buffer(d2h_nbytes)).ptr for _ in range(chains)] if kernel else d_in
        for b in ins:   # positions in a range the kernel's arithmetic keeps exact
            b.array.view(np.float64)[: 3 * nw] = np.linspace(-1, 1, 3 * nw)
        for n_queues in queues:
            qs = [stack.enter_context(rt.queue()).handle for _ in range(n_queues)]
            for rep in sweep.in_order():
                for o, d in zip(outs, d_out):   # every repeat's, checked or not
                    poison(rt, Direction.D2H, o.array, d, o.nbytes)
                latch = rt.new_latch()
                try:
                    for q in qs:
                        rt.hold(latch, q)
                    for c in range(chains):
                        q = qs[c % n_queues]
                        rt.copy_async(d_in[c], ins[c].ptr, nbytes, Direction.H2D, q)
                        if kernel:
                            rt.launch_replica(q, d_in[c], d_out[c], nw, NSPLINES)
                        rt.copy_async(outs[c].ptr, d_out[c], d2h_nbytes, Direction.D2H, q)
                    t0 = _now()
                    rt.release(latch)
                    for q in qs:
                        rt.wait(q)
                    wall = _now() - t0
                finally:
                    rt.free_latch(latch)
                ok = None
                if sweep.checks(rep):   # a D2H left different is a row saying so, not an error
                    ok = all(np.array_equal(o.array, _expected(i, nw, kernel)) for i, o in zip(ins, outs))
                sweep.add(rep, {"queues": n_queues, "chains": chains, "nbytes": nbytes, "wall_ns": wall,
                                "verified": ok, "kernel": kernel})
    return sweep.frame(OVERLAP)


def _expected(inp, nw: int, kernel: bool) -> np.ndarray:
    """The bytes a chain's D2H must deliver: the kernel's output, or the H2D's input."""
    if not kernel:
        return inp.array
    return replica_expected(inp.array.view(np.float64)[: 3 * nw], nw).view(np.uint8).ravel()


def overlap_or_reason(rt, **kw) -> pd.DataFrame:
    """``overlap``, or where the runtime cannot run it a one-row frame whose
    ``not_applicable`` column says why (the claims table shows it as not applicable)."""
    try:
        return overlap(rt, **kw)
    except NotAvailable as e:
        return pd.DataFrame([{"not_applicable": str(e), "platform": rt.name}])


# -- as meant: the real runtime ---------------------------------------------------------------------
_MARK = re.compile(r"^pinpath-overlap: mode=(\w+) round=(-?\d+)( end)?$")
_CALL = re.compile(r"^pinpath-cuda: call=(\w+) stream=(\S+) nbytes=(\d+) tid=(\d+) t_ns=(\d+)$")
_CALL_KINDS = {"cuMemcpyHtoDAsync": "copies", "cuMemcpyDtoHAsync": "copies", "cuLaunchKernel": "kernels",
               "cuStreamSynchronize": "syncs", "cuStreamCreate": "created"}


def parse_call_log(text: str, *, variant: str = "", source: str = "cudalog", vendor: str = "") -> pd.DataFrame:
    """OVERLAP_STREAMS rows from an overlap run's stderr: the CUDA calls ``cudalog`` wrote
    (``pinpath-cuda:`` lines), assigned to the round whose ``pinpath-overlap:`` markers enclose
    them; per (mode, round) the copies, kernels and waits, and the distinct streams they used."""
    rounds: dict = {}
    where = None
    for line in text.splitlines():
        m = _MARK.match(line)
        if m:
            where = None if m.group(3) else (m.group(1), int(m.group(2)))
            if where:
                rounds.setdefault(where, {"copies": 0, "kernels": 0, "syncs": 0, "created": 0, "streams": set()})
            continue
        c = _CALL.match(line)
        if c and where is not None:
            r = rounds[where]
            r[_CALL_KINDS.get(c.group(1), "other")] = r.get(_CALL_KINDS.get(c.group(1), "other"), 0) + 1
            if c.group(1) in ("cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync", "cuLaunchKernel"):
                r["streams"].add(c.group(2))
    rows = [{"variant": variant, "mode": mode, "round": rnd, "copies": r["copies"], "kernels": r["kernels"],
             "syncs": r["syncs"], "streams_created": r["created"], "streams": len(r["streams"]), "source": source,
             "vendor": vendor}
            for (mode, rnd), r in rounds.items()]
    return frame(rows, OVERLAP_STREAMS)


def call_log_shim(dest: Path | str) -> Path | None:
    """A directory holding ``libcuda.so``: cudalog.c built against this machine's libcuda.so.1 (its
    DT_NEEDED), to put first on LD_LIBRARY_PATH; None where there is no NVIDIA driver."""
    from ..nativelib import compiler
    from .offload_build import find_libcuda
    driver = find_libcuda()
    if not driver:
        return None
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    src = Path(__file__).resolve().parents[1] / "native" / "offload" / "cudalog.c"
    # --no-as-needed: the shim calls nothing of the driver at link time, yet must name it (DT_NEEDED)
    r = subprocess.run([compiler(), "-O2", "-std=gnu11", "-shared", "-fPIC", "-Wl,-soname,libcuda.so", str(src),
                        "-Wl,--no-as-needed", driver, "-ldl", "-o", str(dest / "libcuda.so")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise NotAvailable(f"cudalog.c did not build ({(r.stderr.strip().splitlines() or ['no output'])[-1]})")
    return dest


def _run_app(binary: Path, env: dict, *, variant: str, chains: int, nbytes: int, rounds: int, markers: bool,
             timeout_s: int) -> subprocess.CompletedProcess:
    from .offload_build import variant_env
    cmd = [str(binary), "--variant", variant, "--chains", str(chains), "--nbytes", str(nbytes),
           "--rounds", str(rounds)] + (["--markers"] if markers else [])
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=variant_env(env, variant), timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise PinpathError(f"the overlap application ({variant}) did not finish in {timeout_s} s") from None
    tail = "; ".join(l for l in r.stderr.strip().splitlines()[-3:] if not l.startswith(("pinpath-", "omptarget")))
    if r.returncode == 4:
        raise VerificationFailed(f"the overlap application ({variant}): {tail}")
    if r.returncode != 0:
        raise NotAvailable(f"the overlap application ({variant}) stopped under OMP_TARGET_OFFLOAD=MANDATORY "
                           f"(exit status {r.returncode}): {tail or 'no message'}")
    return r


def real_overlap(*, variants=("plain", "app_pinned"), chains: int = 8, nbytes: int = 16 << 20, rounds: int = 5,
                 processes: int = 5, build=None, offload_dir: Path | str | None = None,
                 shim_dir: Path | str | None = None, timeout_s: int = 300) -> tuple[pd.DataFrame, pd.DataFrame]:
    """C15 as meant: ``overlap.cpp`` through the real libomptarget, ``processes`` fresh processes
    per variant (the unit of repeat; variants in a shuffled order per round), each ``rounds``
    rounds of ``chains`` ``target nowait`` regions of ``nbytes`` each way, once with one wait at the
    end and once waited one by one; then per variant one traced run with LIBOMPTARGET_INFO=32 and,
    on NVIDIA, cudalog first on LD_LIBRARY_PATH (the streams the CUDA plugin used per round).
    Returns (OVERLAP_REAL rows, OVERLAP_STREAMS rows). NotAvailable (one sentence) where it cannot run."""
    from ..nativelib import cache_dir
    from .offload_build import OFFLOAD_DIR, app_binary, device_reason, find_build, runtime_env
    build = build or find_build(offload_dir or OFFLOAD_DIR)
    binary = app_binary(build, "overlap")
    why = device_reason(build)
    if why:
        raise NotAvailable(why)
    env = runtime_env(build)
    rows, streams = [], []
    for p, order in Sweep(repeats=int(processes)).independent(list(variants)):
        for variant in order:
            r = _run_app(binary, env, variant=variant, chains=chains, nbytes=nbytes, rounds=rounds, markers=False,
                         timeout_s=timeout_s)
            csv = pd.read_csv(StringIO("\n".join(l for l in r.stdout.splitlines() if not l.startswith("#"))),
                              dtype={"verified": str})
            csv["verified"] = csv.verified.map({"true": True, "false": False})
            rows += csv.assign(process=p, vendor=build.vendor, arch=build.arch).to_dict("records")
    shim = call_log_shim(shim_dir or cache_dir() / "cudalog") if build.vendor == "nvidia" else None
    traced_env = {**env, "LIBOMPTARGET_INFO": "32"}
    if shim is not None:
        traced_env["LD_LIBRARY_PATH"] = os.pathsep.join([str(shim), env.get("LD_LIBRARY_PATH", "")])
    for variant in variants:
        r = _run_app(binary, traced_env, variant=variant, chains=chains, nbytes=nbytes, rounds=1, markers=True,
                     timeout_s=timeout_s)
        streams.append(parse_call_log(r.stderr, variant=variant, source="cudalog" if shim is not None else "none",
                                      vendor=build.vendor))
    traced = pd.concat(streams, ignore_index=True).to_dict("records") if streams else []
    return frame(rows, OVERLAP_REAL), frame(traced, OVERLAP_STREAMS)


def real_overlap_or_reason(**kw) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``real_overlap``, or where it cannot run two one-row frames whose ``not_applicable`` column
    says why in one sentence."""
    try:
        return real_overlap(**kw)
    except NotAvailable as e:
        reason = pd.DataFrame([{"not_applicable": str(e)}])
        return reason, reason.copy()
