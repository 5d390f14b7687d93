"""The tracked policy's map is exact: the four ways it used to go wrong, each deterministic, and a
stress of 16 threads over every range shape with checks of counts and of the pages' real state."""

import json
import subprocess
import sys
import threading
import time
from pathlib import Path


from pinpath import osinfo
from pinpath.experiments.sweep import DeviceBuffers
from pinpath.memkinds import HostBuffer, host_buffer, view
from pinpath.policies import make_policy
from pinpath.units import PAGE_NBYTES

HERE = Path(__file__).parent


def _locked(ptr: int) -> bool:
    vma = osinfo.find_vma(ptr)
    return bool(vma and vma.locked)


class _SlowLock:
    """The host runtime, with a lock that waits until told: another thread's map runs meanwhile."""

    def __init__(self, rt):
        self._rt, self.entered, self.go = rt, threading.Event(), threading.Event()

    def __getattr__(self, name):
        return getattr(self._rt, name)

    def lock(self, ptr, nbytes, *, read_only=False):
        self.entered.set()
        self.go.wait(5)
        return self._rt.lock(ptr, nbytes)


def test_a_map_in_flight_is_not_seen_as_external(host_rt):
    """Cause 1: two maps of one buffer at once; the second must not take the first one's
    in-flight lock for someone else's (external, never unlocked)."""
    rt = _SlowLock(host_rt)
    with make_policy("nextgen_lock_mapped", rt) as pol, host_buffer("heap", 64 << 10) as buf:
        out = {}
        t = threading.Thread(target=lambda: out.setdefault("first", pol.map(buf)))
        t.start()
        rt.entered.wait(5)
        t2 = threading.Thread(target=lambda: out.setdefault("second", pol.map(buf)))
        t2.start()
        time.sleep(0.05)
        rt.go.set()
        t.join()
        t2.join()
        assert {out["first"].path, out["second"].path} == {"locked", "refcounted"}
        (entry,) = pol.pinned.entries()
        assert not entry.external and entry.refs == 2
        pol.unmap(buf)
        assert _locked(buf.ptr)
        assert pol.unmap(buf).path == "unlocked" and not _locked(buf.ptr)


def test_unmap_of_a_refused_map_drops_nothing(host_rt):
    """Cause 2: B starts inside A and runs past it (refused); B's unmap must not drop A's reference."""
    with make_policy("nextgen_lock_mapped", host_rt) as pol, host_buffer("heap", 8 * PAGE_NBYTES) as big:
        a = HostBuffer(big.ptr, 4 * PAGE_NBYTES, "heap", view(big.ptr, 4 * PAGE_NBYTES))
        b = HostBuffer(big.ptr + PAGE_NBYTES, 4 * PAGE_NBYTES, "heap", view(big.ptr + PAGE_NBYTES, 4 * PAGE_NBYTES))
        assert pol.map(a).path == "locked"
        assert pol.map(b).path == "overlap_refused"
        assert pol.unmap(b).path == "untracked"
        assert pol.pinned.entries()[0].refs == 1 and _locked(a.ptr)
        assert pol.unmap(a).path == "unlocked"


def test_a_refused_insert_leaves_nothing_locked(host_rt):
    """Cause 3: a range that starts before an entry and runs into it is refused before any lock."""
    with make_policy("nextgen_lock_mapped", host_rt) as pol, host_buffer("heap", 8 * PAGE_NBYTES) as big:
        a = HostBuffer(big.ptr + 4 * PAGE_NBYTES, 2 * PAGE_NBYTES, "heap", view(big.ptr + 4 * PAGE_NBYTES, 2 * PAGE_NBYTES))
        b = HostBuffer(big.ptr, 5 * PAGE_NBYTES, "heap", view(big.ptr, 5 * PAGE_NBYTES))
        assert pol.map(a).path == "locked"
        before = osinfo.vmlck_nbytes()
        m = pol.map(b)
        assert m.path == "overlap_refused" and not [c for c in m.calls if c.call == "mlock"]
        assert osinfo.vmlck_nbytes() == before and not _locked(b.ptr)
        pol.unmap(b)
        pol.unmap(a)
    assert not host_rt.recorder.outstanding()


def test_memory_the_application_pinned_is_never_unlocked(host_rt):
    """Cause 4: the application pinned a buffer; mapped, it is external, and transfers above the
    threshold copy from it without unlocking it. lock_always, which keeps no map, does unlock it
    on a runtime that does not count locks: the harness sees that and records the hazard."""
    from pinpath.experiments import replica
    with make_policy("nextgen", host_rt, threshold_nbytes=PAGE_NBYTES) as pol, DeviceBuffers(host_rt) as dev, \
            host_buffer("heap", 4 * PAGE_NBYTES) as buf:
        host_rt.lock(buf.ptr, buf.nbytes)
        try:
            assert pol.map(buf).path == "external"
            r = pol.transfer(buf, dev.get(buf.nbytes), "h2d")
            assert r.path == "external_pinned" and not [c for c in r.calls if c.call == "munlock"]
            pol.sync()
            assert _locked(buf.ptr)
            pol.unmap(buf)
            assert _locked(buf.ptr)
        finally:
            host_rt.unlock(buf.ptr, buf.nbytes)
    tr, _ = replica(host_rt, policies=["lock_always"], nw_values=[2], steps=1, invocations_per_step=2,
                    user_pinned=[True])
    moved = tr[(tr.event == "transfer") & ~tr.counted.astype(bool)]   # the counted arm keeps the pin (C10)
    assert len(moved) and moved.hazard.str.contains("unlocked by the runtime").all(), moved.hazard


def _stress(threads: int, ops: int, seed: int, budget_s: float, env=None) -> dict:
    r = subprocess.run([sys.executable, str(HERE / "stress_map.py"), str(threads), str(ops), str(seed), "20",
                        str(budget_s)], capture_output=True, text=True, timeout=budget_s + 120, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_stress_16_threads(report):
    """16 threads x 10,000 random operations, bounded to 5 s in `make test` (the line says how many
    ran; PINPATH_STRESS_S raises the bound)."""
    import os
    res = _stress(16, 10_000, 20261202, float(os.environ.get("PINPATH_STRESS_S", "5")))
    report(f"map stress: {res['ops']} of {res['asked']} operations by {res['threads']} threads, seed {res['seed']}, "
           f"{res['seconds']} s, {res['checks']} quiescent checks, violations: {len(res['violations'])}")
    assert res["checks"] >= 1 and not res["violations"], res    # the map is verified at the quiescent checks


def test_the_stress_catches_a_broken_map():
    import os
    res = _stress(16, 2000, 7, 20.0, env={**os.environ, "PINPATH_STRESS_BREAK": "units"})
    assert any("must stay locked" in v for v in res["violations"]), res
