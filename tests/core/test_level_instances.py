"""A memory level's ``capacity`` is that of one instance (``instances`` copies of it), as the catalog states it: the
H100's "L1 / shared memory (per SM)" is 256 KiB x 132 SMs, the MI300X's LDS 64 KiB x 304 CUs. The tiling re-reads
(device_arrays.level_tile), the default SRAM energy (device_arrays and energy_view) and FlashAttention's block
(flash.block_memory) all read it so. Figures worked out by hand."""

import math

import pytest

from explorer.core.analysis.device_arrays import device_arrays
from explorer.core.analysis.energy_view import energy_table
from explorer.core.analysis.flash import block_memory
from explorer.core.hardware.catalog_files import shipped_catalog_dir
from explorer.core.hardware.device_file import device_from_dict, load_device_file


def gpu():
    """HBM, a 1 MiB L2, and 100 SMs of 48 KiB shared memory each (no energies given: the defaults apply)."""
    return device_from_dict({"id": "g", "name": "g", "vendor": "v", "kind": "gpu", "peak": {"fp16": "100 TFLOP/s"},
                             "memory": [{"name": "HBM", "role": "offchip", "capacity": "16 GB",
                                         "bandwidth": "1 TB/s"},
                                        {"name": "L2", "role": "onchip", "capacity": "1 MiB"},
                                        {"name": "SMEM", "role": "onchip", "capacity": "48 KiB", "instances": 100}],
                             "matrix_engine": {"type": "tensor_core", "sm_count": 100}})


def test_capacity_is_per_instance_everywhere():
    """The L2 level's tiles come from one SM's 48 KiB = 49,152 B (not 49,152 / 100 = 491.52 B); its default SRAM
    energy is Horowitz's log-interpolation between 32 KB (20 pJ per 64 bit = 2.5 pJ/B) and 1 MB (100 pJ per 64 bit =
    12.5 pJ/B): 2.5 + 10 x ln(49152 / 32000) / ln(1e6 / 32000) = 2.5 + 10 x 0.42918 / 3.44202 = 3.7469 pJ/B; and
    FlashAttention blocks the L2's traffic with the same 49,152 B."""
    dev = device_arrays([gpu()], "fp16")
    assert dev.level_tile[0, 1] == 48 * 1024
    smem = 2.5e-12 + 10e-12 * math.log(49152 / 32000) / math.log(1e6 / 32000)
    assert smem == pytest.approx(3.7469e-12, rel=1e-4)
    assert dev.level_energy[0, 2] == pytest.approx(smem, rel=1e-12)
    assert energy_table(gpu(), "fp16")[2].value == pytest.approx(smem, rel=1e-12)
    memory, _ = block_memory(dev, 3)
    assert memory[0, 1] == memory[0, 2] == 48 * 1024


def test_the_catalog_states_per_instance_capacities():
    """The H100's per-SM level: 256 KiB x 132 (NVIDIA's H100 whitepaper), read as 262,144 B per SM."""
    h100 = load_device_file(shipped_catalog_dir() / "nvidia-h100-sxm5.yaml")
    sm = h100.memory[-1]
    assert (sm.instances, sm.capacity.value) == (132, 256 * 1024)
    assert device_arrays([h100], "fp16").level_tile[0, 1] == 256 * 1024
