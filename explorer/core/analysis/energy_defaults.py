"""Which energy figures are defaults, so that the panels and the report mark those bars (issue 23).

A device file that states no memory-access or MAC energy gets Horowitz's 45 nm figures
(:mod:`explorer.core.analysis.device_arrays`): the A100, H100 and L4 then show joules per token that differ only
through the bytes they move, and bars drawn like measured ones read as a comparison of the chips. This module
says, per device and per bar segment (each memory level, then arithmetic), whether the figure behind it is such a
default; the energy panel hatches those segments and the report draws them hatched, each with the legend entry
:data:`DEFAULT_ENERGY_LABEL`. A segment whose figure the device file states is never marked.
"""

from __future__ import annotations

import numpy as np

from .device_arrays import DEFAULT_MAC_ENERGY, DeviceArrays

#: the legend entry of a marked bar, in the panel and in the report
DEFAULT_ENERGY_LABEL = "default energies (Horowitz 45 nm)"


def default_energy_marks(devices: DeviceArrays) -> np.ndarray:
    """(D, V + 1) bool, V the deepest memory hierarchy: column ``j < V`` is True where device ``d``'s level ``j``
    (registers left out, outermost first, as in ``level_energy``) takes the default energy per byte; the last
    column is True where its MAC energy at the precision it computes at is the default. Levels a device lacks
    are False (there is no bar to mark)."""
    depth = devices.level_bw.shape[1] if devices.level_bw.ndim == 2 else 0
    marks = np.zeros((len(devices), depth + 1), dtype=bool)
    for d, device in enumerate(devices.devices):
        levels = [lv for lv in device.memory if lv.role != "registers"]
        marks[d, : len(levels)] = [lv.energy is None for lv in levels]
        at = devices.compute_of(d)
        marks[d, -1] = device.energy_per_mac.get(at) is None and at in DEFAULT_MAC_ENERGY
    return marks


def energy_segments(devices: DeviceArrays) -> np.ndarray:
    """(D, V + 1) bool: the segments device ``d`` has (its memory levels, then arithmetic when its MAC energy is
    known), aligned with :func:`default_energy_marks`."""
    depth = devices.level_bw.shape[1] if devices.level_bw.ndim == 2 else 0
    present = np.zeros((len(devices), depth + 1), dtype=bool)
    for d, names in enumerate(devices.level_names):
        present[d, : len(names)] = True
    present[:, -1] = np.isfinite(devices.mac_energy)
    return present


def all_defaults(devices: DeviceArrays, marks: np.ndarray) -> np.ndarray:
    """(D,) bool: every energy figure behind device ``d``'s bar is a default (the bar compares bytes moved, not
    chips)."""
    present = energy_segments(devices)
    return (marks | ~present).all(axis=1) & present.any(axis=1)


def energy_marks_note(devices: DeviceArrays, marks: np.ndarray) -> str:
    """One sentence for a caption: which devices' bars are hatched, and what that means; '' when none are."""
    names = [d.name for d in devices.devices]
    marked = [n for n, m in zip(names, marks) if m.any()]
    if not marked:
        return ""
    whole = [n for n, w in zip(names, all_defaults(devices, marks)) if w]
    if len(whole) == len(names) > 1:
        return (f"Hatched: {DEFAULT_ENERGY_LABEL}. No device here states its own energy figures, so the bars differ "
                "only through the bytes each moves and do not compare the chips.")
    out = f"Hatched: {DEFAULT_ENERGY_LABEL}, not the device's own figures ({', '.join(marked)})."
    if len(whole) > 1:
        out += (f" {', '.join(whole)} use only defaults, so their bars differ only through the bytes they move and "
                "do not compare the chips.")
    return out
