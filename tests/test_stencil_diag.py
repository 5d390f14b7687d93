"""tools/stencil_diag.py: the probe's layouts from the stencil's trace, and the per-process table that
sets the application's halo updates beside the probe's."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "outputs" / "reference" / "cuda" / "advise" / "stencil.info"
spec = importlib.util.spec_from_file_location("stencil_diag", ROOT / "tools" / "stencil_diag.py")
SD = importlib.util.module_from_spec(spec)
spec.loader.exec_module(SD)


@pytest.mark.skipif(not TRACE.is_file(), reason="no committed stencil trace")
def test_layouts_drop_the_one_off_copies_then_the_checkpoint(tmp_path):
    SD.layouts(TRACE, tmp_path)
    a, b, c = ((tmp_path / f"layout-{n}.txt").read_text().splitlines() for n in "ABC")
    copies = lambda lines: [l for l in lines if l.startswith("copy ")]   # noqa: E731
    halos = [l for l in copies(a) if l.split()[5] == "1"]
    assert len(halos) == 4 and all(l.split()[3] == "32768" for l in halos)
    assert copies(c) == halos
    assert copies(b) == halos + ["copy 1 0 16777216 d2h 40"]      # the checkpoint stays, the one-off H2D goes
    assert len(copies(a)) == 7 and [l for l in a if l.startswith("array")] == [l for l in c if l.startswith("array")]


def _write(path: Path, header: str, rows: list[str]) -> None:
    path.write_text("# facts=1\n" + header + "\n" + "\n".join(rows) + "\n")


def test_table_sets_the_application_beside_the_probe(tmp_path):
    app_head = "variant,nx,ny,step,ns,transfer_ns,checkpoint"
    # step 0 (first) and the checkpoint step are left out: the median of 90 and 100 us
    _write(tmp_path / "app-ck50-plain-1.csv", app_head,
           ["plain,4096,512,0,1,500000,false", "plain,4096,512,1,1,90000,false",
            "plain,4096,512,2,1,100000,false", "plain,4096,512,3,1,900000,true"])
    upd_head = "variant,direction,nbytes,round,ns,copy,at"
    rows = []
    for rnd, ns in ((0, 20000), (1, 30000)):
        rows += [f"plain,d2h,32768,{rnd},{ns},2,update", f"plain,h2d,32768,{rnd},{ns},4,update"]
    rows.append("plain,d2h,16777216,1,5000000,6,update")          # the checkpoint, one round of two: not a halo
    _write(tmp_path / "upd-A-plain-1.csv", upd_head, rows)
    t = SD.table(tmp_path).set_index("what")
    assert t.loc["app-ck50", "us"] == pytest.approx(95.0)
    assert t.loc["upd-A", "us"] == pytest.approx(50.0)              # rounds sum 40 and 60 us
    assert t.loc["upd-A-copy2-d2h", "us"] == pytest.approx(25.0)
    assert set(t.variant) == {"plain"} and set(t.rep) == {1}
