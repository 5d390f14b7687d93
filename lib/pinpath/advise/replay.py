"""The replay of a pattern's classes on this node: ONE function, ``replay``, whose body is the
engine. Today it runs pinpath's Python policies (``engine="python"``); a native engine replaces
the body and keeps the frame.

For each variant (a policy, whether the application registered the buffer first, the nextgen
threshold) and each (size, direction, reuse) class, a repeat is a host buffer's whole life as the
application gives it to the runtime: [register], map, its first transfer (``use`` 0), a second one
where the class reuses the buffer (``use`` 1), unmap, [unregister]. Rows are the timed events; the repeats visit the points in a shuffled order.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from typing import Mapping

import pandas as pd

from ..errors import LockFailed, RuntimeCallFailed
from ..experiments.sweep import DeviceBuffers, checks, rounds, transfer
from ..memkinds import host_buffer
from ..policies import make_policy
from ..vocab import MemoryKind

__all__ = ["replay", "REPLAY_COLUMNS", "ENGINE"]

ENGINE = "python"
REPLAY_COLUMNS = ["variant", "policy", "event", "nbytes", "direction", "reuse", "use", "repeat", "ns", "path",
                  "error", "engine"]


def replay(rt, classes: pd.DataFrame, policies: Mapping[str, tuple], repeats: int, *,
           verify: str = "first", warmup: int = 1) -> pd.DataFrame:
    """Per-event times of every class under every variant.

    ``classes``: rows with nbytes, direction (h2d/d2h), reuse (>= 1). ``policies``: variant ->
    (policy name, user_pinned, threshold_nbytes or None). Returns REPLAY_COLUMNS: event is
    register, map, transfer, unmap or unregister; ``ns`` the event's time (a transfer's includes
    the wait for its copy); ``error`` the runtime's answer where an event was refused (the class
    is then not replayed further under that variant)."""
    rows = []
    classes = classes[["nbytes", "direction", "reuse"]].drop_duplicates()
    with ExitStack() as stack:
        dev = stack.enter_context(DeviceBuffers(rt))
        dptrs = {int(n): dev.get(int(n)) for n in classes.nbytes.unique()}
        # one host buffer per size serves every class and variant: a repeat is a whole life
        # (register .. unregister), so no two lives overlap, and memory is the sum of the sizes
        hosts = {int(n): stack.enter_context(host_buffer(MemoryKind.HEAP, int(n), rt=rt)) for n in dptrs}
        pols = {}
        for variant, (policy, pinned, thr) in policies.items():
            kw = {} if thr is None else {"threshold_nbytes": int(thr)}
            pols[variant] = stack.enter_context(make_policy(policy, rt, **kw))
        refused: dict = {}
        points = [(variant, c) for variant in policies for c in classes.itertuples(index=False)]
        for i, (variant, c) in rounds(points, repeats=repeats, warmup=warmup, label="advise replay"):
            if (variant, c) in refused:
                continue
            policy, pinned, _ = policies[variant]
            pol, buf = pols[variant], hosts[int(c.nbytes)]
            base = {"variant": variant, "policy": policy, "nbytes": int(c.nbytes), "direction": c.direction,
                    "reuse": int(c.reuse), "repeat": i, "engine": ENGINE, "error": ""}
            events = []
            try:
                if pinned:   # the application registers the buffer (cudaHostRegister / hipHostRegister)
                    t0 = time.perf_counter_ns()
                    rt.lock(buf.ptr, buf.nbytes)
                    events.append(("register", -1, time.perf_counter_ns() - t0, ""))
                try:
                    m = pol.map(buf)
                    events.append(("map", -1, m.total_ns, m.path))
                    for use in range(min(int(c.reuse), 2)):
                        r = transfer(pol, buf, dev, dptrs[int(c.nbytes)], c.direction, verify=checks(verify, max(i, 0)))
                        events.append(("transfer", use, r.total_ns, r.path))
                    u = pol.unmap(buf)
                    events.append(("unmap", -1, u.total_ns, u.path))
                finally:
                    if pinned:
                        t0 = time.perf_counter_ns()
                        rt.unlock(buf.ptr, buf.nbytes)
                        events.append(("unregister", -1, time.perf_counter_ns() - t0, ""))
            except (LockFailed, RuntimeCallFailed) as e:
                refused[(variant, c)] = str(e)
                rows.append({**base, "event": "refused", "use": -1, "ns": float("nan"), "path": "", "error": str(e)})
                continue
            if i >= 0:
                rows += [{**base, "event": ev, "use": use, "ns": float(ns), "path": str(path)}
                         for ev, use, ns, path in events]
    return pd.DataFrame(rows, columns=REPLAY_COLUMNS)
