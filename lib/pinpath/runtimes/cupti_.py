"""CUPTI's view of copies on CUDA (issue #9 item 3): for each memcpy the device ran, the
memory it read and wrote (PAGEABLE, PINNED, DEVICE, ...) and its device-side start and
end, attributed to the Python-side transfer that issued it.

Through cupti-python (import name ``cupti``). Collection starts only in
``CopyObserver.start``; importing this module touches neither cupti nor CUDA.

Attribution: ``with observer.tag(transfer_id):`` pushes ``transfer_id`` as an external
correlation id (CUSTOM0) for the calling thread. While it is pushed, CUPTI precedes every
driver and runtime API record it makes with an EXTERNAL_CORRELATION record linking that
API call's correlation id to ``transfer_id``; a MEMCPY record carries the correlation id of
the driver call that issued it (and of the runtime call, ``runtime_correlation_id``). So
DRIVER and RUNTIME records are enabled too: observe in runs that do not time host-side
calls. Copies issued by pinpath's native library (a second CUDA runtime in the process)
go through the same driver and are attributed the same way.

Where cupti cannot be imported or started, ``why_not()`` says why in one sentence and
every path is ``unobserved``: nothing is assumed about a copy CUPTI did not report.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterable, Mapping

import pandas as pd

from ..errors import PinpathError
from ..schema import frame

__all__ = ["CopyObserver", "CuptiUnavailable", "COPY_OBSERVED", "MEMCPY_KINDS", "MEMORY_KINDS", "UNOBSERVED",
           "why_not", "memcpy_fields", "attribute", "source_kind"]

#: the frame ``CopyObserver.flush`` returns (one row per MEMCPY record)
COPY_OBSERVED = {
    "transfer_id": "Int",       # the tag the copy was issued under; null = issued outside any tag
    "bytes": "int",
    "copy_kind": "str",         # H2D, D2H, D2D, H2H, P2P, ...
    "src_kind": "str",          # PAGEABLE, PINNED, DEVICE, ARRAY, MANAGED, ...
    "dst_kind": "str",
    "device_start_ns": "int",   # CUPTI timestamps (ns, CUPTI's clock: cupti.get_timestamp)
    "device_end_ns": "int",
    "device_ns": "int",
    "correlation_id": "int",    # of the driver API call that issued the copy
    "stream_id": "int",
}
UNOBSERVED = "unobserved"

#: CUpti_ActivityMemcpyKind (cupti_activity.h), named as pinpath names directions
MEMCPY_KINDS = {0: "UNKNOWN", 1: "H2D", 2: "D2H", 3: "H2A", 4: "A2H", 5: "A2A", 6: "A2D", 7: "D2A",
                8: "D2D", 9: "H2H", 10: "P2P"}
#: CUpti_ActivityMemoryKind (cupti_activity.h); registered memory reports PINNED
MEMORY_KINDS = {0: "UNKNOWN", 1: "PAGEABLE", 2: "PINNED", 3: "DEVICE", 4: "ARRAY", 5: "MANAGED",
                6: "DEVICE_STATIC", 7: "MANAGED_STATIC"}
#: CUpti_ActivityKind values used here, and CUpti_ExternalCorrelationKind CUSTOM0
KIND_MEMCPY, KIND_DRIVER, KIND_RUNTIME, KIND_EXTERNAL_CORRELATION = 1, 4, 5, 39
EXTERNAL_CUSTOM0 = 3
_ENABLE_ORDER = (("EXTERNAL_CORRELATION", KIND_EXTERNAL_CORRELATION), ("DRIVER", KIND_DRIVER),
                 ("RUNTIME", KIND_RUNTIME), ("MEMCPY", KIND_MEMCPY))
_BUFFER_NBYTES = 8 << 20


class CuptiUnavailable(PinpathError):
    """CUPTI cannot observe copies here (one sentence: what is missing)."""


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


def why_not() -> str:
    """"" if cupti-python imports and libcupti answers, else one sentence saying why not.
    It loads libcupti (``get_timestamp``) but starts no collection."""
    try:
        from cupti import cupti
    except ImportError as e:
        return (f"cupti-python is not installed ({e.name or 'cupti'} cannot be imported; "
                "pip install cupti-python)")
    except Exception as e:          # a present but broken install: libcupti or cuda-bindings missing
        return f"cupti-python did not import ({_first_line(e)})"
    try:
        cupti.get_timestamp()
    except Exception as e:
        return f"CUPTI did not start ({_first_line(e)})"
    return ""


# -- records -> rows (pure: tests feed synthetic records) --------------------------------------
def memcpy_fields(record) -> dict:
    """The fields pinpath keeps from a MEMCPY activity record (read before its buffer goes)."""
    return {"copy_kind": int(record.copy_kind), "src_kind": int(record.src_kind), "dst_kind": int(record.dst_kind),
            "bytes": int(record.bytes), "start": int(record.start), "end": int(record.end),
            "correlation_id": int(record.correlation_id),
            "runtime_correlation_id": int(getattr(record, "runtime_correlation_id", 0) or 0),
            "stream_id": int(getattr(record, "stream_id", 0) or 0)}


def attribute(memcpys: Iterable[Mapping], links: Mapping[int, int]) -> pd.DataFrame:
    """COPY_OBSERVED rows from MEMCPY fields and ``links`` (API correlation id -> transfer id,
    from EXTERNAL_CORRELATION records): a copy belongs to the transfer whose tag was pushed
    when its driver call (or, failing that, its runtime call) was made."""
    rows = []
    for m in memcpys:
        tid = None
        for cid in (m["correlation_id"], m.get("runtime_correlation_id", 0)):
            if cid and cid in links:
                tid = links[cid]
                break
        rows.append({"transfer_id": tid, "bytes": m["bytes"],
                     "copy_kind": MEMCPY_KINDS.get(m["copy_kind"], f"KIND_{m['copy_kind']}"),
                     "src_kind": MEMORY_KINDS.get(m["src_kind"], f"KIND_{m['src_kind']}"),
                     "dst_kind": MEMORY_KINDS.get(m["dst_kind"], f"KIND_{m['dst_kind']}"),
                     "device_start_ns": m["start"], "device_end_ns": m["end"],
                     "device_ns": m["end"] - m["start"] if m["start"] or m["end"] else 0,
                     "correlation_id": m["correlation_id"], "stream_id": m.get("stream_id", 0)})
    df = frame(rows, COPY_OBSERVED)
    return df.sort_values(["device_start_ns", "correlation_id"], kind="stable").reset_index(drop=True)


def source_kind(observed: pd.DataFrame | None, transfer_id: int, direction: str = "H2D") -> str:
    """What CUPTI said the host side of ``transfer_id``'s copies was: PAGEABLE, PINNED, both
    joined by '+', or 'unobserved' when nothing was recorded (or no observer ran)."""
    if observed is None or observed.empty:
        return UNOBSERVED
    rows = observed[(observed.transfer_id == transfer_id) & (observed.copy_kind == direction)]
    if rows.empty:
        return UNOBSERVED
    host = rows.src_kind if direction.startswith("H") else rows.dst_kind
    return "+".join(sorted(set(host)))


# -- collection --------------------------------------------------------------------------------
_lock = threading.Lock()
_registered = False
_active: "CopyObserver | None" = None


def _buffer_requested():
    return _BUFFER_NBYTES, 0


def _buffer_completed(activities) -> None:
    """CUPTI hands a full buffer back: keep what pinpath needs; the records die with it."""
    memcpys, externals = [], []
    for a in activities:
        kind = int(a.kind)
        if kind == KIND_MEMCPY:
            memcpys.append(memcpy_fields(a))
        elif kind == KIND_EXTERNAL_CORRELATION:
            externals.append((int(a.external_kind), int(a.external_id), int(a.correlation_id)))
    obs = _active
    if obs is not None:
        obs._take(memcpys, externals)


class CopyObserver:
    """MEMCPY activity collection with per-transfer attribution.

        obs = CopyObserver()
        obs.start()                      # or: with CopyObserver() as obs:
        with obs.tag(7):
            rt.cudaMemcpyAsync(...)
        rt.cudaStreamSynchronize(stream)
        df = obs.flush()                 # COPY_OBSERVED rows; df.transfer_id == 7 for that copy
        obs.stop()

    One observer collects at a time (CUPTI's activity buffers are per process). ``tag`` is
    per thread, so threads offloading at once tag their own transfers."""

    def __init__(self, external_kind: int = EXTERNAL_CUSTOM0) -> None:
        self.external_kind = external_kind
        self.started = False
        self.reason = ""                 #: why collection is not running ("" while it runs)
        self.enabled: list[str] = []     #: activity kinds enabled by start
        self._memcpys: list[dict] = []
        self._links: dict[int, int] = {}
        self._mu = threading.Lock()
        self._cupti = None

    def why_not(self) -> str:
        """"" while collecting; else why not (one sentence)."""
        if self.started:
            return ""
        return self.reason or why_not() or "not started (CopyObserver.start)"

    def start(self) -> "CopyObserver":
        """Register the buffer callbacks (once per process) and enable EXTERNAL_CORRELATION,
        DRIVER, RUNTIME and MEMCPY records. Raises CuptiUnavailable with the reason."""
        global _registered, _active
        if self.started:
            return self
        reason = why_not()
        if reason:
            self.reason = reason
            raise CuptiUnavailable(reason)
        from cupti import cupti
        with _lock:
            if _active is not None:
                self.reason = "another CopyObserver is collecting (CUPTI's activity buffers are per process)"
                raise CuptiUnavailable(self.reason)
            try:
                if not _registered:
                    cupti.activity_register_callbacks(_buffer_requested, _buffer_completed)
                    _registered = True
            except Exception as e:
                self.reason = f"CUPTI refused the activity buffer callbacks ({_first_line(e)})"
                raise CuptiUnavailable(self.reason) from None
            failed = {}
            for name, kind in _ENABLE_ORDER:
                try:
                    cupti.activity_enable(kind)
                    self.enabled.append(name)
                except Exception as e:
                    failed[name] = _first_line(e)
            if "MEMCPY" not in self.enabled or "EXTERNAL_CORRELATION" not in self.enabled or \
                    not {"DRIVER", "RUNTIME"} & set(self.enabled):
                self._disable(cupti)
                self.reason = "CUPTI did not enable " + "; ".join(f"{k} ({v})" for k, v in failed.items())
                raise CuptiUnavailable(self.reason)
            self._cupti, self.started, self.reason = cupti, True, ""
            _active = self
        return self

    def _disable(self, cupti) -> None:
        for name, kind in reversed(_ENABLE_ORDER):
            if name in self.enabled:
                try:
                    cupti.activity_disable(kind)
                except Exception:
                    pass
        self.enabled = []

    def _take(self, memcpys: list[dict], externals: list[tuple[int, int, int]]) -> None:
        with self._mu:
            self._memcpys.extend(memcpys)
            for ekind, eid, cid in externals:
                if ekind == self.external_kind:
                    self._links[cid] = eid

    @contextmanager
    def tag(self, transfer_id: int):
        """Attribute the copies issued by this thread inside the block to ``transfer_id``
        (a non-negative int). Not collecting: the block runs untagged."""
        cupti = self._cupti
        if not self.started or cupti is None:
            yield
            return
        cupti.activity_push_external_correlation_id(self.external_kind, int(transfer_id))
        try:
            yield
        finally:
            cupti.activity_pop_external_correlation_id(self.external_kind)

    def flush(self) -> pd.DataFrame:
        """Force CUPTI to hand over every finished record, and return the copies collected
        since the last flush as COPY_OBSERVED rows (synchronise the streams first: a copy
        still running has no record yet)."""
        if self.started and self._cupti is not None:
            self._cupti.activity_flush_all(1)        # CUPTI_ACTIVITY_FLAG_FLUSH_FORCED
        with self._mu:
            memcpys, self._memcpys = self._memcpys, []
            links = dict(self._links)
        return attribute(memcpys, links)

    def stop(self) -> None:
        """Flush what is pending (kept for the next ``flush``), then disable the records."""
        global _active
        if not self.started:
            return
        cupti = self._cupti
        try:
            cupti.activity_flush_all(1)
        finally:
            with _lock:
                self._disable(cupti)
                self.started, self._cupti = False, None
                self.reason = "stopped"
                if _active is self:
                    _active = None

    def __enter__(self) -> "CopyObserver":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
