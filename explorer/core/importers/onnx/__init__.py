"""The ONNX importer: a graph read, folded and mapped onto layers (docs/onnx-import.md)."""
