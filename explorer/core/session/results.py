"""The results of a state: every analysis the panels, the CLI and the report show, computed on first use.

:data:`DEPENDS` names what each result is computed from: parts of the :class:`~.state.State`
("model", "devices", "assumptions.precision"...), other results ("analysis"), and the arguments a view takes
(the device shown, the layer in focus). A result is kept, across states too, while every one of its inputs is
the same object or an equal scalar, so an edit recomputes only what it touches: a new trace re-places the
measured kernels and nothing else; an electricity price re-costs but does not re-evaluate the model; a
requirement re-plans only. Qt-free.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from .results_serving import DEFAULT_SERVING, ServingResults
from .serving_choice import SURFACE_FIELDS, ServingChoice
from .state import Assumptions, State
from .training_choice import TrainingChoice

if TYPE_CHECKING:
    from explorer.core.analysis.evaluate import ModelAnalysis
    from explorer.core.hardware.device import Device
    from explorer.core.hardware.system import System
    from explorer.core.parallel.comm_roof import CommRoofView
    from explorer.core.parallel.compare import SystemResult
    from explorer.core.parallel.layout_cost import LayoutCost
    from explorer.core.parallel.sizing import SystemPlan

# Each result imports the core that computes it when first asked for (issue 22: the desktop app's first window
# computes none of the serving, systems, training or trace results, and importing their packages cost it ~0.1 s).

#: the fields of the training part its analyses read (all but the tokens, which only re-cost)
TRAINING_FIELDS = tuple(f for f in TrainingChoice.__dataclass_fields__ if f != "tokens")

#: What each result is computed from. Names with a dot are fields of a part of the state; "args" are the
#: arguments of the call (the device shown, the layer in focus...).
DEPENDS: dict[str, tuple[str, ...]] = {
    "arrays": ("devices", "assumptions.precision", "assumptions.weights", "assumptions.activations",
               "assumptions.kv_cache"),
    "evaluation": ("model", "arrays", "assumptions.batch", "assumptions.seq_len", "assumptions.phase",
                   "assumptions.attention", "assumptions.lm_head"),
    # the evaluation as the chosen time model shows it (ideal: the evaluation itself): what every panel reads
    "analysis": ("evaluation", "assumptions.time_model"),
    "cost": ("analysis", "assumptions", "requirements.price", "requirements.cloud_price"),
    "plan": ("analysis", "requirements", "assumptions"),
    "roofline": ("analysis", "args"),
    "energy": ("evaluation", "args"),
    "tiling": ("evaluation", "args"),
    "measured": ("analysis", "trace", "args"),
    "fidelity": ("evaluation", "trace", "args"),  # both time models side by side: not the switch
    "systems": ("model", "hardware", "system", "assumptions.precision", "assumptions.weights",
                "assumptions.activations", "assumptions.kv_cache", "assumptions.batch", "assumptions.seq_len",
                "assumptions.phase", "assumptions.attention", "assumptions.lm_head", "assumptions.time_model"),
    # per device checked: the serving step-time surface and memory (explorer.core.serving.serve.device_setup);
    # the serving part's rate, arrivals and service levels are not inputs, so editing them reuses the surfaces
    "serving_setups": ("model", "devices", "assumptions.precision", "assumptions.weights", "assumptions.activations",
                       "assumptions.kv_cache", *(f"serving.{name}" for name in SURFACE_FIELDS),
                       "assumptions.time_model"),  # the Times switch: the surfaces' step times
    # per device: the analytic serving answer (estimate at the rate, load curve) under the state's serving part
    "serving": ("serving_setups", *(f"serving.{f.name}" for f in fields(ServingChoice))),
    # per device: the fewest replicas meeting the serving part's service levels at its rate, and their cost
    "serving_fleet": ("serving_setups", *(f"serving.{f.name}" for f in fields(ServingChoice)), "requirements.price",
                      "assumptions.years", "assumptions.electricity_usd_per_kwh", "assumptions.pue"),
    # per chosen system (as clusters of the Systems panel's nodes, under its communication options): every serving
    # layout sized as `plan --rate --system`, the cheapest kept, and its replica's load curve
    # (explorer/core/serving/system_serving.py)
    "serving_systems": ("model", "hardware", "system.nodes", "system.overlap", "system.offload", "system.collective",
                        "system.skew", "assumptions.precision", "assumptions.weights",
                        "assumptions.activations", "assumptions.kv_cache",
                        *(f"serving.{f.name}" for f in fields(ServingChoice)), "requirements.price",
                        "assumptions.years", "assumptions.electricity_usd_per_kwh", "assumptions.pue",
                        "assumptions.time_model"),
    # the same for a workload given as arguments (the command line's, outside a session)
    "serving_for": ("model", "devices", "assumptions.precision", "assumptions.weights", "assumptions.activations",
                    "assumptions.kv_cache", "assumptions.time_model", "args"),
    # every layout, whichever one is chosen: a layout picked by hand does not search again
    "system_layouts": ("model", "hardware", "system.nodes", "system.objective", "system.overlap",
                       "system.offload", "system.collective", "system.skew", "assumptions.precision",
                       "assumptions.weights", "assumptions.activations", "assumptions.kv_cache",
                       "assumptions.batch", "assumptions.seq_len", "assumptions.phase", "assumptions.attention",
                       "assumptions.lm_head", "assumptions.time_model"),
    # the planner's fleet on each chosen system: every layout (as ``plan --system``), the target, limit, quotes
    "system_plan": ("system_layouts", "requirements"),
    # the training run on the chosen systems (its analyses): the model, the systems and their nodes, the training
    # part except the tokens, and the Times switch; nothing of the inference assumptions (precision, batch, phase...)
    # reaches it
    "training_runs": ("model", "hardware", "system.nodes", *(f"training.{f}" for f in TRAINING_FIELDS),
                      "assumptions.time_model"),
    # costed for the tokens at the session's electricity price, PUE and horizon: these re-cost, never re-analyse
    "training": ("training_runs", "training.tokens", "assumptions.electricity_usd_per_kwh", "assumptions.pue",
                 "assumptions.years"),
    # the collectives of each chosen system's layout under the links' roofs, for the roofline's device in focus
    "comm_roof": ("systems", "analysis", "args"),
    # the cost per million tokens of every layout: a price or an electricity edit re-costs, never re-searches
    "system_costs": ("system_layouts", "requirements.price", "assumptions.years", "assumptions.electricity_usd_per_kwh",
                     "assumptions.pue", "assumptions.utilization"),
}

_SCALARS = (int, float, str, bool, type(None))
_NONE = object()


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y or (isinstance(x, _SCALARS) and type(x) is type(y) and x == y)
                                    for x, y in zip(a, b))


class Results(ServingResults):
    """The results of one state with its devices. ``memo`` carries results over from an earlier state's bundle
    (those whose inputs are unchanged are reused)."""

    def __init__(self, state: State, devices: Sequence[Device], memo: dict[str, tuple[tuple, Any]] | None = None,
                 hardware: Sequence[tuple[System, Device]] = ()):
        self.state = state
        self.devices = tuple(devices)
        self.hardware = tuple(hardware)  # the chosen systems (one node each) and their devices
        self._memo: dict[str, tuple[tuple, Any]] = dict(memo or {})
        self._here: dict[tuple, Any] = {}
        self.computed: list[str] = []  # the names computed by this bundle, in order (tests read it)

    def successor(self, state: State, devices: Sequence[Device],
                  hardware: Sequence[tuple[System, Device]] = ()) -> Results:
        """The bundle of ``state``, reusing what this one computed."""
        return Results(state, devices, self._memo, hardware)

    @classmethod
    def of_analysis(cls, analysis: ModelAnalysis, assumptions, requirements=None) -> Results:
        """The bundle of an analysis made outside a session (the report of the CLI): its model, devices and
        context, with the horizon, electricity price, PUE and utilization of ``assumptions``; the analysis is
        taken as it is, not evaluated again."""
        from explorer.core.formats import TENSORS

        ctx, fm = analysis.ctx, analysis.devices.formats
        tensors = {} if fm is None else {t: getattr(fm, t).name for t in TENSORS}
        a = Assumptions(precision=fm.precision if fm else analysis.precision, **tensors,
                        batch=ctx.batch, seq_len=ctx.seq_len, phase=ctx.phase,
                        electricity_usd_per_kwh=assumptions.electricity_usd_per_kwh, pue=assumptions.pue,
                        utilization=assumptions.utilization, years=assumptions.years, attention=ctx.attention,
                        lm_head=ctx.lm_head)
        devices = analysis.devices.devices
        state = State(model=analysis.model, device_ids=tuple(d.id for d in devices), assumptions=a,
                      requirements=requirements if requirements is not None else State().requirements)
        results = cls(state, devices)
        results._memo["evaluation"] = (results._key("evaluation", ()), analysis)
        return results

    # -- the inputs a result names in DEPENDS
    def _input(self, name: str) -> Any:
        if name in DEPENDS:
            return getattr(self, name)
        part, _, attr = name.partition(".")
        value = getattr(self.state, part)
        if part == "serving" and value is None:
            value = DEFAULT_SERVING  # no serving part set: the panel shows the defaults
        return getattr(value, attr) if attr else value

    def _key(self, name: str, args: tuple) -> tuple:
        return tuple(x for dep in DEPENDS[name]
                     for x in (args if dep == "args" else self.devices if dep == "devices"
                               else self.hardware if dep == "hardware" else (self._input(dep),)))

    def _get(self, name: str, compute: Callable[[], Any], args: tuple = ()) -> Any:
        here = self._here.get((name, args), _NONE)  # asked for already in this bundle: its state is fixed
        if here is not _NONE:
            return here
        value = self._lookup(name, compute, args)
        self._here[(name, args)] = value
        return value

    def _lookup(self, name: str, compute: Callable[[], Any], args: tuple) -> Any:
        key = self._key(name, args)
        hit = self._memo.get(name)  # one entry per result: the last one computed
        if hit is not None and _same(hit[0], key):
            return hit[1]
        value = compute()
        self._memo[name] = (key, value)
        self.computed.append(name)
        return value

    # -- results
    @property
    def arrays(self):
        from explorer.core.analysis.device_arrays import device_arrays

        a = self.state.assumptions
        return self._get("arrays", lambda: device_arrays(self.devices, a.precision, a.tensor_formats))

    @property
    def evaluation(self) -> ModelAnalysis | None:
        """The one evaluation of the model on the selected devices, both time models (None without devices)."""
        if not self.devices:
            return None
        from explorer.core.analysis.evaluate import evaluate

        return self._get("evaluation", lambda: evaluate(self.state.model, self.arrays,
                                                        ctx=self.state.assumptions.context))

    @property
    def analysis(self) -> ModelAnalysis | None:
        """The evaluation with the times of the state's time model (``assumptions.time_model``): what the panels
        show (None without devices)."""
        e = self.evaluation
        if e is None:
            return None
        from explorer.core.analysis.time_model import as_time_model

        return self._get("analysis", lambda: as_time_model(e, self.state.assumptions.time_model))

    @property
    def cost(self):
        from explorer.core.analysis.cost import compute_cost
        from explorer.core.analysis.quotes import apply_quotes

        a = self.analysis
        # the quotes of the one store (the requirements) replace the catalog's prices, as in the plan
        return None if a is None else self._get("cost", lambda: compute_cost(apply_quotes(a, self.state.requirements),
                                                                             self.state.assumptions))

    @property
    def plan(self):
        """The procurement plan under the state's requirements; raises ValueError when they do not apply to the
        analysis (a target in tokens/s for a prefill analysis), None without devices."""
        from explorer.core.analysis.procurement import plan

        a = self.analysis
        return None if a is None else self._get("plan", lambda: plan(a, self.state.requirements,
                                                                     self.state.assumptions))

    def roofline(self, device_index: int = 0, focused_layer: int = -1):
        from explorer.core.analysis.roofline_view import compute_roofline

        a = self.analysis
        return self._get("roofline", lambda: compute_roofline(a, focused_layer, device_index),
                         (device_index, focused_layer))

    def energy(self, device_index: int = 0, focused_layer: int = -1):
        from explorer.core.analysis.energy_view import compute_energy_view

        a = self.evaluation  # energy has no time term: the same under both time models
        return self._get("energy", lambda: compute_energy_view(a, device_index, focused_layer),
                         (device_index, focused_layer))

    def tiling(self, layer_row: int, device_index: int = 0, sweep_dim: str | None = None):
        from explorer.core.analysis.tiling_view import compute_tiling_view

        a = self.evaluation  # the tile and wave model: its options are re-evaluated with the ideal model
        return self._get("tiling", lambda: compute_tiling_view(a, layer_row, device_index, sweep_dim),
                         (layer_row, device_index, sweep_dim))

    def measured(self, device_index: int = 0):
        """The trace's kernels on device ``device_index``'s roofline (None without a trace)."""
        trace = self.state.trace
        if trace is None:
            return None
        from explorer.core.analysis.roofline_measured import measured_roofline

        return self._get("measured", lambda: measured_roofline(trace, self.analysis, device_index),
                         (device_index,))

    def fidelity(self, device_index: int = 0):
        """The trace's kernels, measured against the ideal and calibrated predictions on device ``device_index``
        (None without a trace)."""
        trace = self.state.trace
        if trace is None:
            return None
        from explorer.core.analysis.fidelity import trace_fidelity

        return self._get("fidelity", lambda: trace_fidelity(trace, self.evaluation, device_index), (device_index,))

    @property
    def systems(self) -> tuple[SystemResult, ...]:
        """The model on each chosen system: its layouts ranked and the one chosen (empty without systems, and in
        the train phase: the training step on systems is the Training panel's, :attr:`training`)."""
        if not self.hardware or self.state.assumptions.phase == "train":
            return ()
        from explorer.core.parallel.compare import size_on_systems
        from explorer.core.parallel.system_pass import Options

        a, choice = self.state.assumptions, self.state.system
        options = Options(overlap=choice.overlap, algorithm=choice.collective, skew=choice.skew,
                          offload=choice.offload, time_model=a.time_model)
        return self._get("systems", lambda: size_on_systems(
            self.state.model, self.hardware, a.precision, a.context, a.tensor_formats, choice.layout,
            choice.objective, options, choice.nodes))

    @property
    def system_layouts(self) -> tuple[SystemResult, ...]:
        """Every valid layout of each chosen system ranked by the objective, whatever layout is chosen (the
        Systems panel plots them all); :attr:`systems` itself when the best is chosen."""
        choice = self.state.system
        if not self.hardware or choice.layout is None or self.state.assumptions.phase == "train":
            return self.systems
        from explorer.core.parallel.compare import size_on_systems
        from explorer.core.parallel.system_pass import Options

        a = self.state.assumptions
        options = Options(overlap=choice.overlap, algorithm=choice.collective, skew=choice.skew,
                          offload=choice.offload, time_model=a.time_model)
        return self._get("system_layouts", lambda: size_on_systems(
            self.state.model, self.hardware, a.precision, a.context, a.tensor_formats, None,
            choice.objective, options, choice.nodes))

    @property
    def system_plan(self) -> tuple[SystemPlan, ...]:
        """The fleet each chosen system needs under the planner's requirements, with real layouts (as
        ``hwexplorer plan --system``: among every valid layout, the one needing the fewest devices that fits and
        meets the latency limit; quotes by device id). Empty without systems; raises ValueError when the target is
        not in the phase's unit."""
        if not self.hardware:
            return ()
        req = self.state.requirements
        unit = "tokens/s" if self.state.assumptions.phase == "decode" else "inferences/s"
        if req.target is not None and req.target_unit != unit:
            raise ValueError(f"target: given in {req.target_unit} but the {self.state.assumptions.phase} phase "
                             f"counts {unit}; switch the phase or give the target in {unit}")
        layouts = self.system_layouts
        from explorer.core.parallel.sizing import size_fleet as size_system_fleet

        return self._get("system_plan", lambda: size_system_fleet(layouts, req.target, req.latency, req.price))

    @property
    def training_runs(self) -> tuple:
        """The training analyses of each chosen system (uncosted tokens aside); :attr:`training` reads them."""
        if not self.hardware:
            return ()
        from .training import cost_assumptions, train_choice

        st = self.state
        return self._get("training_runs", lambda: train_choice(st.model, self.hardware, st.system.nodes, st.training,
                                                               cost_assumptions(st.assumptions),
                                                               st.assumptions.time_model))

    @property
    def training(self) -> tuple:
        """The training run of the state's training part on each system chosen in ``State.system`` (clusters of
        its ``nodes``): a :class:`~explorer.core.training.compare.TrainingResult` per system, its layouts ranked
        and the chosen one first, costed for the tokens (empty without systems)."""
        runs = self.training_runs
        if not runs:
            return ()
        from .training import cost_assumptions, recost

        st = self.state
        return self._get("training", lambda: recost(runs, st.training.tokens, cost_assumptions(st.assumptions)))

    @property
    def system_costs(self) -> tuple[LayoutCost | None, ...]:
        """Per result of :attr:`system_layouts`: the cost per million tokens of each layout, from the planner's
        quotes (else the catalog's list price) and the cost assumptions (None where no layout is valid). Ranking
        by cost within a system is ranking by throughput, so the search itself never depends on prices."""
        from explorer.core.parallel.layout_cost import layout_cost

        a, quotes = self.state.assumptions, self.state.requirements.price
        return self._get("system_costs", lambda: tuple(
            None if r.analysis is None else layout_cost(r.analysis, quotes, a) for r in self.system_layouts))

    def comm_roof(self, device_index: int, x_range: tuple[float, float]) -> CommRoofView | None:
        """The communication roof for the roofline's device ``device_index`` (None without an analysis): the
        links of the first chosen system made of it, and its chosen layout's collectives, over ``x_range``
        (FLOP/byte)."""
        a = self.analysis
        if a is None or not 0 <= device_index < len(a.devices.ids):
            return None
        from explorer.core.parallel.comm_roof import comm_roof_for

        state = self.state.assumptions
        lo, hi = float(x_range[0]), float(x_range[1])
        return self._get("comm_roof", lambda: comm_roof_for(
            self.systems, a.devices.ids[device_index], float(a.devices.peak[device_index]), state.precision,
            state.context, state.tensor_formats, (lo, hi)), (device_index, lo, hi))
