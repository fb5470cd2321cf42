"""Calculators area (issue 9): each calculator widget takes inputs and shows the chapter's numbers."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from explorer.core.calculators import CALCULATORS
from explorer.ui.calculators import WIDGET_CLASSES
from explorer.ui.calculators.alignment import AlignmentCalculator
from explorer.ui.calculators.amdahl import AmdahlCalculator
from explorer.ui.calculators.batch_sweep import BatchSweepCalculator
from explorer.ui.calculators.carbon import CarbonCalculator
from explorer.ui.calculators.dataflow import DataflowCalculator
from explorer.ui.calculators.fusion import FusionCalculator
from explorer.ui.calculators.iron_law import IronLawCalculator
from explorer.ui.calculators.panel import CalculatorsPanel
from explorer.ui.calculators.sparsity import SparsityCalculator
from explorer.ui.calculators.speed_of_light import SpeedOfLightCalculator
from explorer.ui.calculators.transfer_scaling import TransferScalingCalculator


@dataclass(frozen=True)
class Device:
    name: str
    peak_flops: float
    bandwidth: float


def make(qtbot, cls, *args):
    widget = cls(*args)
    qtbot.addWidget(widget)
    return widget


def test_amdahl_speedup_and_infinite_gain(qtbot):
    w = make(qtbot, AmdahlCalculator)
    s = w.section
    s.p_box.setValue(0.95)
    s.g_box.setValue(247.0)
    assert s.results.value("Speed-up") == "18.6\u00d7"
    assert s.results.value("Ceiling 1/(1 - p)") == "20\u00d7"
    s.p_box.setValue(0.80)
    assert round(s.result.speedup, 1) == 4.9
    s.p_box.setValue(0.90)
    s.infinite.setChecked(True)
    assert s.results.value("Speed-up") == "10\u00d7"
    assert not s.g_box.isEnabled()


def test_iron_law_names_the_dominant_term(qtbot):
    w = make(qtbot, IronLawCalculator)
    s = w.section
    s.data_box.setValue(8.650752)  # MB
    s.bw_box.setValue(2039.0)  # GB/s
    s.ops_box.setValue(0.268435456)  # GFLOP
    s.peak_box.setValue(312.0)  # TFLOP/s
    s.eta_box.setValue(100.0)  # %
    s.lat_box.setValue(0.0)
    assert s.results.value("Dominant term").startswith("data movement")
    assert s.results.value("Memory wall reached") == "yes"
    assert s.results.value("Arithmetic intensity O / D_vol") == "31.03 FLOP/B"
    s.lat_box.setValue(100.0)  # us of launch overhead
    assert s.results.value("Dominant term").startswith("fixed latency")
    s.device.setCurrentIndex(s.device.findText("H100 FP16"))
    assert s.bw_box.si_value() == pytest.approx(3.35e12)
    assert s.peak_box.si_value() == pytest.approx(989e12)


def test_batch_sweep_crossings_and_decode(qtbot):
    w = make(qtbot, BatchSweepCalculator)
    s = w.sweep
    s.m_box.setValue(2048)
    s.n_box.setValue(2048)
    s.batch_box.setValue(256)
    assert s.results.value("Intensity at this batch") == "204.8 FLOP/B"
    assert s.results.value("A100 FP16: ridge 153.0, crosses at") == "B \u2248 179.9"
    assert s.results.value("H100 FP16: ridge 295.2, crosses at") == "B \u2248 414.8"
    assert s.results.value("A100 FP16: at this batch").startswith("compute-bound")
    s.device_list.item(0).setCheckState(s.device_list.item(0).checkState().Unchecked)
    assert [c.device for c in s.result.crossings] == ["A100 FP16", "T4 FP16", "H100 FP16"]
    d = w.decode
    w.tabs.setCurrentWidget(d)
    d.params_box.setValue(1.5)  # billions
    d.precision.setCurrentIndex(d.precision.findData(2.0))
    d.batch_box.setValue(1)
    d.device.setCurrentIndex(d.device.findText("A100 FP16"))
    assert d.results.value("Tokens per second (ceiling)") == "679.7 tokens/s"
    assert d.results.value("Utilisation of peak") == "0.654 %"
    assert d.results.value("Bound").startswith("memory")


def test_dataflow_loop_order_traffic_and_systolic(qtbot):
    w = make(qtbot, DataflowCalculator)
    lo = w.loop_order
    lo.filters.setValue(16)
    lo.kernel.setValue(3)
    lo.size.setValue(8)
    lo.resident.setValue(0)
    assert lo.results.value("Weight-stationary loads") == "144"
    assert lo.results.value("Output-stationary loads") == "5,184"
    assert lo.results.value("Ratio") == "36\u00d7"
    tr = w.traffic
    tr.mode.setCurrentIndex(0)
    tr.m_box.setValue(32)
    tr.k_box.setValue(256)
    tr.n_box.setValue(512)
    tr.buffer.setValue(1024.0)  # KiB: everything fits
    assert tr.results.value("Operand reads without reuse") == "8,388,608 elements"
    assert all(s.total_bytes == pytest.approx(tr.result.compulsory_bytes) for s in tr.result.strategies)
    tr.mode.setCurrentIndex(1)
    assert tr.conv_box.isVisibleTo(tr) and not tr.gemm_box.isVisibleTo(tr)
    assert tr.result.compulsory_bytes == 77_660_160  # default conv shape is E-5
    sy = w.systolic
    sy.side.setValue(128)
    sy.e_dram.setValue(640.0)
    sy.e_mac.setValue(1.0)
    assert sy.results.value("Vector unit energy per MAC") == "2.561 nJ"
    assert sy.results.value("Systolic energy per MAC") == "11 pJ"
    assert sy.results.value("Efficiency ratio") == "232.8\u00d7"


def test_fusion_footprint_and_d7_toggle(qtbot):
    w = make(qtbot, FusionCalculator)
    s = w.section
    s.elements.setValue(1024 * 1024)
    s.precision.setCurrentIndex(s.precision.findData(4.0))
    s.ops.setValue(3)
    assert s.results.value("Unfused footprint (every intermediate stored)") == "16.8 MB"
    assert s.results.value("Footprint reduction") == "4\u00d7"
    assert s.results.value("Traffic reduction (bandwidth-bound speed-up)") == "3\u00d7"
    s.count_input.setChecked(True)
    assert s.results.value("Footprint reduction") == "2\u00d7"


def test_sparsity_two_four_and_bad_input(qtbot):
    w = make(qtbot, SparsityCalculator)
    s = w.section
    s.n_box.setValue(2)
    s.m_box.setValue(4)
    s.bits.setCurrentIndex(s.bits.findData(16.0))
    assert s.results.value("Effective bytes (of dense)") == "56.25 %"
    assert s.results.value("Metadata per group") == "4 bit"
    assert s.results.value("Theoretical speed-up M/N") == "2\u00d7"
    s.n_box.setValue(5)
    assert s.result is None and s.error.text().startswith("n:")
    s.n_box.setValue(2)
    assert s.error.text() == ""


def test_alignment_padding(qtbot):
    w = make(qtbot, AlignmentCalculator)
    s = w.section
    s.dim_boxes[0].setValue(500)
    s.multiple.setCurrentIndex(s.multiple.findData(8))
    assert s.results.value("Dimension 1: 500 pads to").startswith("504")
    s.multiple.setCurrentIndex(s.multiple.findData(16))
    assert s.results.value("Dimension 1: 500 pads to").startswith("512")
    s.dim_boxes[0].setValue(512)
    assert s.results.value("All aligned") == "yes"
    s.dim_boxes[0].setValue(0)
    assert s.result is None and "dims" in s.error.text()


def test_transfer_scaling_per_direction_is_explicit(qtbot):
    w = make(qtbot, TransferScalingCalculator)
    s = w.scaling
    s.payload.setValue(1.0)  # GB
    s.bandwidth.setValue(600.0)  # GB/s
    s.rating.setCurrentIndex(s.rating.findData(True))
    s.step.setValue(50.0)  # ms
    s.devices.setValue(8)
    s.overlap.setValue(0.0)
    assert s.results.value("Per-direction bandwidth") == "300 GB/s"
    assert s.results.value("Gradient sync time") == "3.333 ms"
    assert s.results.value("Speed-up on N devices") == "7.5\u00d7"
    assert s.results.value("Scaling efficiency") == "93.8 %"
    assert s.results.value("Amdahl cap 1/s") == "20\u00d7"
    s.rating.setCurrentIndex(s.rating.findData(False))
    assert s.results.value("Gradient sync time") == "1.667 ms"
    s.overlap.setValue(100.0)
    assert s.results.value("Speed-up on N devices") == "8\u00d7"
    h = w.host
    h.link.setCurrentIndex(h.link.findData("PCIe Gen5 x16"))
    h.input.setValue(0.032)  # MB = 32 kB
    assert h.results.value("Copy in") == "500 ns"


def test_carbon_savings(qtbot):
    w = make(qtbot, CarbonCalculator)
    s = w.section
    s.boxes["baseline_units"].setValue(1000)
    s.boxes["replacement_units"].setValue(100)
    s.boxes["grid_intensity"].setValue(0.429)  # kg/kWh
    assert s.results.value("CO\u2082 saved per year") == "373.9 t"
    assert s.results.value("Efficiency gap") == "200\u00d7"
    assert s.results.value("Baseline energy per day") == "2,400 kWh"
    s.boxes["grid_intensity"].setValue(0.4)
    assert s.results.value("CO\u2082 saved per year") == "348.6 t"


def test_speed_of_light(qtbot):
    w = make(qtbot, SpeedOfLightCalculator)
    s = w.section
    s.distance.setValue(20.0)  # mm
    s.fraction.setValue(0.5)
    s.clock.setValue(2.0)  # GHz
    s.memory.setValue(100.0)  # ns
    assert s.results.value("Signal time") == "133.4 ps"
    assert s.results.value("Clock period") == "500 ps"
    assert s.results.value("Fits in one cycle") == "yes"
    assert s.results.value("Memory latency in cycles") == "200 cycles"


@pytest.mark.parametrize("calc_id,index", [(c.id, i) for c in CALCULATORS for i in range(len(c.presets))])
def test_every_preset_loads_from_the_combo(qtbot, calc_id, index):
    w = make(qtbot, WIDGET_CLASSES[calc_id])
    w.preset_combo.setCurrentIndex(index + 1)
    preset = w.calculator.presets[index]
    section = w.section_for(preset.function)
    assert section.error.text() == ""
    assert section.result is not None and section.results.rowCount() > 0
    assert preset.source in w.source_label.text()
    if w.tabs is not None:
        assert w.tabs.currentWidget() is section


def test_panel_lists_calculators_and_takes_devices(qtbot):
    panel = make(qtbot, CalculatorsPanel)
    assert panel.list.count() == len(CALCULATORS) == 10
    assert list(panel.widgets) == [CALCULATORS[0].id]  # the others are built when first shown
    widget = panel.show_calculator("carbon")
    def shown():
        return panel.stack.currentWidget().widget()  # each calculator is in a scroll area of its own

    assert shown() is widget and panel.current_id() == "carbon"
    assert panel.stack.count() == 10 and panel.stack.currentIndex() == [c.id for c in CALCULATORS].index("carbon")
    panel.list.setCurrentRow(1)  # choosing one in the list builds and shows it
    assert panel.current_id() == CALCULATORS[1].id and shown() is panel.widgets[CALCULATORS[1].id]
    panel.set_devices([Device("Custom NPU", 100e12, 1e12), Device("Edge MCU", 1e9, 1e8)])
    sweep = panel.widget("batch-sweep").sweep
    assert [c.device for c in sweep.result.crossings] == ["Custom NPU", "Edge MCU"]
    assert sweep.result.crossings[0].ridge == pytest.approx(100.0)
    iron = panel.widget("iron-law").section
    iron.device.setCurrentIndex(iron.device.findText("Custom NPU"))
    assert iron.peak_box.si_value() == pytest.approx(100e12)


def test_panel_accepts_devices_in_constructor(qtbot):
    panel = make(qtbot, CalculatorsPanel, [Device("Only", 10e12, 1e12)])
    assert [c.device for c in panel.widget("batch-sweep").sweep.result.crossings] == ["Only"]
