"""Replica memory per device, itemised as a serving engine lays it out, and the paged KV cache it leaves.

    usable     = capacity x utilization              (vLLM's gpu_memory_utilization, default 0.9; the rest is
                                                      left to the runtime: CUDA context, allocator, other processes)
    KV budget  = usable - weights - activation peak  (the activation peak of the largest step the engine runs:
                                                      a prefill of max_batched_tokens tokens)
    blocks     = floor(KV budget / (block_size x KV bytes per token))   (paged attention, 16 tokens a block)
    sequences  = floor(blocks / ceil(tokens / block_size))              (the most sequences of that many tokens)

Byte counts come from the core's analysis (weights and KV cache in the tensors' formats): on a device
:func:`evaluate`'s totals, on a system layout the system pass's per-device weights, KV and activations (a
tensor-parallel device holds its share of every block). Bytes are decimal (B), per device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from explorer.core.analysis.evaluate import evaluate
from explorer.core.formats import TensorFormats
from explorer.core.hardware.device import Device
from explorer.core.hardware.system import System
from explorer.core.parallel.layout import Layout
from explorer.core.parallel.system_pass import Options, analyze_system
from explorer.core.workload.layers import Context
from explorer.core.workload.model import Model


@dataclass(frozen=True)
class ReplicaMemory:
    """Bytes per device of one replica; ``blocks`` the KV cache's blocks (each holds ``block_size`` tokens of every
    sequence's K and V across the replica)."""

    capacity: float
    utilization: float
    weights: float
    activation: float
    kv_per_token: float  # KV-cache bytes one token adds on one device
    block_size: int = 16
    devices: int = 1

    def __post_init__(self):
        if not 0 < self.utilization <= 1:
            raise ValueError(f"--memory-utilization: must be in (0, 1], got {self.utilization}")
        if self.block_size < 1:
            raise ValueError(f"--block-size: must be >= 1 token, got {self.block_size}")

    @property
    def reserved(self) -> float:
        """Left to the runtime and other processes: capacity x (1 - utilization)."""
        return self.capacity * (1.0 - self.utilization)

    @property
    def kv_budget(self) -> float:
        return max(self.capacity * self.utilization - self.weights - self.activation, 0.0)

    @property
    def block_bytes(self) -> float:
        return self.block_size * self.kv_per_token

    @property
    def blocks(self) -> int:
        return int(self.kv_budget // self.block_bytes) if self.block_bytes > 0 else 0

    @property
    def kv_tokens(self) -> int:
        return self.blocks * self.block_size

    def blocks_for(self, tokens) -> int:
        return -(-int(tokens) // self.block_size)

    def max_sequences(self, tokens: int) -> int:
        """The most sequences of ``tokens`` tokens whose KV cache fits at once."""
        return self.blocks // max(self.blocks_for(tokens), 1)

    def to_dict(self) -> dict:
        return {"capacity_bytes": self.capacity, "utilization": self.utilization,
                "reserved_bytes": self.reserved, "weights_bytes": self.weights,
                "activation_peak_bytes": self.activation, "kv_cache_bytes": self.kv_budget,
                "kv_bytes_per_token": self.kv_per_token, "block_size_tokens": self.block_size,
                "kv_blocks": self.blocks, "kv_tokens": self.kv_tokens, "devices": self.devices}


def device_memory(model: Model, device: Device, max_step_tokens: int, precision: str = "fp16",
                  formats: TensorFormats | None = None, utilization: float = 0.9,
                  block_size: int = 16, attention: str = "fused") -> ReplicaMemory:
    """Memory of a replica on one device; the activation peak of a prefill step of ``max_step_tokens`` (fused
    attention, as serving engines run it: no S x S scores in memory)."""
    r = evaluate(model, [device], precision, Context(batch=1, seq_len=max_step_tokens, phase="prefill",
                                                          attention=attention),
                 formats=formats)
    t = r.totals
    return ReplicaMemory(device.memory_capacity, utilization, t.weight_bytes, t.activation_peak_bytes,
                         t.kv_cache_bytes / max_step_tokens, block_size, 1)


def system_memory(model: Model, system: System, device: Device, layout: Layout, max_step_tokens: int,
                  precision: str = "fp16", formats: TensorFormats | None = None, utilization: float = 0.9,
                  block_size: int = 16, options: Options | None = None, attention: str = "fused") -> ReplicaMemory:
    """Memory per device of one replica of ``layout`` (the system pass's busiest stage)."""
    m = layout.microbatches
    ctx = Context(batch=layout.dp * m, seq_len=max(1, math.ceil(max_step_tokens / m)), phase="prefill",
                  attention=attention)
    a = analyze_system(model, system, device, [layout], precision, ctx, formats, options or Options())
    tokens = m * ctx.seq_len
    return ReplicaMemory(device.memory_capacity, utilization, float(a.weight_bytes[0]),
                         float(a.activation_bytes[0]), float(a.kv_bytes[0]) / tokens, block_size,
                         layout.tp * layout.pp)
