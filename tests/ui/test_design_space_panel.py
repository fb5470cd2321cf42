"""The Design-space panel through its widgets: the points are the sweep core's numbers; the Pareto rings are the
core's front; hover names every field with units; a click sets precision, batch, sequence length and phase in one
undo step and focuses the device; a stale sweep (the inputs changed while it ran) is dropped; the exported file
reads back; a bad grid entry is said, not raised."""

from __future__ import annotations

import numpy as np
import pytest
from test_chart_mouse import click, hover
from test_panels import make, settle

from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.session.training import cost_assumptions
from explorer.core.session.workspace import Workspace
from explorer.core.sweep import table_io
from explorer.core.sweep.grid import Grid
from explorer.core.sweep.run import sweep
from explorer.core.workload.templates import get_template
from explorer.ui.panels import PANELS, DesignSpacePanel
from explorer.ui.panels.design_space import EMPTY

DEVICES = {d.id: d for d in load_shipped_devices()}
IDS = ("nvidia-l4", "nvidia-h100-sxm5")


def _ws(*ids) -> Workspace:
    ws = Workspace(get_template("llama2-7b").build(), lambda wanted: [DEVICES[i] for i in wanted if i in DEVICES])
    if ids:
        ws.select_devices(ids)
    return ws


def swept(qtbot, panel):
    qtbot.waitUntil(lambda: panel.result is not None and panel.shown.same(panel.inputs())
                    and not panel.worker.busy and not panel.worker.waiting, timeout=20000)
    settle(qtbot, panel)
    panel.flush()


@pytest.fixture
def panel(qtbot):
    p = make(qtbot, DesignSpacePanel, _ws(*IDS), (1400, 800))
    for key, text in (("batch", "1,8,64"), ("seq_len", "512..4096"), ("precision", "fp16,fp8")):
        p.fields[key].setText(text)
    p._grid_edited()
    swept(qtbot, p)
    return p


def test_registered_and_the_empty_state_says_why(qtbot):
    assert DesignSpacePanel in PANELS
    p = make(qtbot, DesignSpacePanel, _ws(), (900, 600))
    assert p.message.text() == EMPTY and p.csv_text().count("\n") == 1


def test_the_points_are_the_sweep_cores(qtbot, panel):
    ws = panel.workspace
    grid = Grid(batches=(1, 8, 64), seq_lens=(512, 1024, 2048, 4096), phases=("decode",),
                precisions=("fp16", "fp8"))
    assert panel.shown.grid == grid
    core = sweep(ws.model, ws.devices, grid, cost_assumptions(ws.assumptions))
    assert len(panel.result) == len(core) == 2 * 3 * 4 * 2
    for name in ("latency_s", "throughput_per_device_tok_s", "energy_per_token_j"):
        np.testing.assert_allclose(panel.result.columns[name], core.columns[name], rtol=1e-12)
    # drawn: every point that fits, at log10 of (latency in ms, tokens/s)
    c = core.columns
    fits = np.flatnonzero(c["fits"])
    assert sorted(panel.drawn.tolist()) == fits.tolist()
    k = int(np.flatnonzero(panel.drawn == fits[0])[0])
    assert panel.xy[k] == pytest.approx([np.log10(c["latency_s"][fits[0]] * 1e3),
                                         np.log10(c["throughput_per_device_tok_s"][fits[0]])], rel=1e-12)
    # black rings: the 4-objective front of the core
    rx, _ry = panel.front_rings.x, panel.front_rings.y
    assert len(rx) == int(np.count_nonzero(c["pareto"])) > 0
    # the CSV copy: every point, units in the header
    lines = panel.csv_text().splitlines()
    assert lines[0].startswith("device,layout,precision,phase,batch [sequences],seq_len [tokens],latency_s [s]")
    assert len(lines) == 1 + len(core)


def test_hover_names_every_field_with_units(qtbot, panel):
    c = panel.result.columns
    j = int(panel.drawn[0])
    x, y = panel.xy[0]
    text = hover(panel, panel.plot, x, y)
    assert text.startswith(f"{c['device'][j]}: {c['precision'][j]}, decode, batch {c['batch'][j]} sequences")
    for unit in ("tokens/s per device", "USD per 10^6 tokens", "J/token", "B (weights + KV cache", "latency"):
        assert unit in text


def test_a_click_sets_the_configuration_in_one_undo_step(qtbot, panel):
    ws = panel.workspace
    c = panel.result.columns
    # the H100 at fp8, batch 64, 2048 tokens: differs from the app's start in every field
    j = int(np.flatnonzero((c["device"] == "nvidia-h100-sxm5") & (c["precision"] == "fp8") & (c["batch"] == 64)
                           & (c["seq_len"] == 2048))[0])
    assert c["fits"][j]
    k = int(np.flatnonzero(panel.drawn == j)[0])
    depth = len(ws.stack._done)
    before = ws.assumptions
    click(qtbot, panel, panel.plot, *panel.xy[k])
    a = ws.assumptions
    assert (a.precision, a.batch, a.seq_len, a.phase) == ("fp8", 64, 2048, "decode")
    assert ws.focused_device == "nvidia-h100-sxm5" and len(ws.stack._done) == depth + 1
    swept(qtbot, panel)
    assert panel.current_index() == j and len(panel.current.x) == 1
    ws.undo()
    assert ws.assumptions == before


def test_a_stale_sweep_is_dropped(qtbot, panel):
    ws = panel.workspace
    first = panel.inputs()
    panel.worker.wanted = first  # the old inputs in flight, then an edit while they run
    panel.worker._start(first)
    ws.select_devices(["nvidia-l4"])
    panel.flush()
    swept(qtbot, panel)
    assert panel.shown.devices == (DEVICES["nvidia-l4"],) and set(panel.result.columns["device"]) == {"nvidia-l4"}
    assert panel.worker.dropped >= 1


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_export_round_trips(qtbot, panel, tmp_path, suffix):
    pytest.importorskip("pyarrow") if suffix == ".parquet" else None
    path = tmp_path / f"points{suffix}"
    panel.export_points(str(path))
    back = table_io.read(path)
    np.testing.assert_allclose(back["latency_s"], panel.result.columns["latency_s"], rtol=1e-12)
    assert list(back["device"]) == list(panel.result.columns["device"])


def test_a_bad_grid_entry_is_said_and_the_last_grid_kept(qtbot, panel):
    grid = panel.grid
    panel.fields["batch"].setText("0,4")
    panel._grid_edited()
    panel.flush()
    assert "batch: values must be whole numbers >= 1" in panel.message.text()
    assert panel.grid == grid and len(panel.result) == 48


def test_axes_can_be_cost_and_energy(qtbot, panel):
    panel.axis_combos[0].setCurrentIndex(2)  # cost per 10^6 tokens
    panel.axis_combos[1].setCurrentIndex(3)  # energy per token
    panel.flush()
    c = panel.result.columns
    j = int(panel.drawn[0])
    assert panel.xy[0] == pytest.approx([np.log10(c["cost_per_million_tokens_usd"][j]),
                                         np.log10(c["energy_per_token_j"][j] * 1e3)], rel=1e-12)
    assert panel.plot.getAxis("left").labelText == "energy (mJ/token)"


def test_the_line_is_the_front_of_the_two_axes_shown(qtbot, panel):
    """Brute force: a drawn point is on the line exactly when no drawn point has lower latency and higher
    throughput (or equal on one and better on the other)."""
    x, y = panel.front_line.getData()
    lat, thr = panel.xy[:, 0], panel.xy[:, 1]
    on = [k for k in range(len(lat)) if not np.any((lat <= lat[k]) & (thr >= thr[k]) & ((lat < lat[k]) | (thr > thr[k])))]
    expect = sorted((lat[k], thr[k]) for k in on)
    np.testing.assert_allclose(sorted(zip(x.tolist(), y.tolist())), expect, rtol=1e-12)
    assert np.all(np.diff(x) >= 0) and np.all(np.diff(y) >= 0)  # drawn left to right, rising


def test_an_export_right_after_an_edit_holds_the_new_points(qtbot, panel, tmp_path):
    """No waiting for the worker: the export computes the sweep of the current inputs itself."""
    panel.workspace.select_devices(["nvidia-l4"])
    path = tmp_path / "points.csv"
    panel.export_points(str(path))
    assert set(table_io.read(path)["device"]) == {"nvidia-l4"}
    assert panel.csv_text().count("\n") == 1 + 24


def test_the_points_follow_the_times_switch(qtbot, panel):
    """Under the calibrated model the points are the sweep core's calibrated latencies, each with its time source
    (the H100 has a catalog calibration, the L4 none: spec), and the title says the model; back to ideal, spec."""
    ws = panel.workspace
    ideal = panel.result.columns["latency_s"].copy()
    assert set(panel.result.columns["time_source"]) == {"spec"}
    ws.set_assumptions(time_model="calibrated")
    qtbot.waitUntil(lambda: panel.shown is not None and panel.shown.time_model == "calibrated", timeout=20000)
    swept(qtbot, panel)
    core = sweep(ws.model, ws.devices, panel.shown.grid, cost_assumptions(ws.assumptions), time_model="calibrated")
    c = panel.result.columns
    np.testing.assert_allclose(c["latency_s"], core.columns["latency_s"], rtol=1e-12)
    h100 = c["device"] == "nvidia-h100-sxm5"
    assert set(c["time_source"][~h100]) == {"spec"} and "spec" not in set(c["time_source"][h100])
    assert (c["latency_s"][h100] > ideal[h100]).all() and (c["latency_s"][~h100] == ideal[~h100]).all()
    assert "calibrated model" in DesignSpacePanel.caption(ws)
