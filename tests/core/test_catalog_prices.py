"""The shipped prices (issue 23): every one says what it is and where it comes from, and docs/catalog.md's coverage
table lists exactly the devices that carry one, with the same numbers."""

import re
from pathlib import Path

import pytest

from explorer.core.hardware.catalog_files import load_shipped_devices

DOC = Path(__file__).resolve().parents[2] / "docs" / "catalog.md"
DEVICES = {d.id: d for d in load_shipped_devices()}


def _table() -> dict[str, tuple[str, str]]:
    """``{id: (buy cell, rent cell)}`` from the table under '## Prices in the shipped catalog'."""
    text = DOC.read_text(encoding="utf-8").split("## Prices in the shipped catalog", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\| `([a-z0-9-]+)` \| ([^|]*) \|[^|]*\| ([^|]*) \|", line)
        if m:
            rows[m.group(1)] = (m.group(2).strip(), m.group(3).strip())
    return rows


def _number(cell: str) -> float | None:
    return float(cell.replace(",", "")) if re.fullmatch(r"[0-9][0-9,]*(\.[0-9]+)?", cell) else None


def test_the_coverage_table_lists_exactly_the_priced_devices_with_their_values():
    table = _table()
    priced = {i for i, d in DEVICES.items() if d.price or d.cloud_price}
    assert set(table) == priced
    for device_id, (buy, rent) in table.items():
        d = DEVICES[device_id]
        assert _number(buy) == (d.price.value if d.price else None), device_id
        if d.cloud_price:  # stored in USD per second
            assert _number(rent) == pytest.approx(d.cloud_price.value * 3600), device_id
        else:
            assert _number(rent) is None, device_id


@pytest.mark.parametrize("device_id", sorted(i for i, d in DEVICES.items() if d.price or d.cloud_price))
def test_every_price_says_what_it_is_and_cites_a_dated_source(device_id):
    d = DEVICES[device_id]
    for figure in (d.price, d.cloud_price):
        if figure is None:
            continue
        assert figure.note, f"{device_id}: a price without a note on what it is"
        source = d.sources[figure.source]
        assert source.url.startswith("http") and re.fullmatch(r"\d{4}-\d{2}-\d{2}", source.date)
    if d.cloud_price:  # rent is per device: the note names the instance or offer it was divided from
        assert re.search(r"/h|per (GPU|chip|card)-hour", d.cloud_price.note), device_id
    if d.price:  # the month it was quoted; AMD's exported 1kU table (the EPYC's source) carries no date
        assert d.price_date or device_id == "amd-epyc-9654", device_id


def test_a_cloud_rate_is_a_plausible_hourly_price_of_one_device():
    # 1 USD/h is 1/3600 USD/s; no single accelerator rents for more than 20 USD/h or less than 0.1 USD/h
    for d in DEVICES.values():
        if d.cloud_price:
            assert 0.1 / 3600 < d.cloud_price.value < 20 / 3600, d.id
