"""C11: another thread's unlock of a lock a copy relies on (as meant: the whole range; and the
page-sharing case), and how much memory can be locked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from contextlib import ExitStack

import pandas as pd

from ..errors import RuntimeCallFailed, VerificationFailed
from ..memkinds import HostBuffer, host_buffer, view
from ..osinfo import memlock_limit_nbytes, vmlck_nbytes
from ..runtimes.base import has
from ..schema import HAZARD, HAZARD_MEANT, LIMITS, frame
from ..units import PAGE_NBYTES
from ..vocab import Capability, Direction, MemoryKind, Policy, Relock
from .sweep import Sweep, page_locked

_now = time.perf_counter_ns

__all__ = ["relied_lock_race", "page_sharing_hazard", "lock_limits", "race_answer", "RACE_ANSWERS"]

#: the driver's answer to an unlock of a lock another thread's copies rely on, per race
RACE_ANSWERS = ("waits", "returns mid-copy", "fails", "corrupts", "undecided", "not in flight", "no premise")


def race_answer(*, premise: bool, in_flight: bool, failed: bool, verified, unlock_end_ns: int, copy_done_ns: int,
                unlock_start_ns: int, idle_unlock_ns: int) -> str:
    """One race's answer. ``no premise``: B's lock was refused or A did not find its range locked;
    ``not in flight``: B's unlock began outside A's copies; ``corrupts``: A's bytes differ;
    ``fails``: a call of the race failed; ``waits``: B's unlock returned after the copies ended
    although the same unlock with nothing in flight would have ended before they did;
    ``returns mid-copy``: it returned while they ran; ``undecided``: it ended after them, but an
    idle unlock would have too (the copies were too short to tell). On a machine with fewer free
    cores than the race's three threads, a descheduled unlock can read as a wait: the timestamps
    stay in the row."""
    if not premise:
        return "no premise"
    if verified is False:
        return "corrupts"
    if failed:
        return "fails"
    if not in_flight:
        return "not in flight"
    if unlock_end_ns < copy_done_ns:
        return "returns mid-copy"
    return "waits" if unlock_start_ns + idle_unlock_ns < copy_done_ns else "undecided"


def relied_lock_race(rt, *, nbytes: int = 16 << 20, copies: int = 16, iterations: int = 50,
                     verify: str = "all") -> pd.DataFrame:
    """C11 as meant, timed in C (``pp_c11``): thread B locks exactly A's range; thread A finds
    it locked and enqueues ``copies`` async copies of it (H2D) relying on B's lock; B unlocks
    as soon as they are enqueued. Per race: the timestamps (was B's unlock in flight, did it
    return before or after the copies ended, and would an idle unlock of the same range have
    ended before them), every call's code, A's bytes verified on the device outside the C call,
    and the driver's answer (``race_answer``). On the host platform the lock is mlock and the
    copies a worker thread's memcpy: the operating system's share (``mechanism``).

    Needs pinpath's C library for the platform (not on HIP); without it, no rows."""
    if not has(rt, Capability.NATIVE):
        return frame([], HAZARD_MEANT)
    from ..nativelib import load
    lib = load(rt.name)
    mechanism = ("the operating system's share: mlock, munlock and a worker thread's memcpy"
                 if rt.relock == Relock.UNCOUNTED else f"the runtime's own lock, copy and unlock ({rt.name})")
    sweep = Sweep(repeats=iterations, verify=verify, label="C11 as meant", platform=rt.name, key="iteration")
    with ExitStack() as stack:
        a = stack.enter_context(host_buffer(MemoryKind.HEAP, nbytes))
        dptr = stack.enter_context(rt.device_buffer(nbytes)).ptr
        for i, _ in sweep.rounds(["race"]):
            dst = sweep.poisoned(rt, Direction.H2D, a.array, dptr, nbytes, i)
            r = lib.c11(a.ptr, dptr, nbytes, 1, copies=copies)
            try:
                ok = dst.verdict("C11 as meant: A's copies")
            except VerificationFailed:
                ok = False      # the driver's answer, not an error of the harness
            rc = [int(x) for x in r.rc[0]]
            t = {k: int(getattr(r, k)[0]) for k in ("b_lock_start_ns", "b_lock_end_ns", "a_enqueue_start_ns",
                                                    "a_enqueue_end_ns", "b_unlock_start_ns", "b_unlock_end_ns",
                                                    "copy_done_ns", "a_wait_end_ns", "idle_unlock_ns")}
            premise = rc[0] == 0 and rc[1] == 1
            in_flight = premise and t["a_enqueue_end_ns"] <= t["b_unlock_start_ns"] < t["copy_done_ns"]
            failed = any(c != 0 for c in (rc[2], rc[3], rc[4]))
            answer = race_answer(premise=premise, in_flight=in_flight, failed=failed, verified=ok,
                                 unlock_end_ns=t["b_unlock_end_ns"], copy_done_ns=t["copy_done_ns"],
                                 unlock_start_ns=t["b_unlock_start_ns"], idle_unlock_ns=t["idle_unlock_ns"])
            sweep.add(i, {"nbytes": nbytes, "b_nbytes": nbytes, "copies": copies, **t,
                          "b_unlock_ns": t["b_unlock_end_ns"] - t["b_unlock_start_ns"] if rc[3] != -1 else 0,
                          "unlock_end_after_copy_ns": t["b_unlock_end_ns"] - t["copy_done_ns"],
                          "b_lock_rc": rc[0], "a_found_locked": rc[1] == 1, "enqueue_rc": rc[2],
                          "b_unlock_rc": rc[3], "wait_rc": rc[4], "idle_rc": rc[5],
                          "rc_names": "; ".join(f"{w} {lib.rc_name(c)} ({c})" for w, c in
                                                zip(("B lock", "A enqueue", "B unlock", "A wait"),
                                                    (rc[0], rc[2], rc[3], rc[4])) if c > 0),
                          "in_flight": in_flight, "copy_verified": ok, "answer": answer, "mechanism": mechanism})
    return sweep.frame(HAZARD_MEANT)



def page_sharing_hazard(rt, *, nbytes: int = 4 << 20, iterations: int = 50,
                        policies=(Policy.QUERY_THEN_LOCK, Policy.LOCK_ALWAYS), verify: str = "first") -> pd.DataFrame:
    """C11 as a race that can be seen. Buffer B (half a page) ends inside the first page of
    buffer A. Thread B locks B. Thread A then copies A to the device through ``policy``:
    ``query_then_lock`` finds A's first page locked (by B) and copies without a lock of its
    own; ``lock_always`` locks A itself (or is told "already registered"). A's queue is held by
    a latch, so A's copy is enqueued but cannot start; thread B sees the copy enqueued, reads
    the state of A's first page, lets the copy go and at once unlocks B, then reads the page
    again. The timestamps show whether B's unlock fell inside A's copy (a runtime whose unlock
    waits for copies in flight shows it ending after the copy); the page's real state comes
    from Linux (``/proc/self/smaps`` VmFlags) on the host platform and from the runtime's own
    query elsewhere (labelled as such). ``hazard``: the page A's copy relied on was locked
    before B's unlock and not after, while A's copy was in flight.

    Without a latch the copy is not held and the overlap is left to timing (see
    ``unlock_inside_copy``)."""
    from ..policies import make_policy
    page = PAGE_NBYTES
    b_nbytes = page // 2
    copy_call = next((c for c, cat in rt.call_categories.items() if cat == "copy"), "")
    latch_ok = has(rt, Capability.LATCH)
    by_smaps = rt.relock == Relock.UNCOUNTED        # mlock: Linux itself is the runtime
    observed_by = "smaps" if by_smaps else next((c for c, cat in rt.call_categories.items() if cat == "query"), "query")

    sweep = Sweep(repeats=iterations, verify=verify, label="C11 hazard", platform=rt.name, key="iteration")
    span = -(-(b_nbytes + nbytes) // page) * page
    with ExitStack() as stack:
        raw = stack.enter_context(host_buffer(MemoryKind.HEAP, span + page))
        base = raw.ptr + (-raw.ptr) % page
        a_ptr = base + b_nbytes
        a = view(a_ptr, nbytes)
        dptr = stack.enter_context(rt.device_buffer(nbytes)).ptr
        pols = {p: stack.enter_context(make_policy(p, rt)) for p in policies}
        buf_a = HostBuffer(a_ptr, nbytes, MemoryKind.PAGE_SHARING, a, backing=raw.backing)
        for i, name in sweep.rounds(list(policies)):
            pol, dst = pols[name], sweep.poisoned(rt, Direction.H2D, a, dptr, nbytes, i)
            latch = rt.new_latch() if latch_ok else None
            if latch is not None:
                rt.hold(latch, pol.q)
            mark = rt.recorder.mark()
            seen: dict = {}
            b_locked = threading.Event()

            def thread_b():
                try:
                    rt.lock(base, b_nbytes)
                    b_locked.set()
                    deadline = _now() + 5_000_000_000
                    while _now() < deadline and not rt.recorder.called_since(mark, copy_call):
                        time.sleep(0)
                    seen["before"] = page_locked(rt, a_ptr)
                    if latch is not None:
                        rt.release(latch)
                    seen["u0"] = _now()
                    rt.unlock(base, b_nbytes)
                    seen["u1"] = _now()
                    seen["after"] = page_locked(rt, a_ptr)
                    seen["obs"] = _now()
                finally:
                    b_locked.set()
                    if latch is not None:
                        rt.release(latch)

            t = threading.Thread(target=thread_b, name="pinpath-hazard-b")
            t.start()
            b_locked.wait()
            try:
                rec = pol.transfer(buf_a, dptr, Direction.H2D)
                rec_sync = pol.sync()
            finally:
                t.join()
                if latch is not None:
                    rt.free_latch(latch)
            copies = [c for c in rec.calls if c.call == copy_call]
            waits = [c for c in rec.calls + rec_sync.calls if rt.call_categories.get(c.call) == "wait"]
            c0 = copies[0].start_ns if copies else rec.start_ns
            c1 = waits[-1].end_ns if waits else rec.end_ns
            inside = bool(seen.get("u0", 0) >= c0 and seen.get("u1", 0) <= c1)
            ok = dst.verdict(f"C11 {name} copy of A")
            sweep.add(i, {"policy": str(name), "a_path": rec.path, "a_copy_start_ns": c0, "a_copy_end_ns": c1,
                          "b_unlock_start_ns": seen.get("u0", 0), "b_unlock_end_ns": seen.get("u1", 0),
                          "unlock_inside_copy": inside, "page_locked_before": seen.get("before"),
                          "page_locked_after": seen.get("after"), "observed_by": observed_by,
                          "observed_ns": seen.get("obs", 0),
                          "hazard": bool(inside and seen.get("before") and seen.get("after") is False),
                          "copy_verified": ok})
    return sweep.frame(HAZARD)


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
                    with rt.pinned_buffer(n, grant=False):
                        vm = vmlck_nbytes()
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
