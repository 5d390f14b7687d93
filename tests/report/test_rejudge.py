"""Nothing measured changes: a small host run committed under tests/data/smoke-host-run (the smoke
preset on this project's development VM, commit 5dad07e) judged again by today's code gives its
committed claims.csv, every column; and judged as if it came from CUDA (most claims then read as
analogues, so the tests' measures and verdicts run, not only "not applicable") it gives what the
code of 5dad07e gave (report/claims-as-cuda.csv). Their C13 rows were judged again after the fix
that takes C13's re-lock path per call (it had summed a thread's calls); their C7, C9, C10, C11,
C12, C13 and C15 rows after issue 34 (each figure labelled with the re-lock mechanism it measures;
C11 and C15 as meant, whose data sets this run predates: not measured), and their C10 rows again after
C10's counted arm (issue 34 item 3: its two figures labelled "re-lock granted by the runtime", the CUDA
analogue's text), and their whys after issue 34 item 6 (the other tests' figures before "so ...", so that
a why ends on its conclusion): nothing else changed; the
``state`` and ``repeat_unit`` columns, added later, are checked apart, and so is the why's "over N
rounds (between-round spread S %)", added with them (issue 34 item 4)."""

import io
import json
from pathlib import Path

import pandas as pd
import pytest

from pinpath.report import claims

RUN = Path(__file__).resolve().parents[1] / "data" / "smoke-host-run"
#: what the why says of a figure's repeats since issue 34 item 4
_OVER = r" over \d+ (?:processes|rounds)(?: \(between-(?:process|round) spread \d+ %\))?"


def _csv(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` written and read back as claims.csv is (the same float text both sides)."""
    return pd.read_csv(io.StringIO(df.to_csv(index=False)), keep_default_na=False)


@pytest.mark.parametrize("platform,csv", [("", "claims.csv"), ("cuda", "claims-as-cuda.csv")])
def test_the_committed_run_judged_again_gives_its_claims_csv(platform, csv):
    man = json.loads((RUN / "manifest.json").read_text())
    judged, unreadable = claims.evaluate(RUN, platform or man["platform"], man["notebooks"])
    assert unreadable == []
    want = pd.read_csv(RUN / "report" / csv, keep_default_na=False)
    got = _csv(judged)
    later = ["repeat_unit", "state"]   # columns that came after 5dad07e
    assert [c for c in got.columns if c not in later] == list(want.columns) and set(later) <= set(got.columns)
    over = got.why.str.contains(_OVER)
    assert over.any() == (platform == "cuda") and (got.repeat_unit[over] == "round").all()   # rounds in one process
    assert (got.repeat_unit[got.n_repeats.astype(str) == ""] == "").all()
    got["why"] = got.why.str.replace(_OVER, "", regex=True)
    pd.testing.assert_frame_equal(got[list(want.columns)], want, check_exact=True)
    assert set(got.state) == {"cache hot; timing thread not pinned"}   # its rows name no cache state or CPU


def test_the_committed_runs_fidelity_table_is_unchanged():
    """report/fidelity.csv: the Python figures, net of the harness of the notebook that wrote them,
    beside the C ones (run.finalize._fidelity reads the harness through RunData)."""
    from pinpath.run import finalize
    data, _ = claims.load_run(RUN)
    got = _csv(finalize._fidelity(data, "host"))
    pd.testing.assert_frame_equal(got, pd.read_csv(RUN / "report" / "fidelity.csv", keep_default_na=False),
                                  check_exact=True)
