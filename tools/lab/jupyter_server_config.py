# JupyterLab for pinpath (`make lab` passes this file with --config): the pinpath kernel by default,
# and the executed reference notebooks, copied by `make lab` to build/lab/executed/ under names of
# their own, opened read-only (the server reports them unwritable and refuses to save them).
from pathlib import PurePosixPath

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from tornado import web

READ_ONLY = PurePosixPath("build/lab/executed")


def _read_only(path: str) -> bool:
    p = PurePosixPath(path.strip("/"))
    return p == READ_ONLY or READ_ONLY in p.parents


class PinpathContents(AsyncLargeFileManager):
    """The server's files, with build/lab/executed/ read-only."""

    async def get(self, path, content=True, type=None, format=None, **kwargs):
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if _read_only(path):
            model["writable"] = False
        return model

    async def save(self, model, path=""):
        if _read_only(path):
            raise web.HTTPError(403, f"{path}: an executed reference notebook, read-only (edit notebooks/ instead)")
        return await super().save(model, path)


c = get_config()  # noqa: F821 - given by the Jupyter config loader
c.ServerApp.contents_manager_class = PinpathContents
c.MappingKernelManager.default_kernel_name = "pinpath"
c.ServerApp.ip = "127.0.0.1"
c.ServerApp.open_browser = False
