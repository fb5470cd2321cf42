"""A Hugging Face config.json, or the model folder holding it, dropped on the main window or opened with File ->
Import Model becomes an editable model (blocks x N) as one undoable edit, through the importer registry
(docs/hf-config.md); an unsupported family is reported and changes nothing (synthetic drag and drop events, as in
test_drop_import.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from PySide6.QtWidgets import QMessageBox
from test_drop_import import drop  # the same synthetic drag and drop

from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.layers import Context
from explorer.core.workload.model import build_table
from explorer.ui.app import device_lookup
from explorer.ui.main_window import MainWindow

HF = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"


@pytest.fixture
def window(qtbot, shared_repository, monkeypatch):
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)
    ws = Workspace(lookup=device_lookup(shared_repository), assumptions=Assumptions(precision="bf16"))
    win = MainWindow(ws, shared_repository)
    qtbot.addWidget(win)
    win.new_from_template("resnet50")
    return win


def test_a_dropped_config_json_becomes_an_editable_model(window, tmp_path):
    ws, before = window.workspace, window.workspace.model
    path = tmp_path / "config.json"
    shutil.copyfile(HF / "qwen2.5-7b-instruct.json", path)
    assert drop(window, path).isAccepted()
    model = ws.model
    assert [(layer.kind, layer.name, layer.repeat) for layer in model.layers] == [
        ("embedding", "embed_tokens", 1), ("transformer_block", "layers", 28), ("rmsnorm", "norm", 1),
        ("dense", "lm_head", 1)]
    assert model.layers[1].params["qkv_bias"] is True and model.layers[1].params["kv_heads"] == 4
    assert build_table(model, Context()).errors == []  # every layer fits: the builder flags none
    assert ws.stack.undo_text == "import config.json"
    box = window.importer.summary  # the non-modal summary lists what was assumed and the ignored fields
    assert box is not None and box.isVisible() and not box.isModal()
    assert "ignored (no effect on the counts)" in box.detailedText() and "input: 4096 tokens" in box.detailedText()
    box.close()
    window.actions.undo.trigger()
    assert ws.model is before


def test_a_dropped_model_folder_and_file_import_model(window, tmp_path):
    folder = tmp_path / "gemma-2-9b"
    folder.mkdir()
    shutil.copyfile(HF / "gemma-2-9b.json", folder / "config.json")
    drop(window, folder)
    window.importer.summary.close()
    model = window.workspace.model
    assert model.name == "gemma-2-9b (bfloat16)"
    assert [(b.name, b.repeat) for b in model.layers if b.kind == "transformer_block"] == [
        ("layers.local", 21), ("layers.global", 21)]
    assert window.importer.import_model(HF / "llama-3.2-1b.json")  # File -> Import Model with a path
    window.importer.summary.close()
    assert window.workspace.model.layers[1].repeat == 16 and window.workspace.model.layers[-1].params["tied"]


def test_an_unsupported_family_is_reported_and_changes_nothing(window, monkeypatch, tmp_path):
    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: shown.append((title, text)))
    monkeypatch.setattr(QMessageBox, "critical", lambda parent, title, text, *a: shown.append((title, text)))
    data = json.loads((HF / "mistral-7b-v0.1.json").read_text()) | {"model_type": "qwen2_moe", "num_experts": 60}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    model, undo = window.workspace.model, window.workspace.stack.can_undo
    drop(window, path)
    assert len(shown) == 1 and ("model_type 'qwen2_moe' needs mixture-of-experts layers with a gated shared expert, "
                                "not supported yet") in shown[0][1]
    assert window.workspace.model is model and window.workspace.stack.can_undo == undo
