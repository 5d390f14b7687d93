"""The transfer policies (``vocab.Policy``; what each models: ``CLAIMS.md``), each a row of steps in
``vocab.POLICY_STEPS`` run by the class of its maps, written once against the runtime interface."""

from __future__ import annotations

from ..vocab import POLICY_STEPS, Policy, choose
from .base import DEFAULT_THRESHOLD_NBYTES, PolicyBase, StagingPool
from .direct import Prepinned
from .nextgen import Nextgen, PinnedEntry, PinnedMap

__all__ = ["POLICIES", "MAPS", "make_policy", "PolicyBase", "PinnedMap", "PinnedEntry", "StagingPool",
           "DEFAULT_THRESHOLD_NBYTES"]

#: what a policy's map and unmap keep -> the class that keeps it (its transfer steps are methods)
MAPS: dict[str, type[PolicyBase]] = {"none": PolicyBase, "prepinned": Prepinned, "nextgen": Nextgen}
POLICIES: dict[Policy, type[PolicyBase]] = {p: MAPS[s.maps] for p, s in POLICY_STEPS.items()}


def make_policy(name: str, rt, **kw) -> PolicyBase:
    """Build the policy ``name`` on runtime ``rt`` (keyword arguments: see PolicyBase)."""
    policy = choose(Policy, name, "policy")
    return POLICIES[policy](rt, policy, **kw)
