"""Which energy figures are Horowitz defaults (issue 23): the marks follow the device files, not the device names."""

from dataclasses import replace

import numpy as np

from explorer.core.analysis.device_arrays import device_arrays
from explorer.core.analysis.energy_defaults import (
    DEFAULT_ENERGY_LABEL,
    all_defaults,
    default_energy_marks,
    energy_marks_note,
)
from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.hardware.device import Cited

SHIPPED = {d.id: d for d in load_shipped_devices()}


def test_shipped_gpus_without_figures_are_all_defaults_and_the_4090s_gddr6x_is_its_own():
    ids = ["nvidia-a100-sxm4-80gb", "nvidia-h100-sxm5", "nvidia-l4", "nvidia-rtx-4090"]
    dev = device_arrays([SHIPPED[i] for i in ids], "fp16")
    marks = default_energy_marks(dev)
    assert marks[:3, :3].all() and marks[:3, -1].all()  # A100, H100, L4: HBM/GDDR, L2, L1 and MAC all defaults
    assert not marks[3, 0] and marks[3, 1:3].all()  # RTX 4090: its GDDR6X figure is its own; on-chip defaults
    assert all_defaults(dev, marks).tolist() == [True, True, True, False]
    # the 4090's figure: 7.25 pJ/bit = 58 pJ/B, not the 160 pJ/B default
    assert dev.level_energy[3, 0] == 7.25e-12 * 8
    note = energy_marks_note(dev, marks)
    assert DEFAULT_ENERGY_LABEL in note and "NVIDIA GeForce RTX 4090" in note.split(".")[0]
    assert "do not compare the chips" in note


def test_a_device_with_every_figure_of_its_own_is_not_marked():
    h100 = SHIPPED["nvidia-h100-sxm5"]
    levels = tuple(replace(lv, energy=Cited(1e-12 * (j + 1), f"{j + 1} pJ/B")) for j, lv in enumerate(h100.memory))
    own = replace(h100, memory=levels, energy_per_mac={"fp16": Cited(0.4e-12, "0.4 pJ")})
    dev = device_arrays([h100, own], "fp16")
    marks = default_energy_marks(dev)
    assert marks[0].any() and not marks[1].any()
    assert all_defaults(dev, marks).tolist() == [True, False]
    assert "Hatched" in energy_marks_note(dev, marks)
    assert energy_marks_note(device_arrays([own], "fp16"), default_energy_marks(device_arrays([own], "fp16"))) == ""


def test_levels_a_device_lacks_are_not_marked():
    dev = device_arrays([SHIPPED["amd-mi300x"], SHIPPED["nvidia-l4"]], "fp16")  # 4 levels against 3
    marks = default_energy_marks(dev)
    assert marks.shape == (2, 5)
    assert marks[0, :4].all() and not marks[1, 3]  # the L4 has no fourth level: nothing to mark
    assert np.array_equal(all_defaults(dev, marks), [True, True])


def test_the_note_when_every_device_uses_only_defaults():
    dev = device_arrays([SHIPPED["nvidia-a100-sxm4-80gb"], SHIPPED["nvidia-l4"]], "fp16")
    note = energy_marks_note(dev, default_energy_marks(dev))
    assert note.startswith(f"Hatched: {DEFAULT_ENERGY_LABEL}. No device here states its own")
    assert "do not compare the chips" in note
