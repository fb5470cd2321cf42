"""AssumptionEditors: one set of precision, batch, sequence length and phase editors, used by the toolbar and
the model settings; both follow the workspace and each edit is one named, undoable command."""

from __future__ import annotations

from dataclasses import replace

from explorer.core.session.commands import SetModel
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.templates import get_template
from explorer.ui.builder import ModelSettings
from explorer.ui.panels import AnalysisControls


def test_toolbar_and_settings_edit_the_same_assumptions(qtbot):
    ws = Workspace(get_template("gpt2").build(), lookup=lambda ids: [], assumptions=Assumptions(precision="fp16"))
    toolbar, settings = AnalysisControls(ws), ModelSettings(ws)
    qtbot.addWidget(toolbar)
    qtbot.addWidget(settings)
    assert toolbar.precision.currentText() == "fp16" and settings.precision.currentText().startswith("fp16 (2")
    toolbar.batch.setValue(4)
    assert ws.assumptions.batch == 4 and settings.batch.value() == 4 and ws.stack.undo_text == "set batch 4"
    settings.phase.activated.emit(1)
    assert ws.assumptions.phase == "decode" and toolbar.phase.currentText() == "decode"
    toolbar.precision.setCurrentText("int8")
    assert ws.assumptions.precision == "int8" and settings.precision.currentData() == "int8"
    settings.seq_len.setValue(512)
    assert ws.assumptions.seq_len == 512 and toolbar.seq_len.value() == 512
    ws.undo()
    ws.undo()
    assert toolbar.seq_len.value() == settings.seq_len.value() == 0
    assert toolbar.precision.currentText() == "fp16" and settings.precision.currentData() == "fp16"
    tokens = ws.model.input_dict["tokens"]
    assert settings.seq_len.text() == f"model ({tokens})" and toolbar.seq_len.text() == "model's"
    # a model without tokens takes no sequence length: both editors say so
    ws.execute(SetModel(replace(ws.model, input=(("features", 512),))))
    assert not toolbar.seq_len.isEnabled() and not settings.seq_len.isEnabled()


def test_quantization_and_kv_cache_editors_set_the_tensors_formats(qtbot):
    ws = Workspace(get_template("llama2-7b").build(), lookup=lambda ids: [], assumptions=Assumptions())
    toolbar, settings = AnalysisControls(ws), ModelSettings(ws)
    qtbot.addWidget(toolbar)
    qtbot.addWidget(settings)
    bar, full = toolbar.editors, settings.run
    assert bar.quantization.currentText() == "none" and bar.kv_cache.currentText() == "precision"
    assert "Quantization" in [label for label, _ in full.rows()]
    bar.quantization.setCurrentText("w4a16")
    a = ws.assumptions
    assert (a.weights, a.activations, a.kv_cache) == ("int4-g128", "fp16", None)
    assert ws.stack.undo_text == "set weights int4-g128, activations fp16"
    assert full.quantization.currentText() == "w4a16 (w int4-g128 4.125 bits, a fp16 16 bits)"
    full.kv_cache.setCurrentIndex(full.kv_cache.findText("fp8 8 bits"))
    assert ws.assumptions.kv_cache == "fp8" and bar.kv_cache.currentText() == "fp8"
    # formats no entry names (a project, the CLI) show as a custom entry, and picking a preset replaces it
    ws.set_assumptions(weights="int4-g64", activations=None)
    assert bar.quantization.currentText() == "custom: w int4-g64, a =" and full.quantization.count() == 7 + 1
    full.quantization.setCurrentText("none")
    assert (ws.assumptions.weights, ws.assumptions.activations) == (None, None)
    assert full.quantization.count() == 7 and ws.stack.undo_text == "set weights precision"
    ws.undo()
    ws.undo()
    ws.undo()
    assert bar.kv_cache.currentText() == "precision" and ws.assumptions.weights == "int4-g128"


def test_the_status_bar_sizes_the_memory_in_the_tensors_formats(qtbot):
    from explorer.ui.status_bar import ModelTotalsLabel

    ws = Workspace(get_template("llama2-7b").build(), lookup=lambda ids: [], assumptions=Assumptions())
    label = ModelTotalsLabel(ws)
    qtbot.addWidget(label)
    fp16 = label.totals.weight_bytes
    assert label.text().endswith("(fp16)")
    ws.set_assumptions(weights="int4-g128")
    assert label.totals.weight_bytes == fp16 * 4.125 / 16
    assert label.text().endswith("(w int4-g128, a fp16, kv fp16)")


def test_model_settings_choose_how_attention_runs_and_the_lm_head(qtbot):
    """The model settings (not the toolbar) show the attention and LM-head combos; each pick is one undoable
    command and the combos follow undo."""
    ws = Workspace(get_template("gpt2").build(), lookup=lambda ids: [])
    toolbar, settings = AnalysisControls(ws), ModelSettings(ws)
    qtbot.addWidget(toolbar)
    qtbot.addWidget(settings)
    labels = [label for label, _ in settings.run.rows()]
    assert labels[-2:] == ["Attention", "LM head"] and "Attention" not in [x for x, _ in toolbar.editors.rows()]
    # the defaults: naive attention, the LM head on the last position (serving)
    assert settings.run.attention.currentIndex() == 0 and settings.run.lm_head.currentText() == "last position"
    settings.run.attention.setCurrentIndex(1)
    assert ws.assumptions.attention == "fused" and ws.stack.undo_text == "set attention fused"
    settings.run.lm_head.setCurrentIndex(settings.run.lm_head.findText("every position"))
    assert ws.assumptions.lm_head == "all" and ws.context.lm_head == "all"
    ws.undo()
    ws.undo()
    assert ws.assumptions == Assumptions() and settings.run.attention.currentIndex() == 0
    assert settings.run.lm_head.currentText() == "last position"
