"""The main window as assembled: docks, menus, title with the file and unsaved mark, status bar totals,
persisted layout, preferences, About box, and the app's first start (catalog created and seeded)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QRect, QSettings
from PySide6.QtWidgets import QApplication, QDockWidget, QMessageBox, QWidget

from explorer import __version__
from explorer.core.session.workspace import Workspace
from explorer.core.settings import Preferences, default_path
from explorer.core.workload.templates import TEMPLATES
from explorer.store.engine import default_database_path
from explorer.ui.app import build_window, device_lookup
from explorer.ui.builder import LayerStackView
from explorer.ui.dialogs import PreferencesDialog, about_text, catalog_source_counts
from explorer.ui.main_window import MainWindow
from explorer.ui.panels import PANELS

GPT2_PARAMS = 124_439_808  # Hugging Face gpt2: 124,439,808 parameters (the LM head is tied to the embedding)



@pytest.fixture
def window(qtbot, shared_repository, monkeypatch):
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)
    win = MainWindow(Workspace(lookup=device_lookup(shared_repository)), shared_repository)
    qtbot.addWidget(win)
    return win


def test_the_window_assembles_builder_catalog_and_every_panel(window):
    assert isinstance(window.centralWidget(), LayerStackView)
    titles = {d.windowTitle() for d in window.findChildren(QDockWidget)}
    assert {"Layer palette", "Properties", "Device catalog"} <= titles
    assert all(any(t.startswith(cls.title) for t in titles) for cls in PANELS)  # "Roofline — ideal model"
    assert len(window.panel_docks) == len(PANELS)
    menus = [a.text() for a in window.menuBar().actions()]
    assert menus == ["&File", "&Edit", "&View", "&Help"]
    file_menu = [a.text() for a in window.menuBar().actions()[0].menu().actions() if a.text()]
    assert file_menu == ["&New", "New from &Template", "&Open\u2026", "Open &Recent", "&Save", "Save &As\u2026",
                         "&Export Report\u2026", "Import &Model\u2026", "Import &Trace\u2026", "Import &Catalog\u2026",
                         "Export Catal&og\u2026", "&Preferences\u2026", "&Quit"]
    templates = [a.text() for a in window.actions.template_menu.actions()]
    assert templates == [t.title for t in TEMPLATES.values()]
    docks_menu = [a.text() for a in window.actions.docks_menu.actions()]
    assert "Device catalog" in docks_menu and "Layer palette" in docks_menu
    assert {"Procurement planner", "Calculators", "Trace"} <= set(docks_menu)


def test_only_the_analysis_tab_on_screen_draws_others_when_chosen(window, qtbot):
    window.show()
    qtbot.waitExposed(window)
    window.panel_docks[0].raise_()
    shown, behind = (d.widget() for d in window.panel_docks[:2])
    qtbot.waitUntil(lambda: not shown.pending)
    window.actions.templates["gpt2"].trigger()
    window.workspace.select_devices(["nvidia-h100-sxm5"])
    qtbot.waitUntil(lambda: not shown.pending)
    drawn = (shown.redraws, behind.redraws)
    window.workspace.set_assumptions(batch=4)
    qtbot.waitUntil(lambda: shown.redraws == drawn[0] + 1)
    assert behind.redraws == drawn[1] and not behind.pending  # a tab behind another draws for nobody
    window.panel_docks[1].raise_()  # choosing its tab brings it up to date
    qtbot.waitUntil(lambda: behind.redraws == drawn[1] + 1)
    assert "batch 4" in behind.per_layer.plot_title.text


def test_title_shows_the_file_and_unsaved_changes(window, tmp_path):
    ws = window.workspace
    assert window.windowTitle() == "Untitled \u2014 Hardware Explorer"
    window.actions.templates["gpt2"].trigger()
    assert ws.model.name == "GPT-2 (124M)" and window.windowTitle() == "Untitled \u2014 Hardware Explorer"
    ws.select_devices(["nvidia-h100-sxm5", "nvidia-a100-sxm4-80gb", "google-tpu-v5e"])
    assert window.windowTitle() == "Untitled* \u2014 Hardware Explorer"
    assert window.controller.save_as(tmp_path / "cmp.hwproj")
    assert window.windowTitle() == "cmp.hwproj \u2014 Hardware Explorer"
    ws.set_assumptions(batch=4)
    assert window.windowTitle() == "cmp.hwproj* \u2014 Hardware Explorer"
    window.actions.undo.trigger()  # back to what is on disk
    assert window.windowTitle() == "cmp.hwproj \u2014 Hardware Explorer"
    assert [d.id for d in ws.devices] == ["nvidia-h100-sxm5", "nvidia-a100-sxm4-80gb", "google-tpu-v5e"]
    assert ws.analysis is not None and ws.analysis.devices.ids == tuple(ws.device_ids)


def test_status_bar_totals_for_gpt2(window):
    window.new_from_template("gpt2")
    totals = window.totals.totals
    assert totals.params == GPT2_PARAMS
    s, d, layers = 1024, 768, 12
    assert totals.weight_bytes == 2 * GPT2_PARAMS
    assert totals.kv_cache_bytes == layers * 2 * s * d * 2  # K and V per layer, fp16
    # The largest row's activations: with the LM head on the last position (the default, as serving engines run
    # it) the head moves 768 + 50257 elements, and the peak is the naive softmax's scores in and out: 12 heads x
    # 1024 x 1025 / 2 causal entries each way = 2 x 6,297,600 elements x 2 B = 25,190,400 B.
    assert totals.activation_peak_bytes == 2 * 12 * s * (s + 1) // 2 * 2 == 25_190_400
    # 248,879,616 (weights) + 37,748,736 (KV cache) + 25,190,400 = 311,818,752 B. (With the head on every
    # position the peak is the head's input and logits, (1024 x 768 + 1024 x 50257) x 2 B, and the total
    # 391,127,552 B: see test_status_bar_memory_with_the_lm_head_on_every_position.)
    assert totals.memory_bytes == 311_818_752
    macs = layers * (s * d * (3 * d + d + 4 * d + 4 * d) + 2 * 12 * s * (s + 1) // 2 * 64) + d * 50257
    assert 2 * macs <= totals.flops < 2 * macs * 1.01  # plus norms, softmax, GELU, biases, residuals
    assert window.totals.text() == (f"Params 124.4 M \u00b7 {totals.flops / 1e9:,.2f} GFLOP \u00b7 "
                                    "Memory 312 MB (fp16)")
    view_model = window.layer_view.stack_model
    assert view_model.index(1, 5).data() == f"{layers * (macs - d * 50257) / layers / 1e9:.4g} G"
    assert view_model.index(3, 5).data() == "38.6 M"  # 768 x 50257 = 38,597,376 MACs: one position
    window.workspace.set_assumptions(precision="fp32")
    assert window.totals.text().endswith("Memory 624 MB (fp32)")  # 2 x 311,818,752 B
    assert "weights 498 MB" in window.totals.toolTip()


def test_status_bar_memory_with_the_lm_head_on_every_position(window):
    """GPT-2 prefill of 1024 tokens, fp16, with the LM head on every position (training, scoring): the largest
    row's activations are the head's input and logits, (1024 x 768 + 1024 x 50257) x 2 B = 104,499,200 B, and the
    memory 248,879,616 (weights) + 37,748,736 (KV cache) + 104,499,200 = 391,127,552 B."""
    window.new_from_template("gpt2")
    window.workspace.set_assumptions(lm_head="all")
    totals = window.totals.totals
    s, d = 1024, 768
    assert totals.activation_peak_bytes == (s * d + s * 50257) * 2 == 104_499_200
    assert totals.memory_bytes == 391_127_552
    assert window.totals.text().endswith("Memory 391 MB (fp16)")
    assert window.layer_view.stack_model.index(3, 5).data() == "39.52 G"  # 1024 x 768 x 50257 MACs


def test_status_bar_shows_the_active_parameters_of_a_mixture_of_experts(window):
    """Mixtral 8x7B: 46,702,792,704 parameters, 12,879,925,248 used per token (test_moe_templates works both out)."""
    window.new_from_template("mixtral-8x7b")
    totals = window.totals.totals
    assert (totals.params, totals.active_params) == (46_702_792_704, 12_879_925_248)
    assert window.totals.text().startswith("Params 46.7 G (12.88 G active) \u00b7 ")
    assert "Active per token (a mixture of experts' top-k): 12,879,925,248" in window.totals.toolTip()
    window.new_from_template("gpt2")
    assert "active" not in window.totals.text() and "Active" not in window.totals.toolTip()


def test_status_bar_counts_layers_that_do_not_fit(window):
    window.new_from_template("resnet50")
    from dataclasses import replace

    from explorer.core.session.commands import SetModel

    ws = window.workspace
    ws.execute(SetModel(replace(ws.model, input=(("features", 512),))))
    assert window.totals.text().startswith("\u26a0 ") and "do not fit" in window.totals.text()


def test_window_geometry_and_docks_persist(qtbot, shared_repository, window):
    window.resize(640, 480)  # within the offscreen screen (800 x 600)
    window.findChild(QDockWidget, "palette_dock").hide()
    window.save_layout()
    assert QSettings().value("window/state") is not None
    again = MainWindow(Workspace(), shared_repository)
    qtbot.addWidget(again)
    assert (again.size().width(), again.size().height()) == (640, 480)
    assert again.findChild(QDockWidget, "palette_dock").isHidden()
    again.reset_layout()
    assert not again.findChild(QDockWidget, "palette_dock").isHidden()


def test_preferences_dialog_round_trip(qtbot):
    prefs = Preferences(default_precision="bf16", electricity_usd_per_kwh=0.2, pue=1.4, years=5, utilization=0.75)
    dialog = PreferencesDialog(prefs)
    qtbot.addWidget(dialog)
    assert dialog.preferences() == prefs.checked()
    assert not dialog.currency.isEnabled() and "US dollars" in dialog.currency.toolTip()
    dialog.pue.setValue(1.1)
    dialog.precision.setCurrentIndex(1)
    assert dialog.preferences().pue == 1.1 and dialog.preferences().default_precision == "fp32"


def test_applying_preferences_to_the_open_project_is_undoable(window):
    ws = window.workspace
    assert window.apply_preferences(Preferences(pue=1.6, years=2.0), to_project=True)
    assert ws.assumptions.pue == 1.6 and ws.assumptions.years == 2.0 and default_path().exists()
    ws.undo()
    assert ws.assumptions.pue == 1.3


def test_about_names_the_version_and_the_data_sources(shared_repository):
    devices, sources = catalog_source_counts(shared_repository)
    assert devices == shared_repository.count() and sources > 10
    text = about_text(devices, sources)
    assert __version__ in text and f"{devices} devices citing {sources} sources" in text
    assert "Horowitz" in text and "ISSCC 2014" in text and "Machine Learning Systems" in text
    assert "not available" in about_text(None, None)


def test_first_start_creates_and_seeds_the_catalog(qtbot, monkeypatch):
    monkeypatch.delenv("HWEXPLORER_DB", raising=False)
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)
    assert not default_database_path().exists()
    window = build_window()
    qtbot.addWidget(window)
    assert default_database_path().exists()
    assert window.repository.count() == len(window.repository.ids()) > 30
    assert window.catalog_dock is not None and window.catalog_dock.model.rowCount() == window.repository.count()
    window.repository.engine.dispose()


def test_a_corrupt_preferences_file_is_reported_not_fatal(qtbot, monkeypatch):
    monkeypatch.setenv("HWEXPLORER_DB", "sqlite://")
    default_path().parent.mkdir(parents=True)
    default_path().write_text("{oops")
    window = build_window()
    qtbot.addWidget(window)
    assert window.preferences == Preferences()
    assert "using the default preferences" in window.statusBar().currentMessage()
    window.repository.engine.dispose()


def test_palette_double_click_inserts_after_the_selection(window):
    window.new_from_template("gpt2")
    window.layer_view.select_layers((0,))
    tree = window.palette.tree
    tree.itemActivated.emit(tree.item_for("layernorm"), 0)
    assert [s.kind for s in window.workspace.model.layers][:3] == ["embedding", "layernorm", "transformer_block"]
    assert window.layer_view.selected_layers() == (1,)
    assert window.properties.currentIndex() == 1  # the inspector shows the new layer
    assert window.inspector.title.text().startswith("<b>layernorm_1</b>")


def test_qt_gui_thread_pool_is_off_on_two_cpus_only():
    from explorer.ui.app import configure_qt_environment

    small, large, chosen = {}, {}, {"QT_NO_GUI_THREADPOOL": "0"}
    configure_qt_environment(small, cpus=2)
    configure_qt_environment(large, cpus=8)
    configure_qt_environment(chosen, cpus=1)
    assert small == {"QT_NO_GUI_THREADPOOL": "1"} and large == {} and chosen == {"QT_NO_GUI_THREADPOOL": "0"}


def test_the_window_fits_a_1280_by_800_laptop_screen(window, qtbot):
    """Every analysis panel is tabbed in one dock area, so the widest panel sets the window's minimum width: it
    must fit a 1280 x 800 laptop screen (the panels' one-line header rows made it 1,578 px; they now wrap)."""
    window.show()
    qtbot.waitExposed(window)
    hint = window.minimumSizeHint()
    assert hint.width() <= 1280 and hint.height() <= 800


def test_at_1280_by_800_every_panel_shows_its_header_controls_whole(window, qtbot):
    """In a 1280 x 800 window each analysis panel's header rows wrap: every control is inside the panel, at least
    its minimum width, and overlaps no other."""
    from PySide6.QtWidgets import QAbstractButton, QAbstractSpinBox, QComboBox, QLabel, QLineEdit

    window.show()
    qtbot.waitExposed(window)
    window.resize(1280, 800)
    for dock in window.panel_docks:
        dock.raise_()
        panel = dock.widget()
        qtbot.waitUntil(lambda p=panel: p.isVisible() and p.width() > 0)
        QApplication.processEvents()
        assert window.width() <= 1280
        kinds = (QAbstractButton, QAbstractSpinBox, QComboBox, QLabel, QLineEdit)
        shown = [w for w in panel.findChildren(QWidget) if isinstance(w, kinds) and w.isVisibleTo(panel)
                 and not w.objectName().startswith("qt_") and not _in_body(w, panel)]  # qt_: a spin box's own editor
        assert shown, dock.windowTitle()
        rects = [(w, QRect(w.mapTo(panel, QPoint(0, 0)), w.size())) for w in shown]
        for w, r in rects:
            assert panel.rect().contains(r), (dock.windowTitle(), type(w).__name__, r, panel.rect())
            assert r.width() >= min(w.minimumSizeHint().width(), w.sizeHint().width()), (dock.windowTitle(), w)
        for i, (a, ra) in enumerate(rects):
            for b, rb in rects[i + 1:]:
                if not (a.isAncestorOf(b) or b.isAncestorOf(a)):
                    assert not ra.intersects(rb), (dock.windowTitle(), type(a).__name__, type(b).__name__)


def _in_body(widget, panel) -> bool:
    """Inside the panel's scrolling body (charts, tables: not the header rows) or a popup."""
    body = getattr(panel, "scroll", None)
    return (body is not None and body.isAncestorOf(widget)) or widget.window() is not panel.window()
