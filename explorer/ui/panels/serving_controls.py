"""The Serving panel's controls: the workload, the service levels and the engine's settings of the state's serving
part (:class:`~explorer.core.session.serving_choice.ServingChoice`). Each committed edit is one undoable
``SetServing``; an edit the core refuses is not applied and its reason is kept in ``error``."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QObject
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QLabel,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from explorer.core.serving.workload import ARRIVALS, PERCENTILES
from explorer.core.session.commands import SetServing
from explorer.core.session.serving_choice import ServingChoice

from ..widgets.flow_layout import FlowLayout

# (field, label, minimum, maximum, decimals or None for whole numbers, suffix, tooltip)
NUMBERS = (
    ("rate", "Rate", 0.001, 1e6, 3, " req/s", "Arrival rate of requests offered to one replica [requests/s]"),
    ("input_tokens", "Input", 1, 1_000_000, None, " tok", "Prompt length of every request [tokens]"),
    ("output_tokens", "Output", 1, 1_000_000, None, " tok", "Answer length of every request [tokens]"),
    ("max_batch", "Max batch", 1, 65536, None, "", "Sequences in one step (vLLM max_num_seqs) [sequences]"),
    ("memory_utilization", "Mem. util.", 0.05, 1.0, 2, "", ("Share of device memory the engine uses for weights, "
                                                           "activations and KV cache (vLLM gpu_memory_utilization) "
                                                           "[fraction 0-1]")),
    ("block_size", "Block", 1, 4096, None, " tok", "KV-cache block size [tokens per block]"),
    ("chunk", "Chunk", 1, 1_000_000, None, " tok", ("Tokens in a chunked-prefill step, decode tokens "
                                                            "included [tokens]")),
)
SLOS = (("ttft", "TTFT", "Time to first token service level [ms] at the percentile beside it (0: no target)"),
        ("tpot", "TPOT", "Time per output token service level [ms] at the percentile beside it (0: no target)"))


class ServingControls(QObject):
    """The widgets of the serving part in one row (``row``); ``sync`` shows the state's values."""

    def __init__(self, workspace, parent=None):
        super().__init__(parent)
        self.workspace = workspace
        self.error = ""
        self.row = QWidget()  # two lines: the workload and service levels, then the engine's settings
        rows = QVBoxLayout(self.row)
        rows.setContentsMargins(0, 0, 0, 0)
        rows.setSpacing(2)
        first, self.slo_row, self.engine_row = FlowLayout(), FlowLayout(), FlowLayout()  # wrap when narrow
        for line in (first, self.slo_row, self.engine_row):
            line.setSpacing(4)
            rows.addLayout(line)
        lay = first
        self.numbers: dict[str, QSpinBox | QDoubleSpinBox] = {}
        for name, label, lo, hi, decimals, suffix, tip in NUMBERS:
            box = QSpinBox() if decimals is None else QDoubleSpinBox()
            if decimals is not None:
                box.setDecimals(decimals)
            box.setRange(lo, hi)
            box.setSuffix(suffix)
            box.setKeyboardTracking(False)  # one command per committed value, not per keystroke
            box.setToolTip(tip)
            box.valueChanged.connect(lambda v, name=name: self._number(name, v))
            text = QLabel(f"{label}:")
            text.setToolTip(tip)
            if name == "max_batch":
                lay.addStretch(1)
                lay = self.engine_row
            lay.addWidget(text)
            lay.addWidget(box)
            self.numbers[name] = box
            if name == "rate":
                self.arrival = QComboBox()
                self.arrival.addItems(ARRIVALS)
                self.arrival.setToolTip("Arrival process: poisson (exponential gaps) or constant (evenly spaced)")
                self.arrival.activated.connect(lambda i: self.set(arrival=ARRIVALS[i], text="set arrivals"))
                lay.addWidget(self.arrival)
            if name == "output_tokens":
                lay.addStretch(1)
                self._slo_widgets(self.slo_row)
            if name == "block_size":
                self.chunked = QCheckBox("chunked prefill")
                self.chunked.setToolTip("Chunk prompts into the decode steps (vLLM enable_chunked_prefill)")
                self.chunked.toggled.connect(lambda on: self.set(chunked=bool(on), text="chunked prefill"))
                lay.addWidget(self.chunked)
        self.sync()

    def _slo_widgets(self, lay) -> None:
        self.slos: dict[str, tuple[QDoubleSpinBox, QComboBox]] = {}
        for name, label, tip in SLOS:
            box = QDoubleSpinBox()
            box.setDecimals(1)
            box.setRange(0.0, 1e7)
            box.setSuffix(" ms")
            box.setSpecialValueText("none")
            box.setKeyboardTracking(False)
            box.setToolTip(tip)
            box.valueChanged.connect(lambda v, name=name: self._slo(name, v))
            pct = QComboBox()
            pct.addItems([p.upper() for p in PERCENTILES])
            pct.setToolTip(f"The percentile of {label} the service level holds at")
            pct.activated.connect(lambda i, name=name: self.set(**{f"{name}_pct": list(PERCENTILES)[i]},
                                                              text=f"set the {name.upper()} percentile"))
            text = QLabel(f"{label}:")
            text.setToolTip(tip)
            lay.addWidget(text)
            lay.addWidget(pct)
            lay.addWidget(box)
            self.slos[name] = (box, pct)

    @property
    def choice(self) -> ServingChoice:
        s = self.workspace.state.serving
        return s if s is not None else ServingChoice()

    # -- edits: one SetServing each
    def set(self, text: str = "edit serving workload", **changes) -> None:
        old = self.choice
        try:
            new = replace(old, **changes)
            if new == old and self.workspace.state.serving is not None:
                return
            self.workspace.execute(SetServing(new, text=text))
            self.error = ""
        except ValueError as exc:
            self.error = f"Not applied: {exc}"
            self.sync()

    def _number(self, name: str, value) -> None:
        v = float(value) if isinstance(self.numbers[name], QDoubleSpinBox) else int(value)
        self.set(**{name: v}, text=f"set {name.replace('_', ' ')}")

    def _slo(self, name: str, ms: float) -> None:
        self.set(**{name: (ms / 1e3 if ms > 0 else None)}, text=f"set the {name.upper()} service level")

    # -- following the state
    def sync(self) -> None:
        c = self.choice
        widgets = [*self.numbers.values(), self.arrival, self.chunked,
                   *(w for pair in self.slos.values() for w in pair)]
        for w in widgets:
            w.blockSignals(True)
        try:
            for name, box in self.numbers.items():
                box.setValue(getattr(c, name))
            self.arrival.setCurrentIndex(ARRIVALS.index(c.arrival))
            self.chunked.setChecked(c.chunked)
            self.numbers["chunk"].setEnabled(c.chunked)
            for name, (box, pct) in self.slos.items():
                value = getattr(c, name)
                box.setValue(0.0 if value is None else value * 1e3)
                pct.setCurrentIndex(list(PERCENTILES).index(getattr(c, f"{name}_pct")))
        finally:
            for w in widgets:
                w.blockSignals(False)
