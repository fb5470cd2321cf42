"""The report's statement of where its times come from (the Assumptions' "Times" row): the time model, each
device's label (spec, partly calibrated, calibrated), the systems section's, and the sections that kept the ideal
model."""

from __future__ import annotations

from ..core.analysis.evaluate import ModelAnalysis
from ..core.analysis.time_source import device_time_sources, heading, system_time_sources
from .systems_section import SystemsSection
from .training_section import TrainingSection


def time_statement(analysis: ModelAnalysis, time_model: str, systems: SystemsSection | None = None,
                   training: bool = False, serving: bool = False) -> str:
    """What the report's times are: the model, per device where its times come from, and the sections that
    keep the ideal model (training, serving) whatever the choice."""
    sources = device_time_sources(analysis, time_model)
    per = "; ".join(f"{d.name}: {heading(s)}" for d, s in zip(analysis.devices.devices, sources))
    how = ("the ideal model (the roofline with the devices' efficiency factors)" if time_model == "ideal" else
           "the calibrated model (curves fitted to measured kernels where a device has them)")
    out = f"The device times, throughputs and costs per million come from {how}. {per}."
    if systems:
        labels = [f"{r.system.name}: {system_time_sources(r.analysis)[r.chosen]}" for r in systems.results
                  if r.analysis is not None and r.analysis.time_model == time_model]
        out += f" Systems section: the {time_model} model" + (f" ({'; '.join(labels)})" if labels else "") + "."
    ideal_only = [name for name, on in (("training", training), ("serving", serving)) if on]
    if ideal_only and time_model != "ideal":
        out += f" The {' and '.join(ideal_only)} section{'s' * (len(ideal_only) > 1)} use{'s' * (len(ideal_only) == 1)}" \
               " the ideal model (spec): not calibrated there."
    return out


def training_on_ideal(training: TrainingSection, time_model: str) -> bool:
    """Whether the training section keeps the ideal model while the report's is another (its steps were timed
    before the switch, e.g. ``report --train``)."""
    return any(r.analysis is not None and r.analysis.setup.time_model != time_model for r in training.results)
