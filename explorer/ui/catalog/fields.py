"""Small helpers shared by the catalog's device and system editors: choice boxes, figures in file form, and
the identity checks and problem list every editor shows."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from PySide6.QtWidgets import QComboBox, QLabel, QPushButton

from explorer.core.hardware.device_file import ID_PATTERN

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


def identity_problems(item_id: str, taken: Iterable[str], name: str, vendor: str) -> list[str]:
    """The id (required, lowercase letters, digits and '-', not taken), name and vendor (required) problems, as
    ``field: reason`` lines."""
    bad = []
    if not item_id:
        bad.append("id: is required")
    elif not ID_PATTERN.fullmatch(item_id):
        bad.append(f"id: '{item_id}' must be lowercase letters, digits and '-'")
    elif item_id in taken:
        bad.append(f"id: '{item_id}' is already in the catalog")
    bad += [f"{label}: is required" for label, text in (("name", name), ("vendor", vendor)) if not text]
    return bad


def show_problems(label: QLabel, ok: QPushButton, bad: list[str], shown: int = 6) -> None:
    """The first ``shown`` problems (and how many more) under the form; OK only when there are none."""
    more = f"\n… {len(bad) - shown} more" if len(bad) > shown else ""
    label.setText("\n".join(bad[:shown]) + more)
    ok.setEnabled(not bad)
