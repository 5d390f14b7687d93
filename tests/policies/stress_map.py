"""Stress of the tracked policy's refcounted map on the host platform (run as a script, in a
small process, so that each read of /proc/self/smaps stays cheap).

THREADS threads each make OPS random operations: map, unmap and transfer of ranges that
overlap, contain each other, sit side by side, share pages and start anywhere in a page, in
three arenas: plain memory, memory the "application" locked itself, and runtime-pinned memory
(alloc_pinned). The harness plays libomptarget: a mapping-table entry per (pointer, size) with
its own count, the policy notified on the first map and the last unmap, and a transfer holding
the entry for its duration. At every quiescent point (all threads stopped at a barrier) it checks
the map's reference counts against the live mappings and the real locked state of every page
(Linux's VmFlags) against what must be locked. It stops at the first violation.

The run stops early, at a quiescent point, once ``budget_s`` seconds have passed; the JSON line
says how many operations were made. ``PINPATH_STRESS_BREAK=units`` runs a policy that unlocks
by range on mlock (which keeps no count): the check must catch it.

Prints one JSON line: ops, seconds, checks, violations (a list; empty when all is well).
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import time

from pinpath import libc, osinfo
from pinpath.memkinds import HostBuffer, view
from pinpath.policies import make_policy
from pinpath.runtimes import open_runtime
from pinpath.units import PAGE_NBYTES
from pinpath.vocab import Direction, MapOutcome

TOOK_REF = {MapOutcome.LOCKED, MapOutcome.REFCOUNTED, MapOutcome.EXTERNAL}


class Arena:
    """``npages`` pages with an inaccessible guard page on each side (so Linux never merges
    their mapping with a neighbour's)."""

    def __init__(self, name: str, npages: int, base: int | None = None) -> None:
        self.name, self.nbytes = name, npages * PAGE_NBYTES
        if base is None:
            total = self.nbytes + 2 * PAGE_NBYTES
            raw = libc.LIBC.mmap(None, total, libc.PROT_READ | libc.PROT_WRITE,
                                 libc.MAP_PRIVATE | libc.MAP_ANONYMOUS, -1, 0)
            libc.LIBC.mprotect(raw, PAGE_NBYTES, 0)
            libc.LIBC.mprotect(raw + PAGE_NBYTES + self.nbytes, PAGE_NBYTES, 0)
            self._raw, self._total = raw, total
            base = raw + PAGE_NBYTES
        else:
            self._raw = None
        self.base = base
        view(base, self.nbytes)[:] = 0x5A

    def pages(self) -> range:
        return range(self.base, self.base + self.nbytes, PAGE_NBYTES)

    def close(self) -> None:
        if self._raw:
            libc.LIBC.munmap(self._raw, self._total)


COPY_SIZES = (1, 24, 1000, PAGE_NBYTES - 1, PAGE_NBYTES, PAGE_NBYTES + 1, 2 * PAGE_NBYTES, 3 * PAGE_NBYTES + 1)


def main(threads: int, ops: int, seed: int, checks: int, budget_s: float) -> dict:
    rt = open_runtime("host")
    plain, app = Arena("plain", 48), Arena("application-locked", 16)
    rt.lock(app.base, app.nbytes)                         # the application pinned it itself
    pinned_buf = rt.pinned_buffer(16 * PAGE_NBYTES, grant=False)
    pinned = Arena("alloc_pinned", 16, base=pinned_buf.ptr)
    arenas = [plain, plain, plain, app, pinned]            # plain ranges are the interesting ones
    pol = make_policy("nextgen_lock_mapped", rt, threshold_nbytes=3 * PAGE_NBYTES, per_thread_queues=True)
    if os.environ.get("PINPATH_STRESS_BREAK") == "units":
        pol.units = None                                   # a plain munlock of each range: page-sharing breaks
    deadline = time.monotonic() + budget_s
    made = [0] * threads
    dev_buf = rt.device_buffer(16 * PAGE_NBYTES + PAGE_NBYTES)
    dev = dev_buf.ptr
    table: dict[tuple[int, int], list] = {}                # (ptr, nbytes) -> [count, took_ref, lock]
    table_lock = threading.Lock()
    violations: list[str] = []
    every = max(1, ops // checks)
    barrier = threading.Barrier(threads)
    done = {"checks": 0, "stop": False}

    def buffer(ptr, n):
        return HostBuffer(ptr, n, "page_sharing", view(ptr, n))

    def enter(key) -> None:
        """libomptarget's map: the policy hears of the first mapping of a (pointer, size) only."""
        with table_lock:
            e = table.setdefault(key, [0, False, threading.Lock()])
        with e[2]:
            with table_lock:
                e[0] += 1
                first = e[0] == 1
            if first:
                rec = pol.map(buffer(*key))
                e[1] = rec.path in TOOK_REF

    def leave(key) -> None:
        with table_lock:
            e = table[key]
        with e[2]:
            with table_lock:
                e[0] -= 1
                last = e[0] == 0
            if last:
                rec = pol.unmap(buffer(*key))
                if e[1] and rec.path == MapOutcome.UNTRACKED:
                    violations.append(f"unmap of {key} found no reference although its map took one")
                if not e[1] and rec.path != MapOutcome.UNTRACKED:
                    violations.append(f"unmap of {key} dropped a reference its map never took ({rec.path})")

    def check() -> None:
        """At a quiescent point: reference counts and the real locked state of every page."""
        done["checks"] += 1
        refs = pol.references()
        with table_lock:
            live = {k: v for k, v in table.items() if v[0] > 0}
        for e in pol.pinned.entries():
            want = sum(1 for (p, n), v in live.items() if v[1] and e.host_ptr <= p < e.host_ptr + e.nbytes)
            if e.refs != want or refs.get(e.host_ptr, 0) != want:
                violations.append(f"entry {e.host_ptr:#x}+{e.nbytes}: {e.refs} references, {want} live maps hold it")
        locked = osinfo.locked_ranges()

        def is_locked(page):
            return any(lo <= page < hi for lo, hi in locked)
        need = set(app.pages()) | set(pinned.pages())
        for e in pol.pinned.entries():
            if not e.external:
                need |= {p for p in range(e.host_ptr - e.host_ptr % PAGE_NBYTES, e.host_ptr + e.nbytes, PAGE_NBYTES)}
        lost = sorted(p for p in need if not is_locked(p))
        if lost:
            violations.append(f"{len(lost)} page(s) that must stay locked are not (first {lost[0]:#x})")

    def worker(i: int) -> None:
        rng = random.Random(seed * 1000 + i)
        mine: list[tuple[int, int]] = []
        for k in range(ops):
            if k and k % every == 0:
                try:
                    if barrier.wait() == 0:
                        check()
                        done["stop"] = time.monotonic() > deadline
                    barrier.wait()
                except threading.BrokenBarrierError:
                    return
                if violations or done["stop"]:
                    break
            r = rng.random()
            try:
                if r < 0.2 or not mine:
                    a = rng.choice(arenas)
                    off = rng.randrange(0, a.nbytes - 64)
                    n = rng.randrange(1, min(a.nbytes - off, 4 * PAGE_NBYTES) + 1)
                    key = (a.base + off, n)
                    enter(key)
                    mine.append(key)
                elif r < 0.4:
                    leave(mine.pop(rng.randrange(len(mine))))
                else:
                    ptr, n = rng.choice(mine)
                    enter((ptr, n))                          # held for the transfer's duration
                    try:
                        # copy sizes from a fixed set: the pool keeps one buffer per exact size it has
                        # seen (as LLVM's memory manager does), and random sizes would grow it past a
                        # non-root user's lock limit
                        m = rng.choice([c for c in COPY_SIZES if c <= n])
                        sub = rng.randrange(0, n - m + 1)
                        d = rng.choice(list(Direction))
                        pol.transfer(buffer(ptr, n), dev, d, nbytes=m, offset=sub)
                        pol.sync()
                    finally:
                        leave((ptr, n))
            except Exception as e:   # any exception out of the policy is a violation
                violations.append(f"thread {i}, op {k}: {type(e).__name__}: {e}")
                barrier.abort()
                return
            made[i] += 1
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            return
        for key in mine:
            leave(key)

    t0 = time.monotonic()
    ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    seconds = time.monotonic() - t0
    if not violations:
        check()
        if pol.pinned.entries():
            violations.append(f"{len(pol.pinned.entries())} entries left in the map after every unmap")
    pol.close()
    rt.unlock(app.base, app.nbytes)
    pinned_buf.close()
    dev_buf.close()
    stray = [(lo, hi) for lo, hi in osinfo.locked_ranges()]
    if stray:
        violations.append(f"{sum(hi - lo for lo, hi in stray)} bytes still locked at the end")
    balance = {f"{r}@{p:#x}": n for (r, p), n in rt.recorder.balance().items()}
    if balance:
        violations.append(f"locks and allocations not undone, by the recorder: {balance}")
    plain.close()
    app.close()
    return {"threads": threads, "ops": sum(made), "asked": threads * ops, "seed": seed, "seconds": round(seconds, 1),
            "checks": done["checks"], "violations": violations[:10]}


if __name__ == "__main__":
    threads, ops, seed, checks = (int(a) for a in sys.argv[1:5])
    print(json.dumps(main(threads, ops, seed, checks, float(sys.argv[5]) if len(sys.argv) > 5 else 600.0)), flush=True)
