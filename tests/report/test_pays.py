"""Which policy pays: the cheapest policy per direction and size from a policy sweep, its interval,
the break-even sizes; and the index's first screen, glossary, reference verdicts and left-out notice."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from pinpath.report import html as H
from pinpath.report import pays


def _share_tests():
    """tests/report/test_share.py, whose make_run builds a run folder (tests are not a package)."""
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location("_share_tests", Path(__file__).with_name("test_share.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def sweep(times_ns: dict, repeats: int = 6, seed: int = 1) -> pd.DataFrame:
    """A policy sweep whose per-transfer time is times_ns[(policy, direction, nbytes)], with a 2 % noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for (policy, d, n), ns in times_ns.items():
        for r in range(repeats):
            for _ in range(8):
                rows.append({"event": "transfer", "policy": policy, "direction": d, "nbytes": n, "repeat": r,
                             "total_ns": ns * (1 + 0.02 * rng.standard_normal()), "engine": "native"})
    return pd.DataFrame(rows)


def grid(small: dict, large: dict, sizes=(4096, 1 << 20)) -> dict:
    return {(p, d, n): (small if n == sizes[0] else large)[p] for p in small for d in ("h2d", "d2h") for n in sizes}


def test_cheapest_policy_per_size_and_break_even():
    small = {"stage_pooled": 5_000, "lock_always": 50_000, "driver_pageable": 8_000, "prepinned": 4_000}
    large = {"stage_pooled": 400_000, "lock_always": 200_000, "driver_pageable": 300_000, "prepinned": 100_000}
    df = sweep(grid(small, large))
    picks = pays.cheapest(df)
    assert [(p.direction, p.nbytes, p.policy) for p in picks] == [
        ("d2h", 4096, "stage_pooled"), ("d2h", 1 << 20, "lock_always"),
        ("h2d", 4096, "stage_pooled"), ("h2d", 1 << 20, "lock_always")]
    assert all(p.sure for p in picks)                       # 1.6x and 1.5x apart: intervals clear of 1
    p = picks[0]
    assert p.ns[1] <= 5_000 <= p.ns[2] and p.runner_up == "driver_pageable" and 1.5 < p.ratio[0] < 1.7
    assert "prepinned" in p.prepared and p.policy != "prepinned"     # prepared memory is shown, not ranked
    evens = pays.break_evens(df, picks)
    assert [(d, a, b) for d, a, b, _ in evens] == [("d2h", "stage_pooled", "lock_always"),
                                                    ("h2d", "stage_pooled", "lock_always")]
    # log-log crossing of 5 us -> 400 us and 50 us -> 200 us
    x = np.log([4096, 1 << 20])
    fa, fb = np.log([5_000, 400_000]), np.log([50_000, 200_000])
    cross = np.exp(x[0] + (fb[0] - fa[0]) * (x[1] - x[0]) / ((fa[1] - fa[0]) - (fb[1] - fb[0])))
    assert evens[0][3] == pytest.approx(cross, rel=0.03)       # medians of noisy samples


def test_a_tie_is_said_and_has_no_break_even():
    same = {"stage_pooled": 10_000, "lock_always": 10_050}
    df = sweep(grid(same, same))
    picks = pays.cheapest(df)
    assert picks and not any(p.sure for p in picks)
    assert pays.break_evens(df, [p for p in picks if p.sure]) == []
    assert pays.cheapest(None) == [] and pays.cheapest(df.iloc[:0]) == []


def _run(tmp_path, platform="cuda"):
    run_dir, man = _share_tests().make_run(tmp_path / "outputs", "20261204T000000Z-vm-" + platform, platform)
    small = {"stage_pooled": 5_000, "lock_always": 50_000, "prepinned": 4_000}
    large = {"stage_pooled": 400_000, "lock_always": 200_000, "prepinned": 100_000}
    sweep(grid(small, large)).to_parquet(run_dir / "data" / "engine_transfers.parquet")
    return run_dir, man


def test_index_opens_with_every_claim_and_which_policy_pays(tmp_path):
    run_dir, man = _run(tmp_path)
    page = H.render_index(run_dir, man).read_text()
    glance = page.split("id='at-a-glance'", 1)[1].split("</section>", 1)[0]
    for i in range(1, 16):
        assert f"href='#claim-C{i}'>C{i}</a>" in glance and f"id='claim-C{i}'" in page
    assert page.index("id='at-a-glance'") < page.index("id='which-policy-pays'") < page.index("id='claims'")
    pays_html = page.split("id='which-policy-pays'", 1)[1].split("</section>", 1)[0]
    assert "<code>stage_pooled</code>" in pays_html and "<code>lock_always</code> above" in pays_html
    glossary = page.split("id='glossary'", 1)[1].split("</section>", 1)[0]
    for word in ("d2h, h2d", "as meant", "by an analogue", "re-lock path", "braces", "grant", *pays.POLICY_WORDS):
        assert word in glossary, word
    assert H.THREAD_URL in glossary and "href='CLAIMS.md'" in glossary       # the copy the report keeps
    assert (run_dir / "report" / "CLAIMS.md").read_text().startswith("#")


def test_index_says_what_a_kept_reference_left_out(tmp_path):
    run_dir, man = _run(tmp_path)
    shutil.rmtree(run_dir / "notebooks")
    (run_dir / "report" / "00_platform.html").unlink()
    (run_dir / "share" / "figures").mkdir(parents=True)
    shutil.move(str(run_dir / "figures" / "00_platform-bandwidth.png"), run_dir / "share" / "figures")
    shutil.rmtree(run_dir / "figures")
    page = H.render_index(run_dir, man).read_text()
    assert "Not kept in this folder:" in page and "the pages of 2 of 2 notebooks" in page
    assert "href='00_platform.html'" not in page and "(page not kept)" in page
    assert page.count("data:image/png;base64") == 1          # the shared figure stands in


def test_a_run_on_another_platform_shows_the_reference_verdicts(tmp_path):
    ref_dir, ref_man = _run(tmp_path / "ref")
    ref = pd.read_csv(ref_dir / "report" / "claims.csv")
    ref["verdict"], ref["measured"], ref["why"] = "holds", 2.5, "the reference's own reason"
    ref.to_csv(ref_dir / "report" / "claims.csv", index=False)
    run_dir, man = _run(tmp_path, "host")
    label, by_id = H.reference_verdicts(run_dir, man, ref_dir)
    assert label == "from the committed reference (cuda, NVIDIA H200, commit b4d2cc3)" and len(by_id) == 15
    assert H.reference_verdicts(ref_dir, ref_man, ref_dir) == ("", {})     # the reference itself: none
    body = str(H.claims_section(pd.read_csv(run_dir / "report" / "claims.csv"), reference=(label, by_id)))
    judged_here = sum(v in H.JUDGED for v in pd.read_csv(run_dir / "report" / "claims.csv").verdict)
    assert body.count("reference:</span><span class='badge v-holds'>holds</span>") == 15 - judged_here
    assert label in body and "the reference&#39;s own reason" in body
    assert json.loads((ref_dir / "manifest.json").read_text())["platform"] == "cuda"
