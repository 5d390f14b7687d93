"""Buffers and queues as objects (``runtimes/objects.py``), on the host runtime: freed once, named
with their size, nothing left held when a grant fails. The conformance test drives them on
every backend."""

import pytest

from pinpath.errors import RuntimeCallFailed
from pinpath.runtimes import DeviceBuffer, PinnedBuffer, Queue
from pinpath.units import PAGE_NBYTES


def _frees(rt) -> list[str]:
    return [c.call for c in rt.recorder.calls if c.call in ("munlock", "munmap")]


@pytest.mark.parametrize("make, kind, frees", [
    (lambda rt: rt.pinned_buffer(2 * PAGE_NBYTES), PinnedBuffer, ["munlock", "munmap"]),
    (lambda rt: rt.device_buffer(2 * PAGE_NBYTES), DeviceBuffer, ["munmap"]),
])
def test_a_buffer_is_freed_once(host_rt, make, kind, frees):
    buf = make(host_rt)
    assert isinstance(buf, kind) and buf.nbytes == 2 * PAGE_NBYTES and not buf.closed
    assert repr(buf) == f"{kind.__name__}(host, 8 KiB at {buf.ptr:#x})"
    buf.close()
    buf.close()
    assert _frees(host_rt) == frees and buf.closed and repr(buf).endswith(", closed)")
    assert host_rt.recorder.outstanding() == {}


def test_a_queue_is_freed_once(host_rt, monkeypatch):
    freed = []
    free_queue = host_rt.free_queue
    monkeypatch.setattr(host_rt, "free_queue", lambda q: (freed.append(q), free_queue(q)))
    with host_rt.queue() as q:
        assert isinstance(q, Queue) and repr(q).startswith("Queue(host, ")
        worker = q.handle._thread
        assert worker.is_alive()
    q.close()
    assert freed == [q.handle] and q.closed and not worker.is_alive()


def test_a_refused_grant_frees_the_allocation(host_rt, monkeypatch):
    def refuse(ptr, nbytes):
        raise RuntimeCallFailed("host", "grant", 1, "refused", nbytes, ptr)

    monkeypatch.setattr(host_rt, "grant", refuse)
    with pytest.raises(RuntimeCallFailed):
        host_rt.pinned_buffer(PAGE_NBYTES)
    assert _frees(host_rt) == ["munlock", "munmap"] and host_rt.recorder.outstanding() == {}
    with host_rt.pinned_buffer(PAGE_NBYTES, grant=False):    # no grant asked: none refused
        pass
