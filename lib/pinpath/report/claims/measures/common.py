"""Measures several claims' tests share: one op's calls, ratios per size or policy, the real runtime's record."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ....stats import Estimate, median_ci, ratio_ci
from ....units import binary_size, fmt_ns
from ...rundata import RunData
from ..load import _get, _null_ns, _rep
from ..model import Missing, Result


# -- measures shared by several claims ----------------------------------------------------------
def _calls(data: RunData, op: str, state: str, kind: str = "heap", dataset: str = "lock_cost") -> tuple[pd.DataFrame, str]:
    """Rows of one op on one state: from C where the run has them, else Python net of the
    harness's null call (labelled); computed once per run (C6, C7 and C9 share them)."""
    return data.memo(("calls", op, state, kind, dataset), lambda: _calls_of(data, op, state, kind, dataset))


def _calls_of(data: RunData, op: str, state: str, kind: str, dataset: str) -> tuple[pd.DataFrame, str]:
    lc = _get(data, dataset)
    rows = lc[(lc.op == op) & (lc.state == state) & (lc.kind == kind)]
    native = rows[rows.source == "native"]
    if len(native):
        return native, "timed in C"
    py = rows[rows.source == "python"].copy()
    null = _null_ns(data, dataset)
    py["ns"] = (py.ns - null).clip(lower=1)
    return py, f"Python, net of the {fmt_ns(null)} null call (no C library in this run)"


def _answer(rows: pd.DataFrame) -> str:
    """The runtime's refusal of ``rows``' calls in words ("" where every call was granted)."""
    errs = sorted(set(rows.error) - {""}) if "error" in rows else []
    return ", ".join(errs)


_OPS = {("lock", "pageable"): "a lock of pageable memory", ("query", "pageable"): "a pointer query of pageable memory",
        ("query", "locked"): "a query of locked memory", ("relock", "locked"): "a re-lock of locked memory",
        ("unlock", "locked"): "an unlock", ("unlock_after_relock", "locked"): "the unlock of a second lock",
        ("relock_counted", "locked"): "a re-lock counted by pinpath",
        ("unlock_after_relock_counted", "locked"): "the unlock of that counted re-lock"}

# -- which mechanism a re-lock figure measures (C7, C9, C10, C12 case 3, C13) ----------------------
#: a re-lock the runtime performed, the runtime's refusal of it, and pinpath's count of it
GRANTED, REFUSED, COUNTED = ("re-lock granted by the runtime", "re-lock refused by the runtime",
                             "re-lock counted by pinpath (analogue of ROCT's count)")


def _refused_all(rows: pd.DataFrame) -> str:
    """The runtime's answer where it refused every one of ``rows``' re-locks ("" where any was
    granted or there are none): then no re-lock was performed."""
    if not len(rows):
        return ""
    if "error" in rows:
        return _answer(rows) if (rows.error != "").all() else ""
    rc = rows.rc if "rc" in rows else rows.lock_rc
    return f"rc {int(rc.iloc[0])}" if (rc > 0).all() else ""


def _no_relock(answer: str, info: str = "") -> Result:
    """A test about a re-lock that no call performed: not applicable, the refusal for information."""
    return Result(not_applicable=f"no re-lock was performed: the runtime refused every one ({answer}) and pinpath's "
                                 "count was not measured" + (f"; for information, {info}" if info else ""))


def _mechanism(r: Result, words: str) -> Result:
    """``r`` with every group labelled by the mechanism its figure measures."""
    lab = {g: f"{g}, {words}" for g, _ in r.groups}
    return Result([(lab[g], e) for g, e in r.groups], r.detail, r.not_applicable,
                  {lab.get(k, k): v for k, v in r.facts.items()}, {lab.get(k, k): v for k, v in r.differences.items()},
                  r.unit)


def _op_fact(rows: pd.DataFrame, op: str, state: str, size: str) -> str:
    what, took = _OPS.get((op, state), f"{op} ({state})"), fmt_ns(median_ci(rows.ns, _rep(rows)).value)
    refused = _answer(rows)
    if refused and (rows.error != "").all():
        return f"the runtime refuses {what} ({refused}) in {took} at {size}"
    return f"{what} takes {took} at {size}"


def _per_size(data, num: tuple[str, str], den: tuple[str, str], *, kind: str = "heap",
              dataset: str = "lock_cost") -> Result:
    a, src = _calls(data, *num, kind=kind, dataset=dataset)
    b, _ = _calls(data, *den, kind=kind, dataset=dataset)
    groups, facts = [], {}
    for n in sorted(set(a.nbytes) & set(b.nbytes)):
        ga, gb, size = a[a.nbytes == n], b[b.nbytes == n], binary_size(n)
        groups.append((size, ratio_ci(ga.ns, gb.ns, _rep(ga), _rep(gb))))
        facts[size] = f"{_op_fact(ga, *num, size)}, {_op_fact(gb, *den, size).replace(' at ' + size, '')} ({src})"
    if not groups:
        raise Missing(f"no sizes with both {num[0]} ({num[1]}) and {den[0]} ({den[1]})")
    return Result(groups, f"{num[0]} / {den[0]} per size, {src}", facts=facts)


def _transfers(data: RunData, name: str) -> pd.DataFrame:
    t = _get(data, name)
    return t[t.event == "transfer"] if "event" in t else t


def _label(key) -> str:
    key = key if isinstance(key, tuple) else (key,)
    return " ".join(binary_size(k) if isinstance(k, (int, np.integer)) else str(k) for k in key)


def _backings(a: pd.DataFrame, b: pd.DataFrame) -> str:
    """Where the two arms of a comparison sat on different page backings, that in words."""
    if "backing" not in a or "backing" not in b:
        return ""
    ba, bb = (", ".join(sorted(set(x.backing.dropna().astype(str)))) for x in (a, b))
    return f" (on different page backings: {ba} against {bb})" if ba != bb else ""


def _policy_ratio(t: pd.DataFrame, a: str, b: str, by=("nbytes", "direction")) -> tuple[list, dict]:
    """Per group: ratio of the policies' time per transfer, and the facts sentence."""
    out, facts = [], {}
    for key, g in t.groupby(list(by)):
        ga, gb = g[g.policy == a], g[g.policy == b]
        if len(ga) and len(gb):
            label = _label(key)
            out.append((label, ratio_ci(ga.total_ns, gb.total_ns, _rep(ga), _rep(gb))))
            facts[label] = (f"a {label} transfer takes {fmt_ns(median_ci(ga.total_ns, _rep(ga)).value)} under {a} "
                            f"and {fmt_ns(median_ci(gb.total_ns, _rep(gb)).value)} under {b}" + _backings(ga, gb))
    return out, facts


def _exact(value: float, n: int = 1) -> Estimate:
    return Estimate(float(value), float(value), float(value), n)


def _real_vendor(data: RunData) -> str:
    """The vendor the real libomptarget ran on: notebook 13's runs, else notebook 12's (overlap_real)."""
    for name in ("real_runs", "overlap_real"):
        runs = data.get(name)
        if runs is not None and len(runs) and "vendor" in runs and runs.vendor.notna().any():
            return str(runs.vendor.dropna().iloc[0])
    return ""


def _real_steady(data: RunData) -> pd.DataFrame:
    """The real runtime's untraced invocations without the first one (a warm-up)."""
    inv = _get(data, "real_invocations")
    if "step" not in inv:   # a run where the real runtime did not run (its not_applicable row)
        why = inv.not_applicable.iloc[0] if "not_applicable" in inv and len(inv) else "no invocation recorded"
        raise Missing(f"the real runtime did not run: {why}")
    inv = inv[~inv.traced.astype(bool)] if "traced" in inv else inv
    return inv[~((inv.step == inv.step.min()) & (inv.invocation == 0))]


def _real_note(data: RunData) -> str:
    """What the real libomptarget did here (notebook 13), for a claim judged elsewhere; once per run."""
    return data.memo(("real_note",), lambda: _real_note_of(data))


def _real_note_of(data: RunData) -> str:
    copies, phases, vendor = data.get("real_copies"), data.get("real_phases"), _real_vendor(data)
    if copies is None or not len(copies) or not vendor:
        return ""
    plugin = {"nvidia": "LLVM's CUDA plugin", "amd": "LLVM's AMDGPU plugin"}.get(vendor, vendor)
    inv = copies[copies.segment == "invocation"]
    n_inv = max(inv.groupby(["variant", "nw", "step", "invocation"]).ngroups, 1)
    per = ", ".join(f"{len(g) / n_inv:.2f} {d.upper()}"
                    for d, g in inv.groupby("direction"))
    note = f"the real libomptarget here ({plugin}, notebook 13): {per} copies per region invocation"
    if phases is not None and len(phases):
        ph = phases[phases.segment == "invocation"]
        allocs = int(ph.phase.str.contains("alloc", case=False).sum())
        note += f", {allocs} allocation phases among its {len(ph)} profiled phases inside invocations"
    return note


# -- the tests ------------------------------------------------------------------------------------
def _model_calls(data: RunData, name: str, calls_name: str, policy: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """A model's events (map, transfer, unmap ...) of ``policy``, its transfers, and their calls; once per run."""
    return data.memo(("model_calls", name, calls_name, policy), lambda: _model_calls_of(data, name, calls_name, policy))


def _model_calls_of(data: RunData, name: str, calls_name: str, policy: str):
    every, calls = _get(data, name), _get(data, calls_name)
    ev = every[every.policy == policy]
    t = ev[ev.event == "transfer"] if "event" in ev else ev
    return ev, t, calls[calls.transfer_id.isin(ev.transfer_id)]
