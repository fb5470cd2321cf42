"""What the memory-hierarchy energy panel draws, from the one shared analysis.

Energy per operator = sum over memory levels of (bytes crossing the level x energy per byte) + MACs x energy
per MAC (other FLOPs at half a MAC): the analysis's ``level_energy`` and ``compute_energy``. Per operator and
per top-level layer (repeat counts applied: energy of one pass of the model over its batch), per device in
total, and per inference (prefill) or per token (decode): the pass's energy divided by the batch.

The reference ladder is Horowitz's 45 nm table as the chapter prints it (Fig. 9): INT8 add 0.03 pJ, FP32 add
0.9 pJ, FP32 multiply 3.7 pJ, 8 KB SRAM read 5 pJ and DRAM read 640 pJ, both per 32-bit access.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from explorer.core.hardware.device import Cited, Device

from .device_arrays import DEFAULT_MAC_ENERGY, DRAM_ENERGY_PER_BYTE, HOROWITZ, default_sram_energy
from .evaluate import ModelAnalysis


@dataclass(frozen=True)
class LadderEntry:
    label: str
    energy: float  # J
    per: str  # what one count is: "operation", "MAC", "32-bit access"


HOROWITZ_LADDER = (
    LadderEntry("INT8 add", 0.03e-12, "operation"),
    LadderEntry("FP32 add", 0.9e-12, "operation"),
    LadderEntry("FP32 multiply", 3.7e-12, "operation"),
    LadderEntry("SRAM read (8 KB)", 5.0e-12, "32-bit access"),
    LadderEntry("DRAM read", 640e-12, "32-bit access"),
)


@dataclass(frozen=True)
class EnergyTableRow:
    """One editable figure of a device: a memory level's energy per byte, or the MAC energy at a precision."""

    key: str  # "memory[<index into device.memory>]" or "mac"
    label: str
    value: float  # J/B for a level, J/MAC for the MAC row
    unit: str  # "J/B" or "J/MAC"
    source: str  # the cited source's title, or the default that was applied
    is_default: bool


@dataclass(frozen=True, eq=False)
class EnergyView:
    device_index: int
    device_id: str
    device_name: str
    precision: str
    level_names: tuple[str, ...]  # of the device in focus
    row_names: tuple[str, ...]
    row_layer: np.ndarray  # (L,)
    row_levels: np.ndarray  # (L, V) J per pass, repeat counts applied
    row_compute: np.ndarray  # (L,) J
    layer_names: tuple[str, ...]
    layer_levels: np.ndarray  # (N, V) J
    layer_compute: np.ndarray  # (N,) J
    focused_rows: np.ndarray  # bool (L,)
    device_ids: tuple[str, ...]
    device_names: tuple[str, ...]
    device_level_names: tuple[tuple[str, ...], ...]
    device_levels: (
        np.ndarray
    )  # (D, Vmax) J per unit (inference or token), NaN where the device has no such level
    device_compute: np.ndarray  # (D,) J per unit
    device_total: np.ndarray  # (D,) J per unit
    unit: str  # "inference" | "token"
    ladder: tuple[LadderEntry, ...]
    ladder_source: str
    device_ladder: tuple[
        LadderEntry, ...
    ]  # the focused device's own figures: its MAC, then each level per 32-bit access
    table: tuple[EnergyTableRow, ...]
    focused_layer: int


def _level_source(device: Device, index: int) -> tuple[float, str, bool]:
    level = device.memory[index]
    if level.energy is not None:
        src = device.source_of(level.energy)
        return level.energy.value, (src.title if src else "entered by the user (no source)"), False
    if level.role == "offchip":
        return DRAM_ENERGY_PER_BYTE, f"default: DRAM 640 pJ per 32-bit access ({HOROWITZ})", True
    capacity = level.capacity.value if level.capacity is not None else math.nan  # one instance
    return (
        float(default_sram_energy(capacity)),
        f"default: SRAM read energy interpolated on the array size ({HOROWITZ})",
        True,
    )


def energy_table(device: Device, precision: str) -> tuple[EnergyTableRow, ...]:
    """The figures the energy model uses for ``device``, each with where it comes from."""
    rows = []
    for i, level in enumerate(device.memory):
        if level.role == "registers":
            continue
        value, source, default = _level_source(device, i)
        rows.append(
            EnergyTableRow(f"memory[{i}]", f"{level.name} ({level.role})", value, "J/B", source, default)
        )
    mac = device.energy_per_mac.get(precision)
    if mac is not None:
        src = device.source_of(mac)
        rows.append(
            EnergyTableRow(
                "mac",
                f"MAC at {precision}",
                mac.value,
                "J/MAC",
                src.title if src else "entered by the user (no source)",
                False,
            )
        )
    elif precision in DEFAULT_MAC_ENERGY:
        rows.append(
            EnergyTableRow(
                "mac",
                f"MAC at {precision}",
                DEFAULT_MAC_ENERGY[precision],
                "J/MAC",
                f"default: {HOROWITZ}",
                True,
            )
        )
    return tuple(rows)


def with_energy(
    device: Device, key: str, value: float, precision: str, note: str = "edited in the energy panel"
) -> Device:
    """A copy of ``device`` with one energy figure replaced (``key`` from :func:`energy_table`). SI units."""
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{key}: energy must be a positive number, got {value!r}")
    if key == "mac":
        text = f"{value * 1e12:g} pJ"
        table = dict(device.energy_per_mac)
        table[precision] = Cited(float(value), text, None, note)
        return replace(device, energy_per_mac=table)
    if not (key.startswith("memory[") and key.endswith("]")):
        raise ValueError(f"key: expected 'mac' or 'memory[i]', got {key!r}")
    index = int(key[7:-1])
    if not 0 <= index < len(device.memory):
        raise ValueError(f"{key}: the device has {len(device.memory)} memory levels")
    levels = list(device.memory)
    levels[index] = replace(levels[index], energy=Cited(float(value), f"{value * 1e12:g} pJ/B", None, note))
    return replace(device, memory=tuple(levels))


def compute_energy_view(
    analysis: ModelAnalysis, device_index: int = 0, focused_layer: int = -1
) -> EnergyView:
    dev, table = analysis.devices, analysis.table
    if not 0 <= device_index < len(dev):
        raise ValueError(f"device_index: expected 0..{len(dev) - 1}, got {device_index}")
    d = device_index
    names = dev.level_names[d]
    v = len(names)
    count = analysis.count
    row_levels = analysis.level_energy[:, d, :v] * count[:, None]
    row_compute = analysis.compute_energy[:, d] * count
    n_layers = len(table.status)
    layer_levels = np.zeros((n_layers, v))
    np.add.at(layer_levels, table.layer_index, row_levels)
    layer_compute = np.bincount(table.layer_index, weights=row_compute, minlength=n_layers)[:n_layers]
    layer_names = (
        tuple(spec.name or f"{spec.kind}{i}" for i, spec in enumerate(analysis.model.layers))
        if analysis.model is not None
        else tuple(f"layer {i}" for i in range(n_layers))
    )
    batch = analysis.ctx.batch
    present = np.array(
        [[j < len(n) for j in range(dev.level_bw.shape[1])] for n in dev.level_names], dtype=bool
    )
    device_levels = np.where(present, analysis.totals.energy_by_level, np.nan) / batch
    device_compute = analysis.totals.compute_energy / batch
    device = dev.devices[d]
    precision = dev.compute_of(d)  # the precision of its MAC energy (a fallback's, with per-tensor formats)
    bpe = 4.0  # per 32-bit access, to compare with the ladder
    own = [
        LadderEntry(name, float(dev.level_energy[d, j]) * bpe, "32-bit access")
        for j, name in enumerate(names)
        if np.isfinite(dev.level_energy[d, j])
    ]
    if np.isfinite(dev.mac_energy[d]):
        own.insert(0, LadderEntry(f"MAC at {precision}", float(dev.mac_energy[d]), "MAC"))
    return EnergyView(
        device_index=d,
        device_id=device.id,
        device_name=device.name,
        precision=precision,
        level_names=names,
        row_names=table.names,
        row_layer=table.layer_index,
        row_levels=row_levels,
        row_compute=row_compute,
        layer_names=layer_names,
        layer_levels=layer_levels,
        layer_compute=layer_compute,
        focused_rows=(table.layer_index == focused_layer)
        if focused_layer >= 0
        else np.zeros(len(table), bool),
        device_ids=dev.ids,
        device_names=tuple(x.name for x in dev.devices),
        device_level_names=dev.level_names,
        device_levels=device_levels,
        device_compute=device_compute,
        device_total=analysis.totals.energy / batch,
        unit="token" if analysis.ctx.phase == "decode" else "inference",
        ladder=HOROWITZ_LADDER,
        ladder_source=HOROWITZ,
        device_ladder=tuple(own),
        table=energy_table(device, precision),
        focused_layer=focused_layer,
    )
