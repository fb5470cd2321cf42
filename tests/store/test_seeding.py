"""Seeding and re-seeding: shipped updates arrive, user devices and user edits are never lost."""

from __future__ import annotations

from dataclasses import replace

import pytest

from explorer.core.hardware.device_file import device_from_dict, device_to_dict
from explorer.store.engine import open_catalog
from explorer.store.errors import ReadOnlyDeviceError
from explorer.store.seeding import seed

SRC = {
    "ds": {"title": "Datasheet", "url": "https://example.org/ds.pdf", "date": "2026-11-22"},
    "wp": {"title": "Whitepaper", "url": "https://example.org/wp.pdf", "date": "2026-11-22"},
}


def shipped(device_id: str, **fields):
    data = {
        "id": device_id,
        "name": device_id.upper(),
        "vendor": "Acme",
        "kind": "gpu",
        "tier": "datacenter",
        "sources": SRC,
        "peak": {
            "fp16": {"value": "100 TFLOP/s", "source": "ds"},
            "int8": {"value": "200 TOP/s", "source": "ds"},
        },
        "memory": [
            {
                "name": "HBM",
                "capacity": {"value": "40 GB", "source": "ds"},
                "bandwidth": {"value": "1555 GB/s", "source": "ds"},
            }
        ],
        "tdp": {"value": "400 W", "source": "ds"},
        "price": {"value": "10000 USD", "source": "wp"},
    }
    data.update(fields)
    return replace(device_from_dict(data), origin="shipped")


def edit(device, **fields):
    return device_from_dict({**device_to_dict(device), **fields})


@pytest.fixture
def repo():
    r = open_catalog("sqlite://", seed=False)
    report = seed(r.engine, [shipped("gpu-a"), shipped("gpu-b"), shipped("gpu-c")])
    assert report.added == ("gpu-a", "gpu-b", "gpu-c")
    yield r
    r.close()


def test_seeded_devices_are_shipped_and_unedited(repo):
    stored = repo.record("gpu-a")
    assert stored.origin == "shipped" and stored.version == 1 and stored.overrides == ()
    assert stored.shipped == device_to_dict(shipped("gpu-a"))
    assert repo.get("gpu-a") == shipped("gpu-a")


def test_editing_a_shipped_device_marks_the_overridden_fields(repo):
    repo.update(
        edit(
            repo.get("gpu-a"),
            price={"value": "9000 USD", "source": "wp", "note": "our quote"},
            peak={
                "fp16": {"value": "110 TFLOP/s", "source": "ds"},
                "int8": {"value": "200 TOP/s", "source": "ds"},
            },
        ),
        1,
    )
    stored = repo.record("gpu-a")
    assert stored.overrides == ("peak.fp16", "price")
    assert {r.id: r.overridden for r in repo.rows()} == {"gpu-a": True, "gpu-b": False, "gpu-c": False}
    # editing a field back to the shipped value removes its marker
    repo.update(edit(repo.get("gpu-a"), price={"value": "10000 USD", "source": "wp"}), 2)
    assert repo.record("gpu-a").overrides == ("peak.fp16",)


def test_reseed_updates_unedited_devices_and_keeps_user_edits(repo):
    repo.update(edit(repo.get("gpu-a"), price={"value": "9000 USD", "source": "wp"}), 1)
    repo.add(
        device_from_dict(
            {"id": "my-board", "name": "Mine", "vendor": "Me", "kind": "npu", "peak": {"int8": "4 TOP/s"}}
        )
    )
    new_release = [
        shipped(
            "gpu-a", tdp={"value": "450 W", "source": "ds"}, price={"value": "12000 USD", "source": "wp"}
        ),
        shipped("gpu-b", tdp={"value": "300 W", "source": "ds"}),
        shipped("gpu-c"),
        shipped("gpu-d"),
    ]
    report = seed(repo.engine, new_release)
    assert report.added == ("gpu-d",)
    assert report.updated == ("gpu-b",)
    assert report.merged == ("gpu-a",)
    assert report.unchanged == 1 and report.kept == () and report.skipped == ()

    a = repo.record("gpu-a")
    assert a.device.tdp.text == "450 W"  # the new shipped value arrives
    assert a.device.price.text == "9000 USD"  # the user's value wins
    assert a.overrides == ("price",)  # still marked
    assert a.shipped == device_to_dict(new_release[0])
    assert a.version == 3
    assert repo.get("gpu-b").tdp.text == "300 W" and repo.record("gpu-b").overrides == ()
    assert repo.record("gpu-c").version == 1
    assert repo.get("my-board").origin == "user"  # user devices untouched
    # seeding the same release again changes nothing
    again = seed(repo.engine, new_release)
    assert not again.changed and again.unchanged == 4


def test_reseed_keeps_an_override_even_when_it_equals_the_new_shipped_value(repo):
    repo.update(edit(repo.get("gpu-a"), price={"value": "12000 USD", "source": "wp"}), 1)
    seed(repo.engine, [shipped("gpu-a", price={"value": "12000 USD", "source": "wp"})])
    assert repo.record("gpu-a").overrides == ("price",)
    seed(repo.engine, [shipped("gpu-a", price={"value": "15000 USD", "source": "wp"})])
    assert repo.get("gpu-a").price.text == "12000 USD"


def test_a_user_device_with_a_newly_shipped_id_is_left_alone(repo):
    mine = device_from_dict({"id": "gpu-z", "name": "My own Z", "vendor": "Me", "kind": "gpu"})
    repo.add(mine)
    report = seed(repo.engine, [shipped("gpu-z")])
    assert report.skipped == ("gpu-z",)
    assert repo.get("gpu-z") == mine


def test_devices_dropped_from_a_release_stay(repo):
    seed(repo.engine, [shipped("gpu-a")])
    assert set(repo.ids()) == {"gpu-a", "gpu-b", "gpu-c"}


def test_user_values_citing_a_source_the_release_removed_keep_that_source(repo):
    repo.update(edit(repo.get("gpu-a"), tdp={"value": "380 W", "source": "wp"}), 1)
    release = shipped("gpu-a", sources={"ds": SRC["ds"]}, price={"value": "11000 USD", "source": "ds"})
    report = seed(repo.engine, [release])
    assert report.merged == ("gpu-a",)
    stored = repo.record("gpu-a")
    assert stored.device.tdp.text == "380 W" and "wp" in stored.device.sources
    assert stored.device.price.text == "11000 USD"
    assert stored.overrides == ("sources.wp", "tdp")


def test_an_invalid_merge_keeps_the_users_whole_device(repo):
    # the user removes the source 'wp' (and re-cites the price); the new release cites 'wp' again elsewhere
    mine = edit(repo.get("gpu-a"), sources={"ds": SRC["ds"]}, price={"value": "10000 USD", "source": "ds"})
    repo.update(mine, 1)
    assert repo.record("gpu-a").overrides == ("sources.wp", "price")
    release = shipped("gpu-a", tdp={"value": "420 W", "source": "wp"})
    report = seed(repo.engine, [release])
    assert report.kept == ("gpu-a",)
    stored = repo.record("gpu-a")
    assert stored.device == replace(mine, origin="shipped")  # nothing the user wrote is lost
    assert set(stored.overrides) == {"sources.wp", "price", "tdp"}


def test_revert_restores_the_shipped_values(repo):
    repo.update(
        edit(
            repo.get("gpu-a"),
            price={"value": "9000 USD", "source": "wp"},
            tdp={"value": "1 W", "source": "ds"},
        ),
        1,
    )
    assert repo.record("gpu-a").overrides == ("tdp", "price")
    repo.revert("gpu-a", 2, ["tdp"])
    stored = repo.record("gpu-a")
    assert stored.device.tdp.text == "400 W" and stored.overrides == ("price",)
    repo.revert("gpu-a", 3)
    assert repo.get("gpu-a") == shipped("gpu-a")
    assert repo.record("gpu-a").overrides == ()


def test_revert_of_a_user_device_is_refused(repo):
    repo.add(device_from_dict({"id": "mine", "name": "Mine", "vendor": "Me", "kind": "cpu"}))
    with pytest.raises(ReadOnlyDeviceError):
        repo.revert("mine", 1)
