import pytest

from explorer.core.units import Q_, UnitError, format_bytes, format_si, parse_si, ureg


def test_mac_is_two_flop():
    assert Q_(1, "MAC").to("FLOP").magnitude == 2
    assert parse_si("1.2 GMAC/s", "throughput", "peak") == pytest.approx(2.4e9)


@pytest.mark.parametrize("text, kind, si", [
    ("3.35 TB/s", "bandwidth", 3.35e12),
    ("3350 GB/s", "bandwidth", 3.35e12),
    ("989 TFLOP/s", "throughput", 989e12),
    ("624 TOPS", "throughput", 624e12),
    ("80 GiB", "bytes", 80 * 2**30),
    ("80 GB", "bytes", 80e9),
    ("400 W", "power", 400.0),
    ("25000 USD", "money", 25000.0),
    ("$25,000", "money", 25000.0),
    ("4.10 USD/h", "money_rate", 4.10 / 3600),
    ("160 pJ/B", "energy_per_byte", 160e-12),
    ("20 pJ/bit", "energy_per_byte", 160e-12),
    ("400 Gbit/s", "bandwidth", 50e9),
])
def test_parse_to_si(text, kind, si):
    assert parse_si(text, kind, "f") == pytest.approx(si)


@pytest.mark.parametrize("text, kind, fragment", [
    ("3.35 kg", "bandwidth", "not a bandwidth"),
    ("3.35", "bandwidth", "has no unit"),
    ("3 GB", "bandwidth", "is a byte count"),
    ("512 KB", "bytes", "ambiguous"),
    ("fast", "bandwidth", "cannot read"),
    ("", "power", "empty"),
    ("3.35 TB/", "bandwidth", "cannot read"),
    ("(3", "bandwidth", "cannot read"),
    ("3 *", "bandwidth", "cannot read"),
    ("+", "bandwidth", "cannot read"),
])
def test_wrong_input_names_the_field(text, kind, fragment):
    with pytest.raises(UnitError) as err:
        parse_si(text, kind, "memory[0].bandwidth")
    assert str(err.value).startswith("memory[0].bandwidth: ")
    assert fragment in str(err.value)
    assert err.value.field == "memory[0].bandwidth"


def test_bytes_are_not_dimensionless():
    assert ureg.parse_units("byte").dimensionality != ureg.parse_units("").dimensionality
    assert Q_("1 FLOP/byte").dimensionality != Q_("1 FLOP").dimensionality


def test_decimal_and_binary_families_are_not_mixed():
    assert format_bytes(80 * 2**30, binary=True) == "80 GiB"
    assert format_bytes(80e9) == "80 GB"
    assert format_bytes(80 * 2**30) == "85.9 GB"
    assert format_si(3.12e14, "FLOP/s") == "312 TFLOP/s"
