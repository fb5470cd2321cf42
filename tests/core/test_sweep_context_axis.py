"""The sweep on the context axis: grids long enough in sequence length that their tables are interpolated
(workload/context_axis.py), on a sliding-window, a mixture-of-experts and a latent-attention template, equal the
single analysis of each point to 1e-12 (latency, energy, memory)."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.core.analysis.evaluate import evaluate
from explorer.core.sweep.grid import Grid
from explorer.core.sweep.run import sweep
from explorer.core.workload.layers import Context
from explorer.core.workload.templates import get_template
from explorer.store.engine import open_catalog

DEVICE_IDS = ("nvidia-h100-sxm5", "google-tpu-v5p", "amd-mi300x")
# 12 lengths across Mistral's 4,096-token window and the embedding breakpoints of batch 3 and 16
SEQ = (100, 256, 700, 1000, 1500, 2048, 3000, 4000, 4096, 5000, 6000, 8192)


@pytest.fixture(scope="module")
def devices():
    with open_catalog() as repo:
        return repo.devices(DEVICE_IDS)


@pytest.mark.parametrize("template", ["mistral-7b", "mixtral-8x7b", "deepseek-v3", "llama3-8b"])
@pytest.mark.parametrize("attention", ["naive", "fused"])
def test_interpolated_points_equal_the_single_analysis(devices, template, attention):
    model = get_template(template).build()
    grid = Grid(batches=(3, 16), seq_lens=SEQ, phases=("prefill", "decode"), precisions=("fp16",),
                attention=attention)
    c = sweep(model, devices, grid).columns
    rng = np.random.default_rng(7)
    for i in rng.choice(len(c["device"]), size=24, replace=False):
        dev = next(d for d in devices if d.id == c["device"][i])
        ctx = Context(batch=int(c["batch"][i]), seq_len=int(c["seq_len"][i]), phase=c["phase"][i],
                      attention=attention)
        t = evaluate(model, [dev], "fp16", ctx).totals
        np.testing.assert_allclose(c["latency_s"][i], t.time[0], rtol=1e-12)
        tokens = ctx.batch if ctx.phase == "decode" else ctx.batch * ctx.seq_len
        np.testing.assert_allclose(c["energy_per_token_j"][i], t.energy[0] / tokens, rtol=1e-12)
        assert c["memory_bytes"][i] == pytest.approx(t.memory_bytes, rel=1e-12)
