"""What each runtime answers to the lock patterns the thread argues about (C8)."""

from __future__ import annotations

import pandas as pd

from ..errors import RuntimeCallFailed
from ..memkinds import host_buffer
from ..schema import SEMANTICS, frame
from ..units import PAGE_NBYTES
from ..vocab import MemoryKind

__all__ = ["semantics", "PROBES"]

PROBES = ("lock_twice_unlock_once", "overlapping", "sub_range", "shared_page", "unlock_never_locked")


class _Probe:
    """Runs the steps of one probe, recording each native answer, and undoes what was granted."""

    def __init__(self, rt, name: str, rows: list) -> None:
        self.rt, self.name, self.rows, self.held = rt, name, rows, []

    def _row(self, action, calls, err="", locked=None):
        call = calls[-1]
        self.rows.append({"probe": self.name, "step": len([r for r in self.rows if r["probe"] == self.name]),
                          "action": action, "call": call[0], "rc": call[3], "error": err, "locked": locked,
                          "platform": self.rt.name})

    def _attempt(self, action, fn, ptr, nbytes) -> bool:
        """Run one lock or unlock, record the runtime's answer; True if it succeeded."""
        with self.rt.recorder.span() as calls:
            try:
                fn(ptr, nbytes)
                err = ""
            except RuntimeCallFailed as e:
                err = f"{e.rc_name} ({e.rc})"
        self._row(action, calls, err)
        return not err

    def lock(self, action, ptr, nbytes) -> bool:
        ok = self._attempt(action, self.rt.lock, ptr, nbytes)
        if ok:
            self.held.append((ptr, nbytes))
        return ok

    def unlock(self, action, ptr, nbytes) -> bool:
        ok = self._attempt(action, self.rt.unlock, ptr, nbytes)
        if ok and (ptr, nbytes) in self.held:
            self.held.remove((ptr, nbytes))
        return ok

    def query(self, action, ptr) -> bool:
        with self.rt.recorder.span() as calls:
            info = self.rt.query(ptr)
        self._row(action, calls, locked=info.locked)
        return info.locked

    def close(self) -> None:
        """Undo every lock that was granted and not yet undone (a refused undo is recorded)."""
        for ptr, nbytes in list(reversed(self.held)):
            self.unlock("clean-up unlock", ptr, nbytes)
        self.held = []


def semantics(rt) -> pd.DataFrame:
    """Each probe's steps with the runtime's answers:

    - ``lock_twice_unlock_once``: lock A, lock A, unlock A, query A (does the runtime count?);
    - ``overlapping``: lock A = pages 0-3, lock B = pages 2-5, query, unlock both;
    - ``sub_range``: lock A = pages 0-3, lock page 1 alone, unlock it, query A;
    - ``shared_page``: A and B share one page; lock A, lock B, unlock B, query A's last page;
    - ``unlock_never_locked``: unlock memory no one locked.
    """
    rows: list[dict] = []
    page = PAGE_NBYTES
    with host_buffer(MemoryKind.HEAP, 8 * page) as big, host_buffer(MemoryKind.PAGE_SHARING, 3 * page + page // 2) as a:
        base = big.ptr + (-big.ptr) % page          # page-aligned start inside the heap buffer
        p = _Probe(rt, "lock_twice_unlock_once", rows)
        if p.lock("lock A", base, 4 * page):
            p.lock("lock A again", base, 4 * page)
            p.unlock("unlock A once", base, 4 * page)
            p.query("query A", base)
        p.close()

        p = _Probe(rt, "overlapping", rows)
        if p.lock("lock A (pages 0-3)", base, 4 * page):
            p.lock("lock B (pages 2-5)", base + 2 * page, 4 * page)
            p.query("query page 2", base + 2 * page)
        p.close()

        p = _Probe(rt, "sub_range", rows)
        if p.lock("lock A (pages 0-3)", base, 4 * page):
            if p.lock("lock page 1 alone", base + page, page):
                p.unlock("unlock page 1", base + page, page)
            p.query("query page 1 of A", base + page)
        p.close()

        b = a.neighbour
        p = _Probe(rt, "shared_page", rows)
        if p.lock("lock A", a.ptr, a.nbytes):
            if p.lock("lock B (shares A's last page)", b.ptr, b.nbytes):
                p.unlock("unlock B", b.ptr, b.nbytes)
            p.query("query A's last byte", a.ptr + a.nbytes - 1)
        p.close()

        p = _Probe(rt, "unlock_never_locked", rows)
        p.unlock("unlock memory never locked", base + 6 * page, page)
        p.close()
    return frame(rows, SEMANTICS)
