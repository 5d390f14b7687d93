"""The native twin: the same microsecond calls timed from C in the same run (C6, C7, C9, C13)."""

from __future__ import annotations

import io
import os
import subprocess
import tempfile
from importlib import resources

import pandas as pd

from ..schema import NATIVE, frame

__all__ = ["native_twin", "native_twin_or_reason", "beside_python"]


def native_twin(rt, *, sizes_nbytes, repeats: int = 10, warmup: int = 2) -> pd.DataFrame:
    """Compile ``native/twin.c`` for ``rt`` (the runtime says how: ``rt.native_build``),
    run it, and return NATIVE rows (op, state, nbytes, repeat, ns, rc, source='native')."""
    src = resources.files("pinpath").joinpath("native/twin.c")
    with tempfile.TemporaryDirectory(prefix="pinpath-twin-") as d, resources.as_file(src) as src_path:
        exe = os.path.join(d, "twin")
        build = rt.native_build(str(src_path), exe)
        r = subprocess.run(build, capture_output=True, text=True)
        if r.returncode != 0:
            raise NotImplementedError(f"{rt.name}: the native twin did not compile "
                                      f"({(r.stderr.strip().splitlines() or ['no output'])[0]})")
        r = subprocess.run([exe, str(repeats), str(warmup), *map(str, sizes_nbytes)], capture_output=True,
                           text=True, timeout=600)
        if r.returncode != 0:
            raise NotImplementedError(f"{rt.name}: the native twin failed ({r.stderr.strip()[:200]})")
    df = pd.read_csv(io.StringIO(r.stdout), keep_default_na=False)
    df["source"], df["platform"] = "native", rt.name
    return frame(df.to_dict("records"), NATIVE)


def native_twin_or_reason(rt, **kw) -> pd.DataFrame:
    """``native_twin``, or a one-row frame whose ``not_applicable`` column says why not."""
    try:
        return native_twin(rt, **kw)
    except NotImplementedError as e:
        return pd.DataFrame([{"not_applicable": str(e), "platform": rt.name}])


def beside_python(native: pd.DataFrame, python: pd.DataFrame, harness: pd.DataFrame | None = None) -> pd.DataFrame:
    """Median per op, state and size from Python (the LOCK_COST frame) and from C, and the
    difference; the null call comes from the harness frame when given."""
    if "not_applicable" in native.columns:
        return native
    py = python.groupby(["op", "state", "nbytes"]).ns.median().rename("python_ns")
    c = native[native.op != "null"].groupby(["op", "state", "nbytes"]).ns.median().rename("native_ns")
    out = pd.concat([py, c], axis=1).dropna().reset_index()
    if harness is not None:
        null_py = float(harness.set_index("metric").loc["null_call_ns", "ns"])
        null_c = float(native[native.op == "null"].ns.median())
        out = pd.concat([pd.DataFrame([{"op": "null", "state": "-", "nbytes": 0, "python_ns": null_py,
                                        "native_ns": null_c}]), out], ignore_index=True)
    out["python_minus_native_ns"] = out.python_ns - out.native_ns
    out["ratio"] = (out.python_ns / out.native_ns).round(2)
    return out
