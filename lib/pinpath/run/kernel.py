"""The notebook's kernel: this very interpreter behind a private kernel spec, IPC sockets, and the
session cells the runner injects (``pinpath.session``)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from .. import progress as prog
from .. import session

__all__ = ["KERNEL_NAME", "KERNEL_LOG", "kernel_env", "kernel_manager", "with_session_cells", "relay_log"]

KERNEL_NAME = "pinpath"
KERNEL_LOG = "kernel.err"      #: the kernel's own stderr, in its private folder (``relay_log``)


@contextmanager
def kernel_env():
    """A private Jupyter data dir whose ``pinpath`` kernel is this very interpreter (so papermill
    runs the notebook where pinpath is installed) and the kernel's progress file."""
    d = tempfile.mkdtemp(prefix="pinpath-kernel-")
    spec = Path(d) / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python (pinpath)", "language": "python"}))
    saved = {k: os.environ.get(k) for k in ("JUPYTER_PATH", prog.ENV)}
    progress_file = Path(d) / "progress"
    os.environ["JUPYTER_PATH"] = d + (os.pathsep + saved["JUPYTER_PATH"] if saved["JUPYTER_PATH"] else "")
    os.environ[prog.ENV] = str(progress_file)
    try:
        yield d, progress_file
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(d, ignore_errors=True)


def kernel_manager(socket_dir: str):
    """A kernel manager whose kernel talks over IPC sockets in ``socket_dir`` (no TCP ports, so
    no plain-text TCP warning from the kernel) and is shut down by request alone: jupyter_client
    sends SIGINT before every shutdown, which a kernel still finishing a message reports as
    "KeyboardInterrupt caught in kernel" although nothing was interrupted."""
    from jupyter_client.manager import AsyncKernelManager

    class _IpcKernelManager(AsyncKernelManager):
        def __init__(self, **kw):
            kw.setdefault("transport", "ipc")
            kw.setdefault("ip", os.path.join(socket_dir, "kernel"))
            super().__init__(**kw)

        async def _async_pre_start_kernel(self, **kw):
            # the kernel's stderr to a file: a kernel shut down by an interrupted runner prints
            # the ZMQError of its last reply, which is no news; relay_log passes on the rest
            kw.setdefault("stderr", open(os.path.join(socket_dir, KERNEL_LOG), "ab"))   # noqa: SIM115 - Popen's
            return await super()._async_pre_start_kernel(**kw)

        async def _async_interrupt_kernel(self) -> None:
            if not self.shutting_down:
                await super()._async_interrupt_kernel()
    return _IpcKernelManager


def relay_log(kdir: str, say, interrupted: bool) -> None:
    """What the kernel wrote on its stderr, line by line through ``say``; nothing where the runner
    was interrupted (the kernel's end then prints only its shutdown's errors)."""
    path = Path(kdir) / KERNEL_LOG
    if interrupted or not path.is_file():
        return
    text = path.read_bytes()[-64 << 10:].decode("utf-8", "replace").rstrip()
    if text:
        say(text)


def with_session_cells(src: Path, dst: Path) -> None:
    """``src`` with the runner's two cells: session.start() after the parameters cell,
    session.finish() at the end (see pinpath.session)."""
    import nbformat
    nb = nbformat.read(src, as_version=4)
    at = next((i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])), -1) + 1
    meta = {"tags": [session.INJECTED_TAG]}
    nb.cells.insert(at, nbformat.v4.new_code_cell(session.START_SOURCE, metadata=meta))
    nb.cells.append(nbformat.v4.new_code_cell(session.FINISH_SOURCE, metadata=dict(meta)))
    nbformat.write(nb, dst)

