"""What a claim is: its subject, its tests and what a test measured (data only, no verdicts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ...registry import claim_datasets
from ...stats import Estimate
from ..rundata import RunData

GPU = ("cuda", "hsa", "hip")
#: subject -> (its name in words, the platforms where it is measured as meant; None: every platform,
#: (): only through the real runtime's record)
SUBJECTS = {"hsa": ("HSA/ROCT", ("hsa",)), "hip": ("HIP", ("hip",)), "cuda": ("the CUDA runtime/driver", ("cuda",)),
            "amdgpu_plugin": ("LLVM's AMDGPU plugin", ()), "cuda_plugin": ("LLVM's CUDA plugin", ()),
            "plugins": ("LLVM's CUDA and AMDGPU plugins", ()),
            "any": ("any runtime", None)}
AS_MEANT, ANALOGUE = "as meant", "analogue"
MODEL_ONLY = "not applicable here (a model shows its own call pattern)"
COLUMNS = ("id", "who", "claim", "short", "thread", "subject", "reading", "analogue", "metric", "measured", "low",
           "high", "unit", "comparison", "threshold", "n_repeats", "repeat_unit", "within_spread", "between_spread",
           "difference",
           "difference_low", "difference_high", "verdict", "why", "rule_detail", "detail", "rule", "notebook",
           "platform", "state")   # state: the cache state and the timing thread's CPU the figures were measured in


class Missing(Exception):
    """A data set a claim needs is not in the run, or holds nothing the test can use."""


@dataclass(frozen=True)
class Result:
    """What a test measured: (group, estimate) pairs, or why the test does not apply here.

    ``facts``: per group label (or "" for all), the data half of the row's "why" sentence: what
    was measured, on what. ``differences``: per group, the absolute difference (ns) beside a ratio.
    ``never_arose``: the situation the claim is about did not occur in the run (then the test is
    not applicable, saying so). ``unit``: what a repeat of the figures was ("process", "round"),
    where the measure read data other than the claim's data sets (else the judge reads theirs)."""
    groups: list[tuple[str, Estimate]] = field(default_factory=list)
    detail: str = ""
    not_applicable: str = ""
    facts: dict = field(default_factory=dict)
    differences: dict = field(default_factory=dict)
    unit: str = ""


@dataclass(frozen=True)
class Test:
    metric: str                                  #: words: what is measured
    unit: str                                    #: "x", "ns", "count", "fraction"
    comparison: str                              #: ">=", ">", "<=", "<", or "within" (|value - 1| <= threshold)
    threshold: float
    measure: Callable[[RunData], Result]         #: the run's data -> result
    over: str = "every"                          #: every group must hold, or a "majority" of them
    so: str = "{metric} is {v}"                  #: what the figure means, in words ({v}: the figure)


@dataclass(frozen=True)
class Claim:
    id: str
    who: str
    text: str
    short: str
    thread: str                                  #: the thread's figure or statement
    tests: tuple[Test, ...]
    subject: str = "any"                         #: a SUBJECTS key
    analogues: dict = field(default_factory=dict)   #: platform -> the analogue measured there, in words
    elsewhere: str = "the claim is about a GPU runtime; the host platform measures the operating system's share only"
    real: tuple[Test, ...] = ()                  #: tests on the real runtime's record (plugin claims)
    real_datasets: tuple[str, ...] = ()
    real_vendor: str = ""                        #: the real runtime's vendor(s) that are the subject, space-separated
    real_only: str = MODEL_ONLY                  #: why a claim with real tests is not applicable without that runtime

    @property
    def datasets(self) -> tuple[str, ...]:
        """The data sets it reads, as the registry of notebooks links it to the notebook judging it."""
        return claim_datasets(self.id)
