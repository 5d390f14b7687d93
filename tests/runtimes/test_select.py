"""open_runtime: names, auto's fallback, and one-sentence refusals."""

import pytest

from pinpath.errors import RuntimeUnavailable, UnknownName
from pinpath.runtimes import open_runtime


def test_unknown_platform_lists_the_known():
    with pytest.raises(UnknownName, match=r"unknown platform 'cdua'; known: auto, cuda, hsa, hip, host"):
        open_runtime("cdua")


def test_auto_says_what_it_tried():
    rt = open_runtime("auto")
    try:
        names = [name for name, _ in rt.selection]
        assert names[-1] == rt.name and names[0] == "cuda"
        for name, outcome in rt.selection[:-1]:
            assert outcome.startswith(f"{name} runtime unavailable: ") and "\n" not in outcome
    finally:
        rt.close()


def test_cuda_without_device_is_one_sentence():
    try:
        rt = open_runtime("cuda")
    except RuntimeUnavailable as e:
        text = str(e)
        assert text.startswith("cuda runtime unavailable: ") and text.count(". ") == 0 and "\n" not in text
    else:
        rt.close()
        pytest.skip("a CUDA device answers here")
