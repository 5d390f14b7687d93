"""Runtime backends behind one interface, and ``open_runtime`` which picks one."""

from __future__ import annotations

import importlib

from .. import libc
from ..errors import RuntimeUnavailable, WaitModeRefused
from ..trace import Recorder
from ..vocab import Platform, choose
from .base import (WAIT_ENV, WAIT_MODES, WAIT_NOT_APPLICABLE, DeviceBuffer, PinnedBuffer, Queue, Runtime, event_pair,
                   has, need)

__all__ = ["RUNTIMES", "AUTO_ORDER", "open_runtime", "Runtime", "PinnedBuffer", "DeviceBuffer", "Queue",
           "event_pair", "has", "need", "WAIT_ENV", "WAIT_MODES", "WAIT_NOT_APPLICABLE"]

#: platform -> "module:class" of its backend, imported only when asked for
RUNTIMES: dict[Platform, str] = {
    Platform.CUDA: "pinpath.runtimes.cuda_:CudaRuntime",
    Platform.HSA: "pinpath.runtimes.hsa_:HsaRuntime",
    Platform.HIP: "pinpath.runtimes.hip_:HipRuntime",
    Platform.HOST: "pinpath.runtimes.host:HostRuntime",
}
#: the order ``auto`` tries; a platform without a backend here is passed over with that reason
AUTO_ORDER = (Platform.CUDA, Platform.HSA, Platform.HIP, Platform.HOST)


def _backend(platform: Platform):
    if platform not in RUNTIMES:
        raise RuntimeUnavailable(f"{platform} runtime unavailable: pinpath has no {platform} backend yet")
    module, cls = RUNTIMES[platform].split(":")
    return getattr(importlib.import_module(module), cls)


def open_runtime(name: str = "auto", recorder: Recorder | None = None) -> Runtime:
    """Start the runtime ``name`` (a Platform value); ``auto`` takes the first that starts.

    The returned runtime carries ``selection``: a list of (platform, outcome) pairs
    saying what was tried and why each was passed over, and ``wait_mode``: how the host waits for
    the device (CUDA opens in the mode ``WAIT_ENV`` names, "auto" without it; elsewhere
    ``WAIT_NOT_APPLICABLE``).

    Raises
    ------
    UnknownName
        ``name`` is not a platform.
    RuntimeUnavailable
        the named runtime cannot start (one sentence naming what is missing).
    WaitModeRefused
        CUDA's context waits in another mode than ``WAIT_ENV`` asks for (also under ``auto``).
    """
    platform = choose(Platform, name, "platform")
    libc.fix_mmap_threshold()   # the allocator state every host buffer of the run is made in
    tried: list[tuple[str, str]] = []
    for candidate in (AUTO_ORDER if platform == Platform.AUTO else (platform,)):
        try:
            rt = _backend(candidate)(recorder=recorder)
        except RuntimeUnavailable as e:
            if platform != Platform.AUTO or isinstance(e, WaitModeRefused):   # here, in another state: never passed over
                raise
            tried.append((candidate.value, str(e)))
            continue
        tried.append((candidate.value, "started"))
        rt.selection = tried
        return rt
    raise RuntimeUnavailable("no runtime started: " + "; ".join(r for _, r in tried))
