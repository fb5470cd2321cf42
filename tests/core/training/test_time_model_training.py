"""Calibrated times in training (the Times switch): the system pass takes each row's calibrated time where the
device has fitted curves; a device without them keeps the ideal times; the CLI and the session follow the switch."""

import json
from dataclasses import replace

import pytest

from explorer.__main__ import main
from explorer.core.analysis.evaluate import evaluate
from explorer.core.hardware.device_file import device_from_dict
from explorer.core.training.layout import TrainingLayout
from explorer.core.training.step import TrainingSetup, analyze_training
from explorer.core.workload.layers import Context
from explorer.core.workload.model import build_table
from explorer.core.workload.templates import get_template

CAL = {"matrix": {"bf16": {"fraction": 0.6, "latency": "12 us", "sharpness": 1}},
       "vector": {"fraction": 0.7, "latency": "4 us", "sharpness": 1}}


@pytest.fixture
def calibrated_h100(devices):
    cal = device_from_dict({"id": "c", "name": "c", "vendor": "t", "kind": "gpu", "peak": {"bf16": "1 TFLOP/s"},
                            "memory": [{"name": "HBM", "role": "offchip", "capacity": "80 GB",
                                        "bandwidth": "1 TB/s"}], "calibration": CAL}).calibration
    return replace(devices["nvidia-h100-sxm5"], calibration=cal)


def _forward(model, device, time_model):
    """TP1 PP1 DP8 on one DGX H100: no TP, CP or pipeline communication, so a micro-batch's forward is the
    single-device pass over the whole model's rows (batch 1, 2,048 tokens, every position's logits, fused)."""
    return analyze_training(model, _system(), device, [TrainingLayout(1, 1, 8)],
                            TrainingSetup(8, 2048, zero=1, time_model=time_model))


def _system():
    from explorer.core.hardware.catalog_files import load_shipped_systems
    return next(s for s in load_shipped_systems() if s.id == "nvidia-dgx-h100")


def test_the_forward_is_the_single_device_pass_in_either_model(calibrated_h100):
    model = get_template("llama3-8b").build()
    ctx = Context(batch=1, seq_len=2048, lm_head="all", attention="fused")
    single = evaluate(build_table(model, ctx), [calibrated_h100], "bf16", ctx, model)
    ideal, cal = _forward(model, calibrated_h100, "ideal"), _forward(model, calibrated_h100, "calibrated")
    assert ideal.forward_time[0] == pytest.approx(single.totals.time[0], rel=1e-9)
    assert cal.forward_time[0] == pytest.approx(single.totals.calibrated_time[0], rel=1e-9)
    # the fitted curves (60 % of peak at best, 12 us a GEMM) are slower than the ideal model: the step lengthens,
    # MFU falls, and the model FLOPs do not change
    assert cal.step_time[0] > ideal.step_time[0] and cal.mfu[0] < ideal.mfu[0]
    assert cal.work.model_flops == ideal.work.model_flops
    assert cal.dp_time[0] == ideal.dp_time[0]  # communication is on the links' figures in both


def test_a_device_without_curves_keeps_the_ideal_times(devices):
    model = get_template("llama3-8b").build()
    h100 = replace(devices["nvidia-h100-sxm5"], calibration=None)
    assert _forward(model, h100, "calibrated").step_time[0] == _forward(model, h100, "ideal").step_time[0]


def test_train_time_model_option(capsys):
    """The shipped H100 SXM5 carries fitted curves (docs/calibration.md): calibrated times on a DGX H100 differ from
    the ideal ones; the HGX A100 80GB's device has none, and the output says the times are ideal."""
    argv = ["train", "llama3-8b", "--global-batch", "8", "--seq-len", "2048", "--tp", "1", "--pp", "1", "--dp", "8"]
    steps = {}
    for model in ("ideal", "calibrated"):
        assert main(argv + ["--system", "nvidia-dgx-h100", "--time-model", model, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["setup"]["time_model"] == model and data["setup"]["calibrated"] is (model == "calibrated")
        steps[model] = data["chosen"]["step_time_s"]
    assert steps["calibrated"] != steps["ideal"]
    assert main(argv + ["--system", "nvidia-hgx-a100-8gpu", "--time-model", "calibrated"]) == 0
    assert "nvidia-a100-sxm4-80gb has no calibration: ideal times" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(argv + ["--system", "nvidia-dgx-h100", "--time-model", "measured"])
    assert exc.value.code == 2
