"""Where did the engine's driver_pageable advantage over the yardstick come from?

Up to 35c97da the engine's pageable D2H at 4 KiB took 0.895-0.917x of the plain program's time
(tools/plain_policies.c, in the same process, same thread, same calls); since the yardstick writes
its device buffers by a blocking cudaMemcpy, as pinpath writes the engine's (it used cudaMemset),
it is the engine's own ~0.6 us. This runs both sides on the same points, in one process, pinned
to one CPU, crossing two factors:
  - buffers: the engine's (Python: posix_memalign, a random fill) or the yardstick's
    (plain_buffers: posix_memalign, a pattern); both sides' device buffers written by cudaMemcpy;
  - the yardstick's output: its times kept in memory, or a line written to a file after each
    transfer (as plain_main did up to f7cd996), in alternate repeats. (Whose stream the
    yardstick copied on changed nothing, measured at 316e063.)
Each (point, buffers, side) runs one warm-up and ROUNDS transfers of that point alone; a repeat
visits all of them in a shuffled order, with its own buffers.

Usage: PYTHONPATH=lib python3 tools/fidelity_diag.py OUT.csv [PLATFORM] [REPEATS] [ROUNDS]
Output, one line per timed transfer: repeat,lines,buffers,side,policy,direction,nbytes,round,ns
"""

from __future__ import annotations

import ctypes
import random
import sys
from contextlib import ExitStack

import pandas as pd

from pinpath import engine as native_engine
from pinpath import machine_state, nativelib, open_runtime
from pinpath.experiments.fidelity import timing_cpu, YARDSTICK_SOURCE
from pinpath.experiments.sweep import DeviceBuffers
from pinpath.memkinds import host_buffer

POINTS = [("driver_pageable", d, n) for d in ("d2h", "h2d") for n in (4096, 65536)] + [("lock_always", "d2h", 65536)]


def main(out: str, platform: str = "cuda", repeats: int = 16, rounds: int = 32) -> None:
    rt = open_runtime(platform)
    eng = native_engine.load(rt.name)
    lib = ctypes.CDLL(str(nativelib.build_program(rt.name, YARDSTICK_SOURCE, shared=True)))
    lib.plain_time.argtypes = (ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                               ctypes.c_int, ctypes.POINTER(ctypes.c_int64), ctypes.c_int)
    lib.plain_buffers.argtypes = (ctypes.c_size_t, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                                  ctypes.POINTER(ctypes.c_void_p))
    lib.plain_buffers_free.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
    rng = random.Random(16)
    rows = []
    cpu = timing_cpu(rt)
    print(f"timing thread on CPU {cpu}", flush=True)
    with machine_state.pinned_to(cpu) if cpu is not None else ExitStack():
        for r in range(repeats):
            lines = r % 2
            with ExitStack() as stack:
                dev = stack.enter_context(DeviceBuffers(rt))
                bufs = {}
                for n in sorted({n for _, _, n in POINTS}):
                    hb = stack.enter_context(host_buffer("heap", n, rt=rt, seed=r))
                    bufs["engine", n] = (hb.ptr, dev.get(n))
                    h, d = ctypes.c_void_p(), ctypes.c_void_p()
                    if lib.plain_buffers(n, r, ctypes.byref(h), ctypes.byref(d)):
                        raise SystemExit("plain_buffers failed")
                    stack.callback(lib.plain_buffers_free, h, d)
                    bufs["plain", n] = (h.value, d.value)
                runs = [(pt, b, side) for pt in POINTS for b in ("engine", "plain") for side in ("engine", "plain")]
                rng.shuffle(runs)
                for (policy, direction, n), b, side in runs:
                    host, devp = bufs[b, n]
                    if side == "plain":
                        ns = (ctypes.c_int64 * rounds)()
                        if lib.plain_time(policy.encode(), host, devp, n, int(direction == "h2d"), rounds, ns, lines):
                            raise SystemExit(f"plain_time refused {policy}")
                        times = list(ns)
                    else:
                        plan = native_engine.Plan()
                        k = plan.buffer(host, devp, n)
                        for i in range(-1, rounds):
                            plan.transfer(k, direction, warmup=i < 0, round=i)
                        done = eng.run(policy, plan).transfers()
                        times = done[~done.warmup.astype(bool)].total_ns.tolist()
                    rows += [{"repeat": r, "lines": lines, "buffers": b, "side": side, "policy": policy,
                              "direction": direction, "nbytes": n, "round": i, "ns": t} for i, t in enumerate(times)]
            print(f"repeat {r + 1}/{repeats} done", flush=True)
    df = pd.DataFrame(rows)
    df.to_csv(out, index=False)
    med = df.groupby(["policy", "direction", "nbytes", "lines", "buffers", "side", "repeat"]).ns.median()
    table = med.groupby(["policy", "direction", "nbytes", "lines", "buffers", "side"]).median().unstack("side")
    table["engine/plain"] = table["engine"] / table["plain"]
    print(table.round(3).to_string())
    print(f"{len(df)} transfers, thread CPU {cpu}; ratios of medians over {repeats} repeats", flush=True)


if __name__ == "__main__":
    a = sys.argv[1:]
    if not a:
        raise SystemExit(__doc__)
    main(a[0], *(a[1:2] or []), *(int(x) for x in a[2:4]))
