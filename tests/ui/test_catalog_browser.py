"""The catalog browser: columns and units, compare check marks through the undo stack, filters, detail."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import yaml
from PySide6.QtCore import QEvent, QObject, QPoint, QRect, Qt
from PySide6.QtWidgets import QStyle, QStyleOptionViewItem

from explorer.core.hardware.device import Cited
from explorer.core.hardware.device_file import device_to_dict
from explorer.core.session.workspace import Workspace
from explorer.store.engine import open_catalog
from explorer.store.query import DeviceFilter
from explorer.ui.catalog.detail import device_html
from explorer.ui.catalog.dock import CatalogDock
from explorer.ui.catalog.proxy import row_matches
from explorer.ui.catalog.table_model import COLUMN_INDEX, COLUMNS, DASH, SORT_ROLE, format_number

H100 = "nvidia-h100-sxm5"
CHECK = Qt.ItemDataRole.CheckStateRole



@pytest.fixture
def workspace(repository):
    return Workspace(lookup=lambda ids: repository.devices(ids))


@pytest.fixture
def dock(qtbot, workspace, repository):
    widget = CatalogDock(workspace, repository)
    qtbot.addWidget(widget)
    widget.resize(1100, 700)
    return widget


def cell(dock: CatalogDock, device_id: str, key: str, role=Qt.ItemDataRole.DisplayRole):
    model = dock.model
    return model.index(model.row_of(device_id), COLUMN_INDEX[key]).data(role)


def shown_ids(dock: CatalogDock) -> list[str]:
    return [dock.proxy.device_id(r) for r in range(dock.proxy.rowCount())]


# ------------------------------------------------------------------------------------------------ table
def test_headers_carry_units_at_the_workspace_precision(dock, workspace):
    headers = [dock.model.headerData(i, Qt.Orientation.Horizontal) for i in range(len(COLUMNS))]
    assert headers[:5] == ["Compare", "Name", "Vendor", "Kind", "Tier"]
    for expected in ("Peak FP16 [TFLOP/s]", "Bandwidth [GB/s]", "Memory [GB | GiB]", "Ridge FP16 [FLOP/B]",
                     "TDP [W]", "Price [USD]", "Cloud [USD/h]"):
        assert expected in headers
    workspace.set_assumptions(precision="int8")
    assert dock.model.headerData(COLUMN_INDEX["peak"], Qt.Orientation.Horizontal) == "Peak INT8 [TFLOP/s]"


def test_the_header_shows_a_new_precision_on_screen(qtbot, dock, workspace):
    dock.resize(1500, 700)
    dock.show()
    qtbot.waitExposed(dock)
    header = dock.table.horizontalHeader()
    peak = COLUMN_INDEX["peak"]
    width = header.sectionSize(peak)
    section = QRect(header.sectionViewportPosition(peak), 0, width, header.height())
    painted = []

    class Paints(QObject):
        def eventFilter(self, obj, event):
            if event.type() == QEvent.Type.Paint:
                painted.append(event.region().boundingRect())
            return False

    qtbot.wait(100)  # the first paints are done
    spy = Paints()
    header.viewport().installEventFilter(spy)
    workspace.set_assumptions(precision="int8")
    qtbot.waitUntil(lambda: any(r.contains(section) for r in painted), timeout=2000)
    assert header.sectionSize(peak) == width  # repainted with the new text, not re-measured


def test_cells_show_vendor_figures_in_header_units_and_dash_for_unknown(dock, workspace):
    assert dock.model.rowCount() == len(dock.repository.rows()) == 44
    assert cell(dock, H100, "name") == "NVIDIA H100 SXM5 80GB"
    assert cell(dock, H100, "peak") == "989.5"  # 989.5 TFLOP/s dense FP16
    assert cell(dock, H100, "bandwidth") == "3,350"  # 3.35 TB/s in GB/s
    assert cell(dock, H100, "capacity") == "80 GB"  # decimal, as NVIDIA writes it
    assert cell(dock, "amd-mi300x", "capacity") == "192 GiB"  # binary, as AMD's ROCm table writes it (not "206 GB")
    assert cell(dock, "amd-mi300x", "capacity", SORT_ROLE) == 192 * 2**30  # bytes for sorting and arithmetic
    assert cell(dock, H100, "ridge") == "295.4"  # 989.5e12 / 3.35e12 FLOP/B
    assert cell(dock, H100, "tdp") == "700"
    assert cell(dock, H100, "price") == "25,000"  # a reported street price in USD (NVIDIA publishes no list price)
    assert cell(dock, H100, "origin") == "shipped"
    assert cell(dock, H100, "bandwidth", SORT_ROLE) == pytest.approx(3.35e12)
    assert cell(dock, H100, "price", SORT_ROLE) == pytest.approx(25000.0)
    h200 = "nvidia-h200-sxm"  # no list or dated street price found: the price stays unknown
    assert cell(dock, h200, "price") == DASH
    assert math.isnan(cell(dock, h200, "price", SORT_ROLE))
    hexagon = "qualcomm-hexagon-8gen3"  # shipped with no vendor figures at all (Qualcomm publishes none)
    assert [cell(dock, hexagon, k) for k in ("peak", "bandwidth", "capacity", "tdp", "price")] == [DASH] * 5
    workspace.set_assumptions(precision="int8")
    assert cell(dock, H100, "peak") == "1,979"  # 1979 TOP/s
    workspace.undo()
    assert cell(dock, H100, "peak") == "989.5"


def test_number_format():
    assert format_number(3350.0) == "3,350"
    assert format_number(989.5) == "989.5"
    assert format_number(0.0512) == "0.0512"
    assert format_number(2.5e-5) == "2.500e-05"
    assert format_number(float("nan")) == DASH and format_number(None) == DASH


def test_checking_a_device_selects_it_and_undo_unchecks_it(dock, workspace):
    model = dock.model
    index = model.index(model.row_of(H100), 0)
    assert index.data(CHECK) == Qt.CheckState.Unchecked
    assert index.flags() & Qt.ItemFlag.ItemIsUserCheckable
    with_view = dock.proxy.mapFromSource(index)
    assert dock.proxy.setData(with_view, Qt.CheckState.Checked.value, CHECK)  # what the view does on a click
    assert workspace.device_ids == (H100,)
    assert [d.id for d in workspace.devices] == [H100]
    assert workspace.analysis is not None and workspace.analysis.devices.ids == (H100,)
    assert index.data(CHECK) == Qt.CheckState.Checked
    assert workspace.stack.undo_text == f"compare {H100}"
    a100 = model.index(model.row_of("nvidia-a100-sxm4-80gb"), 0)
    model.setData(a100, Qt.CheckState.Checked.value, CHECK)
    assert workspace.device_ids == (H100, "nvidia-a100-sxm4-80gb")
    workspace.undo()
    assert workspace.device_ids == (H100,) and a100.data(CHECK) == Qt.CheckState.Unchecked
    workspace.undo()
    assert workspace.device_ids == () and index.data(CHECK) == Qt.CheckState.Unchecked
    workspace.redo()
    assert index.data(CHECK) == Qt.CheckState.Checked
    model.setData(index, Qt.CheckState.Unchecked.value, CHECK)
    assert workspace.device_ids == ()


def test_check_marks_follow_selection_changes_made_elsewhere(dock, workspace, qtbot):
    with qtbot.waitSignal(dock.model.dataChanged):
        workspace.select_devices(["google-tpu-v4", H100])
    assert cell(dock, "google-tpu-v4", "compare", CHECK) == Qt.CheckState.Checked
    assert cell(dock, H100, "compare", CHECK) == Qt.CheckState.Checked


@pytest.mark.parametrize("f", [
    DeviceFilter(text="h100"),
    DeviceFilter(text="NVIDIA jetson"),
    DeviceFilter(vendors=("NVIDIA",)),
    DeviceFilter(kinds=("tpu",)),
    DeviceFilter(tiers=("edge",)),
    DeviceFilter(precision="fp8"),
    DeviceFilter(vendors=("Google",), precision="int8"),
    DeviceFilter(min_bandwidth=2e12, max_price=1e5),
])
def test_in_memory_filter_agrees_with_the_repository_query(repository, f):
    expected = {row.id for row in repository.rows(f)}
    assert {row.id for row in repository.rows() if row_matches(row, f)} == expected


def test_filters_narrow_rows(dock, repository):
    bar = dock.filter_bar
    total = len(shown_ids(dock))
    bar.search.setText("h100")
    assert sorted(shown_ids(dock)) == ["nvidia-h100-pcie", H100]
    assert bar.count_label.text() == f"2 of {total}"
    bar.search.clear()
    bar.set_choice(bar.vendor, "Google")
    google = shown_ids(dock)
    assert google and all(i.startswith("google-") for i in google)
    bar.set_choice(bar.kind, "tpu")
    google_tpus = repository.rows(DeviceFilter(vendors=("Google",), kinds=("tpu",)))
    assert set(shown_ids(dock)) == {r.id for r in google_tpus}
    assert "google-coral-edge-tpu" in shown_ids(dock)
    bar.set_choice(bar.tier, "edge")
    assert shown_ids(dock) == ["google-coral-edge-tpu"]
    bar.set_choice(bar.vendor, None)
    bar.set_choice(bar.kind, None)
    bar.set_choice(bar.tier, None)
    bar.set_choice(bar.precision, "fp8")
    fp8 = set(shown_ids(dock))
    assert H100 in fp8 and "nvidia-a100-sxm4-80gb" not in fp8  # A100 has no FP8
    assert fp8 == {r.id for r in repository.rows(DeviceFilter(precision="fp8"))}
    bar.set_choice(bar.precision, None)
    assert len(shown_ids(dock)) == total


def test_sorting_puts_unknowns_last_in_both_directions(dock):
    column = COLUMN_INDEX["bandwidth"]
    for order in (Qt.SortOrder.DescendingOrder, Qt.SortOrder.AscendingOrder):
        dock.table.sortByColumn(column, order)
        values = [dock.proxy.index(r, column).data(SORT_ROLE) for r in range(dock.proxy.rowCount())]
        known = [v for v in values if not math.isnan(v)]
        assert values[:len(known)] == sorted(known, reverse=order == Qt.SortOrder.DescendingOrder)
        assert all(math.isnan(v) for v in values[len(known):]) and len(known) < len(values)
    dock.table.sortByColumn(column, Qt.SortOrder.DescendingOrder)
    known = [r for r in dock.repository.rows() if not math.isnan(r.bandwidth)]
    fastest = max(known, key=lambda r: r.bandwidth)
    assert dock.proxy.device_id(0) == fastest.id == "amd-mi355x"  # 8 TB/s HBM3E (AMD's MI350 Series page)
    assert cell(dock, fastest.id, "bandwidth") == "8,000"
    assert dock.proxy.device_id(1) == "nvidia-b200" and cell(dock, "nvidia-b200", "bandwidth") == "7,700"


def test_detail_shows_every_figure_with_its_source_link(dock):
    assert dock.select_device(H100)
    assert dock.current_id() == H100
    assert dock.detail.openExternalLinks()
    html = dock.detail.toHtml()
    assert 'href="https://www.nvidia.com/en-us/data-center/h100/"' in html
    assert 'href="https://resources.nvidia.com/en-us-hopper-architecture/nvidia-h100-tensor-c"' in html
    text = dock.detail.toPlainText()
    for fragment in ("3.35 TB/s", "3.35e+12 byte/s", "989.5 TFLOP/s", "700 W", "256 KiB", "262144 byte",
                     "Conflicts between references", "the book stores 80 GiB", "MIG: up to 7 instances"):
        assert fragment in text, fragment
    assert not dock.buttons["Delete"].isEnabled()  # shipped
    assert dock.buttons["Edit…"].isEnabled() and dock.buttons["Duplicate…"].isEnabled()


def test_detail_html_marks_unknown_and_unsourced_figures(repository):
    device = repository.get(H100)
    html = device_html(replace(device, price=None, price_date=None))  # the H100 now carries a dated street price
    assert f"<td>Purchase price</td><td>{DASH}</td>" in html
    assert "no source" not in html
    assert "<i>no source</i>" in device_html(replace(device, tdp=Cited(500.0, "500 W")))


def test_selecting_a_compared_device_focuses_it(dock, workspace):
    workspace.select_devices([H100, "google-tpu-v4"])
    dock.select_device("google-tpu-v4")
    assert workspace.focused_device == "google-tpu-v4"


def test_model_disconnects_from_the_workspace_when_destroyed(qtbot, workspace, repository):
    dock = CatalogDock(workspace, repository)
    before = len(workspace.changed)
    dock.deleteLater()
    qtbot.waitUntil(lambda: len(workspace.changed) < before)
    workspace.select_devices([H100])  # no callback into a deleted model


# ------------------------------------------------------------------------------------ import / export
def drive(dock, path="", confirm=True):
    calls = []
    dock.choose_file = lambda title, save: calls.append(("file", title, save)) or str(path)
    dock.confirm = lambda title, question: calls.append(("confirm", title, question)) or confirm
    dock.show_error = lambda title, message: calls.append(("error", title, message))
    return calls


@pytest.mark.parametrize("suffix", [".yaml", ".json", ".csv"])
def test_export_the_shown_devices_and_import_them_elsewhere(dock, tmp_path, suffix, qtbot):
    path = tmp_path / f"h100{suffix}"
    dock.filter_bar.search.setText("h100")
    calls = drive(dock, path)
    assert dock.export_catalog() == 2
    assert calls[0] == ("file", "Export the 2 devices shown", True)
    other = open_catalog("sqlite://", seed=False)  # an empty catalog
    try:
        ws = Workspace(lookup=lambda ids: other.devices(ids))
        target = CatalogDock(ws, other)
        qtbot.addWidget(target)
        drive(target, path)
        assert target.model.rowCount() == 0
        assert sorted(target.import_catalog()) == ["nvidia-h100-pcie", H100]
        assert target.model.rowCount() == 2 and cell(target, H100, "bandwidth") == "3,350"
        assert other.get(H100) == replace(dock.repository.get(H100), origin="user")
    finally:
        other.engine.dispose()


def test_import_over_existing_devices_asks_before_replacing(dock, repository, workspace, tmp_path):
    data = device_to_dict(repository.get(H100))
    data["tdp"] = "650 W"
    path = tmp_path / "h100.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    workspace.select_devices([H100])
    calls = drive(dock, path, confirm=False)
    assert dock.import_catalog() == ()
    assert calls[-1][0] == "confirm" and H100 in calls[-1][2]
    assert repository.get(H100).tdp.value == 700.0
    calls = drive(dock, path, confirm=True)
    assert dock.import_catalog() == (H100,)
    assert repository.get(H100).tdp.value == 650.0
    assert cell(dock, H100, "tdp") == "650" and cell(dock, H100, "origin") == "shipped (edited)"
    assert workspace.devices[0].tdp.value == 650.0  # the compared device is re-analyzed


def test_a_bad_import_is_shown_and_imports_nothing(dock, repository, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("- {id: good-one, name: Good, vendor: X, kind: npu, tdp: 5 W}\n"
                    "- {id: bad-one, name: Bad, vendor: X, kind: npu, tdp: 3.35 kg}\n", encoding="utf-8")
    count = repository.count()
    calls = drive(dock, path)
    assert dock.import_catalog() == ()
    kind, title, message = calls[-1]
    assert (kind, title) == ("error", "Import failed")
    assert "Nothing was imported" in message and "devices[1]: bad-one: tdp:" in message
    assert "[mass]" in message
    assert repository.count() == count and "good-one" not in repository.ids()


def test_cancelled_file_dialogs_do_nothing(dock):
    drive(dock, "")
    assert dock.import_catalog() == () and dock.export_catalog() == 0


def test_clicking_the_check_box_and_space_compare_devices(dock, workspace, qtbot):
    dock.show()
    qtbot.waitExposed(dock)
    first, second = dock.proxy.device_id(0), dock.proxy.device_id(1)
    rect = dock.table.visualRect(dock.proxy.index(0, 0))
    qtbot.mouseClick(dock.table.viewport(), Qt.MouseButton.LeftButton,
                     pos=QPoint(rect.left() + 12, rect.center().y()))
    assert workspace.device_ids == (first,)
    dock.table.setCurrentIndex(dock.proxy.index(1, 0))
    qtbot.keyClick(dock.table, Qt.Key.Key_Space)
    assert workspace.device_ids == (first, second)
    workspace.undo()
    assert workspace.device_ids == (first,)


def test_ticking_a_device_with_the_mouse_shows_it_in_the_detail_pane(qtbot, dock, workspace):
    """Issue 24: a click on a row's box ticked it but left the detail pane on the previous device."""
    dock.show()
    qtbot.waitExposed(dock)
    first, other = dock.proxy.device_id(0), dock.proxy.device_id(3)
    dock.select_device(first)
    index = dock.proxy.index(3, COLUMN_INDEX["compare"])
    rect = dock.table.visualRect(index)
    style = dock.table.style()
    option = QStyleOptionViewItem()
    option.rect = rect
    option.features |= QStyleOptionViewItem.ViewItemFeature.HasCheckIndicator
    box = style.subElementRect(QStyle.SubElement.SE_ItemViewItemCheckIndicator, option, dock.table)
    qtbot.mouseClick(dock.table.viewport(), Qt.MouseButton.LeftButton, pos=box.center())
    assert workspace.device_ids == (other,)
    assert dock.current_id() == other and dock.detail.device is not None and dock.detail.device.id == other
