"""Small helpers shared by the device editor's forms: choice boxes and figures in device-file form."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from PySide6.QtWidgets import QComboBox

NONE = "—"


def combo(options: Iterable[str], current: str | None, allow_none: bool = False) -> QComboBox:
    """A combo box of ``options`` (item data = the option; ``NONE`` with data None first if allowed)."""
    box = QComboBox()
    if allow_none:
        box.addItem(NONE, None)
    for option in options:
        box.addItem(option, option)
    box.setCurrentIndex(max(0, box.findData(current)))
    return box


def cited_text(raw: Any) -> str:
    """The text of a figure as written in device-dict form (``"312 TFLOP/s"`` or ``{value: ...}``)."""
    if raw is None:
        return ""
    value = raw.get("value") if isinstance(raw, dict) else raw
    return "" if value is None else str(value)


def merge_cited(old: Any, text: str, count: bool = False) -> Any:
    """New device-dict value of a figure: None if empty, the old one (with its source) if the text is
    unchanged, else the new text (a whole number for counts)."""
    if not text:
        return None
    if old is not None and cited_text(old) == text:
        return old
    if count:
        return int(float(text.replace(",", "")))
    return text
