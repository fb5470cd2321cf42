"""Device overrides inside the project file (issue 23, project format 7): a user's edited figures travel with the
project, the migration from format 6, the round trip, one-line errors naming the field, the workspace applying them."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.hardware.device import Cited
from explorer.core.hardware.device_file import load_device_file
from explorer.core.session.device_overrides import (
    FIELDS,
    NOTE,
    apply_overrides,
    check_overrides,
    describe,
    overrides_between,
)
from explorer.core.session.project import (
    FORMAT,
    MIGRATIONS,
    Project,
    ProjectError,
    load_project,
    save_project,
)
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.templates import get_template

CATALOG = Path(__file__).resolve().parents[2] / "catalog"
H100, L4 = "nvidia-h100-sxm5", "nvidia-l4"
# an edited H100: the user's own measured bandwidth and a quoted list price
EDIT = {"bandwidth": 2.5e12, "peak.fp16": 800e12, "tdp": 600.0, "price": 27_500.0}


@pytest.fixture(scope="module")
def catalog():
    return {i: load_device_file(CATALOG / f"{i}.yaml") for i in (H100, L4)}


def _workspace(catalog, devices=None):
    known = dict(catalog if devices is None else devices)
    ws = Workspace(get_template("gpt2").build(), lookup=lambda ids: [known[i] for i in ids if i in known],
                   assumptions=Assumptions(phase="decode", batch=8))
    ws.select_devices((H100, L4))
    return ws


def test_apply_overrides_sets_each_figure_and_cites_the_project(catalog):
    h100 = catalog[H100]
    edited = apply_overrides(h100, check_overrides({H100: EDIT})[H100])
    assert edited.bandwidth == 2.5e12 and edited.peak_flops("fp16") == 800e12
    assert edited.tdp.value == 600.0 and edited.price.value == 27_500.0
    assert edited.ridge("fp16") == pytest.approx(800e12 / 2.5e12) == 320.0  # FLOP/B, by hand
    assert edited.tdp.note == NOTE and edited.price.text == "27,500.00 USD"
    # the rest of the device is the catalog's
    assert edited.memory_capacity == h100.memory_capacity and edited.peak_flops("fp8") == h100.peak_flops("fp8")
    assert edited.name == h100.name and edited.sources == h100.sources
    assert apply_overrides(h100, {}) is h100
    assert apply_overrides(h100, {"capacity": 96e9}).memory_capacity == 96e9


def test_overrides_between_finds_the_edited_figures(catalog):
    h100 = catalog[H100]
    edited = replace(h100, tdp=Cited(650.0, "650 W"), peak={**h100.peak, "fp16": Cited(990e12, "990 TFLOPS")})
    assert overrides_between(h100, edited) == {"tdp": 650.0, "peak.fp16": 990e12}
    assert overrides_between(h100, h100) == {}
    assert describe({"tdp": 650.0, "cloud_price": 4.1 / 3600}) == "tdp 650 W, cloud_price 4.1 USD/h"


@pytest.mark.parametrize("data, message", [
    ({H100: {"bandwith": 1.0}}, "device_overrides.nvidia-h100-sxm5.bandwith: unknown field"),
    ({H100: {"peak.fp12": 1.0}}, "device_overrides.nvidia-h100-sxm5.peak.fp12: unknown field"),
    ({H100: {"tdp": -700.0}}, "device_overrides.nvidia-h100-sxm5.tdp: expected a positive number in W"),
    ({H100: {"tdp": 0}}, "device_overrides.nvidia-h100-sxm5.tdp: expected a positive number in W"),
    ({H100: {"price": True}}, "device_overrides.nvidia-h100-sxm5.price: expected a positive number in USD"),
    ({H100: {"bandwidth": "3 TB/s"}}, "device_overrides.nvidia-h100-sxm5.bandwidth: expected a positive number"),
    ({H100: [1.0]}, "device_overrides.nvidia-h100-sxm5: expected an object of figures by field"),
    ([1], "device_overrides: expected an object of figures by device id"),
])
def test_bad_overrides_are_refused_naming_the_field(data, message):
    with pytest.raises(ValueError) as err:
        check_overrides(data)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_the_workspace_applies_the_overrides_and_an_undo_drops_them(catalog):
    ws = _workspace(catalog)
    plain = ws.analysis
    edited = apply_overrides(catalog[H100], {"bandwidth": 2.5e12, "tdp": 600.0})
    ws.override_device(edited)  # as the catalog editor does after saving an edit of a compared device
    assert dict(ws.device_overrides[H100]) == {"bandwidth": 2.5e12, "tdp": 600.0}
    assert ws.devices[0].bandwidth == 2.5e12 and ws.devices[1] is catalog[L4]
    a = ws.analysis
    assert a.devices.bandwidth[0] == 2.5e12 and a.devices.tdp[0] == 600.0
    # decode is memory-bound here: less bandwidth, longer time, in proportion for the memory-bound operators
    assert a.totals.time[0] > plain.totals.time[0] and a.totals.time[1] == plain.totals.time[1]
    assert ws.devices[0] is ws.devices[0]  # the same object while nothing changes (the results reuse it)
    ws.undo()
    assert ws.device_overrides == {} and ws.devices[0] is catalog[H100]
    assert ws.analysis.totals.time[0] == plain.totals.time[0]
    before = ws.stack.undo_text
    ws.override_device(catalog[H100])  # nothing changed: nothing recorded
    assert ws.stack.undo_text == before and ws.device_overrides == {}


def test_the_project_round_trip_keeps_the_overrides_and_another_machine_sees_the_same_numbers(catalog, tmp_path):
    ws = _workspace(catalog)
    ws.override_device(apply_overrides(catalog[H100], EDIT))
    path = tmp_path / "p.hwproj"
    save_project(Project.of(ws), path)
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT == 9
    assert data["device_overrides"] == {H100: dict(sorted(EDIT.items()))}
    loaded = load_project(path)
    assert loaded.state == ws.state and dict(loaded.device_overrides[H100]) == EDIT
    # another machine: its catalog has the shipped H100 only; opening the project applies the overrides
    other = _workspace(catalog)
    other.reset(loaded.model, loaded.device_ids, loaded.assumptions, loaded.trace, loaded.requirements,
                loaded.system, loaded.training, loaded.serving, loaded.device_overrides)
    for name in ("time", "throughput", "flops", "bytes"):
        assert list(getattr(other.analysis.totals, name)) == list(getattr(ws.analysis.totals, name))
    assert other.analysis.devices.price[0] == 27_500.0
    p, q = other.results.plan.by_id(H100), ws.results.plan.by_id(H100)
    assert p.tco == q.tco and math.isfinite(p.tco)


def test_a_format_6_project_is_migrated_with_no_overrides(catalog, tmp_path):
    ws = _workspace(catalog)
    data = Project.of(ws).to_dict()
    del data["device_overrides"]
    data["format"] = 6
    assert MIGRATIONS[6](data) == {**data, "format": 7, "device_overrides": {}}
    path = tmp_path / "old.hwproj"
    path.write_text(json.dumps(data))
    loaded = load_project(path)
    assert loaded.device_overrides == {} and loaded.state == ws.state


def test_a_bad_override_in_a_project_file_is_one_line_naming_the_field(catalog, tmp_path):
    data = Project.of(_workspace(catalog)).to_dict()
    data["device_overrides"] = {H100: {"bandwidth": -3.35e12}}
    path = tmp_path / "bad.hwproj"
    path.write_text(json.dumps(data))
    with pytest.raises(ProjectError) as err:
        load_project(path)
    assert str(err.value) == (f"{path}: device_overrides.{H100}.bandwidth: expected a positive number in B/s, "
                              "got -3350000000000.0")

OVERRIDES = st.dictionaries(st.sampled_from([H100, L4, "my-npu"]),
                            st.dictionaries(st.sampled_from(sorted(FIELDS)),
                                            st.floats(min_value=1e-9, max_value=1e18, allow_nan=False), max_size=4),
                            max_size=3)


@settings(max_examples=60, deadline=None)
@given(overrides=OVERRIDES)
def test_any_valid_overrides_round_trip_through_the_project_file(overrides):
    model = get_template("gpt2").build()
    project = Project(model, (H100,), Assumptions(), device_overrides=overrides)
    again = Project.from_dict(json.loads(project.dumps()), "p.hwproj")
    want = {dev: values for dev, values in overrides.items() if values}  # a device with no figures is dropped
    assert {d: dict(v) for d, v in again.device_overrides.items()} == want
    assert again.state == project.state
