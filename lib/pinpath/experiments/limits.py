"""Page-sharing hazard and how much memory can be locked (C11)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pandas as pd

from ..errors import RuntimeCallFailed
from ..memkinds import host_buffer
from ..osinfo import memlock_limit_nbytes, vmlck_nbytes
from ..runtimes.base import device_alloc, queue
from ..schema import HAZARD, LIMITS, frame
from ..vocab import Direction, MemoryKind

__all__ = ["page_sharing_hazard", "lock_limits"]


def _err(fn, *args) -> str:
    try:
        fn(*args)
        return ""
    except RuntimeCallFailed as e:
        return f"{e.rc_name} ({e.rc})"


def page_sharing_hazard(rt, *, nbytes: int = 4 << 20, iterations: int = 5) -> pd.DataFrame:
    """Thread 1 locks buffer A and copies from it; meanwhile thread 2 locks and unlocks
    buffer B, which shares A's last page. After B's unlock: does the runtime still say
    A's last page is locked, and did A's copy deliver every byte?"""
    rows = []
    with host_buffer(MemoryKind.PAGE_SHARING, nbytes) as a, device_alloc(rt, nbytes) as dptr, queue(rt) as q:
        b = a.neighbour
        for i in range(iterations):
            rt.fill_device(dptr, 0xA5, nbytes)
            rt.lock(a.ptr, a.nbytes)
            started, result = threading.Event(), {}

            def other():
                started.wait()
                result["lock"] = _err(rt.lock, b.ptr, b.nbytes)
                result["unlock"] = _err(rt.unlock, b.ptr, b.nbytes) if not result["lock"] else ""

            t = threading.Thread(target=other)
            t.start()
            rt.copy_async(dptr, a.ptr, nbytes, Direction.H2D, q)
            started.set()
            t.join()
            still = rt.query(a.ptr + a.nbytes - 1).locked
            rt.wait(q)
            ok = bool(np.array_equal(rt.read_device(dptr, nbytes), a.array))
            rt.unlock(a.ptr, a.nbytes)
            rows.append({"iteration": i, "b_lock_error": result["lock"], "b_unlock_error": result["unlock"],
                         "a_locked_after": still, "copy_verified": ok, "platform": rt.name})
    return frame(rows, HAZARD)


_CHILD = r"""
import ctypes, json, os, resource, sys
limit, factors, platform = int(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
if hard != resource.RLIM_INFINITY and limit > hard:
    limit = hard                     # raising the hard limit needs CAP_SYS_RESOURCE: stay under it
resource.setrlimit(resource.RLIMIT_MEMLOCK, (limit, hard))
sizes = [int(limit * f) for f in factors]
print(json.dumps({"limit": limit}), flush=True)
# CAP_IPC_LOCK (bit 14) lets mlock ignore RLIMIT_MEMLOCK: drop it from the effective and
# permitted sets (capget/capset, version 3 header), so the limit applies even to root
hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)
data = (ctypes.c_uint32 * 6)()
libc = ctypes.CDLL(None, use_errno=True)
if libc.syscall(125, hdr, data) == 0:            # SYS_capget on x86-64
    data[0] &= ~(1 << 14); data[1] &= ~(1 << 14)  # effective, permitted (first 32 capabilities)
    libc.syscall(126, hdr, data)                 # SYS_capset
from pinpath.errors import RuntimeCallFailed
from pinpath.memkinds import host_buffer
from pinpath.osinfo import vmlck_nbytes
from pinpath.runtimes import open_runtime
rt = open_runtime(platform)
for op in ("lock", "alloc_pinned"):
    for n in sizes:
        with rt.recorder.span() as calls:
            try:
                if op == "lock":
                    with host_buffer("heap", n) as b:
                        rt.lock(b.ptr, n); vm = vmlck_nbytes(); rt.unlock(b.ptr, n)
                else:
                    p = rt.alloc_pinned(n); vm = vmlck_nbytes(); rt.free_pinned(p, n)
                err = ""
            except RuntimeCallFailed as e:
                err, vm = f"{e.rc_name} ({e.rc})", vmlck_nbytes()
        c = [c for c in calls if c[0] not in ("munlock", "munmap", "cudaHostUnregister", "cudaFreeHost")][-1]
        print(json.dumps({"op": op, "nbytes": n, "call": c[0], "rc": c[3], "error": err, "granted": not err,
                          "vmlck_nbytes": vm, "limit_nbytes": limit}), flush=True)
rt.close()
"""


def lock_limits(rt, *, limit_nbytes: int = 64 << 20, factors=(0.5, 1.0, 2.0)) -> tuple[dict, pd.DataFrame]:
    """RLIMIT_MEMLOCK as this process has it, and what the runtime does around a limit:
    a child process lowers its RLIMIT_MEMLOCK to ``limit_nbytes`` (or to its hard limit, if
    that is lower and cannot be raised) and drops CAP_IPC_LOCK (with which root would ignore
    the limit), then locks heap buffers and allocates pinned memory of ``factors`` x that
    limit, reporting each answer.

    Returns (limits of this process, LIMITS rows of the child)."""
    soft, hard = memlock_limit_nbytes()
    here = {"rlimit_memlock_soft_nbytes": soft, "rlimit_memlock_hard_nbytes": hard, "vmlck_nbytes": vmlck_nbytes(),
            "euid": os.geteuid()}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    r = subprocess.run([sys.executable, "-c", _CHILD, str(limit_nbytes), json.dumps(list(factors)), rt.name],
                       capture_output=True, text=True, env=env, timeout=300)
    rows = [row for row in (json.loads(line) for line in r.stdout.splitlines() if line.startswith("{"))
            if "op" in row]
    if r.returncode != 0 and not rows:
        raise RuntimeCallFailed(rt.name, "lock limit probe", r.returncode,
                                (r.stderr.strip().splitlines() or ["no output"])[-1])
    for row in rows:
        row["platform"] = rt.name
    return here, frame(rows, LIMITS)
