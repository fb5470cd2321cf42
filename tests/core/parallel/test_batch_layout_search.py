"""The systems' batch and layout searched together (issue 23): each system at the power of two and layout that meet
the latency limit with the fewest devices; against a brute force over independent ``plan --system`` sizings, on the
catalog's DGX H100 and 8x L40S server with Llama-3-70B decode."""

from __future__ import annotations

import json
import math
from dataclasses import astuple, replace

import pytest

from explorer.__main__ import main
from explorer.core.hardware.catalog_files import load_shipped_devices, load_shipped_systems
from explorer.core.parallel.batch_layout_search import plan_time_source, search_system_batch
from explorer.core.parallel.compare import size_on_systems
from explorer.core.parallel.sizing import size_fleet
from explorer.core.parallel.system_pass import Options
from explorer.core.workload.layers import Context
from explorer.core.workload.templates import get_template

DGX, L40S = "nvidia-dgx-h100", "pcie-server-8x-nvidia-l40s"
DEVICES = {d.id: d for d in load_shipped_devices()}
SYSTEMS = {s.id: s for s in load_shipped_systems()}
HARDWARE = [(SYSTEMS[i], DEVICES[SYSTEMS[i].device_id]) for i in (DGX, L40S)]
CTX = Context(batch=16, seq_len=4096, phase="decode")


def _key(plan) -> tuple:
    """A plan's fields, an unknown (NaN) price or capital equal to another unknown."""
    return tuple("nan" if isinstance(v, float) and math.isnan(v) else v for v in astuple(plan))


@pytest.fixture(scope="module")
def model():
    return get_template("llama3-70b").build()


@pytest.fixture(scope="module")
def search(model):
    return search_system_batch(model, HARDWARE, "fp16", CTX, 20_000.0, 0.05, cap=64)


def test_the_choice_is_the_brute_force_minimum_of_devices(model, search):
    assert search.batches == (1, 2, 4, 8, 16, 32, 64)
    for s, (system, _) in enumerate(HARDWARE):
        best = None
        for b in search.batches:  # each batch sized on its own, as plan --system --batch B does
            (p,) = size_fleet(size_on_systems(model, [HARDWARE[s]], "fp16", replace(CTX, batch=b)), 20_000.0, 0.05)
            assert _key(search.plans[search.batches.index(b)][s]) == _key(replace(p, batch=b))
            if p.feasible and p.latency <= 0.05 and (best is None or (p.devices, p.latency) < best[0]):
                best = ((p.devices, p.latency), b, p)
        assert best is not None
        chosen = search.result[s]
        assert (chosen.batch, chosen.devices, chosen.layout) == (best[1], best[2].devices, best[2].layout)
        assert search.chosen[s] == best[1] and chosen.system_id == system.id


def test_searching_the_batch_needs_fewer_devices_than_the_toolbars(model, search):
    at16 = size_fleet(size_on_systems(model, HARDWARE, "fp16", CTX), 20_000.0, 0.05)
    # the last session's numbers at batch 16: DGX H100 TP8, 10 replicas = 80 GPUs; 8x L40S 52 replicas = 416
    assert [p.devices for p in at16] == [80, 416]
    dgx, l40s = search.result
    assert dgx.devices < 80 and l40s.devices < 416
    assert all(p.latency <= 0.05 and p.feasible for p in search.result)
    # the L40S server stops at batch 32: at 64 no layout meets 50 ms
    assert l40s.batch == 32 and "at batch 64: no layout meets the latency limit of 50 ms" in search.why[1]
    assert search.why[0].startswith(f"batch {dgx.batch}, {dgx.layout.label()}: the fewest devices ({dgx.devices} "
                                    "devices")


def test_no_feasible_batch_is_shown_at_batch_1_and_says_so(model):
    s = search_system_batch(model, HARDWARE[1:], "fp16", CTX, 20_000.0, 1e-4, cap=4)  # 0.1 ms: nothing meets it
    (p,) = s.result
    assert p.batch == 1 and not p.feasible
    assert s.why[0] == ("batch 1: no batch from 1 to 4 and no layout meets the 100 \u00b5s latency limit with the model "
                        "in memory; shown at the shortest pass")


def test_plan_system_search_batch_equals_the_core(capsys, search):
    args = ["plan", "llama3-70b", "--system", DGX, "--system", L40S, "--phase", "decode", "--batch", "16",
            "--seq-len", "4096", "--target", "20000 tokens/s", "--latency", "50 ms", "--search-batch", "64", "--json"]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(x["batch"], x["devices"], x["layout"]) for x in data["systems"]] == \
        [(p.batch, p.devices, p.layout.to_dict()) for p in search.result]
    assert data["batch_search"]["chosen"] == {DGX: search.chosen[0], L40S: search.chosen[1]}
    assert data["batch_search"]["why"][L40S] == search.why[1]
    assert main(args[:-3] + ["--search-batch", "0"]) == 2
    assert "--search-batch: expected a positive whole number" in capsys.readouterr().err


CALIBRATED = Options(time_model="calibrated")


@pytest.fixture(scope="module")
def calibrated(model):
    return search_system_batch(model, HARDWARE, "fp16", CTX, 20_000.0, 0.05, options=CALIBRATED, cap=64)


def test_under_the_calibrated_model_the_choice_is_the_brute_force_minimum(model, search, calibrated):
    """The same brute force over independent sizings, each under the calibrated model (the H100's fitted kernel
    curves; NVLink has no stored fit; the L40S has no calibration and keeps the ideal times: spec)."""
    assert calibrated.time_model == "calibrated" and search.time_model == "ideal"
    for s, (system, _) in enumerate(HARDWARE):
        best = None
        for i, b in enumerate(calibrated.batches):
            (r,) = size_on_systems(model, [HARDWARE[s]], "fp16", replace(CTX, batch=b), options=CALIBRATED)
            (p,) = size_fleet((r,), 20_000.0, 0.05)
            assert _key(calibrated.plans[i][s]) == _key(replace(p, batch=b))
            assert calibrated.sources[i][s] == plan_time_source(r, p)
            if p.feasible and p.latency <= 0.05 and (best is None or (p.devices, p.latency) < best[0]):
                best = ((p.devices, p.latency), b, p)
        assert best is not None
        chosen = calibrated.result[s]
        assert (chosen.batch, chosen.devices, chosen.layout) == (best[1], best[2].devices, best[2].layout)
    dgx, l40s = calibrated.result
    # the calibrated H100 kernels are slower: the DGX needs more devices than under the ideal model
    assert dgx.devices > search.result[0].devices and dgx.latency > 0
    assert calibrated.result_sources == ("partly calibrated", "spec")
    assert _key(l40s) == _key(search.result[1])  # no calibration on the L40S: the ideal model's plan
    assert search.result_sources == ("spec", "spec")


def test_plan_system_search_batch_under_the_calibrated_model(capsys, calibrated):
    args = ["plan", "llama3-70b", "--system", DGX, "--system", L40S, "--phase", "decode", "--batch", "16",
            "--seq-len", "4096", "--target", "20000 tokens/s", "--latency", "50 ms", "--search-batch", "64",
            "--time-model", "calibrated"]
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(x["batch"], x["devices"], x["layout"]) for x in data["systems"]] == \
        [(p.batch, p.devices, p.layout.to_dict()) for p in calibrated.result]
    assert data["time_model"] == data["batch_search"]["time_model"] == "calibrated"
    assert [x["time_source"] for x in data["systems"]] == ["partly calibrated", "spec"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "batch searched over 1-64 per system under the calibrated model" in out
