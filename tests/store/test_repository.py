"""CatalogRepository on in-memory SQLite: lossless storage, optimistic locking, search and filters."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.hardware.device_file import DeviceFileError, device_from_dict, device_to_dict
from explorer.store.engine import open_catalog
from explorer.store.errors import ConflictError, DuplicateDeviceError, ReadOnlyDeviceError, UnknownDeviceError
from explorer.store.query import DeviceFilter

SRC = {"ds": {"title": "Datasheet", "url": "https://example.org/ds.pdf", "date": "2026-11-22"}}


def make(device_id: str, **fields) -> dict:
    data = {
        "id": device_id,
        "name": device_id.upper(),
        "vendor": "Acme",
        "kind": "gpu",
        "tier": "datacenter",
        "sources": SRC,
    }
    data.update(fields)
    return data


# Four hand-made devices with known figures (SI values in the comments).
DEVICES = [
    make(
        "big-gpu",
        vendor="NVIDIA",
        year=2023,
        peak={
            "fp16": {"value": "1000 TFLOP/s", "source": "ds"},
            "fp8": {"value": "2 PFLOP/s", "source": "ds"},
        },
        peak_sparse={"fp16": {"value": "2000 TFLOP/s", "source": "ds"}},
        memory=[
            {
                "name": "HBM3",
                "role": "offchip",
                "capacity": {"value": "80 GB", "source": "ds"},
                "bandwidth": {"value": "3.35 TB/s", "source": "ds"},
            }
        ],
        tdp={"value": "700 W", "source": "ds"},
        price={"value": "30000 USD", "source": "ds", "date": "2024-01"},
        cloud_price={"value": "3.6 USD/h", "source": "ds"},
    ),  # 3.35e12 B/s, 8e10 B, 1e-3 USD/s
    make(
        "mid-gpu",
        vendor="NVIDIA",
        family="Ada",
        peak={"fp16": "120 TFLOP/s", "int8": "480 TOP/s"},
        memory=[{"name": "GDDR6", "capacity": "24 GB", "bandwidth": "864 GB/s"}],
        price="9000 USD",
    ),
    make("edge-npu", vendor="Hailo", kind="npu", tier="edge", peak={"int8": "26 TOPS"}, tdp="2.5 W"),
    make(
        "tpu-x",
        vendor="Google",
        kind="tpu",
        peak={"bf16": "459 TFLOP/s", "int8": "918 TOP/s"},
        memory=[{"name": "HBM2e", "capacity": "95 GiB", "bandwidth": "2765 GB/s"}],
        cloud_price="4.2 USD/h",
    ),
]


@pytest.fixture
def repo():
    r = open_catalog("sqlite://", seed=False)
    for data in DEVICES:
        r.add(device_from_dict(data))
    yield r
    r.close()


def ids(rows) -> list[str]:
    return sorted(r.id for r in rows)


def test_devices_come_back_identical(repo):
    for data in DEVICES:
        device = device_from_dict(data)
        assert repo.get(device.id) == device  # same device_to_dict and origin 'user'
        assert device_to_dict(repo.get(device.id)) == device_to_dict(device)


def test_every_shipped_device_round_trips_exactly():
    r = open_catalog("sqlite://")
    shipped = load_shipped_devices()
    for device in shipped:
        assert r.get(device.id) == device
    assert r.devices() == tuple(sorted(shipped, key=lambda d: d.id))
    r.close()


def test_rows_hold_si_values(repo):
    row = {r.id: r for r in repo.rows()}["big-gpu"]
    assert row.peak == {"fp16": 1e15, "fp8": 2e15}
    assert row.peak_sparse == {"fp16": 2e15}
    assert row.bandwidth == pytest.approx(3.35e12)
    assert row.capacity == 80e9
    assert row.tdp == 700.0
    assert row.price == 30000.0
    assert row.cloud_price == pytest.approx(3.6 / 3600)
    assert (row.origin, row.overridden, row.version) == ("user", False, 1)
    assert row.precisions == ("fp16", "fp8")
    edge = {r.id: r for r in repo.rows()}["edge-npu"]
    assert edge.peak == {"int8": 26e12} and math.isnan(edge.bandwidth) and math.isnan(edge.price)
    tpu = {r.id: r for r in repo.rows()}["tpu-x"]
    assert tpu.capacity == 95 * 2**30


@pytest.mark.parametrize(
    "filters, expected",
    [
        (DeviceFilter(), ["big-gpu", "edge-npu", "mid-gpu", "tpu-x"]),
        (DeviceFilter(text="GPU"), ["big-gpu", "mid-gpu"]),
        (DeviceFilter(text="ada"), ["mid-gpu"]),  # family
        (DeviceFilter(text="50%"), []),  # LIKE wildcards are escaped
        (DeviceFilter(vendors=("nvidia",)), ["big-gpu", "mid-gpu"]),
        (DeviceFilter(vendors=("Hailo", "Google")), ["edge-npu", "tpu-x"]),
        (DeviceFilter(kinds=("npu", "tpu")), ["edge-npu", "tpu-x"]),
        (DeviceFilter(tiers=("edge",)), ["edge-npu"]),
        (DeviceFilter(precision="int8"), ["edge-npu", "mid-gpu", "tpu-x"]),
        (DeviceFilter(precision="int8", min_peak=400e12), ["mid-gpu", "tpu-x"]),
        (
            DeviceFilter(min_peak=900e12),
            ["big-gpu", "tpu-x"],
        ),  # any precision: 1 PFLOP/s fp16, 918 TOP/s int8
        (DeviceFilter(min_bandwidth=2e12), ["big-gpu", "tpu-x"]),
        (DeviceFilter(min_capacity=90e9), ["tpu-x"]),  # 95 GiB = 102 GB
        (DeviceFilter(min_price=5000, max_price=10000), ["mid-gpu"]),
        (DeviceFilter(max_price=50000), ["big-gpu", "mid-gpu"]),  # unknown prices are excluded
        (DeviceFilter(max_cloud_price=4 / 3600), ["big-gpu"]),
        (DeviceFilter(vendors=("NVIDIA",), precision="fp16", min_bandwidth=1e12), ["big-gpu"]),
        (DeviceFilter(origin="shipped"), []),
    ],
)
def test_filters(repo, filters, expected):
    assert ids(repo.rows(filters)) == expected


def test_bad_filters_are_rejected_naming_the_field():
    with pytest.raises(ValueError, match="kinds: 'fpga'"):
        DeviceFilter(kinds=("fpga",))
    with pytest.raises(ValueError, match="precision: unknown precision 'fp12'"):
        DeviceFilter(precision="fp12")
    with pytest.raises(ValueError, match="min_bandwidth"):
        DeviceFilter(min_bandwidth=float("nan"))
    with pytest.raises(ValueError, match="price range"):
        DeviceFilter(min_price=10, max_price=1)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.sampled_from(["", "gpu", "x", "NPU", "acme"]),
    precision=st.sampled_from([None, "fp16", "int8", "bf16", "fp8"]),
    min_peak=st.sampled_from([None, 0.0, 100e12, 500e12, 1e15]),
    min_bw=st.sampled_from([None, 0.0, 800e9, 3e12]),
    max_price=st.sampled_from([None, 9000.0, 29999.0, 1e6]),
)
def test_filters_agree_with_filtering_the_rows_in_python(repo, text, precision, min_peak, min_bw, max_price):
    everything = repo.rows()
    got = ids(
        repo.rows(
            DeviceFilter(
                text=text, precision=precision, min_peak=min_peak, min_bandwidth=min_bw, max_price=max_price
            )
        )
    )

    def keep(r) -> bool:
        hay = " ".join(str(x) for x in (r.id, r.name, r.vendor, r.family or "")).lower()
        if text and text.lower() not in hay:
            return False
        peaks = (
            [r.peak[precision]]
            if precision and precision in r.peak
            else []
            if precision
            else list(r.peak.values())
        )
        if precision and not peaks:
            return False
        if min_peak is not None and not any(p >= min_peak for p in peaks):
            return False
        if min_bw is not None and not r.bandwidth >= min_bw:
            return False
        return max_price is None or r.price <= max_price

    assert got == ids(r for r in everything if keep(r))


def test_add_rejects_a_taken_id_and_an_invalid_device(repo):
    with pytest.raises(DuplicateDeviceError, match="big-gpu"):
        repo.add(device_from_dict(DEVICES[0]))
    broken = replace(device_from_dict(DEVICES[1]), tier="galaxy")
    with pytest.raises(DeviceFileError, match="tier"):
        repo.add(replace(broken, id="broken"))


def test_update_bumps_the_version_and_stores_the_edit(repo):
    device = repo.get("mid-gpu")
    edited = device_from_dict({**device_to_dict(device), "price": "8500 USD"})
    assert repo.update(edited, expected_version=1) == 2
    assert repo.get("mid-gpu") == edited
    assert {r.id: r for r in repo.rows()}["mid-gpu"].price == 8500.0


def test_a_stale_save_raises_a_conflict_with_both_values_and_keeps_the_edit(repo):
    base = device_to_dict(repo.get("mid-gpu"))
    alice = device_from_dict({**base, "price": "8500 USD"})
    bob = device_from_dict({**base, "price": "9900 USD", "tdp": "350 W"})
    repo.update(alice, expected_version=1)
    with pytest.raises(ConflictError) as exc:
        repo.update(bob, expected_version=1)
    err = exc.value
    assert err.mine is bob and err.theirs == alice
    assert (err.expected_version, err.theirs_version) == (1, 2)
    by_field = {c.field: (c.mine, c.theirs) for c in err.fields}
    assert by_field == {"tdp": ("350 W", None), "price": ("9900 USD", "8500 USD")}
    message = str(err)
    assert "price: yours 9900 USD; theirs 8500 USD" in message
    assert "tdp: yours 350 W; theirs (not set)" in message
    assert repo.get("mid-gpu") == alice  # nothing overwritten
    # retry: bob keeps his tdp, takes alice's price
    merged = device_from_dict({**device_to_dict(bob), "price": "8500 USD"})
    assert repo.update(merged, expected_version=err.theirs_version) == 3
    final = repo.get("mid-gpu")
    assert final.price.text == "8500 USD" and final.tdp.text == "350 W"


def test_update_of_an_unknown_device(repo):
    ghost = replace(repo.get("mid-gpu"), id="ghost-gpu")
    with pytest.raises(UnknownDeviceError):
        repo.update(ghost, expected_version=1)


def test_delete_and_duplicate(repo):
    copy = repo.duplicate("big-gpu", "big-gpu-copy")
    assert copy.name == "BIG-GPU (copy)" and copy.origin == "user"
    assert device_to_dict(repo.get("big-gpu-copy")) == {
        **device_to_dict(repo.get("big-gpu")),
        "id": "big-gpu-copy",
        "name": "BIG-GPU (copy)",
    }
    with pytest.raises(DuplicateDeviceError):
        repo.duplicate("big-gpu", "mid-gpu")
    repo.delete("big-gpu-copy")
    assert "big-gpu-copy" not in repo.ids()
    with pytest.raises(UnknownDeviceError):
        repo.delete("big-gpu-copy")


def test_shipped_devices_cannot_be_deleted():
    r = open_catalog("sqlite://")
    shipped_id = r.ids()[0]
    with pytest.raises(ReadOnlyDeviceError, match="shipped"):
        r.delete(shipped_id)
    assert shipped_id in r.ids()
    r.close()


def test_unknown_id_lists_close_matches(repo):
    with pytest.raises(UnknownDeviceError) as exc:
        repo.get("big")
    assert exc.value.close_matches == ("big-gpu",)
    assert isinstance(exc.value, ValueError) and "did you mean big-gpu" in str(exc.value)
    with pytest.raises(UnknownDeviceError) as exc:
        repo.get("tpu-z")
    assert "tpu-x" in exc.value.close_matches
