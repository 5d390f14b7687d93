"""An air-gapped node: `make wheelhouse` where the package index answers, then `make setup OFFLINE=1`
(a .venv) and `make setup ENV=system` (the node's own Python plus .site/) with no network at all,
and one notebook run each way.

"No network" is a network namespace with no route but loopback (`unshare -n`, as root); where
that cannot be made, pip still gets --no-index and no configuration file, and the test says so.
Everything happens in a copy of the working tree under a temporary folder.

Runs only with PINPATH_OFFLINE_TESTS=1 (CI's offline step: downloads ~300 MB of wheels, a few
minutes); PINPATH_WHEELHOUSE=DIR reuses wheels downloaded before."""

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
PYVER = f"{sys.version_info[0]}.{sys.version_info[1]}"

pytestmark = [pytest.mark.offline,
              pytest.mark.skipif(os.environ.get("PINPATH_OFFLINE_TESTS") != "1",
                                 reason="set PINPATH_OFFLINE_TESTS=1 to download a wheelhouse and build environments "
                                        "from it offline (minutes)")]


def _extras() -> str:
    """What a GPU node needs: the tests, CUDA, and Snakemake with its Slurm plugin where pyproject has them."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    return ",".join(e for e in ("test", "cuda", "cluster") if e in extras)


def _can_isolate() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


def _offline(argv, cwd, env, timeout=1200):
    """``argv`` in a network namespace of its own (loopback only), where one can be made."""
    if _can_isolate():
        argv = ["unshare", "-n", "--", "sh", "-c", 'ip link set lo up && exec "$@"', "offline", *argv]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _env(**extra):
    drop = ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CONSTRAINT", "PYTHONPATH", "VENV",
            "VIRTUAL_ENV", "JUPYTER_PATH")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PINPATH_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
    return env


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A copy of the working tree (tracked and untracked files git does not ignore) with a wheelhouse."""
    if shutil.which("make") is None or shutil.which("git") is None:
        pytest.skip("needs make and git")
    dst = tmp_path_factory.mktemp("offline") / "pinpath"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if rel.startswith(("outputs/", "wheelhouse/")) or not src.is_file():
            continue
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst / rel)
    extras = _extras()
    reuse = os.environ.get("PINPATH_WHEELHOUSE")
    if reuse:
        shutil.copytree(reuse, dst / "wheelhouse")
    else:
        r = subprocess.run(["make", "--no-print-directory", "wheelhouse", f"EXTRAS={extras}", f"PYVER={PYVER}",
                            f"PYTHON={sys.executable}"], cwd=dst, env=_env(), capture_output=True, text=True,
                           timeout=1800)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    wheels = sorted(p.name for p in (dst / "wheelhouse").glob("*.whl"))
    assert any(w.startswith("numpy-") for w in wheels) and any(w.startswith("setuptools-") for w in wheels)
    print(f"\nwheelhouse: {len(wheels)} wheels for Python {PYVER}, extras {extras}; "
          f"{'no network (unshare -n)' if _can_isolate() else 'pip --no-index only: no network namespace here'}")
    return dst, extras


def test_no_route_out_of_the_namespace():
    if not _can_isolate():
        pytest.skip("no network namespace here (needs root, unshare and ip): pip's --no-index alone keeps it offline")
    r = subprocess.run(["unshare", "-n", "--", "sh", "-c", "ip link set lo up && ip route && ip -6 route"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "default" not in r.stdout and "via" not in r.stdout, r.stdout


def _one_notebook_ok(run_root: Path) -> dict:
    (man_path,) = [p for p in (run_root / "outputs").glob("*/manifest.json") if not p.parent.is_symlink()]
    man = json.loads(man_path.read_text())
    assert man["status"] == "ok" and list(man["notebooks"]) == ["00_platform"], man.get("notebooks")
    return man


def test_venv_from_the_wheelhouse_offline(tree):
    dst, extras = tree
    r = _offline(["make", "--no-print-directory", "setup", "OFFLINE=1", f"EXTRAS={extras}", f"PYTHON={sys.executable}"],
                 dst, _env())
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert (dst / ".venv" / ".stamp").is_file()
    r = _offline([".venv/bin/python", "-m", "pinpath", "run", "--preset", "smoke", "--platform", "host",
                  "--notebooks", "00_platform"], dst, _env())
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    man = _one_notebook_ok(dst)
    assert man["packages"]["numpy"] and man["packages"]["papermill"]
    if "cluster" in extras:
        r = _offline([".venv/bin/python", "-m", "snakemake", "--version"], dst, _env())
        assert r.returncode == 0, r.stderr


def test_system_python_with_the_wheelhouse_offline(tree, tmp_path):
    dst, _ = tree
    system = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if Path(p).is_file()), None)
    if system is None:
        pytest.skip("no system Python (/usr/bin/python3) to stand for a node's own interpreter")
    ver = subprocess.run([system, "-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"],
                         capture_output=True, text=True).stdout.strip()
    if ver != PYVER:
        pytest.skip(f"{system} is Python {ver}; the wheelhouse is for {PYVER}")
    if subprocess.run([system, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        pytest.skip(f"{system} has no pip (Debian: python3-pip) to unpack the wheelhouse into .site")
    shutil.rmtree(dst / "outputs", ignore_errors=True)
    r = _offline(["make", "--no-print-directory", "setup", "ENV=system", f"PYTHON={system}"], dst, _env())
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert (dst / ".site" / ".stamp").is_file()
    r = _offline(["make", "--no-print-directory", "reproduce", "ENV=system", f"PYTHON={system}", "PRESET=smoke",
                  "PLATFORM=host", "NOTEBOOKS=00_platform"], dst, _env())
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    man = _one_notebook_ok(dst)
    assert man["machine"]["python"].startswith(PYVER)
