"""Quantities: parsing, canonical printing and the rounding kube-scheduler relies on."""

from fractions import Fraction

import pytest

from policylang.api.quantity import QuantityError, parse_quantity


@pytest.mark.parametrize("text, canonical, milli, value", [
    ("500m", "500m", 500, 1), ("1", "1", 1000, 1), ("1.5", "1500m", 1500, 2), ("0.1", "100m", 100, 1),
    ("1Gi", "1Gi", 1073741824000, 1073741824), ("1.5Gi", "1536Mi", 1610612736000, 1610612736),
    ("0.5Ki", "512", 512000, 512), ("2e3", "2e3", 2000000, 2000), ("12e6", "12e6", 12000000000, 12000000),
    ("1k", "1k", 1000000, 1000), ("1000m", "1", 1000, 1), ("1n", "1n", 1, 1), ("0.0000000001", "1n", 1, 1),
    ("1.0005", "1000500u", 1001, 2), ("-1", "-1", -1000, -1), ("0", "0", 0, 0),
])
def test_parse_and_print(text, canonical, milli, value):
    q = parse_quantity(text)
    assert str(q) == canonical
    assert q.milli() == milli and q.value() == value
    assert parse_quantity(str(q)) == q


@pytest.mark.parametrize("bad", ["", "1.2.3", "abc", "1Gb", "--1", "1 Gi", "Gi"])
def test_invalid_quantities_are_rejected(bad):
    with pytest.raises(QuantityError):
        parse_quantity(bad)


def test_arithmetic_is_exact():
    total = parse_quantity("100m") + parse_quantity("200m") + parse_quantity("0.7")
    assert total == parse_quantity("1") and total.amount == Fraction(1)
    assert parse_quantity("1Gi") - parse_quantity("512Mi") == parse_quantity("512Mi")
    assert parse_quantity("250m") * 4 == 1
    assert parse_quantity("1") < parse_quantity("1001m")


def test_yaml_numbers_are_quantities():
    assert parse_quantity(2) == parse_quantity("2")
    assert parse_quantity(0.5) == parse_quantity("500m")


# ---- bounded as resource.Quantity is (issue 29) ---------------------------------------------------

@pytest.mark.parametrize("text", ["1e999999999", "1E+999999999999999999999", "9223372036854776", "8Ei",
                                  "9223372036854775808m", "1e19", "1" * 5000, "0." + "0" * 80 + "1",
                                  99999999999999999999999])
def test_quantities_beyond_int64_milli_units_are_refused_at_once(text):
    import time
    started = time.monotonic()
    with pytest.raises(QuantityError, match="out of range|more than 64 digits"):
        parse_quantity(text)
    assert time.monotonic() - started < 0.5


@pytest.mark.parametrize("text, nanos", [
    ("9223372036854775807m", (2**63 - 1) * 10**6), ("9223372036854775", 9223372036854775 * 10**9), ("7Ei", None),
    ("1e-999999999", 1), ("-1e-999999999", -1), ("0e999999999", 0),
])
def test_quantities_at_the_bound_and_vanishingly_small_ones_parse(text, nanos):
    if nanos is None:
        with pytest.raises(QuantityError):  # 7Ei is 8.07e21 milli-units
            parse_quantity(text)
        return
    assert parse_quantity(text).nanos == nanos  # finer than a nano-unit rounds up, in magnitude
