"""Builder edits that keep a model consistent, as workspace commands (Qt-free):

* the first layer dropped into an empty model picks the model's input when the current one does not take it
  (a conv2d asks for an image, an embedding for token ids), as one undoable step with the layer;
* a dense layer on a tensor of three or more dimensions applies over the last dimension only: :func:`last_dim_note`
  says so and :func:`flatten_before` inserts the Flatten that connects every feature;
* a changed width is carried to the dense layers after it that took the old width (``lm_head.in_features``
  follows the hidden size), instead of leaving them out of the analysis as layers that no longer fit.
"""

from __future__ import annotations

import math
from dataclasses import replace

from explorer.core.session.commands import AddLayers, Command, Composite, ReplaceLayer, SetModel
from explorer.core.workload.layers import Context, Shape, format_shape
from explorer.core.workload.model import LayerSpec, LayerStatus, Model, build_table

from .defaults import new_layer

#: the input forms, in the order a first layer tries them, with the sizes a new model starts from
INPUT_CHOICES: tuple[tuple[str, dict[str, int]], ...] = (
    ("image", {"channels": 3, "height": 224, "width": 224}),
    ("token embeddings", {"tokens": 128, "hidden": 768}),
    ("token ids", {"tokens": 128}),
    ("feature vector", {"features": 512}),
)


def _fits(model: Model, ctx: Context) -> bool:
    return not build_table(model, ctx).errors


def input_for_first_layer(kind: str, model: Model, ctx: Context) -> tuple[str, dict[str, int]] | None:
    """For a model without layers whose input a first layer of ``kind`` does not take: the first input form that
    it takes (its label and sizes). None when the model has layers, the current input fits, or no form does."""
    if model.layers:
        return None
    if _fits(replace(model, layers=(new_layer(kind, model.input_shape(ctx), model),)), ctx):
        return None
    for label, sizes in INPUT_CHOICES:
        trial = replace(model, input=tuple(sizes.items()))
        if _fits(replace(trial, layers=(new_layer(kind, trial.input_shape(ctx), trial),)), ctx):
            return label, sizes
    return None


def add_layer(kind: str, at: int, in_shape: Shape, model: Model, ctx: Context) -> Command:
    """The command that inserts a new layer of ``kind`` at ``at`` (fitted to ``in_shape``); into an empty model
    whose input does not take it, the same step sets the input the layer needs."""
    inferred = input_for_first_layer(kind, model, ctx)
    if inferred is None:
        return AddLayers(at, (new_layer(kind, in_shape, model),), text=f"add {kind}")
    label, sizes = inferred
    with_input = replace(model, input=tuple(sizes.items()))
    spec = new_layer(kind, with_input.input_shape(ctx), with_input)
    return SetModel(replace(with_input, layers=(spec,)), text=f"add {kind} (input: {label})")


# ---------------------------------------------------------------------------------------- dense over the last dim
def last_dim_note(spec: LayerSpec, status: LayerStatus | None) -> str:
    """Why a dense layer on a tensor of three or more dimensions may not be what was meant ('' otherwise)."""
    if spec.kind != "dense" or status is None or status.error or len(status.in_shape) < 3:
        return ""
    shape = status.in_shape
    return (f"dense applies over the last dimension only: {shape[-1]} features at each of "
            f"{math.prod(shape[:-1]):,} positions of {format_shape(shape)}. To connect all "
            f"{math.prod(shape):,} features, insert a Flatten before it.")


def flatten_before(model: Model, index: int, ctx: Context) -> Command:
    """Insert a Flatten before the dense layer at ``index`` and widen its ``in_features`` to the flattened size."""
    spec = model.layers[index]
    in_shape = build_table(model, ctx).status[index].in_shape
    flat = new_layer("flatten", in_shape, model)
    dense = spec.with_params(in_features=math.prod(in_shape))
    name = spec.name or spec.kind
    return Composite((AddLayers(index, (flat,)), ReplaceLayer(index + 1, dense)), text=f"flatten before {name}")


# ---------------------------------------------------------------------------------------- widths carried forward
def carried_widths(before: Model, after: Model, ctx: Context) -> dict[int, LayerSpec]:
    """The dense layers of ``after`` whose ``in_features`` should follow a width changed upstream: those that fit
    in ``before`` and no longer fit only because the features reaching them changed. Layer index -> new spec."""
    if len(before.layers) != len(after.layers):
        return {}
    old = build_table(before, ctx).status
    layers = list(after.layers)
    out: dict[int, LayerSpec] = {}
    status = build_table(after, ctx).status
    for j, spec in enumerate(layers):
        new = status[j]
        if spec.kind != "dense" or old[j].error or not new.error or not old[j].in_shape or not new.in_shape:
            continue
        if spec.params.get("in_features") == old[j].in_shape[-1] != new.in_shape[-1]:
            layers[j] = out[j] = spec.with_params(in_features=new.in_shape[-1])
            status = build_table(replace(after, layers=tuple(layers)), ctx).status  # what follows sees the fix
    return out


def with_carried(command_index: int, new: LayerSpec, model: Model, ctx: Context, text: str) -> Command:
    """``ReplaceLayer(command_index, new)`` plus the widths it carries to the dense layers after it, in one step."""
    layers = list(model.layers)
    layers[command_index] = new
    carried = carried_widths(model, replace(model, layers=tuple(layers)), ctx)
    first = ReplaceLayer(command_index, new, text=text)
    if not carried:
        return first
    names = ", ".join(f"{(s.name or s.kind)}.in_features" for s in carried.values())
    return Composite((first, *(ReplaceLayer(j, s) for j, s in carried.items())), text=f"{text} ({names} follows)")
