"""The one exception tree of pinpath; every message is one sentence, culprit first."""

from __future__ import annotations

import warnings

__all__ = [
    "PinpathError", "RuntimeUnavailable", "WaitModeRefused", "NotAvailable", "RuntimeCallFailed", "LockFailed",
    "UnknownName", "BadParameter", "VerificationFailed", "SchemaMismatch",
    "RunFailed", "PinpathWarning", "warn", "printable",
]


def printable(text: str, keep: str = "") -> str:
    """``text`` with control and bidirectional-override characters written as escapes (``\\x1b``,
    ``\\u202e``), so that a name taken from a file cannot move the cursor or reverse what a
    terminal shows; the characters in ``keep`` (e.g. a newline) stay."""
    return "".join(c if c.isprintable() or c == " " or c in keep else c.encode("unicode_escape").decode("ascii")
                   for c in str(text))


class PinpathError(Exception):
    """Base of everything pinpath raises."""


class RuntimeUnavailable(PinpathError):
    """The runtime cannot start: a library, a package or a device is missing."""


class WaitModeRefused(RuntimeUnavailable):
    """The runtime is here but its context waits in another mode than the one asked for
    (``runtimes.WAIT_ENV``); ``open_runtime("auto")`` does not pass over it to another platform."""


class NotAvailable(PinpathError):
    """A capability the runtime does not offer here (kernels, a latch, the C timing library,
    CUPTI ...); the message says why."""


class RuntimeCallFailed(PinpathError):
    """A native call returned a failure code."""

    def __init__(self, runtime: str, call: str, rc: int, rc_name: str,
                 nbytes: int | None = None, ptr: int | None = None):
        self.runtime, self.call, self.rc, self.rc_name = runtime, call, rc, rc_name
        self.nbytes, self.ptr = nbytes, ptr
        args = []
        if ptr is not None:
            args.append(f"ptr={ptr:#x}")
        if nbytes is not None:
            args.append(f"nbytes={nbytes}")
        super().__init__(f"{runtime}: {call}({', '.join(args)}) returned {rc_name} ({rc})")

    def __reduce__(self):
        return (type(self), (self.runtime, self.call, self.rc, self.rc_name, self.nbytes, self.ptr))


class LockFailed(RuntimeCallFailed):
    """A lock or register call was refused; policies may fall back on it.

    ``already_pinned``: the runtime's answer means "this memory is already registered"
    (CUDA's and HIP's 712): a runtime treats that as pinned memory, copies from it directly
    and does not unlock it (path ``already_locked``)."""

    def __init__(self, runtime: str, call: str, rc: int, rc_name: str,
                 nbytes: int | None = None, ptr: int | None = None, already_pinned: bool = False):
        super().__init__(runtime, call, rc, rc_name, nbytes, ptr)
        self.already_pinned = already_pinned

    def __reduce__(self):
        return (type(self), (self.runtime, self.call, self.rc, self.rc_name, self.nbytes, self.ptr,
                             self.already_pinned))

    @property
    def answer(self) -> str:
        """The refusal as data records it: ``name (rc)``."""
        return f"{self.rc_name} ({self.rc})"


class UnknownName(PinpathError):
    """A runtime, policy, memory kind, preset or notebook that is not in the vocabulary."""

    def __init__(self, what: str, name: str, known):
        self.what, self.name, self.known = what, name, tuple(known)
        super().__init__(f"unknown {what} {name!r}; known: {', '.join(self.known)}")

    def __reduce__(self):
        return (type(self), (self.what, self.name, self.known))


class BadParameter(PinpathError):
    """A parameter file or value is malformed, misspelt or out of range."""


class VerificationFailed(PinpathError):
    """The destination bytes differ from the source after a transfer."""


class SchemaMismatch(PinpathError):
    """A frame lacks a column of its table or has the wrong dtype."""


class RunFailed(PinpathError):
    """One or more notebooks of a run failed."""


class PinpathWarning(UserWarning):
    """A degraded but valid state, e.g. a low RLIMIT_MEMLOCK or a leaked lock."""


def warn(message: str) -> None:
    """Issue a PinpathWarning pointing at the caller's caller."""
    warnings.warn(message, PinpathWarning, stacklevel=3)
