"""DomainsEditor: a system's communication domains as an editable grid, innermost first (the system editor's tab).

One row per domain: name, scope, size, topology, bandwidth with its direction (per direction or bidirectional,
always stated), whose figure it is (each device's or one node's), latency and oversubscription. Figures are
:class:`QuantityEdit` fields ("900 GB/s", "400 Gbit/s", "0.6 us"); a row keeps what the form does not show (the
sources and notes of unchanged figures) from the domain it was made from.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QLineEdit, QPushButton, QWidget

from explorer.core.hardware.device import DIRECTIONS
from explorer.core.hardware.system import PER, SCOPES, TOPOLOGIES
from explorer.ui.catalog.fields import cited_text, combo, merge_cited
from explorer.ui.catalog.rows_editor import RowsEditor
from explorer.ui.widgets.quantity_edit import COUNT, ERROR_STYLE, QuantityEdit

HEADERS = ("Name", "Scope", "Size [devices]", "Topology", "Bandwidth [B/s]", "Direction", "Figure per",
           "Latency [s]", "Oversubscription [x:1]", "")
TIPS = {
    "Bandwidth [B/s]": "Each device's link bandwidth (or one node's, see 'Figure per') with its unit: 900 GB/s, "
                       "400 Gbit/s. Say whether it counts one direction or both in Direction.",
    "Direction": "per_direction: the figure is one direction's; bidirectional: both directions together (the "
                 "model halves it)",
    "Figure per": "device: each device has this bandwidth; node: one node's, shared by its devices",
    "Latency [s]": "Per-message start-up time (alpha), e.g. 0.6 us; empty = unknown (times are then lower bounds)",
    "Oversubscription [x:1]": "2 for a 2:1 oversubscribed network (divides its bandwidth); empty = 1:1",
}


class _DomainRow:
    def __init__(self, editor: DomainsEditor, index: int, domain: dict[str, Any]):
        self.original = dict(domain)
        self.name = QLineEdit(str(domain.get("name", "")))
        self.name.setPlaceholderText("e.g. NVLink 4")
        self.scope = combo(SCOPES, domain.get("scope", "scale_up"))
        self.topology = combo(TOPOLOGIES, domain.get("topology", "switched"))
        self.direction = combo(DIRECTIONS, domain.get("direction", "per_direction"))
        self.per = combo(PER, domain.get("per", "device"))
        where = f"domains[{index}]"
        self.size = QuantityEdit(COUNT, f"{where}.size", str(domain.get("size", "")), inline_error=False)
        self.bandwidth = QuantityEdit("bandwidth", f"{where}.bandwidth", cited_text(domain.get("bandwidth")),
                                      check_range=False, inline_error=False)
        self.latency = QuantityEdit("time", f"{where}.latency", cited_text(domain.get("latency")),
                                    check_range=False, inline_error=False)
        over = domain.get("oversubscription")
        self.oversubscription = QLineEdit("" if over is None else f"{over:g}")
        self.oversubscription.setPlaceholderText("1")
        self.remove = QPushButton("Remove")
        self.remove.setToolTip("Remove this domain")
        for box in (self.scope, self.topology, self.direction, self.per):
            box.currentIndexChanged.connect(editor.changed)
        for line in (self.name, self.oversubscription):
            line.textChanged.connect(editor.changed)
        for edit in (self.size, self.bandwidth, self.latency):
            edit.value_changed.connect(editor.changed)
        self.remove.clicked.connect(lambda: editor.remove_row(self))
        self.renumber(index)

    def widgets(self) -> list[QWidget]:
        return [self.name, self.scope, self.size, self.topology, self.bandwidth, self.direction, self.per,
                self.latency, self.oversubscription, self.remove]

    def renumber(self, index: int) -> None:
        for key in ("size", "bandwidth", "latency"):
            getattr(self, key).field = f"domains[{index}].{key}"
        self.index = index

    def problems(self) -> list[str]:
        out = [] if self.name.text().strip() else [f"domains[{self.index}].name: is required"]
        if self.size.is_empty():
            out.append(f"domains[{self.index}].size: is required")
        out += [f"{e.field}: {e.error()}" for e in (self.size, self.bandwidth, self.latency) if not e.is_valid()]
        text = self.oversubscription.text().strip()
        if text:
            try:
                if not float(text) >= 1:
                    raise ValueError
            except ValueError:
                out.append(f"domains[{self.index}].oversubscription: '{text}' must be a number >= 1 (2 for 2:1)")
        return out

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name.text().strip(), "scope": self.scope.currentData()}
        size = self.size.value()
        if size is not None:
            out["size"] = int(size)
        out["topology"] = self.topology.currentData()
        bandwidth = merge_cited(self.original.get("bandwidth"), self.bandwidth.text())
        if bandwidth is not None:
            out["bandwidth"] = bandwidth
            out["direction"] = self.direction.currentData()
        if self.per.currentData() != "device":
            out["per"] = self.per.currentData()
        latency = merge_cited(self.original.get("latency"), self.latency.text())
        if latency is not None:
            out["latency"] = latency
        text = self.oversubscription.text().strip()
        if text:
            try:
                value = float(text)
            except ValueError:
                value = text  # the file check names the field
            if value != 1.0:
                out["oversubscription"] = value
        return out


class DomainsEditor(RowsEditor):
    """Rows of domains with Add / Remove; :meth:`domains` gives them in system-file form."""

    def __init__(self, domains: list[dict[str, Any]], parent: QWidget | None = None):
        super().__init__(HEADERS, TIPS, "Add domain",
                         "Innermost first: the scale-up domain (NVLink, ICI, PCIe switch), then the scale-out "
                         "network; the outermost holds every device. Empty = unknown.", domains, parent)
        self.grid.setColumnStretch(0, 2)
        self.grid.setColumnStretch(4, 2)
        self._fill()

    def make_row(self, index: int, data: dict[str, Any]) -> _DomainRow:
        return _DomainRow(self, index, data)

    def problems(self) -> list[str]:
        return [p for row in self.rows for p in row.problems()]

    domains = RowsEditor.values


def error_label() -> QLabel:
    label = QLabel()
    label.setStyleSheet(ERROR_STYLE)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label
