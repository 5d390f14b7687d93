"""pinpath: what host<->device transfers cost in GPU offload runtimes - page locking,
unlocking, pointer queries, staging - and which runtime policy pays.

Public names only; everything else is reached through its module
(``pinpath.runtimes``, ``pinpath.policies``, ``pinpath.experiments``, ...).
"""

from .errors import PinpathError, RuntimeUnavailable
from .runtimes import open_runtime

__all__ = ["PinpathError", "RuntimeUnavailable", "open_runtime", "__version__"]
__version__ = "0.1.0"
