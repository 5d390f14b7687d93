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

__all__ = ["wait_model", "Interleaved", "SECTIONS", "open_for_process", "not_applicable", "mode_of"]


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


class Interleaved:
    """The processes of ``wait_model`` started between another measurement's own processes, so that
    both sides of a comparison are taken over the same stretch of a run:
    ``real_runtime(between_rounds=...)`` calls it after each of its rounds, and each call starts the
    next process (``mode_of`` its number), if one is left; given the other measurement's ``rounds``,
    each call starts as many as spread the processes evenly over them (5 per mode and 5 rounds:
    one of each mode after every round). ``frame()`` starts those not started yet and returns
    WAIT_MODEL, or a one-row frame whose ``not_applicable`` says why (not CUDA, no process asked for,
    a process that could not open in its mode or failed)."""

    def __init__(self, rt, plan: pd.DataFrame, *, nw_values, steps: int, invocations: int, processes_per_mode: int = 3,
                 verify: str = "first", timeout_s: int = 600, rounds: int | None = None):
        self._rt, self._verify, self._timeout_s = rt, verify, timeout_s
        self.total = 2 * max(int(processes_per_mode), 0)
        self._rounds_left = max(int(rounds), 1) if rounds else None
        self.after: list[int | None] = []   #: per process started, the round it followed (None: none)
        self._got: list[pd.DataFrame] = []
        self._why = (not_applicable(rt.name) if rt.wait_mode == WAIT_NOT_APPLICABLE else
                     "" if self.total else "the wait mode was not measured (no process asked for)")
        plan = plan[plan.policy != ""]
        self._spec = {"plan": plan.astype(object).where(plan.notna(), None).to_dict("records"),
                      "nw_values": [int(n) for n in nw_values], "steps": int(steps), "invocations": int(invocations)}

    def __call__(self, after_round: int | None = None) -> None:
        """Start the next process (the next ones, their share of the rounds left, where ``rounds`` was
        given), if one is left and none has failed."""
        n = 1
        if self._rounds_left is not None:
            n = -(-(self.total - len(self._got)) // self._rounds_left)      # ceil: the rest spread evenly
            self._rounds_left = max(self._rounds_left - 1, 1)
        for _ in range(n):
            self._start(after_round)

    def _start(self, after_round: int | None) -> None:
        if self._why or len(self._got) >= self.total:
            return
        r, verify = len(self._got), self._verify
        try:
            got = processes.run(__name__, {"wait_model": self._spec}, platform=self._rt.name,
                                device=int(getattr(self._rt, "device", 0) or 0), repeats=1, first=r, warmup=0,
                                timeout_s=self._timeout_s,
                                vary=lambda k, _: {"wait": mode_of(k), "verify": verify if k < 2 else "none"},
                                vary_env=lambda k: {WAIT_ENV: mode_of(k)})["wait_model"]
        except processes.Failed as e:
            got = str(e)
        if isinstance(got, str):
            self._why = got
            return
        self._got.append(got)
        self.after.append(after_round)

    def said(self) -> str:
        """Where the processes ran, in one sentence: after which rounds of the other measurement ("":
        none ran)."""
        rounds = [k for k in self.after if k is not None]
        if not self._got:
            return ""
        if not rounds:
            return f"{len(self._got)} wait-mode processes, after the real runs."
        rest = len(self._got) - len(rounds)
        per = {k: rounds.count(k) for k in dict.fromkeys(rounds)}          # round -> processes after it, in order
        each = set(per.values())
        where = (f"{'one' if each == {1} else each.pop()} after each of the real runs' rounds "
                 f"{', '.join(str(k + 1) for k in per)}" if len(each) == 1 else
                 "after the real runs' rounds: " + ", ".join(f"{n} after round {k + 1}" for k, n in per.items()))
        return f"{len(self._got)} wait-mode processes, {where}" + (f", {rest} after them" if rest else "") + "."

    def frame(self) -> pd.DataFrame:
        while not self._why and len(self._got) < self.total:
            self()
        if self._why:
            return pd.DataFrame([{"not_applicable": self._why}])
        return frame(pd.concat(self._got, ignore_index=True).to_dict("records"), WAIT_MODEL)


def wait_model(rt, plan: pd.DataFrame, *, nw_values, steps: int, invocations: int, processes_per_mode: int = 3,
               verify: str = "first", timeout_s: int = 600) -> pd.DataFrame:
    """WAIT_MODEL: ``replica_model(plan, ...)`` in ``processes_per_mode`` fresh processes per wait mode
    (``WAIT_MODES``), interleaved (``mode_of``), one after the other (``Interleaved`` spreads them
    between another measurement's); ``repeat`` numbers the process, ``wait`` its mode. The byte
    check (``verify``) in each mode's first process only. A one-row frame whose ``not_applicable``
    says why where it cannot run."""
    return Interleaved(rt, plan, nw_values=nw_values, steps=steps, invocations=invocations,
                       processes_per_mode=processes_per_mode, verify=verify, timeout_s=timeout_s).frame()
