"""The step-time surfaces kept per edit (explorer/core/serving/surface_work.py: each grid point's table patched from
the model before, only the changed layer segments passed again) equal surfaces built from scratch by the algorithm
before it (every grid point's table built afresh, stacked, one evaluate per device, one sum per point) to 1e-12,
after random replacements, insertions, deletions, moves and pastes, on templates and a long model, several devices,
precisions and both time models; an edit of one layer of a long model passes only its segment's rows; an edit that
puts a layer in error is refused naming it, and the next edit still equals a fresh build."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.time_source import device_time_sources
from explorer.core.serving import surface_work, surfaces
from explorer.core.serving.surface import Grid, _contexts, _lengths, grid
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerSpec, Model, build_table
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
    stacked = surface_work._rows(tables, np.zeros(len(tables), int), np.array([len(t) for t in tables]), True)
    out = []
    for d in devices:
        r = evaluate(stacked, [d], precision, points[0], model)
        seconds = np.add.reduceat(r.count * r.model_time(time_model)[:, 0], starts)
        n_dec = len(batch) * len(ctxs)
        out.append((seconds[:n_dec].reshape(len(batch), len(ctxs)),
                    seconds[n_dec:].reshape(len(pbatch), len(lengths)), device_time_sources(r, time_model)[0]))
    return out


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
    assert total == sum(len(t) for t in surfaces.WORK.peek(("work", model, G, "fused")).tables.tables)
    rows.clear()
    edited = replace(model, layers=(*model.layers[:2], model.layers[2].with_params(name="d", bias=False),
                                    *model.layers[3:]))
    surfaces.device_surfaces(edited, devs, G)
    points = len(surfaces.WORK.peek(("work", edited, G, "fused")).points)
    assert sum(rows) == points * 8  # the first segment's 8 layers (2,000 / 256), one row each, at every point
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
