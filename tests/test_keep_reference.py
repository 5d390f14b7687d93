"""tools/keep-reference.sh: what of a run a reference keeps, with its advise trimmed (the timed
processes' raw output and the designs' replay never; a second reference's traces neither)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "outputs" / "reference" / "cuda-b"


def _run_folder(tmp_path: Path) -> Path:
    """A run folder: a committed reference's data and report, and the share and advise files a run has."""
    src = tmp_path / "run"
    shutil.copytree(SOURCE, src, ignore=shutil.ignore_patterns("advise", "share", "PROVENANCE.md"))
    (src / "share" / "figures").mkdir(parents=True)
    (src / "share" / "summary.md").write_text("# summary\n")
    (src / "share" / "figures" / "f.png").write_bytes(b"png")
    adv = src / "advise"
    (adv / "stencil" / "pattern").mkdir(parents=True)
    for name in ("prediction.csv", "stencil-real.csv", "stencil.info", "stencil-plain-other_cpu-1.out",
                 "stencil-plain-other_cpu-1.err", "stencil/prediction.csv", "stencil/replay.csv",
                 "stencil/designs_replay.csv", "stencil/pattern/transfers.csv", "stencil/summary.md"):
        (adv / name).write_text("x\n")
    return src


def _keep(src: Path, dest: Path, *extra: str) -> None:
    r = subprocess.run(["bash", str(ROOT / "tools" / "keep-reference.sh"), str(src), str(dest), *extra],
                       capture_output=True, text=True, timeout=240, env={**os.environ, "PYTHON": sys.executable})
    assert r.returncode == 0, r.stdout + r.stderr


def _files(top: Path) -> set[str]:
    return {p.relative_to(top).as_posix() for p in top.rglob("*") if p.is_file()}


@pytest.mark.skipif(not (SOURCE / "manifest.json").is_file(), reason="no committed cuda-b reference")
def test_keep_reference_trims_advise(tmp_path):
    src = _run_folder(tmp_path)
    full, second = tmp_path / "ref" / "full", tmp_path / "ref2" / "second"
    _keep(src, full)
    _keep(src, second, "--data-report")
    kept_full, kept_second = _files(full / "advise"), _files(second / "advise")
    assert kept_full == {"prediction.csv", "stencil-real.csv", "stencil.info", "stencil/prediction.csv",
                         "stencil/replay.csv", "stencil/pattern/transfers.csv", "stencil/summary.md"}
    assert kept_second == {"prediction.csv", "stencil-real.csv", "stencil/prediction.csv", "stencil/summary.md"}
    assert (full / "share" / "summary.md").is_file() and not (second / "share").exists()
    for dest in (full, second):
        assert (dest / "manifest.json").is_file() and (dest / "report" / "index.html").is_file()
        assert not (dest / "notebooks").exists()
    assert (src / "advise" / "stencil-plain-other_cpu-1.out").is_file()   # the run folder is left whole


@pytest.mark.skipif(not (SOURCE / "manifest.json").is_file(), reason="no committed cuda-b reference")
def test_keep_advise_replaces_only_advise(tmp_path):
    """A reference's advise/ from another advise step: the new folder, trimmed, in place of the old one; the
    run's files as they were; a folder without predictions refused before anything is removed."""
    src = _run_folder(tmp_path)
    dest = tmp_path / "ref" / "second"
    _keep(src, dest, "--data-report")
    before = {p: (dest / p).read_bytes() for p in _files(dest) if not p.startswith("advise/")}
    new = tmp_path / "advise-run"
    (new / "region").mkdir(parents=True)
    for name in ("prediction.csv", "region-real.csv", "region.info", "region-plain-irq_cpu-2.err",
                 "region/prediction.csv", "region/replay.csv", "region/designs_replay.csv"):
        (new / name).write_text("y\n")
    keep = [str(ROOT / "tools" / "keep-advise.sh")]
    r = subprocess.run(["bash", *keep, str(tmp_path / "run" / "status"), str(dest)], capture_output=True, text=True)
    assert r.returncode == 2 and "not an advise step's folder" in r.stderr
    assert "stencil-real.csv" in _files(dest / "advise")          # refused: the old advise/ is still there
    r = subprocess.run(["bash", *keep, str(dest / "advise"), str(dest)], capture_output=True, text=True)
    assert r.returncode == 2 and "own advise/" in r.stderr and "stencil-real.csv" in _files(dest / "advise")
    r = subprocess.run(["bash", *keep, str(new), str(dest), "--data-report"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert _files(dest / "advise") == {"prediction.csv", "region-real.csv", "region/prediction.csv"}
    assert {p: (dest / p).read_bytes() for p in _files(dest) if not p.startswith("advise/")} == before
    assert (new / "region-plain-irq_cpu-2.err").is_file()          # the step's folder is left whole
