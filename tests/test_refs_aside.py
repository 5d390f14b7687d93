"""tools/refs-aside.sh: the references out of a tree with their manifests left (stop-by reads them),
back where nothing newer took their place, and a held copy never overwritten."""

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tree(tmp_path: Path) -> Path:
    top = tmp_path / "tree"
    (top / "tools").mkdir(parents=True)
    shutil.copy(ROOT / "tools" / "refs-aside.sh", top / "tools")
    for name in ("cuda", "cuda-b"):
        ref = top / "outputs" / "reference" / name
        (ref / "data").mkdir(parents=True)
        (ref / "manifest.json").write_text(f'{{"name": "{name}"}}')
        (ref / "data" / "t.csv").write_text("a\n1\n")
    return top


def _aside(top: Path, how: str, hold: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(top / "tools" / "refs-aside.sh"), how, str(hold)],
                          capture_output=True, text=True, timeout=30)


def test_out_leaves_manifests_and_back_restores(tmp_path):
    top, hold = _tree(tmp_path), tmp_path / "hold"
    assert _aside(top, "out", hold).returncode == 0
    for name in ("cuda", "cuda-b"):
        assert sorted(p.name for p in (top / "outputs/reference" / name).iterdir()) == ["manifest.json"]
        assert (hold / name / "data" / "t.csv").is_file()
    again = _aside(top, "out", hold)     # a second `out` would put stubs over the held copies
    assert again.returncode == 1 and "not overwritten" in again.stderr
    assert (hold / "cuda" / "data" / "t.csv").is_file()
    assert _aside(top, "back", hold).returncode == 0
    for name in ("cuda", "cuda-b"):
        assert (top / "outputs/reference" / name / "data" / "t.csv").read_text() == "a\n1\n"
    assert not any(hold.iterdir())


def test_back_keeps_a_newer_reference(tmp_path):
    top, hold = _tree(tmp_path), tmp_path / "hold"
    _aside(top, "out", hold)
    new = top / "outputs/reference/cuda"
    (new / "data").mkdir()
    (new / "data" / "new.csv").write_text("b\n2\n")    # a reference kept since
    r = _aside(top, "back", hold)
    assert r.returncode == 0 and "left where it is" in r.stdout
    assert (new / "data" / "new.csv").is_file() and not (new / "data" / "t.csv").exists()
    assert (hold / "cuda" / "data" / "t.csv").is_file()
    assert (top / "outputs/reference/cuda-b/data/t.csv").is_file()


def test_bad_use_is_refused(tmp_path):
    top = _tree(tmp_path)
    assert _aside(top, "sideways", tmp_path / "hold").returncode == 2
    assert subprocess.run(["bash", str(top / "tools" / "refs-aside.sh")], capture_output=True).returncode == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    r = _aside(top, "back", empty)      # nothing held: said, and the references left as they are
    assert r.returncode == 1 and "holds no reference" in r.stderr
    assert (top / "outputs/reference/cuda/data/t.csv").is_file()
