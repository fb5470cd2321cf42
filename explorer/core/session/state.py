"""The session's state: one frozen value holding everything an edit can change.

A :class:`State` is the model, the selected device ids, the assumptions, the imported trace, the procurement
planner's requirements (quotes included), the systems the model is sized on (:class:`SystemChoice`), the
training run on them (:class:`TrainingChoice`), the serving workload and the device overrides (a user's edited
figures, :mod:`.device_overrides`). Commands (:mod:`.commands`) map a state to a new one; the workspace
swaps it in one place. Nothing here is mutable, so an old state is a free snapshot for undo. Qt-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from explorer.core.analysis.evaluate import MODELS
from explorer.core.analysis.procurement import Requirements
from explorer.core.parallel.collectives import ALGORITHMS
from explorer.core.parallel.layout import Layout
from explorer.core.files import names
from explorer.core.formats import TENSORS, TensorFormats, check_format
from explorer.core.precision import check_precision
from explorer.core.traces.model import Trace
from explorer.core.workload.layers import ATTENTION, LM_HEAD, PHASES, Context
from explorer.core.workload.model import Model

from .device_overrides import DeviceOverrides, check_overrides
from .named_calibrations import Calibrations
from .serving_choice import ServingChoice
from .training_choice import TrainingChoice

#: The names a command may report as changed, one per part of the state ("layers" and "input" are parts of the
#: model: an edit of the layer list, of the input description).
PARTS = ("model", "layers", "input", "devices", "assumptions", "trace", "requirements", "system", "training",
         "serving")


@dataclass(frozen=True)
class Assumptions:
    """What the analyses assume beyond the model and the devices. Units: USD/kWh, years, fractions."""

    precision: str = "fp16"
    # each tensor's storage format (explorer.core.formats: "int4-g128", "mxfp4"...); None = ``precision``
    weights: str | None = None
    activations: str | None = None
    kv_cache: str | None = None
    batch: int = 1
    seq_len: int | None = None  # None = the model's own token count
    phase: str = "prefill"  # prefill | decode | train (the training step: forward, backward, optimizer)
    electricity_usd_per_kwh: float = 0.12
    pue: float = 1.3
    utilization: float = 0.6  # duty cycle for TCO and cost per million
    years: float = 3.0
    attention: str = "naive"  # naive | fused (FlashAttention): how attention kernels run
    lm_head: str = "last"  # last | all: the positions whose logits prefill computes (last: serving)
    time_model: str = "ideal"  # ideal | calibrated: the times the panels show (docs/calibration.md)

    def checked(self) -> "Assumptions":
        check_precision(self.precision)
        for name in TENSORS:
            v = getattr(self, name)
            if v is not None and (not isinstance(v, str) or check_format(v, name) != v):
                raise ValueError(f"{name}: expected a format name such as 'int4-g128' or null, got {v!r}")
        if self.phase not in PHASES:
            raise ValueError(f"phase: expected {', '.join(PHASES)}, got {self.phase!r}")
        for name, choices in (("attention", ATTENTION), ("lm_head", LM_HEAD), ("time_model", MODELS)):
            if getattr(self, name) not in choices:
                raise ValueError(f"{name}: expected {' or '.join(choices)}, got {getattr(self, name)!r}")
        for name in ("batch",):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}: must be a whole number >= 1, got {v!r}")
        if self.seq_len is not None and (not isinstance(self.seq_len, int) or self.seq_len < 1):
            raise ValueError(f"seq_len: must be a whole number >= 1, got {self.seq_len!r}")
        for name in ("electricity_usd_per_kwh", "pue", "years"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}: must be positive, got {getattr(self, name)!r}")
        if not 0 < self.utilization <= 1:
            raise ValueError(f"utilization: must be in (0, 1], got {self.utilization!r}")
        if self.pue < 1:
            raise ValueError(f"pue: must be at least 1, got {self.pue!r}")
        return self

    @property
    def tensor_formats(self) -> TensorFormats | None:
        """The formats of weights, activations and KV cache; None when all follow ``precision``."""
        if all(getattr(self, t) is None for t in TENSORS):
            return None
        return TensorFormats.of(self.precision, self.weights, self.activations, self.kv_cache)

    @property
    def context(self) -> Context:
        return Context(batch=self.batch, seq_len=self.seq_len, phase=self.phase, attention=self.attention,
                       lm_head=self.lm_head)

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict, where: str = "assumptions") -> "Assumptions":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{where}: unknown keys {names(unknown)}")
        try:
            return cls(**data).checked()
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}.{exc}") from None


OBJECTIVES = ("throughput", "latency", "cost")  # cost: per million tokens, explorer.core.parallel.layout_cost


@dataclass(frozen=True)
class SystemChoice:
    """The systems the model is sized on (catalog system ids, compared side by side), as clusters of ``nodes``,
    under one ``layout`` or, when None, each system's best by ``objective``; and the communication options of
    :class:`explorer.core.parallel.system_pass.Options`. No systems: the Systems view is empty."""

    system_ids: tuple[str, ...] = ()
    nodes: int = 1
    layout: Layout | None = None
    objective: str = "throughput"
    overlap: bool = False
    offload: bool = False
    collective: str = "auto"
    skew: float = 0.0

    def checked(self) -> "SystemChoice":
        if not isinstance(self.system_ids, tuple) or not all(isinstance(i, str) and i for i in self.system_ids):
            raise ValueError(f"system_ids: expected a list of system ids, got {self.system_ids!r}")
        if isinstance(self.nodes, bool) or not isinstance(self.nodes, int) or self.nodes < 1:
            raise ValueError(f"nodes: must be a whole number >= 1, got {self.nodes!r}")
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective: expected throughput, latency or cost, got {self.objective!r}")
        if self.collective not in ALGORITHMS:
            raise ValueError(f"collective: expected one of {', '.join(ALGORITHMS)}, got {self.collective!r}")
        for name in ("overlap", "offload"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}: expected true or false, got {getattr(self, name)!r}")
        if isinstance(self.skew, bool) or not isinstance(self.skew, (int, float)) or not 0 <= self.skew < 1e6:
            raise ValueError(f"skew: must be a number >= 0, got {self.skew!r}")
        if self.layout is not None:
            for name, v in self.layout.to_dict().items():
                if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                    raise ValueError(f"layout.{name}: must be a whole number >= 1, got {v!r}")
        return self

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["system_ids"] = list(self.system_ids)
        out["layout"] = None if self.layout is None else self.layout.to_dict()
        return out

    @classmethod
    def from_dict(cls, data, where: str = "system") -> "SystemChoice":
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected an object, got {data!r:.40}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{where}: unknown keys {names(unknown)}")
        values = dict(data)
        ids = values.get("system_ids", [])
        if not isinstance(ids, list):
            raise ValueError(f"{where}.system_ids: expected a list of system ids, got {ids!r:.40}")
        values["system_ids"] = tuple(ids)
        layout = values.get("layout")
        if layout is not None:
            if not isinstance(layout, dict) or set(layout) - set(Layout().to_dict()):
                raise ValueError(f"{where}.layout: expected an object with tp, pp, ep, dp, microbatches")
            values["layout"] = Layout(**layout)
        try:
            return cls(**values).checked()
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}.{exc}") from None


def default_model() -> Model:
    return Model.make("untitled", {"tokens": 128, "hidden": 768})


@dataclass(frozen=True)
class State:
    """Everything an undoable edit can change. ``trace`` is the imported profiler trace (None: none);
    ``requirements`` the procurement planner's inputs and per-device quotes."""

    model: Model = field(default_factory=default_model)
    device_ids: tuple[str, ...] = ()
    assumptions: Assumptions = field(default_factory=Assumptions)
    trace: Trace | None = None
    requirements: Requirements = field(default_factory=Requirements)
    system: SystemChoice = field(default_factory=SystemChoice)
    training: TrainingChoice = field(default_factory=TrainingChoice)  # the training run (the Training panel)
    serving: ServingChoice | None = None  # the serving workload and service levels (None: not set, the defaults)
    # figures by device id and field that win over the catalog's (.device_overrides): saved with the project
    device_overrides: DeviceOverrides = field(default_factory=dict)
    # named calibrations by device id and the one in use (.named_calibrations): saved with the project
    calibrations: Calibrations = field(default_factory=Calibrations)

    def __post_init__(self):
        object.__setattr__(self, "device_ids", tuple(dict.fromkeys(self.device_ids)))
        object.__setattr__(self, "device_overrides", check_overrides(self.device_overrides))
        self.assumptions.checked()
        self.calibrations.checked()
        self.system.checked()
        self.training.checked()
        if self.serving is not None:
            self.serving.checked()

    def with_(self, **parts) -> "State":
        return replace(self, **parts)
