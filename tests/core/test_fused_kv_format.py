"""Fused attention (analysis/flash.py) re-reads K and V in the format their first read is counted in: the KV cache's
format for the cached positions (decode), the activations' for the new ones (prefill). Worked out by hand."""

from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.flash import block_rows, kv_bytes_per_element
from explorer.core.formats import TensorFormats
from explorer.core.hardware.device_file import device_from_dict
from explorer.core.workload.layers import AttentionShape, Context
from explorer.core.workload.model import LayerSpec, Model


def small_sram():
    """HBM feeding a 1 KiB on-chip memory per core directly (FlashAttention's model: no L2 in between)."""
    return device_from_dict({"id": "s", "name": "s", "vendor": "v", "kind": "gpu", "peak": {"fp16": "100 TFLOP/s"},
                             "memory": [{"name": "HBM", "role": "offchip", "capacity": "16 GB",
                                         "bandwidth": "1 TB/s"},
                                        {"name": "SRAM", "role": "onchip", "capacity": "1 KiB", "instances": 8}],
                             "matrix_engine": {"type": "tensor_core", "sm_count": 8}})


def mqa(tokens=1):
    """One attention layer: 8 query heads of 64 sharing one KV head (G = 8), hidden 512."""
    return Model.make("a", {"tokens": tokens, "hidden": 512},
                      [LayerSpec.make("attention", "attn", heads=8, kv_heads=1, bias=False)])


def rereads(ctx, kv_cache, level=0):
    """Per row (scores, context): bytes crossing ``level`` beyond the bytes counted once, and those bytes."""
    fm = TensorFormats.of("fp16", kv_cache=kv_cache)
    r = evaluate(mqa(ctx.seq_len if ctx.phase == "prefill" else 1), [small_sram()], "fp16", ctx, formats=fm)
    rows = [r.table.names.index(f"attn.{x}") for x in ("scores", "context")]
    return [float(r.level_traffic[i, 0, level] - r.bytes[i]) for i in rows], [float(r.bytes[i]) for i in rows]


def test_an_fp8_kv_cache_halves_the_cached_rereads_in_decode():
    """Decode against 1024 positions (1023 cached + the new token), G = 8 query rows in one stream, d = 64, on 1 KiB:
    FP16 everywhere: Br = floor(1024 / (4 x 64 x 2)) = 2, so ceil(8 / 2) = 4 blocks each read all 1024 keys, 3 x 1024
    key positions beyond once, x 64 wide x 2 B = 393,216 B of K (scores row) and as many of V (context row).
    FP8 cache, FP16 activations: b_kv = (1023 x 1 + 1 x 2) / 1024 B (the new token's K and V come from the QKV
    projection at 2 B), Br = floor(1024 / (2 x 64 x (2 + 1025/1024))) = floor(2.67) = 2, the same 4 blocks:
    3 x 64 x (1023 x 1 + 2) = 196,800 B. The cached part halves exactly: 3 x 64 x 1023 x (2 - 1) B less."""
    ctx = Context(batch=1, seq_len=1024, phase="decode", attention="fused")
    fp16, once16 = rereads(ctx, None)
    fp8, once8 = rereads(ctx, "fp8")
    assert fp16 == [3 * 1024 * 64 * 2] * 2 == [393_216.0] * 2
    assert fp8 == [3 * 64 * (1023 * 1 + 1 * 2)] * 2 == [196_800.0] * 2
    assert [a - b for a, b in zip(fp16, fp8)] == [3 * 64 * 1023 * (2 - 1)] * 2
    # the cache once: the scores row reads K (1023 cached x 64) at the cache's bytes, q, the new k and the scores at 2
    assert once16[0] - once8[0] == 1023 * 64 * (2 - 1)
    # the on-chip level's own traffic is blocked by the same 1 KiB: the same re-reads there
    assert rereads(ctx, "fp8", level=1)[0] == fp8


def test_prefill_rereads_are_activations_whatever_the_cache():
    """Prefill of 16 tokens: every key is new (the QKV projection's output, an activation), so an FP8 cache changes
    neither the blocks nor the re-reads. Br = 2 (as above): 16 positions x 8 heads = 128 packed rows in 64 blocks of 2
    rows; both rows of block i are position i // 4, which reads keys 0 .. i // 4 (causal): the sum over i of
    (i // 4 + 1) = 4 x (1 + ... + 16) = 544 key positions, 544 - 16 = 528 beyond once, x 64 x 2 B = 67,584 B."""
    ctx = Context(batch=1, seq_len=16, phase="prefill", attention="fused")
    fp16, _ = rereads(ctx, None)
    assert fp16 == [528 * 64 * 2] * 2 == [67_584.0] * 2
    assert rereads(ctx, "fp8")[0] == fp16


def test_the_bytes_of_a_stream_and_the_block_size():
    decode = AttentionShape(1, 8, 1, 1024, 64, 64, True)
    assert kv_bytes_per_element(decode, 2.0, 1.0) == 1025 / 1024
    assert kv_bytes_per_element(AttentionShape(1, 8, 16, 16, 64, 64, True), 2.0, 1.0) == 2.0  # prefill: all new
    # FlashAttention's M / (4 d b) with the four blocks in their own formats: all FP8 fits twice the rows of FP16
    assert block_rows(1024, 64, (1.0 + 1.0) / 2) == 2 * block_rows(1024, 64, 2.0) == 4
