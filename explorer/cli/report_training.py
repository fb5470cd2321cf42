"""``hwexplorer report ... --train SYS [--train-...]``: the report's Training section (docs/cli.md "report").

``--train`` mirrors ``--system``: each use adds a system (id or file) the model is trained on; the ``--train-...``
options describe the run as the Training panel's controls do (the fields of
:class:`~explorer.core.session.training_choice.TrainingChoice`, defaults as ``hwexplorer train``'s). A bad value
exits 2 naming its option.
"""

from __future__ import annotations

import math

from ..core.analysis.cost import CostAssumptions
from ..core.session.training import train_choice
from ..core.session.training_choice import TrainingChoice
from ..core.training.memory import RECOMPUTE, SCHEDULES
from .common import CliError

#: option -> (TrainingChoice field, type, help)
OPTIONS = {
    "--train-tokens": ("tokens", float, "tokens to train on (default 1e12)"),
    "--train-global-batch": ("global_batch", int, "sequences per optimizer step (default 1024)"),
    "--train-seq-len": ("seq_len", int, "tokens per training sequence (default 4096)"),
    "--train-micro-batch": ("micro_batch", int, "sequences per micro-batch (default 1)"),
    "--train-zero": ("zero", int, "ZeRO stage 0-3 (default 1)"),
    "--train-recompute": ("recompute", str, f"activation recomputation: {', '.join(RECOMPUTE)} (default selective)"),
    "--train-schedule": ("schedule", str, f"pipeline schedule: {', '.join(SCHEDULES)} (default 1f1b)"),
    "--train-virtual-stages": ("virtual", int, "virtual stages per device (interleaved; default 1)"),
    "--train-cp": ("cp", int, "context-parallel degree (default 1)"),
    "--train-lora": ("lora_rank", int, "LoRA rank (default 0: full training)"),
    "--train-devices": ("devices", int, "each --train system as a cluster of this many devices (whole nodes)"),
}


def add_training_args(p) -> None:
    p.add_argument("--train", action="append", metavar="SYS",
                   help="add a Training section: the model trained on this system (id or file; repeatable): the "
                        "time and cost to train side by side, the chosen layout, step breakdown and memory per device; "
                        "without --device the training systems' devices are compared")
    p.add_argument("--train-nodes", type=int, default=1, help="each --train system as a cluster of N nodes (default 1)")
    for option, (field, kind, text) in OPTIONS.items():
        p.add_argument(option, type=str if kind is float else kind, default=None, help=text,
                       dest=f"train_{field}")
    p.add_argument("--train-layout", metavar="TPxPPxDP", default=None,
                   help="the training layout for every system, e.g. 8x2x4 (default: each system's best)")
    p.add_argument("--train-overlap", action="store_true", help="overlap DP reduction and TP/CP communication")


def choice_from_args(args) -> TrainingChoice:
    values = {}
    for option, (field, kind, _) in OPTIONS.items():
        v = getattr(args, f"train_{field}")
        if v is None:
            continue
        if kind is float:
            try:
                v = float(v)
            except ValueError:
                raise CliError(f"{option}: expected a number such as 2e12, got {v!r}") from None
            if not math.isfinite(v):
                raise CliError(f"{option}: must be a positive number, got {v}")
        values[field] = v
    if args.train_layout is not None:
        try:
            tp, pp, dp = (int(x) for x in args.train_layout.lower().split("x"))
        except ValueError:
            raise CliError(f"--train-layout: expected TPxPPxDP such as 8x2x4, got {args.train_layout!r}") from None
        values["layout"] = (tp, pp, dp)
    values["overlap"] = bool(args.train_overlap)
    try:
        return TrainingChoice(**values).checked()
    except ValueError as exc:
        field = str(exc).split(":")[0].split(".")[0]
        option = next((o for o, (f, _, _) in OPTIONS.items() if f == field),
                      "--train-layout" if field == "layout" else "--train")
        raise CliError(f"{option}: {str(exc).split(': ', 1)[-1]}") from None


def training_section(systems, analysis, costs, devices_by_id, args):
    """The Training section of the model of ``analysis`` on ``systems`` (one node each) under the ``--train-...``
    options, costed at the report's electricity price, PUE and horizon."""
    from ..report.training_section import build_section

    if args.train_nodes < 1:
        raise CliError(f"--train-nodes: must be a positive whole number, got {args.train_nodes}")
    choice = choice_from_args(args)
    hardware = [(s, devices_by_id[s.device_id]) for s in systems]
    cost = CostAssumptions(electricity_usd_per_kwh=costs.electricity_usd_per_kwh, pue=costs.pue, years=costs.years)
    results = train_choice(analysis.model, hardware, args.train_nodes, choice, cost)
    return build_section(results, by_hand=choice.layout is not None)
