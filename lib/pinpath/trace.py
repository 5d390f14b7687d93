"""The call recorder: every native call of every runtime passes through here.

Standard library only, so that every backend can record through it.
"""

from __future__ import annotations

import csv
import statistics
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator

from .errors import warn
from .records import CallRecord

__all__ = ["Recorder", "records", "measure_harness", "null_call_ns", "hsa_stats", "write_hsa_stats", "HSA_STATS_HEADER",
           "process_balance"]

HSA_STATS_HEADER = ("Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage")
_now = time.perf_counter_ns
_tid = threading.get_native_id


class _ThreadState(threading.local):
    """Per-thread state, initialised on a thread's first use (attribute reads stay cheap)."""

    def __init__(self) -> None:
        self.info: tuple[int, list[list]] = (_tid(), [])   # (native thread id, open spans)


#: every Recorder of this process: (resource, ptr) -> acquisitions not yet released (a notebook's
#: kernel reports it at its end, whatever runtimes it opened and closed on the way)
_PROCESS_HELD: dict[tuple[str, int], int] = {}
_PROCESS_LOCK = threading.Lock()


def process_balance() -> dict[str, int]:
    """``"lock@0x7f..." -> count`` for every acquisition of this process not yet released."""
    with _PROCESS_LOCK:
        return {f"{res}@{ptr:#x}": n for (res, ptr), n in _PROCESS_HELD.items() if n}


def _count(table: dict, key, delta: int) -> None:
    n = table.get(key, 0) + delta
    if n:
        table[key] = n
    else:
        table.pop(key, None)


class Recorder:
    """Keeps every native call (name, start and end in ns, return code, thread).

    ``span()`` collects the calls one thread makes inside a block, which is how a
    transfer gets its own call list. ``acquire``/``release`` count locks and
    allocations so that a leak is seen (``outstanding``, ``close``).

    The hot path stores plain tuples in CallRecord's field order; ``calls`` and
    ``records()`` hand out CallRecords.
    """

    def __init__(self) -> None:
        self._raw: list[tuple] = []
        self._state = _ThreadState()
        self._held: dict[tuple[str, int], list[int]] = {}    # (resource, ptr) -> [times held, nbytes]
        self.acquired: dict[str, int] = {}
        self.released: dict[str, int] = {}

    def call(self, name: str, fn: Callable, *args, rc_of: Callable | None = None):
        """Run ``fn(*args)``, record it under ``name`` and return what it returned.

        ``rc_of(result)`` gives the return code; without it the code is -1 (none).
        Kept lean: this runs around every native call (its cost is measured, see
        ``measure_harness``).
        """
        t0 = _now()
        out = fn(*args)
        t1 = _now()
        tid, spans = self._state.info
        rec = (name, t0, t1, -1 if rc_of is None else rc_of(out), tid)
        self._raw.append(rec)
        if spans:
            for s in spans:
                s.append(rec)
        return out

    @property
    def thread_id(self) -> int:
        """The calling thread's native id (cached per thread)."""
        return self._state.info[0]

    @property
    def calls(self) -> list[CallRecord]:
        return records(self._raw)

    @contextmanager
    def span(self) -> Iterator[list[tuple]]:
        """Collect the calls this thread records inside the block into the yielded list
        (raw tuples; ``records()`` turns them into CallRecords)."""
        spans = self._state.info[1]
        mine: list[tuple] = []
        spans.append(mine)
        try:
            yield mine
        finally:
            spans.remove(mine)

    def mark(self) -> int:
        """A place in the log of calls, for ``called_since``."""
        return len(self._raw)

    def called_since(self, mark: int, name: str) -> bool:
        """Whether any thread has recorded a call ``name`` after ``mark``."""
        return any(c[0] == name for c in self._raw[mark:])

    def clear(self) -> None:
        """Forget the recorded calls (held resources are kept)."""
        self._raw = []

    # -- balance of locks and allocations, with multiplicity -------------------------------
    def acquire(self, resource: str, ptr: int, nbytes: int) -> None:
        key = (resource, ptr)
        with _PROCESS_LOCK:
            held = self._held.get(key)
            if held is None:
                self._held[key] = [1, nbytes]
            else:
                held[0] += 1
                held[1] = nbytes
            self.acquired[resource] = self.acquired.get(resource, 0) + 1
            _count(_PROCESS_HELD, key, 1)

    def release(self, resource: str, ptr: int) -> None:
        key = (resource, ptr)
        with _PROCESS_LOCK:
            held = self._held.setdefault(key, [0, 0])
            held[0] -= 1
            if not held[0]:
                del self._held[key]
            self.released[resource] = self.released.get(resource, 0) + 1
            _count(_PROCESS_HELD, key, -1)

    def outstanding(self) -> dict[tuple[str, int], int]:
        """(resource, ptr) -> nbytes of every lock or allocation acquired more often than
        released (a pointer locked twice and unlocked once is outstanding)."""
        with _PROCESS_LOCK:
            return {k: nbytes for k, (n, nbytes) in self._held.items() if n > 0}

    def balance(self) -> dict[tuple[str, int], int]:
        """(resource, ptr) -> acquisitions minus releases, where not zero (negative: released
        more often than acquired)."""
        with _PROCESS_LOCK:
            return {k: n for k, (n, _) in self._held.items()}

    def close(self) -> None:
        """Warn once for each lock or allocation still outstanding."""
        for (resource, ptr), nbytes in sorted(self.outstanding().items()):
            warn(f"{resource} of {nbytes} bytes at {ptr:#x} was never undone")


def records(raw: Iterable[tuple]) -> list[CallRecord]:
    """Raw call tuples -> CallRecords."""
    make = CallRecord._make
    return [make(t) for t in raw]


def _per_call_ns(fn: Callable, loops: int, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        t0 = _now()
        for _ in range(loops):
            fn()
        out.append((_now() - t0) / loops)
    return out


def measure_harness(null_call: Callable[[], object], *, loops: int = 2000, rounds: int = 15) -> dict[str, float]:
    """Measure the harness itself: clock cost and resolution, a null runtime call, the recorder.

    Returns medians in ns: ``clock_ns`` (one perf_counter_ns), ``resolution_ns`` (the
    smallest non-zero step seen, and the clock's declared resolution),
    ``null_call_ns`` (the runtime's cheapest call, unrecorded), ``trace_overhead_ns``
    (what recording one call adds) and ``trace_overhead_spread_ns`` (p95 - p5 of that).
    """
    clock = _per_call_ns(_now, loops, rounds)
    steps = []
    for _ in range(loops):
        a = _now()
        b = _now()
        while b == a:
            b = _now()
        steps.append(b - a)
    plain = _per_call_ns(lambda: null_call(), loops, rounds)   # same wrapper as below
    probe = Recorder()
    recorded = _per_call_ns(lambda: probe.call("null", null_call), loops, rounds)
    diffs = sorted(r - p for r, p in zip(recorded, plain))
    return {
        "clock_ns": statistics.median(clock),
        "resolution_ns": float(min(steps)),
        "declared_resolution_ns": time.get_clock_info("perf_counter").resolution * 1e9,
        "null_call_ns": statistics.median(plain),
        "null_call_recorded_ns": statistics.median(recorded),
        "trace_overhead_ns": statistics.median(diffs),
        "trace_overhead_spread_ns": diffs[int(0.95 * (len(diffs) - 1))] - diffs[int(0.05 * (len(diffs) - 1))],
    }


def hsa_stats(calls: Iterable[CallRecord]) -> list[tuple[str, int, int, int, float]]:
    """Rows in rocprof's ``hsa_stats.csv`` layout, sorted by total duration, largest first.

    AverageNs is truncated to a whole number as rocprof's SQLite query does;
    Percentage is 100 x the row's share of the summed durations.
    """
    totals: dict[str, list[int]] = {}
    for c in calls:
        t = totals.setdefault(c.call, [0, 0])
        t[0] += 1
        t[1] += c.end_ns - c.start_ns
    grand = sum(t[1] for t in totals.values()) or 1
    rows = [(name, n, total, total // n, 100.0 * total / grand) for name, (n, total) in totals.items()]
    rows.sort(key=lambda r: r[2], reverse=True)
    return rows


def write_hsa_stats(rows, path) -> None:
    """Write rows as rocprof does: quoted header and names, bare numbers."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
        w.writerow(HSA_STATS_HEADER)
        for name, n, total, avg, pct in rows:
            w.writerow((name, int(n), int(total), int(avg), float(pct)))


def null_call_ns(harness) -> float:
    """The harness's null call (the runtime's cheapest call, unrecorded): what every Python
    figure carries, since a recorded call's span holds the call and not the recording; 0
    where the run has no harness figures. The one definition of "net of the harness"."""
    if harness is None or not len(harness):
        return 0.0
    v = harness.set_index("metric").ns.get("null_call_ns", 0.0)
    return float(v) if v == v else 0.0
