"""The training step: its parts add up, hand-checked pieces, and the invariants the issue names (hypothesis)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.parallel.collectives import collective_time
from explorer.core.training.cost import cost_to_train
from explorer.core.training.layout import TrainingLayout
from explorer.core.training.memory import LayerShape, bubble_fraction, layer_activations
from explorer.core.training.step import STEP_PARTS, TrainingSetup, analyze_training
from explorer.core.workload.templates import get_template

MODEL = get_template("llama3-8b").build()
FAST = settings(max_examples=12, deadline=None)


@pytest.fixture(scope="module")
def h100(systems, devices):
    node = systems["nvidia-dgx-h100"]
    return node, devices[node.device_id]


def run(h100, layout, nodes=1, model=MODEL, **setup):
    node, dev = h100
    base = {"global_batch": 64, "seq_len": 2048, "micro_batch": 1}
    base.update(setup)
    return analyze_training(model, node.with_nodes(nodes) if nodes > 1 else node, dev, [layout],
                            TrainingSetup(**base))


def test_parts_add_up_and_dp_allreduce_by_hand(h100):
    r = run(h100, TrainingLayout(tp=8, dp=2), nodes=2, zero=0)
    assert r.step_parts.shape == (1, len(STEP_PARTS))
    assert r.step_parts.sum(axis=1) == pytest.approx(r.step_time)
    # DP 2 across two nodes (ranks 8 apart): one ring all-reduce of the bf16 gradients of 1/8 of the weights on
    # the ConnectX-7 link (50 GB/s per direction, alpha 2.7 us); the time equals collectives.collective_time's
    node, _ = h100
    out = node.with_nodes(2).domains[-1]
    grads = 2 * r.weight_bytes[0] / 2
    assert r.dp_time[0] == pytest.approx(float(collective_time("all_reduce", grads, 2, 50e9, out.alpha, "auto")))
    assert r.dp_exposed[0] == r.dp_time[0]  # no overlap
    assert r.microbatches[0] == 32
    assert r.fits[0]


def test_overlap_hides_dp_behind_backward(h100):
    a = run(h100, TrainingLayout(tp=8, dp=2), nodes=2)
    b = run(h100, TrainingLayout(tp=8, dp=2), nodes=2, overlap=True)
    assert b.dp_exposed[0] == pytest.approx(max(0.0, b.dp_time[0] - b.backward_time[0]))
    assert b.step_time[0] < a.step_time[0]


def test_mfu_definition(h100):
    r = run(h100, TrainingLayout(tp=4, pp=2))
    assert r.mfu[0] == pytest.approx(r.work.model_flops / (r.step_time[0] * 8 * r.peak))
    assert r.tokens_per_s[0] == pytest.approx(64 * 2048 / r.step_time[0])
    assert 0 < r.mfu[0] < 1


def test_cost_to_train_by_hand(h100):
    r = run(h100, TrainingLayout(tp=8))
    c = cost_to_train(r, 1e9)
    assert c.steps == pytest.approx(1e9 / (64 * 2048))
    assert c.time_s[0] == pytest.approx(c.steps * r.step_time[0])
    assert c.energy_j[0] == pytest.approx(8 * 700.0 * 1.3 * c.time_s[0])  # H100 SXM TDP 700 W, PUE 1.3
    assert c.electricity_usd[0] == pytest.approx(c.energy_j[0] / 3.6e6 * 0.12)
    with pytest.raises(ValueError, match="tokens"):
        cost_to_train(r, -1)


# -- invariants


@FAST
@given(st.sampled_from([1, 2, 4]), st.sampled_from([1, 2]))
def test_zero3_memory_falls_with_dp(h100, dp, tp):
    """ZeRO-3: model states per device never grow with more data-parallel ranks (here 8 / tp per node)."""
    per_node = 8 // tp
    small = run(h100, TrainingLayout(tp=tp, dp=per_node * dp), nodes=dp, zero=3)
    large = run(h100, TrainingLayout(tp=tp, dp=per_node * dp * 2), nodes=dp * 2, zero=3)
    states = (lambda r: r.weight_bytes + r.gradient_bytes + r.optimizer_bytes)
    assert states(large)[0] < states(small)[0]


@FAST
@given(st.sampled_from([(8, 1), (4, 2), (2, 4), (1, 8)]), st.sampled_from(["gpipe", "1f1b"]),
       st.booleans())
def test_recomputation_trades_memory_for_time(h100, tp_pp, schedule, sp):
    tp, pp = tp_pp
    lay = TrainingLayout(tp=tp, pp=pp, schedule=schedule, sp=sp)
    runs = [run(h100, lay, recompute=rc, attention="naive") for rc in ("none", "selective", "full")]
    mem = [r.activation_bytes[0] for r in runs]
    time = [r.step_time[0] for r in runs]
    assert mem[0] >= mem[1] >= mem[2] and mem[0] > mem[2]
    assert time[0] <= time[1] <= time[2] and time[0] < time[2]


@FAST
@given(st.sampled_from([1, 2, 4]), st.sampled_from([1, 2]), st.sampled_from(["gpipe", "1f1b"]))
def test_more_dp_never_increases_activations(h100, dp, pp, schedule):
    tp = 8 // pp
    few = run(h100, TrainingLayout(tp=tp, pp=pp, dp=dp, schedule=schedule), nodes=dp)
    more = run(h100, TrainingLayout(tp=tp, pp=pp, dp=2 * dp, schedule=schedule), nodes=2 * dp)
    assert more.activation_bytes[0] <= few.activation_bytes[0]


@given(st.integers(1, 64), st.integers(1, 256), st.integers(1, 8))
def test_interleaving_never_lengthens_the_bubble(p, m, v):
    assert bubble_fraction("interleaved", p, m, v) <= bubble_fraction("1f1b", p, m)


def test_interleaving_shortens_the_step_bubble(h100):
    plain = run(h100, TrainingLayout(tp=1, pp=8), global_batch=32)
    inter = run(h100, TrainingLayout(tp=1, pp=8, schedule="interleaved", virtual=4), global_batch=32)
    assert inter.bubble_time[0] == pytest.approx(plain.bubble_time[0] / 4)


@given(st.sampled_from([1, 2, 4, 8, 16]), st.sampled_from([1, 2, 4, 8]), st.booleans(),
       st.sampled_from(["none", "selective"]), st.booleans())
def test_cp_divides_attention_activations(cp, tp, sp, recompute, fused):
    shape = LayerShape(8192, 64, 1024, 8192, 28672, gated=True)
    one = layer_activations(shape, 65536, 1, tp, sp, recompute, 1, fused)
    assert layer_activations(shape, 65536, 1, tp, sp, recompute, cp, fused) == pytest.approx(one / cp)


def test_cp_in_the_step(h100):
    """CP 2 over the node's 8 GPUs (TP 4): half the activations per device, and a K/V exchange on NVLink."""
    tp8 = run(h100, TrainingLayout(tp=4, dp=2), seq_len=16384, global_batch=16)
    cp2 = run(h100, TrainingLayout(tp=4, cp=2), seq_len=16384, global_batch=8)
    assert cp2.cp_comm_time[0] > 0 and tp8.cp_comm_time[0] == 0
    assert cp2.activation_bytes[0] < tp8.activation_bytes[0]


@FAST
@given(st.sampled_from([4, 8, 16, 64, 256]), st.sampled_from([0, 1, 2, 3]), st.sampled_from([(8, 1), (4, 2)]))
def test_lora_never_needs_more_memory(h100, rank, zero, tp_pp):
    tp, pp = tp_pp
    lay = TrainingLayout(tp=tp, pp=pp)
    full = run(h100, lay, zero=zero)
    lora = run(h100, lay, zero=zero, lora_rank=rank)
    assert lora.memory_bytes[0] <= full.memory_bytes[0]
    assert lora.work.trainable_params < full.work.trainable_params


def test_lora_70b_on_one_node(systems, devices):
    """'Can we fine-tune a 70B model on one 8-GPU node?' Full fine-tuning of Llama-3-70B at TP 8 needs 16 bytes
    x 70.6B / 8 = 141 GB of states per H100 (80 GB): no; LoRA rank 16 keeps 2 bytes per frozen weight: yes."""
    node = systems["nvidia-dgx-h100"]
    model = get_template("llama3-70b").build()
    setup = {"global_batch": 8, "seq_len": 4096, "recompute": "selective"}
    full = analyze_training(model, node, devices[node.device_id], [TrainingLayout(tp=8)], TrainingSetup(**setup))
    lora = analyze_training(model, node, devices[node.device_id], [TrainingLayout(tp=8)],
                            TrainingSetup(**setup, lora_rank=16))
    assert (full.weight_bytes + full.gradient_bytes + full.optimizer_bytes)[0] == pytest.approx(
        16 * full.weight_bytes[0] / 2)
    assert not full.fits[0] and lora.fits[0]
    assert np.all(lora.step_time < full.step_time)
    # the adapters, replicated over TP: 80 layers x 16 x ((8192 + 8192) + 2 (8192 + 1024) + (8192 + 8192)) each
    adapters = 80 * 16 * (2 * 16384 + 2 * 9216)
    assert lora.gradient_bytes[0] == 2 * adapters and lora.optimizer_bytes[0] == 12 * adapters


def test_side_by_side(systems, devices):
    """Llama-3-70B on eight DGX H100 against a TPU v5p slice of 128 chips (or whatever the catalog's slice holds):
    each gets its best fitting layout, and the H100 cluster's time to train is its step time x steps."""
    from explorer.core.training.compare import train_on_systems

    h100 = systems["nvidia-dgx-h100"].with_nodes(8)
    v5p = systems["google-tpu-v5p-128-slice"]
    setup = TrainingSetup(global_batch=256, seq_len=4096, recompute="selective", zero=1)
    out = train_on_systems(get_template("llama3-70b").build(),
                           [(h100, devices[h100.device_id]), (v5p, devices[v5p.device_id])], setup, 1e12)
    assert [r.system.id for r in out] == [h100.id, v5p.id]
    for res in out:
        assert res.error is None and res.analysis.fits[res.chosen]
        assert res.cost.time_s[res.chosen] == pytest.approx(1e12 / (256 * 4096) * res.analysis.step_time[res.chosen])
        assert res.analysis.layouts[res.chosen].tp <= res.system.domains[0].size


def test_side_by_side_error_names_the_reason(systems, devices):
    from explorer.core.training.compare import train_on_system

    node = systems["nvidia-dgx-h100"]
    res = train_on_system(MODEL, node, devices[node.device_id], TrainingSetup(global_batch=7, seq_len=2048), 1e9,
                          TrainingLayout(tp=4, dp=2))
    assert res.analysis is None and res.error.startswith("global-batch")


def test_step_is_built_on_the_system_pass(h100):
    """Forward = the system pass's compute + TP communication for one micro-batch; backward = 2 x compute + the same
    communication; the bubble of 1F1B = (p - 1) micro-batch times; the optimizer = 28 bytes per updated parameter
    at HBM bandwidth (3.35 TB/s on the H100 SXM)."""
    from explorer.core.parallel.layout import Layout
    from explorer.core.parallel.system_pass import analyze_system
    from explorer.core.workload.layers import Context

    node, dev = h100
    r = run(h100, TrainingLayout(tp=4, pp=2), recompute="full", zero=0)
    sp = analyze_system(MODEL, node, dev, [Layout(4, 2, 1, 1, 64)], "bf16",
                        Context(batch=64, seq_len=2048, lm_head="all", attention="fused"))
    f, c = sp.compute_time[0], sp.comm_time[0]
    assert r.forward_time[0] == pytest.approx(f + c)
    assert r.backward_time[0] == pytest.approx(2 * f + c)
    assert r.recompute_time[0] == pytest.approx(f + c)
    assert r.bubble_time[0] == pytest.approx(1 * r.microbatch_time[0])
    assert r.send_time[0] == pytest.approx(2 * sp.send_time[0])
    assert r.optimizer_time[0] == pytest.approx(28 * sp.weight_bytes[0] / 2 / 3.35e12)


def test_lora_all_targets_shape():
    from explorer.core.training.step import layer_shape, with_lora

    setup = TrainingSetup(global_batch=8, seq_len=1024, lora_rank=8, lora_targets="all")
    shape, layers = layer_shape(with_lora(MODEL, setup), setup)
    assert (shape.lora, layers) == (8 * 7, 32)  # q, k, v, o, gate, up, down


def test_one_device_is_the_single_device_pass(devices):
    """On a one-device system the forward of a micro-batch is the single-device pass's total time, no
    communication, and the step is m x 3 x forward + Adam (naive attention, no recomputation)."""
    from explorer.core.analysis.evaluate import evaluate
    from explorer.core.hardware.system import single_device
    from explorer.core.workload.layers import Context

    model = get_template("gpt2").build()
    dev = devices["nvidia-h100-sxm5"]
    r = analyze_training(model, single_device(dev.id), dev, [TrainingLayout()],
                         TrainingSetup(global_batch=4, seq_len=1024, micro_batch=2, attention="naive"))
    ctx = Context(batch=2, seq_len=1024, lm_head="all", attention="naive")
    alone = evaluate(model, [dev], "bf16", ctx).totals.time[0]
    assert r.forward_time[0] == pytest.approx(alone)
    assert r.backward_time[0] == pytest.approx(2 * alone)
    assert r.recompute_time[0] == 0 and r.dp_time[0] == 0 and r.tp_comm_time[0] == 0
    assert r.step_time[0] == pytest.approx(2 * 3 * alone + r.optimizer_time[0])
