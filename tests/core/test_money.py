"""The one money reader (explorer/core/money.py): every form a buyer writes, and one-line rejections."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from explorer.core.money import parse_money, parse_usd, parse_usd_per_hour, parse_usd_per_second
from explorer.core.units import UnitError, parse_si


@pytest.mark.parametrize("text, usd", [
    ("$30,000", 30000.0), ("30k USD", 30000.0), ("30000 USD", 30000.0), ("500k USD", 500000.0),
    ("1.2M USD", 1.2e6), ("$30k", 30000.0), ("$ 1,234.50", 1234.5), ("15 kUSD", 15000.0), ("2B USD", 2e9),
    ("30K usd", 30000.0), ("US$25,000", 25000.0),
])
def test_amounts(text, usd):
    assert parse_usd(text, "price") == pytest.approx(usd, rel=1e-12)


@pytest.mark.parametrize("text, per_hour", [
    ("4.10 USD/h", 4.10), ("$4.10/h", 4.10), ("4.10 USD per hour", 4.10), ("$4.10/hr", 4.10),
    ("0.001 USD/s", 3.6), ("$2,922/month", 2922 / (365.25 * 24 / 12)),  # a month = 1/12 Julian year = 730.5 h
])
def test_rates(text, per_hour):
    assert parse_usd_per_hour(text, "rent") == pytest.approx(per_hour, rel=1e-12)
    assert parse_usd_per_second(text, "rent") == pytest.approx(per_hour / 3600, rel=1e-12)


@pytest.mark.parametrize("text, rate, says", [
    ("3 GB", False, "is a byte count, not a money amount"),
    ("3 GB", True, "is a byte count, not a money rate"),
    ("4.10 USD/h", False, "is a money rate, not a money amount"),
    ("$30k", True, "is a money amount, not a money rate"),
    ("garbage", False, "cannot read 'garbage'"),
    ("30k", False, "has no currency"),
    ("-5 USD", False, "must be a positive amount"),
    ("0 USD/h", True, "must be a positive rate"),
    ("", False, "is empty"),
])
def test_rejections_are_one_line_naming_the_field(text, rate, says):
    with pytest.raises(UnitError) as err:
        parse_money(text, "Price quote (USD)", rate=rate)
    msg = str(err.value)
    assert msg.startswith("Price quote (USD): ") and says in msg and "\n" not in msg
    assert err.value.field == "Price quote (USD)"


def test_bare_numbers_only_where_the_column_states_the_unit():
    assert parse_usd("30000", "price", bare=True) == 30000.0
    assert parse_usd("30k", "price", bare=True) == 30000.0
    assert parse_usd_per_hour("4.10", "rent", bare=True) == pytest.approx(4.10)
    with pytest.raises(UnitError, match="has no currency"):
        parse_usd("30000", "price")


def test_every_money_field_of_the_registry_reads_the_same_forms():
    """parse_si(..., "money") (budgets, the cost panel, --budget) goes through the same reader."""
    assert parse_si("500k USD", "money", "--budget") == 500000.0
    assert parse_si("$4.10/h", "money_rate", "--rent") == pytest.approx(4.10 / 3600)


@given(st.integers(min_value=1, max_value=10**9), st.sampled_from([("", 1), ("k", 1e3), ("M", 1e6)]))
def test_multiplier_and_separators_invariant(n, suffix):
    letter, factor = suffix
    assert parse_usd(f"${n:,}{letter}", "f") == pytest.approx(n * factor, rel=1e-12)
    assert parse_usd(f"{n}{letter} USD", "f") == pytest.approx(n * factor, rel=1e-12)
