"""Per-point comparison with LLM-Viewer (hahnyuan/LLM-Viewer, the snapshot in ../shared/peers/llm-viewer/): the same
model x hardware x batch x sequence length grid, prefill time and decode-step time from both, and the distribution of
our error relative to the peer's.

Run by hand (the peer is run side by side in this process, never copied or imported by the project):

    .venv/bin/python bench/compare_llm_viewer.py [--peer ../shared/peers/llm-viewer] [--json out.json]

Without the peer's folder the script says so and exits 0 (nothing to compare).

Both tools: FP16 weights, activations and KV cache (and W8A8 KV8 on the peer's INT8 peak against our int8), no
FlashAttention, the ideal roofline (per operator max(work / peak, bytes / bandwidth), summed). Our side is
``explorer.core.sweep.run.sweep`` (the CLI's ``hwexplorer sweep``), decode at ``seq_len`` KV positions as the peer's
``analyze(seqlen, batch)`` decode row. Hardware, two ways:

* "peer's figures": our catalog device with its off-chip bandwidth and peak replaced by the peer's table
  (hardwares/hardware_params.py), so that only the models' conventions differ;
* "our catalog": our cited figures as they are (the H100 SXM5's HBM3 is 3.35 TB/s in NVIDIA's datasheet, the
  peer's table has 3.072 TB/s; A100 80GB and the peaks agree).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.hardware.device import Cited
from explorer.core.sweep.grid import Grid
from explorer.core.sweep.run import sweep
from explorer.core.workload.templates import get_template

DEFAULT_PEER = ROOT.parent / "shared" / "peers" / "llm-viewer"
MODELS = ("llama2-7b", "llama2-70b", "llama3-8b")  # the peer's configs and our templates of the same name
HARDWARE = {"nvidia_A100_80G": "nvidia-a100-sxm4-80gb", "nvidia_H100_SXM": "nvidia-h100-sxm5"}
BATCHES = (1, 4, 16, 64)
SEQ_LENS = (128, 512, 1024, 4096)
PRECISIONS = {"fp16": ("FP16", 16), "int8": ("INT8", 8)}  # ours -> (the peer's peak key, bits of w, a and kv)


def peer_figures(peer: Path) -> dict:
    """The peer's hardware table, read from its file (no import of its package)."""
    text = (peer / "hardwares" / "hardware_params.py").read_text()
    scope: dict = {}
    exec(compile(text, "hardware_params.py", "exec"), scope)  # a plain dict literal  # noqa: S102
    return scope["hardware_params"]


def matched(device, figures: dict):
    """``device`` with the peer's off-chip bandwidth and FP16/INT8 peaks."""
    memory = tuple(replace(m, bandwidth=Cited(figures["bandwidth"], f"{figures['bandwidth']:g} B/s", None,
                                              "LLM-Viewer's table")) if m.role == "offchip" else m
                   for m in device.memory)
    peak = dict(device.peak)
    for ours, (key, _bits) in PRECISIONS.items():
        peak[ours] = Cited(figures[key], f"{figures[key]:g} OP/s", None, "LLM-Viewer's table")
    return replace(device, id=device.id + "@llm-viewer", memory=memory, peak=peak)


def ours(model_id: str, devices, precision: str) -> dict:
    """{(device id, phase, batch, seq): seconds} from one sweep."""
    model = get_template(model_id).build()
    grid = Grid(batches=BATCHES, seq_lens=SEQ_LENS, phases=("prefill", "decode"), precisions=(precision,))
    c = sweep(model, devices, grid).columns
    return {(c["device"][i], c["phase"][i], int(c["batch"][i]), int(c["seq_len"][i])): float(c["latency_s"][i])
            for i in range(len(c["device"]))}


def theirs(peer: Path, model_id: str, hardware: str, precision: str) -> dict:
    sys.path.insert(0, str(peer))
    import types

    from run_peer import CONFIGS, load  # the peer's own loader (stubs `transformers`, no network)

    analyzer = sys.modules.get("model_analyzer")
    if analyzer is not None:
        # run_peer's stub is read once, when model_analyzer is first imported: later loads would get the first
        # model's config (every model came out as Llama-2-7B). Point the imported module at this model's.
        cfg = types.SimpleNamespace(**CONFIGS[model_id])
        analyzer.AutoConfig = types.SimpleNamespace(from_pretrained=lambda *a, **k: cfg)
    lv = load(model_id, hardware)
    assert lv.model_params.num_hidden_layers == CONFIGS[model_id]["num_hidden_layers"], model_id
    bits = PRECISIONS[precision][1]
    out = {}
    for b in BATCHES:
        for s in SEQ_LENS:
            t = lv.analyze(s, b, w_bit=bits, a_bit=bits, kv_bit=bits)["total_results"]
            out[("prefill", b, s)] = t["prefill"]["inference_time"]
            out[("decode", b, s)] = t["decode"]["inference_time"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer", type=Path, default=DEFAULT_PEER)
    ap.add_argument("--json", type=Path, default=None, help="write every point to this file")
    args = ap.parse_args()
    if not (args.peer / "run_peer.py").exists():
        print(f"LLM-Viewer not found at {args.peer}: nothing compared")
        return 0
    figures = peer_figures(args.peer)
    catalog = {d.id: d for d in load_shipped_devices()}
    rows = []
    for precision in PRECISIONS:
        for model_id in MODELS:
            devices = []
            for hw, dev_id in HARDWARE.items():
                devices += [matched(catalog[dev_id], figures[hw]), catalog[dev_id]]
            mine = ours(model_id, devices, precision)
            for hw, dev_id in HARDWARE.items():
                cwd = os.getcwd()
                peer = theirs(args.peer, model_id, hw, precision)
                os.chdir(cwd)
                for (phase, b, s), t_peer in peer.items():
                    rows.append({"model": model_id, "hardware": hw, "precision": precision, "phase": phase,
                                 "batch": b, "seq_len": s, "llm_viewer_s": t_peer,
                                 "ours_peer_figures_s": mine[(dev_id + "@llm-viewer", phase, b, s)],
                                 "ours_catalog_s": mine[(dev_id, phase, b, s)]})
    print(f"{len(rows)} points: {len(MODELS)} models x {len(HARDWARE)} devices x {len(BATCHES)} batches x "
          f"{len(SEQ_LENS)} sequence lengths x 2 phases x {len(PRECISIONS)} precisions")
    print("relative error of our time against LLM-Viewer's (ours / theirs - 1), in %:")
    print(f"{'hardware':<15} {'precision':<9} {'phase':<8} {'median':>8} {'p10':>8} {'p90':>8} {'min':>8} {'max':>8}")
    for which in ("ours_peer_figures_s", "ours_catalog_s"):
        print(f"-- {which}")
        for hw in HARDWARE:
            for precision in PRECISIONS:
                for phase in ("prefill", "decode"):
                    sel = [r for r in rows if r["hardware"] == hw and r["phase"] == phase
                           and r["precision"] == precision]
                    err = np.array([r[which] / r["llm_viewer_s"] - 1 for r in sel]) * 100
                    print(f"{hw:<15} {precision:<9} {phase:<8} {np.median(err):8.2f} {np.percentile(err, 10):8.2f} "
                          f"{np.percentile(err, 90):8.2f} {err.min():8.2f} {err.max():8.2f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
