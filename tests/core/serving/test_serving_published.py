"""Our serving model against a published serving measurement, the error pinned.

Source: John Musgrave, "vLLM throughput-latency sweep on NVIDIA A100" (https://johnmusgrave.com/p/vllm-throughput-latency-sweep-on,
read 2026-11-27): meta-llama/Llama-3.1-8B-Instruct in BF16 on one NVIDIA A100 40GB, vLLM 0.23.0 with default
scheduling, ``vllm bench serve --dataset-name random --random-input-len 1024 --random-output-len 128 --ignore-eos
--max-concurrency C --num-prompts 20C --request-rate inf`` for C = 1 ... 64. Published: "decode at one request per
time runs at about 75 tokens/sec, roughly 77% of the GPU's memory-bandwidth ceiling", and "batching buys throughput
almost for free up to a concurrency of 8, a 6.6x gain".

Ours: the llama3-8b template (Llama 3.1 8B has the same shapes) on the catalog's nvidia-a100-sxm4-40gb, fp16, the
same lengths; a closed loop of C users with fixed lengths runs in waves of C requests that start and finish
together, so it is simulated as 20 waves of C simultaneous requests.
"""

import numpy as np
import pytest

from explorer.core.serving.serve import device_setup
from explorer.core.serving.simulate import simulate
from explorer.core.serving.workload import Lengths, Requests, Workload

MEASURED_DECODE_TOKENS_PER_S = 75.0  # concurrency 1
MEASURED_GAIN_AT_8 = 6.6  # output throughput at concurrency 8 / at concurrency 1


def _waves(setup, c):
    n = 20 * c
    req = Requests(np.repeat(np.arange(20) * 100.0, c), np.full(n, 1024), np.full(n, 128))
    run = simulate(req, setup.surface, setup.memory, setup.policy)
    return float(np.nanmean(run.tpot)), c * 128 / float(np.mean(run.e2e))


@pytest.fixture(scope="module")
def a100(devices, llama8b):
    return device_setup(llama8b, devices["nvidia-a100-sxm4-40gb"], Workload(rate=1.0,
                                                                            lengths=Lengths.fixed(1024, 128)))


def test_decode_at_one_request_against_vllm_on_a100(a100):
    """Ours 102.5 tokens/s (TPOT 9.76 ms) against about 75 measured: +37 % in tokens/s, TPOT 27 % short. The
    catalog's A100 reaches its full HBM bandwidth in the model (efficiency_memory 1.0); the measurement reaches
    77 % of it, and vLLM's per-step scheduling and kernel launches add the rest."""
    tpot, _ = _waves(a100, 1)
    ours = 1.0 / tpot
    assert ours == pytest.approx(102.5, rel=0.01)
    error = ours / MEASURED_DECODE_TOKENS_PER_S - 1.0
    assert 0.33 < error < 0.41  # pinned: +37 %


def test_batching_gain_at_concurrency_8_against_vllm_on_a100(a100):
    """Output throughput at 8 users over 1 user: ours 5.9x against 6.6x measured (-10 %): decode steps barely
    slow with the batch (memory-bound), and the eight prompts' prefill is one step of 8192 tokens."""
    _, one = _waves(a100, 1)
    _, eight = _waves(a100, 8)
    gain = eight / one
    assert gain == pytest.approx(5.93, rel=0.02)
    assert -0.14 < gain / MEASURED_GAIN_AT_8 - 1.0 < -0.06  # pinned: -10 %


def test_decode_at_one_request_against_vllm_on_h100(devices, llama8b):
    """InferenceBench, "Recipe: concurrency sweep" (https://yobitelcomm.github.io/bench/recipes/concurrency-sweep/,
    read 2026-11-27): Llama-3.1-8B-Instruct, fp16, one H100-80GB-HBM3, vLLM 0.21.0, one request at a time:
    TPOT P50 6.48 ms. Its prompt and answer lengths are not stated, so ours is taken over contexts 1 to 2048
    tokens (4.49 to 4.57 ms at one sequence): -30 %, as on the A100 above."""
    setup = device_setup(llama8b, devices["nvidia-h100-sxm5"], Workload(rate=1.0, lengths=Lengths.fixed(1024, 1024)))
    ours = setup.surface.decode(1, np.array([1.0, 512.0, 2048.0]))
    errors = ours / 6.48e-3 - 1.0
    assert np.all((-0.32 < errors) & (errors < -0.28))  # pinned: -30 %
