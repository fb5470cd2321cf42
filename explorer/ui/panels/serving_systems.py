"""The Serving panel's systems: beside each checked device, each system chosen in the Systems panel
(``workspace.results.serving_systems``, as clusters of its nodes, under its communication options) serves the
workload with one replica of its chosen serving layout, the planner's (``hwexplorer plan --rate ... --system S``: the
cheapest owned USD per million output tokens of every layout searched, then the fewest devices). A system's curve is
that replica's: tp x pp devices, its throughput per device divided over them. Here: the rows' names and the panel's
notes."""

from __future__ import annotations

from .systems_controls import short_name


def named_rows(devices, answers, systems) -> tuple[list[str], list[str], tuple]:
    """(names, short names, answers): the devices' (one replica each) then the systems' with an answer (one replica
    of the chosen layout); a system without one (no layout leaves room for a KV cache) is said in :func:`notes`."""
    names = [d.name for d in devices][:len(answers)]
    short, out = [short_device(d) for d in devices][:len(answers)], list(answers)
    for s in systems:
        if s.answer is None:
            continue
        n = s.chosen.replica_devices
        names.append(f"{short_name(s.system)}: {s.label} replica ({n} device{'s' if n != 1 else ''})")
        short.append(f"{short_name(s.system)} {s.label}")
        out.append(s.answer)
    return names, short, tuple(out)


def busy_text(devices: int, systems: int) -> str:
    """What the panel says while the worker estimates (devices and/or systems; 0: not waiting for them)."""
    what = ([f"{devices} device{'s' if devices != 1 else ''}"] if devices else []) + (
        [f"{systems} system{'s' if systems != 1 else ''} (every serving layout)"] if systems else [])
    return "Estimating serving on " + " and ".join(what) + "\u2026"


def notes(systems) -> str:
    """The systems' part of the panel's note: what their curves are, and those that serve nothing."""
    if not systems:
        return ""
    none = [f"{short_name(s.system)}: {s.reason}" for s in systems if s.answer is None]
    return (" A system: one replica of its cheapest serving layout (as the planner's serving rows), its throughput "
            "per device over its tp x pp devices." + (" " + "; ".join(none) + "." if none else ""))


def short_device(device) -> str:
    """A device's name without its vendor's (the charts' keys are narrow)."""
    name, vendor = device.name, getattr(device, "vendor", "") or ""
    return name[len(vendor) + 1:] if vendor and name.lower().startswith(vendor.lower() + " ") else name


def times_note(time_model: str, names, answers) -> str:
    """Where the step times come from, for the panel's note (docs/calibration.md): the model, and under the
    calibrated model each row's source (a device without a calibration keeps the ideal model's times: spec)."""
    if time_model == "ideal":
        return " Times: the ideal model (spec: datasheet figures)."
    rows = "; ".join(f"{n}: {a.setup.time_source}" for n, a in zip(names, answers))
    return " Times: the calibrated model" + (f" ({rows})" if rows else "") + "."
