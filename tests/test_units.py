import pytest

from pinpath.errors import BadParameter
from pinpath.units import fmt_nbytes, fmt_ns, gb_per_s, parse_nbytes


@pytest.mark.parametrize("text,nbytes", [(4096, 4096), ("4KiB", 4096), ("1 MiB", 1 << 20), ("800MB", 800_000_000),
                                          ("1e8", 100_000_000), ("2g", 2 << 30), (1e3, 1000)])
def test_parse(text, nbytes):
    assert parse_nbytes(text) == nbytes


@pytest.mark.parametrize("bad", [0, -1, "0KiB", "-4KiB", "four", "1.5B", True, None, [1]])
def test_parse_rejects_with_the_name(bad):
    with pytest.raises(BadParameter, match="SIZES_NBYTES"):
        parse_nbytes(bad, name="SIZES_NBYTES")


def test_format():
    assert fmt_nbytes(4096) == "4 KiB"
    assert fmt_nbytes(800_000_000) == "800 MB"
    assert fmt_nbytes(1536) == "1.5 KiB"
    assert fmt_ns(62_000) == "62 us"
    assert fmt_ns(1_500_000) == "1.5 ms"
    assert fmt_ns(float("nan")) == "n/a"
    assert gb_per_s(55e9, 1e9) == pytest.approx(55.0)
