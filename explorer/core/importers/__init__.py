"""Importers: every file format the app reads into a workspace, in one registry (``docs/importers.md``).

>>> from explorer.core.importers import load, find_importer, file_filter
>>> load("resnet18.onnx").value                      # a Model (ONNX: sniffed from the content)
>>> load("trace.csv", kind="trace", clock_hz="800 MHz").value   # a Trace
>>> find_importer("trace.json").name                 # 'chrome'

Importing this package does not import ``onnx``: loaders are imported when a file is loaded. Entry names
(``model_file``, ``onnx``, ``hf_config``, ``chrome``, ``nsight``, ``torq_trace``, ``torq_runtime``, ``torq_annotated``) are
stable ids.
"""

from __future__ import annotations

from explorer.core.importers.builtin import register_builtin
from explorer.core.importers.registry import (
    KINDS,
    Imported,
    Importer,
    ImporterError,
    accepted_formats,
    file_filter,
    find_importer,
    importers,
    load,
    register,
    suffixes,
    unregister,
)

__all__ = [
    "KINDS", "Imported", "Importer", "ImporterError", "accepted_formats", "file_filter", "find_importer",
    "importers", "load", "register", "suffixes", "unregister",
]

register_builtin()
