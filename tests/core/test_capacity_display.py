"""Capacities as each vendor writes them (issue 23): the MI300X's 192 GiB is not shown as "206 GB" beside the
H100's 80 GB. Every display path equals the figure the device file keeps as written (its Cited ``text``),
over the whole shipped catalog, and the value stays in bytes for arithmetic."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from explorer.core.hardware.capacity import CAPACITY_NOTE, cited_capacity, device_capacity, format_capacity
from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.units import parse_si

DEVICES = [d for d in load_shipped_devices() if d.offchip is not None and d.offchip.capacity is not None]


def test_the_catalog_has_both_families():
    texts = {d.offchip.capacity.text for d in DEVICES}
    assert any("GiB" in t for t in texts) and any(t.endswith(" GB") for t in texts)
    assert len(DEVICES) >= 30


@pytest.mark.parametrize("device", DEVICES, ids=lambda d: d.id)
def test_every_display_equals_the_vendors_written_figure(device):
    cited = device.offchip.capacity
    assert device_capacity(device) == cited.text  # the report and the CLI's analyze read the Device
    assert format_capacity(device.memory_capacity) == cited.text  # the catalog table and `catalog list` read bytes
    assert device.memory_capacity == pytest.approx(parse_si(cited.text, "bytes", "capacity"))  # arithmetic keeps bytes


def test_hand_cases():
    # AMD Instinct MI300X: ROCm "GPU hardware specifications" table, column 'VRAM (GiB)' = 192
    assert format_capacity(192 * 2**30) == "192 GiB"
    assert format_capacity(206_158_430_208) == "192 GiB"
    assert format_capacity(80e9) == "80 GB"  # NVIDIA H100 SXM5 datasheet: 80GB
    assert format_capacity(8 * 2**20) == "8 MiB"
    assert format_capacity(1.5e9) == "1500 MB"
    assert format_capacity(123456789) == "123456789 B"  # whole bytes only: no family makes it rounder
    assert format_capacity(float("nan")) == "\u2014"
    assert cited_capacity(None) == "\u2014"
    assert "10^9" in CAPACITY_NOTE and "2^30" in CAPACITY_NOTE


@given(st.integers(1, 4096), st.sampled_from([("GB", 1e9), ("GiB", 2**30), ("MB", 1e6), ("MiB", 2**20)]))
def test_round_figures_come_back_as_written(n, unit):
    _name, scale = unit
    text = format_capacity(n * scale)
    value, shown = text.split()
    assert float(value) * {"GB": 1e9, "GiB": 2**30, "MB": 1e6, "MiB": 2**20, "TB": 1e12, "TiB": 2**40,
                           "kB": 1e3, "KiB": 1024, "B": 1}[shown] == pytest.approx(n * scale)  # the same bytes
    assert len(value) <= len(str(n))  # never a longer figure than the one written
