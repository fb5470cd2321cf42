"""The train phase: the work table of one training step (forward, backward, Adam) that the roofline, energy and
tiling panels read; checked by hand on a tiny MLP and against the training core on templates."""

import functools
import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.analysis.evaluate import evaluate
from explorer.core.session.project import Project
from explorer.core.session.state import Assumptions, State
from explorer.core.training.step import TrainingSetup, with_lora
from explorer.core.training.work import step_work
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerSpec, Model, build_table
from explorer.core.workload.templates import get_template
from explorer.core.workload.train_step import part_of

MLP = Model.make("tiny MLP", {"features": 4}, [
    LayerSpec.make("dense", "fc1", in_features=4, out_features=8),
    LayerSpec.make("relu", "act"),
    LayerSpec.make("dense", "fc2", in_features=8, out_features=2),
])


def test_tiny_mlp_train_step_is_three_forwards_plus_adam_by_hand():
    """Batch 2. Forward: fc1 2 x 4 x 8 = 64 MACs = 128 FLOPs + 16 bias adds = 144; ReLU 16; fc2 2 x 8 x 2 = 32 MACs
    = 64 + 4 bias = 68; 228 FLOPs. Backward 2 x each = 456. Adam 12 FLOPs x 58 parameters (40 + 18) = 696.
    Step 228 + 456 + 696 = 1,380 FLOPs = 3 x forward + 12 x parameters."""
    fwd = build_table(MLP, Context(batch=2))
    t = build_table(MLP, Context(batch=2, phase="train"))
    assert fwd.total("flops") == 228
    parts = part_of(t)
    flops = t.flops * t.columns["count"]
    assert flops[parts == 0].sum() == 228 and flops[parts == 1].sum() == 456 and flops[parts == 2].sum() == 696
    assert t.total("flops") == 1380 == 3 * fwd.total("flops") + 12 * 58
    # rows grouped per layer: forward, backward, then that layer's Adam step; the layer status covers them
    assert t.names == ("fc1", "fc1 (backward)", "fc1 (Adam)", "act", "act (backward)", "fc2", "fc2 (backward)",
                       "fc2 (Adam)")
    assert [(s.first_row, s.n_rows) for s in t.status] == [(0, 3), (3, 2), (5, 3)]
    assert t.total("params") == fwd.total("params") == 58  # the model's size counted once


def test_tiny_mlp_bytes_of_the_backward_and_adam_at_fp16():
    """fp16 (2 B). fc1 backward: dY read (2 x 8 = 16 elems), X read and dX written (2 x 8 = 16), W read and dW
    written (2 x 40 = 80): 112 elems = 224 B. Adam on fc1's 40 parameters: 24 B of fp32 master weight and moments
    (read and written) + the gradient read and the weights written at 2 B: 28 B each = 1,120 B."""
    d = _h100()
    a = evaluate(MLP, [d], "fp16", Context(batch=2, phase="train"))
    names = list(a.table.names)
    assert a.bytes[names.index("fc1 (backward)")] == 224
    assert a.bytes[names.index("fc1 (Adam)")] == 28 * 40
    assert a.bytes[names.index("fc2 (Adam)")] == 28 * 18
    assert a.totals.throughput_unit == "sequences/s"
    assert a.totals.kv_cache_bytes == 0


def test_train_phase_matches_the_training_core_on_llama3_8b():
    """The phase's forward + backward FLOPs are the training core's model FLOPs (6 N D plus attention)."""
    seq = 2048
    t = build_table(get_template("llama3-8b").build(), Context(batch=2, seq_len=seq, phase="train"))
    core = step_work(build_table(get_template("llama3-8b").build(), Context(batch=1, seq_len=seq, lm_head="all")), 2)
    parts = part_of(t)
    flops = t.flops * t.columns["count"]
    assert flops[parts == 0].sum() == pytest.approx(core.forward, rel=1e-12)
    assert flops[parts == 1].sum() == pytest.approx(core.backward, rel=1e-12)
    assert flops[parts == 2].sum() == pytest.approx(core.optimizer, rel=1e-12)
    assert t.columns["kv_cache_elems"].sum() == 0


def test_lora_backward_is_one_forward_for_frozen_gemms_and_adam_only_for_adapters():
    model = with_lora(get_template("llama3-8b").build(), TrainingSetup(1, 1024, lora_rank=16))
    t = build_table(model, Context(batch=1, seq_len=1024, phase="train"))
    parts, kinds = part_of(t), np.array(t.kinds)
    fwd = {n: i for i, n in enumerate(t.names) if parts[i] == 0}
    for i in np.flatnonzero(parts == 1):
        j = fwd[t.names[i].removesuffix(" (backward)")]
        if t.flops[j] == 0:  # the embedding lookup: no FLOPs either way
            continue
        ratio = t.flops[i] / t.flops[j]
        frozen = kinds[i] != "lora" and t.columns["params"][j] > 0
        assert ratio == (1.0 if frozen else 2.0), t.names[i]
    adapters = float((t.columns["params"] * t.columns["count"])[kinds == "lora"].sum())
    assert adapters == 32 * 16 * (8192 + 2 * 5120 + 8192)
    assert float((t.columns["other_flops"] * t.columns["count"])[parts == 2].sum()) == 12 * adapters


def test_a_train_step_takes_longer_than_its_forward():
    d = _h100()
    m = get_template("llama3-8b").build()
    pre = evaluate(m, [d], "bf16", Context(seq_len=4096, lm_head="all"))
    train = evaluate(m, [d], "bf16", Context(seq_len=4096, phase="train"))
    assert 3 * pre.totals.time[0] < train.totals.time[0] < 4 * pre.totals.time[0]


def test_the_phase_is_a_state_value_and_projects_round_trip(tmp_path):
    """Project files keep their meaning: formats up to 6 only held prefill or decode, so no migration; a file with
    the train phase round-trips."""
    with pytest.raises(ValueError, match="phase: expected prefill, decode, train"):
        Assumptions(phase="training").checked()
    state = State(model=MLP, assumptions=Assumptions(phase="train"))
    p = Project.of_state(state)
    back = Project.from_dict(json.loads(p.dumps()), "p.hwproj")
    assert back.assumptions.phase == "train"
    old = json.loads(p.dumps())
    old["assumptions"]["phase"] = "decode"
    assert Project.from_dict(old, "old.hwproj").assumptions.phase == "decode"
    assert replace(back.assumptions, phase="prefill").context.phase == "prefill"


@functools.lru_cache(maxsize=1)
def _h100():
    from explorer.core.hardware.catalog_files import load_shipped_devices
    return next(d for d in load_shipped_devices() if d.id == "nvidia-h100-sxm5")


@given(st.lists(st.integers(1, 64), min_size=2, max_size=6), st.integers(1, 8), st.booleans())
@settings(max_examples=40, deadline=None)
def test_any_mlp_step_is_three_forwards_plus_adam(widths, batch, bias):
    """Invariant over random MLPs: step FLOPs = 3 x forward + 12 x parameters; rows per layer contiguous; the
    parameters counted once; the optimizer's bytes 28 per parameter at 16-bit weights."""
    layers = [LayerSpec.make("dense", f"fc{i}", in_features=a, out_features=b, bias=bias)
              for i, (a, b) in enumerate(zip(widths, widths[1:]))]
    model = Model.make("mlp", {"features": widths[0]}, layers)
    fwd = build_table(model, Context(batch=batch))
    t = build_table(model, Context(batch=batch, phase="train"))
    params = fwd.total("params")
    assert t.total("flops") == 3 * fwd.total("flops") + 12 * params and t.total("params") == params
    assert [s.n_rows for s in t.status] == [3] * len(layers)
    a = evaluate(t, [_h100()], "bf16", Context(batch=batch, phase="train"), model)
    opt = part_of(t) == 2
    assert float(a.bytes[opt].sum()) == 28 * params


def test_a_model_without_layers_or_with_a_broken_layer():
    empty = Model.make("empty", {"features": 4}, [])
    t = build_table(empty, Context(phase="train"))
    assert len(t) == 0 and t.status == ()
    broken = Model.make("broken", {"features": 4}, [LayerSpec.make("dense", "bad", in_features=5, out_features=2),
                                                    LayerSpec.make("dense", "ok", in_features=4, out_features=2)])
    t = build_table(broken, Context(phase="train"))
    assert t.status[0].error and t.status[0].n_rows == 0
    assert t.names == ("ok", "ok (backward)", "ok (Adam)") and t.status[1].first_row == 0
