"""The step-time surfaces kept per edit (explorer/core/serving/surface_work.py: each grid point's table patched from
the model before, only the changed layer segments passed again) equal surfaces built from scratch by the algorithm
before it (every grid point's table built afresh, stacked, one evaluate per device, one sum per point) to 1e-12,
after random replacements, insertions, deletions, moves and pastes, on templates and a long model, several devices,
precisions and both time models; an edit of one layer of a long model passes only its segment's rows; an edit that
puts a layer in error is refused naming it, and the next edit still equals a fresh build."""

from __future__ import annotations

from dataclasses import replace
from itertools import chain

import numpy as np
import pytest

from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.time_source import device_time_sources
from explorer.core.serving import surface_work, surfaces
from explorer.core.serving.surface import Grid, _contexts, _lengths, grid
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerSpec, LayerTable, Model, build_table
from explorer.core.workload.templates import get_template

DEVICES = ("nvidia-h100-sxm5", "nvidia-l4", "amd-mi300x", "google-tpu-v5e")
G = Grid(max_batch=32, max_context=1280, max_prefill_batch=4, max_length=2048, points=5, anchors=(1000,))


def fresh_surfaces(model, devices, g, precision, time_model):
    """The algorithm before the per-edit sums: every point's table built afresh, stacked, one pass per device."""
    batch, ctxs = grid(g.max_batch, g.points), _contexts(g)
    pbatch, lengths = grid(g.max_prefill_batch, max(g.points // 2, 3)), _lengths(g)
    points = [Context(batch=int(b), seq_len=int(c), phase="decode", attention="fused") for b in batch for c in ctxs]
    points += [Context(batch=int(n), seq_len=int(L), phase="prefill", attention="fused")
               for n in pbatch for L in lengths]
    tables = [build_table.__wrapped__(model, ctx) for ctx in points]
    starts = np.cumsum([0] + [len(t) for t in tables])[:-1]
    stacked = stack(tables)
    out = []
    for d in devices:
        r = evaluate(stacked, [d], precision, points[0], model)
        seconds = np.add.reduceat(r.count * r.model_time(time_model)[:, 0], starts)
        n_dec = len(batch) * len(ctxs)
        out.append((seconds[:n_dec].reshape(len(batch), len(ctxs)),
                    seconds[n_dec:].reshape(len(pbatch), len(lengths)), device_time_sources(r, time_model)[0]))
    return out


def stack(tables):
    """The tables' rows one after the other, as one table (what the pass reads)."""
    cat = np.concatenate
    return LayerTable(names=tuple(chain.from_iterable(t.names for t in tables)),
                      kinds=tuple(chain.from_iterable(t.kinds for t in tables)),
                      layer_index=cat([t.layer_index for t in tables]), gemm=cat([t.gemm for t in tables]),
                      gemm_count=cat([t.gemm_count for t in tables]),
                      columns={c: cat([t.columns[c] for t in tables]) for c in tables[0].columns},
                      attention=tuple(chain.from_iterable(t.attention for t in tables)))


def clear():
    for cache in (surfaces.WORK, surfaces.SURFACES, surfaces.LAST):
        cache.clear()
    surface_work.clear()


def random_edit(rng: np.random.Generator, layers: tuple, pool: tuple) -> tuple:
    layers = list(layers)
    op = int(rng.integers(0, 5))
    i = int(rng.integers(0, len(layers)))
    new = pool[int(rng.integers(0, len(pool)))]
    if op == 0:  # replace
        layers[i] = new
    elif op == 1:  # insert
        layers.insert(i, new)
    elif op == 2 and len(layers) > 2:  # delete
        del layers[i]
    elif op == 3:  # a parameter of one layer (its name), or its repeat count
        spec = layers[i]
        layers[i] = replace(spec, repeat=int(rng.integers(1, 4))) if rng.integers(0, 2) else \
            replace(spec, name=spec.name + "x")
    else:  # a paste of several layers
        layers[i:i] = [pool[int(k)] for k in rng.integers(0, len(pool), size=int(rng.integers(2, 4)))]
    return tuple(layers)


def long_model(n: int) -> Model:
    layers = []
    for i in range(n // 4):
        layers += [LayerSpec.make("dense", f"up{i}", in_features=64, out_features=256),
                   LayerSpec.make("gelu", f"act{i}"),
                   LayerSpec.make("dense", f"down{i}", in_features=256, out_features=64),
                   LayerSpec.make("layernorm", f"ln{i}")]
    return Model.make("long", {"tokens": 256, "hidden": 64}, layers)


# width-keeping layers (an unnamed one: its name moves with its index), and an attention layer (grows with context)
POOL = (LayerSpec.make("dense", "sq", in_features=64, out_features=64),
        LayerSpec.make("dense", "", in_features=64, out_features=64, bias=False),
        LayerSpec.make("gelu", "g"), LayerSpec.make("rmsnorm"),
        LayerSpec.make("attention", "att", heads=4, kv_heads=2))


def check(model, devs, precision, time_model):
    got = surfaces.device_surfaces(model, devs, G, precision, time_model=time_model)
    for s, (dec, pre, label) in zip(got, fresh_surfaces(model, devs, G, precision, time_model)):
        np.testing.assert_allclose(s.decode_s, dec, rtol=1e-12, atol=0)
        np.testing.assert_allclose(s.prefill_s, pre, rtol=1e-12, atol=0)
        assert s.time_source == label
        assert np.all(s.decode_s > 0) and np.all(s.prefill_s > 0)


@pytest.mark.parametrize(("template", "precision", "time_model"), [
    ("llama3-8b", "fp16", "ideal"), ("gpt2", "int8", "ideal"), ("mixtral-8x7b", "fp16", "calibrated"),
    ("long", "fp16", "ideal"), ("long", "int8", "calibrated")])
def test_surfaces_after_random_edits_equal_fresh_ones(devices, template, precision, time_model):
    rng = np.random.default_rng(len(template) + len(precision))
    model = long_model(120) if template == "long" else get_template(template).build()
    pool = POOL if template == "long" else tuple(model.layers[1:-1])
    devs = [devices[d] for d in DEVICES]
    clear()
    check(model, devs, precision, time_model)
    patched = edits = 0
    for _ in range(12):
        edited = replace(model, layers=random_edit(rng, model.layers, pool))
        if build_table.__wrapped__(edited, Context(batch=1, seq_len=64, phase="decode")).errors:
            continue  # a layer in error: refused (the last test)
        edits += edited != model
        model = edited
        check(model, devs[:2] if rng.integers(0, 2) else devs, precision, time_model)
        patched += surfaces.WORK.peek(("work", model, G, "fused")).tables.parent is not None
    assert patched >= 3  # the patched path was taken (every edit of the long model; on a template an edit of over
    assert template != "long" or patched == edits  # half its few top-level layers is built afresh)


def test_an_edit_of_one_layer_passes_only_its_segment(devices, monkeypatch):
    model = long_model(2000)
    devs = [devices[d] for d in DEVICES[:2]]
    clear()
    rows = []
    real = surface_work.evaluate
    monkeypatch.setattr(surface_work, "evaluate", lambda table, *a: rows.append(len(table)) or real(table, *a))
    surfaces.device_surfaces(model, devs, G)
    total = sum(rows)
    assert total == sum(pt.rows for pt in surfaces.WORK.peek(("work", model, G, "fused")).tables.parts)
    rows.clear()
    edited = replace(model, layers=(*model.layers[:2], model.layers[2].with_params(name="d", bias=False),
                                    *model.layers[3:]))
    surfaces.device_surfaces(edited, devs, G)
    points = len(surfaces.WORK.peek(("work", edited, G, "fused")).points)
    assert sum(rows) == points * 8  # the first segment's 8 layers (2,000 / 256), one row each, at every point
    before = surfaces.WORK.peek(("work", model, G, "fused")).tables
    after = surfaces.WORK.peek(("work", edited, G, "fused")).tables
    assert len(after.parts) == len(before.parts) == 250 and after.parts[0] is not before.parts[0]
    assert all(a is b for a, b in zip(after.parts[1:], before.parts[1:]))  # the other segments kept, not copied
    check(edited, devs, "fp16", "ideal")


def test_an_edit_into_a_shape_error_is_refused_and_the_next_one_is_exact(devices):
    model = long_model(40)
    devs = [devices["nvidia-h100-sxm5"]]
    clear()
    check(model, devs, "fp16", "ideal")
    bad = replace(model, layers=(*model.layers[:5], LayerSpec.make("dense", "bad", in_features=7, out_features=64),
                                 *model.layers[5:]))
    with pytest.raises(ValueError, match="layer 5 \\(bad\\)"):
        surfaces.device_surfaces(bad, devs, G)
    good = replace(model, layers=(*model.layers[:5], POOL[4], *model.layers[5:]))
    check(good, devs, "fp16", "ideal")


G_SMALL = Grid(max_batch=8, max_context=1024, max_prefill_batch=2, max_length=1024, points=3, anchors=())


def assert_rows_equal_fresh(work):
    """Each point's rows, read from the segments, equal a fresh table of the model in that context exactly."""
    assert work.bounds[0] == 0 and work.bounds[-1] == len(work.model.layers)
    for k, ctx in enumerate(work.points):
        got, want = work.table(k), build_table.__wrapped__(work.model, ctx)
        assert got.names == want.names and got.kinds == want.kinds and got.attention == want.attention
        np.testing.assert_array_equal(got.layer_index, want.layer_index)
        np.testing.assert_array_equal(got.gemm, want.gemm)
        np.testing.assert_array_equal(got.gemm_count, want.gemm_count)
        for c in want.columns:
            np.testing.assert_array_equal(got.columns[c], want.columns[c])
        for s, part in enumerate(work.parts):  # each segment's out shapes: the fresh statuses'
            lo, hi = int(work.bounds[s]), int(work.bounds[s + 1])
            n = hi - lo
            assert part.outs[k * n:(k + 1) * n] == tuple(st.out_shape for st in want.status[lo:hi])


def unnamed_model(n: int) -> Model:
    """Blocks whose layers are unnamed but for the first (a layer's name is then kind<index>: it moves with an
    insertion or deletion before it)."""
    layers = []
    for i in range(n // 4):
        layers += [LayerSpec.make("dense", f"up{i}" if i % 3 == 0 else "", in_features=64, out_features=128),
                   LayerSpec.make("gelu"), LayerSpec.make("dense", in_features=128, out_features=64),
                   LayerSpec.make("layernorm", "ln" if i % 5 == 0 else "")]
    return Model.make("unnamed", {"tokens": 128, "hidden": 64}, layers)


@pytest.mark.parametrize(("make", "seed"), [(long_model, 1), (unnamed_model, 2), (unnamed_model, 3)])
def test_segments_after_random_edits_equal_fresh_tables(devices, make, seed):
    """A 600-layer model (segments of 3 layers), named or mostly unnamed, edited at random (insertions and deletions
    shift the later segments and rename the unnamed layers): every point's rows equal a fresh build's, and the
    surfaces a fresh computation's."""
    rng = np.random.default_rng(seed)
    model = make(600)
    devs = [devices[d] for d in DEVICES[:2]]
    clear()
    surfaces.device_surfaces(model, devs, G_SMALL)
    assert len(surfaces.WORK.peek(("work", model, G_SMALL, "fused")).tables.parts) == 200
    patched = misaligned = shifted = 0
    for step in range(24):
        edited = replace(model, layers=random_edit(rng, model.layers, POOL))
        if build_table.__wrapped__(edited, Context(batch=1, seq_len=64, phase="decode")).errors:
            continue
        model = edited
        # every 4th edit a device seen 4 edits ago joins: its sums are made afresh, over segments cut afresh, which
        # the segments kept since no longer match (their bounds moved with the insertions and deletions)
        now = devs + [devices[DEVICES[2]]] if step % 4 == 3 else devs
        got = surfaces.device_surfaces(model, now, G_SMALL)
        work = surfaces.WORK.peek(("work", model, G_SMALL, "fused")).tables
        patched += work.parent is not None
        shifted += work.parent is not None and len(work.parent.layers) != len(model.layers)
        misaligned += not np.isin(surface_work.fresh_bounds(len(model.layers)), work.bounds).all()
        assert_rows_equal_fresh(work)
        if step % 4 == 3:
            for s, (dec, pre, _) in zip(got, fresh_surfaces(model, now, G_SMALL, "fp16", "ideal")):
                np.testing.assert_allclose(s.decode_s, dec, rtol=1e-12, atol=0)
                np.testing.assert_allclose(s.prefill_s, pre, rtol=1e-12, atol=0)
    assert shifted >= 3  # patched after an insertion or deletion (for the unnamed model: the later ones renamed)
    assert make is unnamed_model or misaligned >= 4  # (an unnamed model after an insertion: mostly afresh)
    assert patched >= 8  # the rest: errors skipped, or unnamed layers renamed over half the model (built afresh)


def gelu_run_model(n: int) -> Model:
    """A dense layer, 30 width-keeping layers, then ``b`` (in_features 64), then blocks: a width change at layer 0
    flows through the next segments (3 layers each) up to ``b``."""
    layers = [LayerSpec.make("dense", "a", in_features=64, out_features=64)]
    layers += [LayerSpec.make("gelu", f"g{i}") for i in range(30)]
    layers += [LayerSpec.make("dense", "b", in_features=64, out_features=64)]
    return Model.make("run", {"tokens": 64, "hidden": 64}, layers + list(long_model(n - 32).layers))


def test_a_width_change_is_refused_where_a_later_segment_fails_as_a_fresh_build_says(devices):
    model = gelu_run_model(600)
    devs = [devices["nvidia-h100-sxm5"]]
    clear()
    surfaces.device_surfaces(model, devs, G_SMALL)
    narrow = replace(model, layers=(model.layers[0].with_params(out_features=32), *model.layers[1:]))
    with pytest.raises(ValueError) as patched:
        surfaces.device_surfaces(narrow, devs, G_SMALL)
    clear()
    with pytest.raises(ValueError) as fresh:
        surfaces.device_surfaces(narrow, devs, G_SMALL)
    assert str(patched.value) == str(fresh.value) and str(patched.value).startswith("layer 31 (b): ")
    # a layer with an explicit input shape maps the change back: the layers up to it are expanded again, exactly
    pinned = replace(model, layers=(*model.layers[:31], model.layers[31].with_params(input_shape=(1, 64)),
                                    *model.layers[32:]))
    clear()
    surfaces.device_surfaces(pinned, devs, G_SMALL)
    narrow = replace(pinned, layers=(pinned.layers[0].with_params(out_features=32), *pinned.layers[1:]))
    got = surfaces.device_surfaces(narrow, devs, G_SMALL)
    work = surfaces.WORK.peek(("work", narrow, G_SMALL, "fused")).tables
    assert work.parent is pinned and work.span == (0, 32, 32)  # layer 0 changed, 1 .. 31 receive another width
    assert_rows_equal_fresh(work)
    (dec, pre, _), = fresh_surfaces(narrow, devs, G_SMALL, "fp16", "ideal")
    np.testing.assert_allclose(got[0].decode_s, dec, rtol=1e-12, atol=0)
    np.testing.assert_allclose(got[0].prefill_s, pre, rtol=1e-12, atol=0)
