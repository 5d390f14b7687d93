"""The model in the real runtime's wait mode (issue 33 item 2): the replica model (``replica_model``)
run in fresh processes whose CUDA context waits as pinpath's does ("auto": CUDA's default, spinning
while contexts <= logical CPUs) and as LLVM's CUDA plugin makes it wait ("blocking":
CU_CTX_SCHED_BLOCKING_SYNC, a blocked wait woken by the GPU's interrupt), the two interleaved
process by process (auto, blocking, blocking, auto, ...; the same plan in each), so that both arms
are in the same state but the one named. The mode is set when a process opens the runtime
(``runtimes.WAIT_ENV``) and read back there (``wait_in_force``); ``real_terms`` turns the
difference into a measured term. Elsewhere than CUDA the wait mode is not applicable, and the frame
says so."""

from __future__ import annotations

import pandas as pd

from ..errors import NotAvailable, PinpathError
from ..runtimes import WAIT_ENV, WAIT_MODES, WAIT_NOT_APPLICABLE
from ..schema import WAIT_MODEL, frame
from . import processes
from .replica_compare import replica_model
from .replicate import open_for_process

__all__ = ["wait_model", "SECTIONS", "open_for_process", "not_applicable", "mode_of"]


def not_applicable(platform: str) -> str:
    """Why the wait mode is not measured on ``platform`` (one sentence)."""
    return (f"{platform}: the wait mode is {WAIT_NOT_APPLICABLE} (pinpath sets it on CUDA's context only, "
            f"as LLVM's CUDA plugin does)")


def mode_of(r: int) -> str:
    """The wait mode of process ``r``: auto, blocking, blocking, auto, ... (each pair balanced in order)."""
    return WAIT_MODES[(r % 4) in (1, 2)]


def _model(rt, *, wait: str, plan: list, nw_values, steps: int, invocations: int, verify: str = "none",
           **_process) -> pd.DataFrame:
    """One process's replica model (``replica_model``), its rows labelled with the mode asked for and
    the mode in force; NotAvailable where the runtime has no wait mode."""
    if rt.wait_mode == WAIT_NOT_APPLICABLE:
        raise NotAvailable(not_applicable(rt.name))
    if (wait == "blocking") != (rt.wait_mode == "blocking"):
        raise PinpathError(f"{rt.name}: asked for the {wait} wait mode, the context waits in the {rt.wait_mode} mode")
    p = pd.DataFrame(plan).astype({"threshold_nbytes": "Int64", "user_pinned": "boolean"})
    df = replica_model(rt, p, nw_values=nw_values, steps=steps, invocations=invocations, verify=verify)
    return df.assign(wait=wait, wait_in_force=rt.wait_mode)


#: the measurement a fresh process runs (``processes.run``)
SECTIONS = {"wait_model": _model}


def wait_model(rt, plan: pd.DataFrame, *, nw_values, steps: int, invocations: int, processes_per_mode: int = 3,
               verify: str = "first", timeout_s: int = 600) -> pd.DataFrame:
    """WAIT_MODEL: ``replica_model(plan, ...)`` in ``processes_per_mode`` fresh processes per wait mode
    (``WAIT_MODES``), interleaved (``mode_of``); ``repeat`` numbers the process, ``wait`` its mode.
    The byte check (``verify``) in each mode's first process only. A one-row frame whose
    ``not_applicable`` says why where it cannot run: not CUDA, no process asked for, a process
    that could not open in its mode (the refusal's sentence) or failed."""
    if rt.wait_mode == WAIT_NOT_APPLICABLE:
        return pd.DataFrame([{"not_applicable": not_applicable(rt.name)}])
    if processes_per_mode < 1:
        return pd.DataFrame([{"not_applicable": "the wait mode was not measured (no process asked for)"}])
    plan = plan[plan.policy != ""]
    spec = {"plan": plan.astype(object).where(plan.notna(), None).to_dict("records"),
            "nw_values": [int(n) for n in nw_values], "steps": int(steps), "invocations": int(invocations)}
    try:
        got = processes.run(__name__, {"wait_model": spec}, platform=rt.name, device=int(getattr(rt, "device", 0) or 0),
                            repeats=2 * int(processes_per_mode), warmup=0, timeout_s=timeout_s,
                            vary=lambda r, _: {"wait": mode_of(r), "verify": verify if r < 2 else "none"},
                            vary_env=lambda r: {WAIT_ENV: mode_of(r)})["wait_model"]
    except processes.Failed as e:
        return pd.DataFrame([{"not_applicable": str(e)}])
    if isinstance(got, str):
        return pd.DataFrame([{"not_applicable": got}])
    return frame(got.to_dict("records"), WAIT_MODEL)
