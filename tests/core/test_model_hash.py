"""The model's hash is made from the hashes of a model hashed before when an edit kept most of its layers
(``explorer/core/workload/model.py``: ``_layer_hashes``): it must stay the hash of the model's value (equal models,
equal hashes, however they were made), and an edit must hash only the layers it changed."""

import pickle
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.session.commands import AddLayers, MoveLayers, RemoveLayers, ReplaceLayer
from explorer.core.session.state import State
from explorer.core.workload import model as model_module
from explorer.core.workload.model import LayerSpec, Model, build_table
from explorer.core.workload.seq_diff import changed_span

KINDS = ("dense", "gelu", "layernorm", "conv2d")


def spec(kind: str, i: int, width: int) -> LayerSpec:
    return LayerSpec.make(kind, f"{kind}{i}", out_features=width) if kind == "dense" else LayerSpec.make(kind, f"{kind}{i}")


def rebuilt(model: Model) -> Model:
    """An equal model made of new objects (nothing cached on them), hashed with no model hashed before it."""
    build_table.cache_clear()  # forgets the models hashed before too
    return Model(str(model.name), model.input, tuple(LayerSpec(s.kind, s.name, s.items, s.repeat)
                                                     for s in model.layers))


def layer_hashes_from_scratch(model: Model) -> list[int]:
    return [hash((s.kind, s.name, s.items, s.repeat)) for s in model.layers]


def test_a_layer_hashes_its_fields_as_the_dataclass_did():
    s = LayerSpec.make("dense", "up", in_features=768, out_features=3072, bias=False)
    assert hash(s) == hash(("dense", "up", (("in_features", 768), ("out_features", 3072), ("bias", False)), 1))
    assert hash(s) == hash(LayerSpec.make("dense", "up", in_features=768, out_features=3072, bias=False))


def test_a_pickled_model_or_layer_carries_no_hash():
    """str hashes are salted per process: a hash made here must not travel to a worker process."""
    m = Model.make("m", {"tokens": 8, "hidden": 4}, [LayerSpec.make("dense", "a", in_features=4, out_features=4)])
    before = hash(m)
    back = pickle.loads(pickle.dumps(m))
    assert "_hash" not in back.__dict__ and "_hash" not in back.layers[0].__dict__
    assert back == m and hash(back) == before


def test_an_edit_hashes_only_the_layer_it_changed(monkeypatch):
    build_table.cache_clear()
    layers = tuple(spec(KINDS[i % 3], i, 64) for i in range(2000))
    m = Model.make("big", {"tokens": 16, "hidden": 64}, layers)
    hash(m)
    hashed = []
    real = model_module._hash_all
    monkeypatch.setattr(model_module, "_hash_all", lambda ls: hashed.append(len(ls)) or real(ls))
    edited = ReplaceLayer(7, layers[7].with_params(out_features=65)).apply(State(model=m)).model
    inserted = AddLayers(100, (spec("gelu", -1, 0),)).apply(State(model=edited)).model
    removed = RemoveLayers((50, 51)).apply(State(model=inserted)).model
    hashes = [hash(model) for model in (edited, inserted, removed)]
    assert hashed == [1, 1, 0]  # the replaced layer, the inserted one, nothing (two layers removed)
    assert hashes == [hash(rebuilt(model)) for model in (edited, inserted, removed)]


edits = st.lists(st.tuples(st.sampled_from(("replace", "add", "remove", "move", "rename")),
                           st.integers(0, 10**6), st.integers(0, 10**6), st.integers(1, 4)), max_size=8)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 40), kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=4), steps=edits)
def test_the_hash_of_an_edited_model_is_the_hash_of_its_value(n, kinds, steps):
    """Random edits through the workspace's commands: each model's hash equals the hash of an equal model made
    of new objects (hashed from scratch), and its layers' hashes are each layer's own."""
    build_table.cache_clear()  # no model hashed before: the first is hashed from scratch
    state = State(model=Model.make("m", {"tokens": 8, "hidden": 16},
                                   [spec(kinds[i % len(kinds)], i, 16 + i) for i in range(n)]))
    models = [state.model]
    for what, a, b, k in steps:
        size = len(state.model.layers)
        if what == "replace" and size:
            old = state.model.layers[a % size]
            command = ReplaceLayer(a % size, replace(old, repeat=old.repeat + k))
        elif what == "add":
            command = AddLayers(a % (size + 1), tuple(spec(kinds[j % len(kinds)], 1000 + j, 8) for j in range(k)))
        elif what == "remove" and size:
            command = RemoveLayers(tuple({(a + j) % size for j in range(k)}))
        elif what == "move" and size:
            command = MoveLayers(tuple({(a + j) % size for j in range(k)}), b % (size + 1))
        else:
            state = state.with_(model=replace(state.model, name=f"renamed {a}"))
            models.append(state.model)
            continue
        state = command.apply(state)
        models.append(state.model)
    for m in models:
        hash(m)
        assert list(model_module._layer_hashes(m.layers)) == layer_hashes_from_scratch(m)
    assert [hash(m) for m in models] == [hash(rebuilt(m)) for m in models]


@settings(max_examples=200, deadline=None)
@given(old=st.lists(st.integers(0, 3), max_size=30), new=st.lists(st.integers(0, 3), max_size=30))
def test_the_changed_span_is_the_longest_common_prefix_then_suffix(old, new):
    """Against a plain loop: items compared by equality (equal ints here are often not identical objects)."""
    old, new = tuple(old), tuple(new)
    start, stop_new, stop_old = changed_span(old, new)
    prefix = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
    rest = min(len(old), len(new)) - prefix
    suffix = next((i for i, (a, b) in enumerate(zip(reversed(old), reversed(new))) if a != b or i == rest), rest)
    assert (start, stop_new, stop_old) == (prefix, len(new) - suffix, len(old) - suffix)
    assert new[:start] + new[start:stop_new] + new[stop_new:] == new
    assert old[:start] == new[:start] and old[stop_old:] == new[stop_new:]
