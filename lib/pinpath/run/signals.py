"""Signals during a run: SIGINT and SIGTERM become ``Interrupted`` where the runner wants them to."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager


__all__ = ["Interrupted", "on_signals", "raise_pending", "threading_main"]


class Interrupted(KeyboardInterrupt):
    """The runner was asked to stop (SIGINT, SIGTERM); ``signum``: which (exit 128 + it). A
    KeyboardInterrupt, not an Exception: no ``except Exception`` on its way (a notebook's
    parameters read, a page rendered) takes it for that code's own error."""

    def __init__(self, message: str = "", signum: int = signal.SIGINT):
        super().__init__(message)
        self.signum = int(signum)


_RECEIVED: list[int] = []      #: signals raise_interrupted saw: a raise inside a finalizer or a
                               # weakref callback is only printed ("Exception ignored"), so the runner asks


def raise_interrupted(signum, frame):
    _RECEIVED.append(signum)
    raise Interrupted(f"stopped by signal {signal.Signals(signum).name}", signum=signum)


def raise_pending() -> None:
    """Raise the Interrupted of a signal whose raise was swallowed where it landed (it is
    recorded all the same); nothing where none came."""
    if _RECEIVED:
        signum = _RECEIVED[-1]
        _RECEIVED.clear()
        raise Interrupted(f"stopped by signal {signal.Signals(signum).name}", signum=signum)


@contextmanager
def on_signals(handler=raise_interrupted, signums=(signal.SIGINT, signal.SIGTERM)):
    """``signums`` go to ``handler`` in the main thread (by default: raise Interrupted)."""
    if threading_main():
        _RECEIVED.clear()
        old = {s: signal.signal(s, handler) for s in signums}
        try:
            yield
        finally:
            for s, h in old.items():
                signal.signal(s, h)
    else:
        yield


def threading_main() -> bool:
    return threading.current_thread() is threading.main_thread()

