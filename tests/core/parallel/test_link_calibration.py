"""Fitted links stored in a system (``calibrate link --save``, docs/calibration.md): the system file round trip,
and the calibrated time model's collectives on the fitted alpha and bandwidth, by hand."""

from dataclasses import replace

import pytest
from hand_systems import hgx

from explorer.core.hardware.device import Cited, Source
from explorer.core.hardware.system import LinkCalibration
from explorer.core.hardware.system_file import (
    SystemFileError,
    dump_system_yaml,
    load_system_file,
    system_from_dict,
    system_to_dict,
)
from explorer.core.parallel.layout import Layout
from explorer.core.parallel.system_pass import Options, analyze_system
from explorer.core.workload.layers import Context
from explorer.core.workload.templates import get_template

LLAMA70 = get_template("llama2-70b").build()
DECODE = Context(batch=8, phase="decode", seq_len=4096)
FIT = LinkCalibration(Cited(1.84e-6, "1.84 us", "fit-run"), Cited(297.8e9, "297.8 GB/s", "fit-run"), "all_reduce", 8,
                      "ring", "all_reduce on 8 ranks (float), 8 B to 8 GiB")


def fitted(system=None):
    system = system or hgx()
    nv = replace(system.domains[0], calibration=FIT)
    return replace(system, domains=(nv, *system.domains[1:]),
                   sources={**system.sources, "fit-run": Source("fit-run", "all_reduce_perf run", "file:///run.txt",
                                                                "2026-11-27")})


def test_a_stored_fit_reads_back_the_same_through_the_system_file(tmp_path):
    ib = hgx().domains[1]
    ib = replace(ib, link=replace(ib.link, bandwidth=Cited(50e9, "50 GB/s")))  # as a file writes it
    system = fitted(replace(hgx(), domains=(hgx().domains[0], ib)))
    data = system_to_dict(system)
    assert data["domains"][0]["calibrated"] == {
        "alpha": {"value": "1.84 us", "source": "fit-run"}, "bandwidth": {"value": "297.8 GB/s", "source": "fit-run"},
        "op": "all_reduce", "ranks": 8, "algorithm": "ring", "conditions": "all_reduce on 8 ranks (float), 8 B to 8 GiB"}
    path = tmp_path / "fitted.yaml"
    path.write_text(dump_system_yaml(system))
    back = load_system_file(path)
    cal = back.domains[0].calibration
    assert (cal.op, cal.ranks, cal.algorithm, cal.conditions) == (FIT.op, FIT.ranks, FIT.algorithm, FIT.conditions)
    assert cal.alpha.value == pytest.approx(1.84e-6, rel=1e-12) and cal.bandwidth.value == 297.8e9
    assert back.sources["fit-run"] == system.sources["fit-run"] and back.link_calibrations == ("NVLink",)
    path.write_text(dump_system_yaml(back))
    assert load_system_file(path) == back  # what was read writes and reads back the same
    assert "calibrated" not in system_to_dict(hgx())["domains"][0]  # no fit, no key: older files unchanged


@pytest.mark.parametrize("change, message", [
    ({"ranks": 16}, "domains[0].calibrated.ranks: 16 ranks do not fit in the domain's 8 devices"),
    ({"ranks": 1}, "domains[0].calibrated.ranks: expected a whole number >= 2"),
    ({"op": "broadcast"}, "domains[0].calibrated.op"),
    ({"bandwidth": "3 us"}, "domains[0].calibrated.bandwidth"),
    ({"alpha": None}, "domains[0].calibrated.alpha: is required"),
    ({"alpha": {"value": "2 us", "source": "nope"}}, "domains[0].calibrated.alpha.source: 'nope' is not a key"),
    ({"extra": 1}, "domains[0].calibrated: unknown keys ['extra']"),
])
def test_a_bad_stored_fit_is_one_line_naming_the_field(change, message):
    data = system_to_dict(fitted())
    cal = {**data["domains"][0]["calibrated"], **change}
    data["domains"][0]["calibrated"] = {k: v for k, v in cal.items() if v is not None}
    with pytest.raises(SystemFileError) as exc:
        system_from_dict(data, "x.yaml")
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_the_calibrated_model_times_collectives_on_the_fitted_link_by_hand(devices):
    """Llama-2-70B decode at TP 8, batch 8, fp16, ring: 161 all-reduces of 8 x 8,192 x 2 B = 131,072 B (two per
    block, one after the vocabulary-parallel embedding) and one all-gather of the logits, 8 x 32,000 x 2 =
    512,000 B. Ring on p = 8: all-reduce 2 (p - 1) alpha + 2 (p - 1) / p n / B, all-gather (p - 1) alpha +
    (p - 1) / p n / B. Stated: alpha 3 us, B 450 GB/s; fitted: 1.84 us, 297.8 GB/s."""
    h100 = devices["nvidia-h100-sxm5"]
    n, g = 131_072, 512_000

    def hand(alpha, bw):
        return 161 * (14 * alpha + 1.75 * n / bw) + (7 * alpha + 0.875 * g / bw)

    opts = Options(algorithm="ring")
    ideal = analyze_system(LLAMA70, fitted(), h100, [Layout(tp=8)], "fp16", DECODE, options=opts)
    plain = analyze_system(LLAMA70, hgx(), h100, [Layout(tp=8)], "fp16", DECODE, options=opts)
    cal = analyze_system(LLAMA70, fitted(), h100, [Layout(tp=8)], "fp16", DECODE,
                         options=replace(opts, time_model="calibrated"))
    assert ideal.comm_time[0] == pytest.approx(hand(3e-6, 450e9), rel=1e-12)  # a stored fit leaves ideal alone
    assert ideal.step_time[0] == plain.step_time[0]
    assert cal.comm_time[0] == pytest.approx(hand(1.84e-6, 297.8e9), rel=1e-12)
    assert cal.comm_time[0] - ideal.comm_time[0] == pytest.approx(
        hand(1.84e-6, 297.8e9) - hand(3e-6, 450e9), rel=1e-9)
    assert cal.time_model == "calibrated" and cal.calibrated_links == ("NVLink",) and ideal.calibrated_links == ()
    assert cal.system is not None and cal.system.domains[0].link.bandwidth.value == 450e9  # the stated one kept
    # the compute follows the device's calibrated kernels (ideal where the device has none)
    assert cal.step_time[0] == pytest.approx(cal.compute_time[0] + cal.comm_time[0], rel=1e-12)


def test_calibrated_model_without_stored_fit_keeps_the_stated_link(devices):
    h100 = devices["nvidia-h100-sxm5"]
    ideal = analyze_system(LLAMA70, hgx(), h100, [Layout(tp=8)], "fp16", DECODE)
    cal = analyze_system(LLAMA70, hgx(), h100, [Layout(tp=8)], "fp16", DECODE, options=Options(time_model="calibrated"))
    assert cal.comm_time[0] == ideal.comm_time[0] and cal.calibrated_links == ()
    with pytest.raises(ValueError, match="time_model"):
        analyze_system(LLAMA70, hgx(), h100, [Layout(tp=8)], "fp16", DECODE, options=Options(time_model="measured"))


def test_a_scale_out_fit_is_per_device_and_survives_more_nodes():
    out = hgx().domains[1]
    fit = replace(FIT, ranks=16, bandwidth=Cited(40e9, "40 GB/s"))
    two = replace(hgx(), domains=(hgx().domains[0], replace(out, per="node", oversubscription=2.0,
                                                             calibration=fit))).with_nodes(2)
    cal = two.for_time_model("calibrated")
    assert two.bandwidth(two.domains[1]) == 50e9 / 8 / 2  # stated: a node's figure shared, oversubscribed
    assert cal.bandwidth(cal.domains[1]) == 40e9 and cal.domains[1].alpha == 1.84e-6  # the measured, per device
    assert cal.domains[0] == two.domains[0] and two.for_time_model("ideal") is two


def test_a_time_is_labelled_by_its_least_certain_part(devices):
    """spec when nothing it uses is calibrated, partly when some is, calibrated when all is: one layout on the
    fitted NVLink only (TP 8), one also on the unfitted network (TP 8 x PP 2 over two nodes)."""
    from explorer.core.analysis.time_source import system_time_sources

    h100 = devices["nvidia-h100-sxm5"]
    two = fitted(hgx()).with_nodes(2)
    layouts = [Layout(tp=8, dp=2), Layout(tp=8, pp=2)]
    ideal = analyze_system(LLAMA70, two, h100, layouts, "fp16", DECODE)
    cal = analyze_system(LLAMA70, two, h100, layouts, "fp16", DECODE, options=Options(time_model="calibrated"))
    assert system_time_sources(ideal) == ("spec", "spec")
    assert cal.kernel_source == "calibrated"  # the shipped H100 has matrix and vector curves at fp16
    assert cal.level_bytes[0, 1] == 0 and cal.level_bytes[1, 1] > 0  # PP 2 sends over the network
    assert system_time_sources(cal) == ("calibrated", "partly calibrated")
    bare = replace(h100, calibration=None)
    none = analyze_system(LLAMA70, two, bare, layouts, "fp16", DECODE, options=Options(time_model="calibrated"))
    assert none.kernel_source == "spec" and system_time_sources(none) == ("partly calibrated", "partly calibrated")
    plain = analyze_system(LLAMA70, hgx(), bare, [Layout(tp=8)], "fp16", DECODE,
                           options=Options(time_model="calibrated"))
    assert system_time_sources(plain) == ("spec",)  # the calibrated model with nothing calibrated says spec


def test_a_soft_fit_joins_the_terms_in_the_calibrated_model_by_hand(devices):
    """The same run as above with a stored sharpness s = 0.6: each collective takes (L**s + W**s)**(1/s) of its
    latency term L and bandwidth term W instead of L + W (collectives.join)."""
    from explorer.core.parallel.collectives import join

    assert join(3.0, 4.0, 1.0) == 7.0 and join(3.0, 4.0, 0.5) == pytest.approx((3**0.5 + 2.0) ** 2, rel=1e-15)
    a, bw, s, n, g = 1.84e-6, 297.8e9, 0.6, 131_072, 512_000
    hand = 161 * (((14 * a) ** s + (1.75 * n / bw) ** s) ** (1 / s)) + (
        ((7 * a) ** s + (0.875 * g / bw) ** s) ** (1 / s))
    system = fitted()
    soft = replace(system, domains=(replace(system.domains[0], calibration=replace(FIT, sharpness=s)),
                                    system.domains[1]))
    cal = analyze_system(LLAMA70, soft, devices["nvidia-h100-sxm5"], [Layout(tp=8)], "fp16", DECODE,
                         options=Options(algorithm="ring", time_model="calibrated"))
    assert cal.comm_time[0] == pytest.approx(hand, rel=1e-12)  # 5.04 ms: above the sum's 4.29 ms
    data = system_to_dict(soft)
    data["domains"][1]["bandwidth"] = "50 GB/s"  # the hand system's text "400 Gb/s" is not a file's unit
    assert data["domains"][0]["calibrated"]["sharpness"] == 0.6
    assert system_from_dict(data).domains[0].calibration.sharpness == 0.6
    data["domains"][0]["calibrated"]["sharpness"] = 2
    with pytest.raises(SystemFileError, match="calibrated.sharpness: expected a number from 0.1 to 1"):
        system_from_dict(data)
