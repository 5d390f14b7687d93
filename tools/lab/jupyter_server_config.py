# JupyterLab for pinpath (`make lab` passes this file with --config): the pinpath kernel by default,
# and the executed reference notebooks, copied by `make lab` to build/lab/executed/ under names of
# their own, opened read-only (the server reports them unwritable and refuses to save them).
# A notebook is served with the language_info its kernel will report (the committed notebooks hold
# only the language's name): JupyterLab marks a notebook changed when the kernel's differs.
import sys
from pathlib import PurePosixPath

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from tornado import web

READ_ONLY = PurePosixPath("build/lab/executed")
#: what ipykernel reports, for this Python: the server and the pinpath kernel run the same interpreter
LANGUAGE_INFO = {"codemirror_mode": {"name": "ipython", "version": sys.version_info[0]}, "file_extension": ".py",
                 "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                 "pygments_lexer": f"ipython{sys.version_info[0]}", "version": sys.version.split()[0]}


def _read_only(path: str) -> bool:
    p = PurePosixPath(path.strip("/"))
    return p == READ_ONLY or READ_ONLY in p.parents


class PinpathContents(AsyncLargeFileManager):
    """The server's files, with build/lab/executed/ read-only."""

    async def get(self, path, content=True, type=None, format=None, **kwargs):
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if _read_only(path):
            model["writable"] = False
        meta = (model.get("content") or {}).get("metadata") if model.get("type") == "notebook" else None
        if isinstance(meta, dict) and (meta.get("language_info") or {}).get("name", "python") == "python":
            meta["language_info"] = dict(LANGUAGE_INFO)
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
