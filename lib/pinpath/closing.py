"""``with`` support for anything that has ``close()``: written once for runtimes, policies, buffers."""

from __future__ import annotations

__all__ = ["Closing"]


class Closing:
    """Mixin: ``with obj:`` closes ``obj`` on the way out, whatever happened inside."""

    def close(self) -> None:  # pragma: no cover - every user defines its own
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
