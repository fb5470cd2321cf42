"""The serving results of a state (:class:`~.results.Results` inherits them): the replicas' step-time surfaces, the
analytic answers, the fleet meeting the service levels, the chosen systems' serving layouts. Each imports the
serving core when first asked for (the desktop app's first window computes none of them). Qt-free."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .serving_choice import ServingChoice

if TYPE_CHECKING:
    from explorer.core.serving.serve import ServingAnswer

DEFAULT_SERVING = ServingChoice()


class ServingResults:
    """The serving part of :class:`~.results.Results`: reads its ``state``, ``devices``, ``hardware`` and ``_get``."""

    @property
    def serving_choice(self) -> ServingChoice:
        """The state's serving part, or the defaults when none is set."""
        return self.state.serving if self.state.serving is not None else DEFAULT_SERVING

    @property
    def serving_setups(self) -> tuple:
        """Per device checked: the replica's step-time surface and memory under the serving part's lengths and
        engine settings (:class:`explorer.core.serving.analytic.Setup`)."""
        from explorer.core.serving.serve import device_setups

        s, a = self.serving_choice, self.state.assumptions
        return self._get("serving_setups", lambda: device_setups(  # one stacked pass, cached per device
            self.state.model, self.devices, s.workload, s.policy, a.precision, a.tensor_formats,
            s.memory_utilization, s.block_size, a.time_model) if self.devices else ())

    def serving_ready(self, name: str = "serving") -> bool:
        """Whether ``serving`` (or ``serving_fleet``) can be read without building a step-time surface or running
        a search (everything is kept in the serving caches): the UI reads it on its thread then, else on a worker."""
        s, a = self.serving_choice, self.state.assumptions
        if name == "serving_systems":
            from explorer.core.serving.system_serving import serve_systems_ready

            return self._serving_systems(serve_systems_ready)
        if not self.devices:
            return True
        from explorer.core.serving.fleet import slo_rates_ready
        from explorer.core.serving.serve import answers_ready, device_setups_ready
        from explorer.core.serving.surfaces import require_token_model

        try:
            require_token_model(self.state.model)  # refused at once, no work
            if not device_setups_ready(self.state.model, self.devices, s.workload, s.policy, a.precision,
                                       a.tensor_formats, s.memory_utilization, s.block_size, a.time_model):
                return False
            setups = self.serving_setups
        except ValueError:  # refused (not a token model, a layer error): said at once, no work
            return True
        return (answers_ready if name == "serving" else slo_rates_ready)(s.workload, setups, s.slo)

    @property
    def serving(self) -> tuple[ServingAnswer, ...]:
        """Per device checked: the analytic serving answer (estimate at the rate, the load curve with its knee)
        under the state's serving part (``docs/serving.md``); empty without devices."""
        from explorer.core.serving.serve import cached_answers

        s = self.serving_choice
        setups = self.serving_setups
        return self._get("serving", lambda: cached_answers(s.workload, setups, s.slo))

    @property
    def serving_fleet(self) -> tuple:
        """Per device, cheapest first: the replicas meeting the serving part's service levels at its rate and their
        cost (:func:`explorer.core.serving.fleet.size_fleet`); empty without devices."""
        from explorer.core.serving.fleet import size_fleet as size_serving_fleet

        s, a = self.serving_choice, self.state.assumptions
        setups = self.serving_setups
        return self._get("serving_fleet", lambda: size_serving_fleet(
            s.workload, setups, self.devices, s.slo, self.state.requirements.price, a.years,
            a.electricity_usd_per_kwh, a.pue))

    @property
    def serving_systems(self) -> tuple:
        """Per system chosen in ``State.system`` (as clusters of its ``nodes``, under its overlap, collective, skew
        and offload; as ``plan --rate --system`` with those options): its serving layouts sized for the serving part
        at the planner's quotes, the cheapest chosen, and one replica of it serving the
        workload (:class:`explorer.core.serving.system_serving.SystemServing`); empty without systems."""
        from explorer.core.serving.system_serving import serve_systems

        return self._get("serving_systems", lambda: self._serving_systems(serve_systems))

    def _serving_systems(self, call):
        from explorer.core.serving.system_serving import serving_hardware, serving_options

        s, a, choice = self.serving_choice, self.state.assumptions, self.state.system
        hardware = serving_hardware(self.hardware, choice.nodes)
        return call(self.state.model, hardware, s.workload, s.slo, s.policy, a.precision, a.tensor_formats,
                    s.memory_utilization, s.block_size, self.state.requirements.price, a.years,
                    a.electricity_usd_per_kwh, a.pue, options=replace(serving_options(choice), time_model=a.time_model))

    def serving_for(self, workload, slo, policy=None, device_index: int = 0) -> ServingAnswer | None:
        """The analytic serving answer for a workload, service levels and policy given as arguments (outside the
        state's serving part) on device ``device_index``. None without devices."""
        if not self.devices:
            return None
        from explorer.core.serving.serve import answer, device_setup

        a = self.state.assumptions
        return self._get("serving_for", lambda: answer(workload, device_setup(
            self.state.model, self.devices[device_index], workload, policy, a.precision, a.tensor_formats,
            time_model=a.time_model), slo),
            (workload, slo, policy, device_index))
