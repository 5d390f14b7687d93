"""Nothing measured changes: a small host run committed under tests/data/smoke-host-run (the smoke
preset on this project's development VM, commit 5dad07e) judged again by today's code gives its
committed claims.csv, every column."""

import io
import json
from pathlib import Path

import pandas as pd

from pinpath.report import claims

RUN = Path(__file__).resolve().parents[1] / "data" / "smoke-host-run"


def _csv(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` written and read back as claims.csv is (the same float text both sides)."""
    return pd.read_csv(io.StringIO(df.to_csv(index=False)), keep_default_na=False)


def test_the_committed_run_judged_again_gives_its_claims_csv():
    man = json.loads((RUN / "manifest.json").read_text())
    judged, unreadable = claims.evaluate(RUN, man["platform"], man["notebooks"])
    assert unreadable == []
    want = pd.read_csv(RUN / "report" / "claims.csv", keep_default_na=False)
    got = _csv(judged)
    assert list(got.columns) == list(want.columns)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
