"""Cost per TFLOP/s, TCO and cost per million: the chapter's Table 8 and invariants (devices built here, not
the catalog).
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.analysis.cost import (
    JOULES_PER_KWH,
    POWER_ASSUMPTION,
    SECONDS_PER_YEAR,
    CostAssumptions,
    compute_cost,
)
from explorer.core.analysis.evaluate import evaluate
from explorer.core.hardware.device_file import device_from_dict
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerSpec, Model

MODEL = Model.make(
    "mlp",
    {"features": 1024},
    [
        LayerSpec.make("dense", "fc1", in_features=1024, out_features=4096),
        LayerSpec.make("relu", "act"),
        LayerSpec.make("dense", "fc2", in_features=4096, out_features=1024),
    ],
)


def device(id_, peak, bw, precision, price=None, tdp=None, cloud=None):
    data = {
        "id": id_,
        "name": id_,
        "vendor": "test",
        "kind": "gpu",
        "peak": {precision: peak},
        "memory": [{"name": "HBM", "role": "offchip", "capacity": "80 GB", "bandwidth": bw}],
    }
    for key, value in (("price", price), ("tdp", tdp), ("cloud_price", cloud)):
        if value is not None:
            data[key] = value
    return device_from_dict(data)


# The chapter's Table 8 (reference E31): list price / peak at the precision of each row.
TABLE_8 = [
    ("v100", "10000 USD", "125 TFLOP/s", "900 GB/s", "fp16", 80.0),
    ("a100", "15000 USD", "312 TFLOP/s", "2039 GB/s", "fp16", 48.1),
    ("h100", "25000 USD", "494 TFLOP/s", "3350 GB/s", "tf32", 50.6),
    ("tpuv4", "8000 USD", "275 TFLOP/s", "1200 GB/s", "bf16", 29.1),
    ("gaudi2", "12000 USD", "865 TFLOP/s", "2450 GB/s", "fp8", 13.9),
]


@pytest.mark.parametrize("id_, price, peak, bw, precision, printed", TABLE_8)
def test_price_per_peak_tflops_reproduces_table_8(id_, price, peak, bw, precision, printed):
    analysis = evaluate(MODEL, [device(id_, peak, bw, precision, price=price)], precision)
    cost = compute_cost(analysis, CostAssumptions())
    per_tflops = cost.price_per_peak[0] * 1e12  # USD per (FLOP/s) -> USD per (TFLOP/s)
    assert per_tflops == pytest.approx(printed, abs=0.05)
    assert cost.reason("price_per_peak", 0) == ""


def test_table_8_exact_quotients_and_bandwidth_per_dollar():
    analysis = evaluate(
        MODEL, [device("a100", "312 TFLOP/s", "2039 GB/s", "fp16", price="15000 USD")], "fp16"
    )
    cost = compute_cost(analysis, CostAssumptions())
    assert cost.price_per_peak[0] * 1e12 == pytest.approx(15000 / 312)  # 48.077
    assert cost.price_per_bandwidth[0] * 1e9 == pytest.approx(15000 / 2039)  # USD per GB/s: 7.357


def test_sustained_price_is_price_over_achieved_flops():
    analysis = evaluate(
        MODEL, [device("a100", "312 TFLOP/s", "2039 GB/s", "fp16", price="15000 USD")], "fp16"
    )
    cost = compute_cost(analysis, CostAssumptions())
    achieved = analysis.totals.flops[0] / analysis.totals.time[0]
    assert cost.price_per_sustained[0] == pytest.approx(15000 / achieved)
    # a batch-1 MLP is memory-bound: far from peak, so sustained costs more per FLOP/s than peak
    assert cost.price_per_sustained[0] > 5 * cost.price_per_peak[0]


def test_tco_and_cost_per_million_hand_computed():
    # 400 W, 60 % busy, PUE 1.3, 3 years, 0.12 USD/kWh
    analysis = evaluate(
        MODEL,
        [device("a", "312 TFLOP/s", "2039 GB/s", "fp16", price="15000 USD", tdp="400 W", cloud="4.10 USD/h")],
        "fp16",
    )
    a = CostAssumptions(years=3, electricity_usd_per_kwh=0.12, pue=1.3, utilization=0.6)
    cost = compute_cost(analysis, a)
    hours = 3 * 365.25 * 24
    kwh = 0.400 * 0.6 * 1.3 * hours  # 0.312 kW x 26 298 h = 8 205.0 kWh
    assert cost.energy_cost[0] == pytest.approx(kwh * 0.12)
    assert cost.energy_cost[0] == pytest.approx(984.60, abs=0.01)
    assert cost.tco[0] == pytest.approx(15000 + kwh * 0.12)
    served = analysis.totals.throughput[0] * 0.6 * hours * 3600
    assert cost.cost_per_million[0] == pytest.approx(cost.tco[0] / served * 1e6)
    # cloud: 4.10 USD per hour rented, busy 60 % of it
    per_inference = (4.10 / 3600) / (analysis.totals.throughput[0] * 0.6)
    assert cost.cloud_cost_per_million[0] == pytest.approx(per_inference * 1e6)
    assert cost.unit == "inference"
    assert cost.power_assumption == POWER_ASSUMPTION and "TDP x utilization" in POWER_ASSUMPTION


def test_decode_counts_tokens():
    model = Model.make(
        "lm", {"tokens": 256, "hidden": 512}, [LayerSpec.make("transformer_block", "h", heads=8)]
    )
    analysis = evaluate(
        model,
        [device("a", "312 TFLOP/s", "2039 GB/s", "fp16", price="15000 USD", tdp="400 W")],
        "fp16",
        Context(batch=4, phase="decode"),
    )
    assert compute_cost(analysis, CostAssumptions()).unit == "token"


def test_missing_figures_are_nan_with_a_reason_not_dropped():
    devices = [
        device("priced", "312 TFLOP/s", "2039 GB/s", "fp16", price="15000 USD", tdp="400 W"),
        device("unpriced", "312 TFLOP/s", "2039 GB/s", "fp16", tdp="400 W"),
        device("bare", "312 TFLOP/s", "2039 GB/s", "fp16"),
        device("other-precision", "275 TFLOP/s", "1200 GB/s", "bf16", price="8000 USD", tdp="170 W"),
    ]
    cost = compute_cost(evaluate(MODEL, devices, "fp16"), CostAssumptions())
    assert cost.ids == ("priced", "unpriced", "bare", "other-precision")
    assert np.isfinite(cost.tco[0]) and cost.missing[0] == "no cloud hourly price"
    assert math.isnan(cost.price_per_peak[1])
    assert cost.reason("price_per_peak", 1) == "no list price in the catalog"
    assert np.isfinite(cost.energy_cost[1])  # the electricity is still known
    assert cost.reason("tco", 2) == "no list price in the catalog; no TDP"
    assert "no TDP" in cost.missing[2]
    # a device with only the other 16-bit float computes there (issue 24), and the analysis says so
    assert cost.reason("price_per_sustained", 3) == "" and cost.price_per_peak[3] == pytest.approx(8000 / 275e12)
    assert cost.reason("price_per_bandwidth", 3) == ""
    # a device without a peak at the precision (nor a same-width one): one reason, not a cascade
    cost = compute_cost(evaluate(MODEL, devices, "fp32"), CostAssumptions())
    assert cost.reason("price_per_sustained", 3) == "no fp32 peak"
    assert cost.reason("price_per_bandwidth", 3) == ""


@pytest.mark.parametrize(
    "field, value",
    [
        ("years", 0),
        ("pue", 0.9),
        ("utilization", 0),
        ("utilization", 1.5),
        ("electricity_usd_per_kwh", -1),
        ("years", float("nan")),
    ],
)
def test_bad_assumptions_name_the_field(field, value):
    analysis = evaluate(MODEL, [device("a", "312 TFLOP/s", "2039 GB/s", "fp16", price="15000 USD")], "fp16")
    kwargs = {"years": 3, "electricity_usd_per_kwh": 0.12, "pue": 1.3, "utilization": 0.6, field: value}
    with pytest.raises(ValueError, match=field):
        compute_cost(analysis, CostAssumptions(**kwargs))


ASSUMPTIONS = st.builds(
    CostAssumptions,
    years=st.floats(0.1, 10),
    electricity_usd_per_kwh=st.floats(0, 1),
    pue=st.floats(1, 3),
    utilization=st.floats(0.01, 1),
)


@settings(max_examples=60, deadline=None)
@given(
    price=st.floats(100, 1e6),
    tdp=st.floats(1, 2000),
    peak=st.floats(1, 5000),
    bw=st.floats(10, 10000),
    a=ASSUMPTIONS,
)
def test_invariants(price, tdp, peak, bw, a):
    d = device("x", f"{peak} TFLOP/s", f"{bw} GB/s", "fp16", price=f"{price} USD", tdp=f"{tdp} W")
    analysis = evaluate(MODEL, [d], "fp16")
    cost = compute_cost(analysis, a)
    # TCO is the price plus a non-negative electricity bill, proportional to the years
    assert cost.tco[0] >= price * (1 - 1e-12)
    expected = (
        tdp * a.utilization * a.pue * a.years * SECONDS_PER_YEAR / JOULES_PER_KWH * a.electricity_usd_per_kwh
    )
    assert cost.energy_cost[0] == pytest.approx(expected, rel=1e-9, abs=1e-9)
    # nothing sustains more than its peak, so sustained FLOP/s always cost at least as much as peak ones
    assert cost.price_per_sustained[0] >= cost.price_per_peak[0] * (1 - 1e-12)
    # doubling the price doubles the capital figures
    doubled = compute_cost(
        evaluate(
            MODEL,
            [device("x", f"{peak} TFLOP/s", f"{bw} GB/s", "fp16", price=f"{2 * price} USD", tdp=f"{tdp} W")],
            "fp16",
        ),
        a,
    )
    assert doubled.price_per_peak[0] == pytest.approx(2 * cost.price_per_peak[0])
    assert doubled.tco[0] - cost.tco[0] == pytest.approx(price, rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(a=ASSUMPTIONS, more=st.floats(0.01, 0.5))
def test_busier_devices_cost_less_per_million(a, more):
    d = device("x", "312 TFLOP/s", "2039 GB/s", "fp16", price="15000 USD", tdp="400 W")
    analysis = evaluate(MODEL, [d], "fp16")
    busier = CostAssumptions(a.years, a.electricity_usd_per_kwh, a.pue, min(1.0, a.utilization + more))
    assert compute_cost(analysis, busier).cost_per_million[0] <= compute_cost(analysis, a).cost_per_million[
        0
    ] * (1 + 1e-12)


def test_with_price_is_a_marked_what_if():
    from explorer.core.analysis.cost import with_price

    d = device("a", "312 TFLOP/s", "2039 GB/s", "fp16")
    priced = with_price(d, 15000.0)
    assert priced.price.value == 15000.0 and priced.price.source is None and "cost panel" in priced.price.note
    cost = compute_cost(evaluate(MODEL, [priced], "fp16"), CostAssumptions())
    assert cost.price_per_peak[0] * 1e12 == pytest.approx(48.08, abs=0.01)
    assert with_price(priced, None).price is None
    with pytest.raises(ValueError, match="price"):
        with_price(d, -5.0)
