"""The work table patched after an edit (explorer/core/workload/work_table.py, ``build_table``'s cache) equals a fresh
build exactly: random replacements, insertions, deletions, moves and repeats on templates and on a long model whose
widths change (shape errors and their propagation, unnamed layers whose index moves, explicit input shapes), in
prefill, decode and train; and an edit of one layer expands that layer only."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from explorer.core.workload import layer_memo
from explorer.core.workload.layer_memo import expand_layer
from explorer.core.workload.layers import Context
from explorer.core.workload.model import NUMERIC, LayerSpec, LayerStatus, LayerTable, Model, build_table
from explorer.core.workload.templates import TEMPLATES
from explorer.core.workload.train_step import train_step_table


def fresh(model: Model, ctx: Context = Context()) -> LayerTable:  # noqa: B008 - as build_table
    """The reference: every layer expanded in turn, its rows' numbers read one by one (no memo, no patch)."""
    if ctx.phase == "train":
        return train_step_table(fresh(model, replace(ctx, phase="prefill", lm_head="all")), LayerTable, LayerStatus)
    if ctx.seq_len is None and model.default_seq_len() is not None:
        ctx = replace(ctx, seq_len=model.default_seq_len())
    shape, rows, status = model.input_shape(ctx), [], []
    for i, spec in enumerate(model.layers):
        out, new, error, seen = expand_layer(i, spec, shape, ctx)
        status.append(LayerStatus(seen, out, error, len(rows), len(new)))
        rows += new
        shape = out
    columns = {c: np.array([getattr(r, c) for r in rows], dtype=float) for c in NUMERIC}
    return LayerTable(names=tuple(r.name for r in rows), kinds=tuple(r.kind for r in rows),
                      layer_index=np.array([r.layer_index for r in rows], dtype=int),
                      gemm=np.array([r.gemm for r in rows], dtype=float).reshape(-1, 3),
                      gemm_count=np.array([r.gemm_count for r in rows], dtype=float), columns=columns,
                      status=tuple(status), out_shapes=tuple(r.out_shape for r in rows),
                      attention=tuple(r.attention for r in rows))


def assert_same(got: LayerTable, want: LayerTable) -> None:
    assert got.names == want.names
    assert got.kinds == want.kinds
    assert got.out_shapes == want.out_shapes
    assert got.attention == want.attention
    assert got.status == want.status
    assert got.errors == want.errors
    first, n = got.layer_rows
    assert first.tolist() == [s.first_row for s in want.status] and n.tolist() == [s.n_rows for s in want.status]
    for a, b in [(got.layer_index, want.layer_index), (got.gemm, want.gemm), (got.gemm_count, want.gemm_count),
                 *((got.columns[c], want.columns[c]) for c in NUMERIC)]:
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b)  # exactly: the same expansion gives the same floats
    assert all(not a.flags.writeable for a in got.columns.values())
    assert all(a.flags.c_contiguous for a in (got.gemm, got.gemm_count, *got.columns.values()))


# a pool on (tokens, 64): some keep the width, some change it (the layers after report a shape error until a layer
# maps it back), some unnamed (named kind<i> by their index), one with an explicit input shape
POOL = (
    LayerSpec.make("dense", "up", in_features=64, out_features=256),
    LayerSpec.make("dense", "down", in_features=256, out_features=64),
    LayerSpec.make("dense", "", in_features=64, out_features=64),
    LayerSpec.make("dense", "nobias", in_features=64, out_features=64, bias=False),
    LayerSpec.make("gelu", "act"),
    LayerSpec.make("gelu"),
    LayerSpec.make("layernorm", "ln"),
    LayerSpec.make("rmsnorm"),
    LayerSpec.make("softmax", "sm"),
    LayerSpec.make("dense", "side", in_features=32, out_features=64, input_shape=(512, 32)),
    LayerSpec.make("dense", "bad", in_features=7, out_features=64),
    LayerSpec.make("dense", "rep", in_features=64, out_features=64, repeat=3),
)


def random_edit(rng: np.random.Generator, layers: tuple, pool: tuple) -> tuple:
    layers = list(layers)
    op = rng.integers(0, 6)
    i = int(rng.integers(0, len(layers) + 1))
    new = pool[int(rng.integers(0, len(pool)))]
    if op == 0 and i < len(layers):  # replace
        layers[i] = new
    elif op == 1:  # insert
        layers.insert(i, new)
    elif op == 2 and i < len(layers) and len(layers) > 1:  # delete
        del layers[i]
    elif op == 3 and len(layers) > 1:  # move a layer elsewhere
        spec = layers.pop(int(rng.integers(0, len(layers))))
        layers.insert(int(rng.integers(0, len(layers) + 1)), spec)
    elif op == 4 and i < len(layers):  # a parameter or the repeat count of one layer
        spec = layers[i]
        grown = replace(spec, name=spec.name + "x")
        layers[i] = replace(spec, repeat=int(rng.integers(1, 4))) if rng.integers(0, 2) else grown
    else:  # several layers at once (a paste)
        layers[i:i] = [pool[int(k)] for k in rng.integers(0, len(pool), size=int(rng.integers(2, 5)))]
    return tuple(layers)


CONTEXTS = (Context(), Context(batch=3, phase="decode", seq_len=300), Context(batch=2, phase="train"),
            Context(batch=4, seq_len=100, attention="fused"))


@pytest.mark.parametrize("seed", range(6))
def test_random_edits_of_a_long_model_equal_a_fresh_build(seed):
    rng = np.random.default_rng(seed)
    layers = tuple(POOL[int(k)] for k in rng.choice([0, 4, 1, 6, 2, 5], size=120))
    model = Model.make("long", {"tokens": 512, "hidden": 64}, layers)
    build_table.cache_clear()
    for step in range(40):
        ctx = CONTEXTS[step % len(CONTEXTS)] if seed % 2 else CONTEXTS[seed % len(CONTEXTS)]
        assert_same(build_table(model, ctx), fresh(model, ctx))
        model = replace(model, layers=random_edit(rng, model.layers, POOL))


@pytest.mark.parametrize("template_id", sorted(TEMPLATES))
def test_random_edits_of_every_template_equal_a_fresh_build(template_id):
    rng = np.random.default_rng(len(template_id))
    model = TEMPLATES[template_id].build()
    pool = model.layers
    build_table.cache_clear()
    ctx = Context(batch=2, phase="decode") if "tokens" in model.input_dict and len(template_id) % 2 else Context()
    for _ in range(8):
        model = replace(model, layers=random_edit(rng, model.layers, pool))
        assert_same(build_table(model, ctx), fresh(model, ctx))


def test_an_edit_expands_only_the_changed_layer(monkeypatch):
    layers = tuple(s for i in range(100) for s in (
        LayerSpec.make("dense", f"up{i}", in_features=64, out_features=256), LayerSpec.make("gelu", f"act{i}"),
        LayerSpec.make("dense", f"down{i}", in_features=256, out_features=64)))
    model = Model.make("m", {"tokens": 16, "hidden": 64}, layers)
    build_table.cache_clear()
    build_table(model)
    calls = []
    real = layer_memo.Assembler.add
    monkeypatch.setattr(layer_memo.Assembler, "add", lambda self, i, *a: calls.append(i) or real(self, i, *a))

    def edit(index, spec):
        nonlocal model
        model = replace(model, layers=model.layers[:index] + (spec,) + model.layers[index + 1:])
        calls.clear()
        table = build_table(model)
        expanded = list(calls)
        assert_same(table, fresh(model))
        return expanded

    assert edit(150, layers[150].with_params(bias=False)) == [150]  # same shapes: that layer only
    # a width of 128 inside block 5 (up5 64 -> 128, down5 128 -> 64): the gelu between passes the new width, down5
    # maps it back, and the layers after are kept
    narrow = model.layers[:15] + (LayerSpec.make("dense", "up5", in_features=64, out_features=128), layers[16],
                                  LayerSpec.make("dense", "down5", in_features=128, out_features=64)) + model.layers[18:]
    model = replace(model, layers=narrow)
    calls.clear()
    table = build_table(model)
    assert calls == [15, 16, 17]
    assert_same(table, fresh(model))
    assert build_table(model).status[16].out_shape == (16, 128) and not build_table(model).errors
    # 64 -> 128 features and nothing maps it back: every dense after reports a shape error (rebuilt to the end)
    wide = edit(0, LayerSpec.make("dense", "up0", in_features=64, out_features=128))
    assert wide[:3] == [0, 1, 2] and len(wide) > 3
    # an insertion: the inserted layer, and the rows after move down by its rows (no other layer rebuilt)
    model = replace(model, layers=model.layers[:30] + (LayerSpec.make("gelu", "extra"),) + model.layers[30:])
    calls.clear()
    table = build_table(model)
    assert calls == [30]
    assert_same(table, fresh(model))


def test_an_unnamed_layer_after_an_insertion_is_renamed():
    layers = (LayerSpec.make("gelu", "a"), LayerSpec.make("gelu", "b"), LayerSpec.make("relu"))
    model = Model.make("m", {"features": 10}, layers)
    build_table.cache_clear()
    assert build_table(model).names[-1] == "relu2"
    edited = replace(model, layers=(LayerSpec.make("gelu", "z"),) + layers)
    assert build_table(edited).names[-1] == "relu3"
    assert_same(build_table(edited), fresh(edited))


@pytest.mark.parametrize("template_id", ["gpt2", "resnet50"])
def test_the_layers_json_made_once_per_spec_is_the_model_files(template_id):
    import json

    from explorer.core.workload.model import layers_json

    model = TEMPLATES[template_id].build()
    edited = replace(model, layers=model.layers[:1] + (replace(model.layers[1], name="x\u00e9\"y"),)
                     + model.layers[2:])
    for m in (model, edited, replace(model, layers=())):
        assert layers_json(m) == json.dumps(m.to_dict()["layers"], separators=(",", ":"))
        assert Model.from_dict({**m.to_dict(), "layers": json.loads(layers_json(m))}) == m


@pytest.mark.parametrize("max_rows", [layer_memo.MAX_ROWS, 5, 0])
@pytest.mark.parametrize("template_id", sorted(TEMPLATES))
def test_a_fresh_build_from_the_memo_equals_the_layer_by_layer_expansion(template_id, max_rows, monkeypatch):
    """Every template in prefill, decode, train and fused attention, with the memo as shipped, full after a few
    rows (the rest expanded as before, mixed in) and off: the same table."""
    monkeypatch.setattr(layer_memo, "MAX_ROWS", max_rows)
    layer_memo.clear()
    model = TEMPLATES[template_id].build()
    for ctx in CONTEXTS:
        if ctx.phase == "decode" and "tokens" not in model.input_dict:
            continue
        assert_same(build_table.__wrapped__(model, ctx), fresh(model, ctx))


def test_repeated_layers_are_expanded_once_per_context(monkeypatch):
    layers = tuple(s for i in range(500) for s in (
        LayerSpec.make("dense", f"up{i}", in_features=64, out_features=256), LayerSpec.make("gelu", f"act{i}"),
        LayerSpec.make("dense", f"down{i}", in_features=256, out_features=64), LayerSpec.make("layernorm")))
    model = Model.make("m", {"tokens": 16, "hidden": 64}, layers)
    layer_memo.clear()
    calls = []
    real = layer_memo.expand_layer
    monkeypatch.setattr(layer_memo, "expand_layer", lambda i, *a: calls.append(i) or real(i, *a))
    table = build_table.__wrapped__(model, Context(batch=2))
    assert len(calls) == 4 and len(table) == 2000
    assert table.names[-4:] == ("up499", "act499", "down499", "layernorm1999")  # each its own name
    build_table.__wrapped__(model, Context(batch=3))
    assert len(calls) == 8  # another context: expanded again, once per kind of layer
    monkeypatch.setattr(layer_memo, "expand_layer", real)
    assert_same(table, fresh(model, Context(batch=2)))


def test_a_layer_name_that_is_not_text_is_named_as_the_layer_by_layer_expansion_names_it():
    """Found by the ONNX fuzz: an importer's layer name that is bytes (a node name protobuf did not decode) made the
    memo's row names ``name + suffix`` raise TypeError; the rows are named as the layer's expansion names them, fresh
    and patched alike."""
    spec = LayerSpec("dense", b"\xff", (("in_features", 8), ("out_features", 4)))
    model = Model("bytes", (("tokens", 3), ("hidden", 8)), (spec,))
    fresh = build_table.__wrapped__(model, Context())
    assert list(fresh.names) == [b"\xff"] and not fresh.errors
    edited = Model("bytes", (("tokens", 3), ("hidden", 8)), (spec, LayerSpec("dense", b"x", (("in_features", 4), ("out_features", 2)))))
    build_table(model, Context())
    patched = build_table(edited, Context())
    assert list(patched.names) == list(build_table.__wrapped__(edited, Context()).names) == [b"\xff", b"x"]


@pytest.mark.parametrize("seed", range(3))
def test_a_patch_carries_the_errors_and_layer_rows_found_before(seed):
    """errors and layer_rows, found once per table, are carried over by a patch (not found again over every layer)
    and equal a fresh build's: layers in error before, inside and after an insertion, deletion or replacement."""
    rng = np.random.default_rng(seed)
    layers = tuple(POOL[int(k)] for k in rng.choice([0, 4, 1, 6, 2, 5, 10], size=80))
    model = Model.make("long", {"tokens": 512, "hidden": 64}, layers)
    build_table.cache_clear()
    ctx = Context(batch=2, seq_len=128, phase="decode")
    table = build_table(model, ctx)
    carried = 0
    for _ in range(20):
        table.errors, table.layer_rows  # noqa: B018 - found once on the table: what the next patch carries
        model = replace(model, layers=random_edit(rng, model.layers, POOL))
        table = build_table(model, ctx)
        carried += "_errors" in table.__dict__ and "_layer_rows" in table.__dict__
        assert_same(table, fresh(model, ctx))
    assert carried >= 10  # the others built afresh (a width change flowing over half the layers)
