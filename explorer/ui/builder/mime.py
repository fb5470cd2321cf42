"""The builder's drag-and-drop payloads, encoded and decoded here and nowhere else.

Drags carry keys, not objects:

* ``application/x-hwexplorer-layer-kind``: a layer kind from the palette, ``{"kind": "conv2d"}``;
* ``application/x-hwexplorer-layer-rows``: top-level rows of the layer stack being reordered,
  ``{"rows": [2, 5]}`` (only ever dropped with ``MoveAction`` on the same stack).
"""

from __future__ import annotations

import json

from PySide6.QtCore import QMimeData

from explorer.core.workload.layers import REGISTRY

LAYER_KIND = "application/x-hwexplorer-layer-kind"
LAYER_ROWS = "application/x-hwexplorer-layer-rows"


def encode_kind(kind: str) -> QMimeData:
    if kind not in REGISTRY:
        raise ValueError(f"kind: unknown layer kind {kind!r}")
    mime = QMimeData()
    mime.setData(LAYER_KIND, json.dumps({"kind": kind}).encode("utf-8"))
    mime.setText(kind)
    return mime


def decode_kind(mime: QMimeData | None) -> str | None:
    """The layer kind a palette drag carries, or None when the data is not a (known) kind."""
    data = _payload(mime, LAYER_KIND)
    kind = data.get("kind") if isinstance(data, dict) else None
    return kind if isinstance(kind, str) and kind in REGISTRY else None


def encode_rows(rows) -> QMimeData:
    mime = QMimeData()
    mime.setData(LAYER_ROWS, json.dumps({"rows": sorted({int(r) for r in rows})}).encode("utf-8"))
    return mime


def decode_rows(mime: QMimeData | None) -> tuple[int, ...] | None:
    """The top-level rows an internal drag carries, or None when the data is not a row list."""
    data = _payload(mime, LAYER_ROWS)
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows or not all(isinstance(r, int) and r >= 0 for r in rows):
        return None
    return tuple(rows)


def _payload(mime: QMimeData | None, fmt: str):
    if mime is None or not mime.hasFormat(fmt):
        return None
    try:
        return json.loads(bytes(mime.data(fmt).data()).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
