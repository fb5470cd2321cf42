"""Disaggregated pools on two systems (issue 19): ``serve MODEL --system S --disaggregate P:D|auto --decode-system S2
[--kv-link BW|auto]``; each pool's replica a serving layout on its system, timed by the system pass, the prompt's KV
cache crossing the network the two systems share.

The hand-computed transfer: Llama-3-70B in fp16 (80 layers, 8 KV heads of 128) on a DGX H100 TP8 prefill replica
to a DGX H200 decode replica, 1024-token prompts:

    KV bytes = 2 (K, V) x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B per token; x 1024 = 335,544,320 B
    link     = both systems' scale-out network: one ConnectX-7 per GPU, 50 GB/s per direction, 2.7 us (the catalog);
               the replica's 8 devices each send their share at once: min(8 x 50, 8 x 50) = 400 GB/s
    transfer = 2.7 us + 335,544,320 B / 400 GB/s = 841.56 us
               (a TP4 decode replica receives on 4 ports: min(400, 200) = 200 GB/s, 1,680.4 us)
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from explorer.__main__ import main
from explorer.core.hardware.catalog_files import load_shipped_devices, load_shipped_systems
from explorer.core.parallel.layout import Layout
from explorer.core.parallel.system_pass import Options, analyze_system
from explorer.core.serving.disagg import KvLink, simulate_disaggregated, summarize_disaggregated
from explorer.core.serving.disagg_systems import auto_kv_link
from explorer.core.serving.serve import system_setup
from explorer.core.serving.workload import SLO, Lengths, Workload
from explorer.core.workload.layers import Context
from explorer.core.workload.templates import get_template

PER_TOKEN = 2 * 80 * 8 * 128 * 2
PER_REQUEST = PER_TOKEN * 1024
TRANSFER_TP8 = 2.7e-6 + PER_REQUEST / 400e9
TRANSFER_TP4 = 2.7e-6 + PER_REQUEST / 200e9
BASE = ["serve", "llama3-70b", "--system", "nvidia-dgx-h100", "--tp", "8", "--rate", "1/s", "--input", "1024",
        "--output", "256", "--requests", "200", "--decode-system", "nvidia-dgx-h200", "--kv-link", "auto"]
SYSTEMS = {s.id: s for s in load_shipped_systems()}


def _swap(old: str, new: str) -> list[str]:
    """BASE with one value replaced."""
    return [new if x == old else x for x in BASE]

DEVICES = {d.id: d for d in load_shipped_devices()}


def _run(argv) -> tuple[int, dict | None, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    data = json.loads(out.getvalue()) if code == 0 and "--json" in argv else None
    return code, data, out.getvalue(), err.getvalue()


def test_the_kv_transfer_by_hand():
    assert PER_REQUEST == 335_544_320 and TRANSFER_TP8 == pytest.approx(841.56e-6, rel=1e-5)
    code, data, _, _ = _run([*BASE, "--disaggregate", "1:1", "--json"])
    assert code == 0
    d = data["disaggregated"]
    assert d["kv_bytes_per_token"] == PER_TOKEN and d["kv_bytes_per_request"] == PER_REQUEST
    assert d["kv_link"]["bandwidth_Bps"] == 400e9 and d["kv_link"]["latency_s"] == pytest.approx(2.7e-6)
    assert d["kv_transfer_s"] == pytest.approx(TRANSFER_TP8, rel=1e-12)
    assert "scale-out network both systems share" in d["kv_link_source"] and "nvidia-dgx-h200" in d["kv_link_source"]
    pools = d["pools"]
    assert pools["prefill"]["system"] == "nvidia-dgx-h100" and pools["decode"]["system"] == "nvidia-dgx-h200"
    assert pools["prefill"]["devices_per_replica"] == pools["decode"]["devices_per_replica"] == 8
    assert pools["decode"]["layout_label"] == "TP8 PP1"  # the prefill replica's tp fits the H200s too
    assert pools["prefill"]["kv_bytes_per_token"] == pools["decode"]["kv_bytes_per_token"] == PER_TOKEN
    # a TP4 decode replica: the receiving side is the slower, 4 ports
    code, data, _, _ = _run([*BASE, "--disaggregate", "1:1", "--decode-tp", "4", "--json"])
    assert code == 0
    d = data["disaggregated"]
    assert d["pools"]["decode"]["devices_per_replica"] == 4 and d["kv_link"]["bandwidth_Bps"] == 200e9
    assert d["kv_transfer_s"] == pytest.approx(TRANSFER_TP4, rel=1e-12)
    code, _, text, _ = _run([*BASE, "--disaggregate", "1:1", "--decode-tp", "4"])
    assert code == 0
    assert ("prefill replicas TP8 PP1 on nvidia-dgx-h100 (8 x nvidia-h100-sxm5), decode replicas TP4 PP1 on "
            "nvidia-dgx-h200 (4 x nvidia-h200-sxm)") in text
    assert "3.355e+08 B for a mean prompt: 1.68 ms) over 200 GB/s" in text and "link auto: the scale-out" in text
    code, data, _, _ = _run([*BASE, "--disaggregate", "1:1", "--first-token", "decode", "--json"])
    assert code == 0 and data["disaggregated"]["first_token"] == "decode"
    sim = data["disaggregated"]["result"]
    # at 1 request/s the decode replica is mostly idle: TTFT P50 about prefill + transfer + one step (~4.3 ms)
    assert 35.64e-3 + TRANSFER_TP8 + 4.0e-3 < sim["ttft"]["p50_s"] < 35.64e-3 + TRANSFER_TP8 + 6.5e-3
    # a bandwidth given wins over auto and says so
    code, data, _, _ = _run([*BASE[:-1], "25 GB/s", "--disaggregate", "1:1", "--json"])
    assert code == 0 and data["disaggregated"]["kv_link"]["bandwidth_Bps"] == 25e9
    assert data["disaggregated"]["kv_link_source"].startswith("given")


def test_one_request_at_a_time_through_two_systems():
    """Requests 1000 s apart: TTFT is the prefill step of one 1024-token prompt on the DGX H100 TP8 replica (the
    system pass's, a grid point: exact); the decode pool's first token (the answer's second) comes after the KV
    transfer and one decode step of one sequence at context 1025 on the DGX H200 TP8 replica: prefill step +
    transfer + first decode step (the decode surface's context grid interpolated: 0.2 %)."""
    model = get_template("llama3-70b").build()
    h100s, h200s = SYSTEMS["nvidia-dgx-h100"], SYSTEMS["nvidia-dgx-h200"]
    h100, h200 = DEVICES["nvidia-h100-sxm5"], DEVICES["nvidia-h200-sxm"]
    tp8 = Layout(8, 1, 1, 1, 1)
    w = Workload(rate=0.001, arrival="constant", lengths=Lengths.fixed(1024, 2))
    pre = system_setup(model, h100s, h100, tp8, w)
    dec = system_setup(model, h200s, h200, tp8, w)
    link = auto_kv_link(h100s, tp8, h200s, tp8).link
    assert float(link.seconds(PER_REQUEST)) == pytest.approx(TRANSFER_TP8, rel=1e-12)
    run = simulate_disaggregated(w, pre, dec, link, 3)
    def step(system, device, phase, tokens):  # fused attention, as the serving engines run it
        ctx = Context(batch=1, seq_len=tokens, phase=phase, attention="fused")
        return analyze_system(model, system, device, [tp8], "fp16", ctx, None, Options()).step_time[0]

    prefill_step, decode_step = step(h100s, h100, "prefill", 1024), step(h200s, h200, "decode", 1025)
    ttft = run.first - run.requests.arrival
    second = run.finish - run.requests.arrival  # a 2-token answer: its last token is the decode pool's first
    assert ttft == pytest.approx([prefill_step] * 3, rel=1e-9)
    assert second == pytest.approx([prefill_step + TRANSFER_TP8 + decode_step] * 3, rel=2e-3)
    res = summarize_disaggregated(run, pre, dec, SLO(), w.mean_rate())
    assert res.tpot.mean == pytest.approx(TRANSFER_TP8 + decode_step, rel=2e-3)  # (finish - first) / (2 - 1)
    # the first token streamed by the decode pool (vLLM's proxy): TTFT = prefill step + KV transfer + first step
    run = simulate_disaggregated(w, pre, dec, link, 3, first_token="decode")
    ttft = run.first - run.requests.arrival
    assert ttft == pytest.approx([prefill_step + TRANSFER_TP8 + decode_step] * 3, rel=2e-3)
    assert ttft - prefill_step - TRANSFER_TP8 == pytest.approx([decode_step] * 3, rel=0.02)


def test_the_auto_search_costs_each_pools_devices_at_their_prices():
    code, data, _, _ = _run([*BASE, "--disaggregate", "auto", "--max-pool", "2", "--ttft-p90", "100ms",
                             "--tpot-p90", "10ms", "--json"])
    assert code == 0
    d = data["disaggregated"]
    per_hour = {k: DEVICES[k].cloud_price.value * 3600 for k in ("nvidia-h100-sxm5", "nvidia-h200-sxm")}
    for c in d["search"]:
        assert c["cost_unit"] == "USD/h"
        assert c["cost"] == pytest.approx(8 * c["prefill_replicas"] * per_hour["nvidia-h100-sxm5"]
                                          + 8 * c["decode_replicas"] * per_hour["nvidia-h200-sxm"])
    assert (d["prefill_replicas"], d["decode_replicas"]) == (1, 1)  # 1 request/s: one of each is plenty
    assert d["pool_search"]["simulated"] == 1 and d["result"]["slo_met"]


@pytest.mark.parametrize(("argv", "option"), [
    ([*_swap("nvidia-dgx-h200", "no-such-system"), "--disaggregate", "1:1"], "--decode-system"),
    ([*BASE, "--disaggregate", "1:1", "--decode-tp", "3"], "--decode-tp"),
    ([*BASE, "--disaggregate", "1:1", "--decode-tp", "1"], "--decode-tp"),  # 70B in fp16 does not fit one H200
    ([*_swap("8", "3"), "--disaggregate", "1:1"], "--tp"),  # 3 divides neither 8 devices nor 64 heads
    ([*_swap("nvidia-dgx-h200", "nvidia-hgx-a100-8gpu"), "--disaggregate", "1:1"], "--kv-link"),
    ([*BASE], "--decode-system"),  # no --disaggregate
    (["serve", "llama3-8b", "--device", "nvidia-h100-sxm5", "--disaggregate", "1:1", "--kv-link", "auto"],
     "--kv-link"),
    (["serve", "llama3-8b", "--device", "nvidia-h100-sxm5", "--disaggregate", "1:1", "--kv-link", "9 GB/s",
      "--decode-system", "nvidia-dgx-h200"], "--decode-system"),
    ([*BASE, "--disaggregate", "1:1", "--decode-device", "nvidia-h200-sxm"], "--decode-device"),
])
def test_bad_input_is_one_line_naming_the_option(argv, option):
    code, _, _, err = _run(argv)
    assert code == 2 and err.count("\n") == 1 and option in err and "Traceback" not in err, err


def test_kv_link_is_a_bandwidth_or_auto():
    with pytest.raises(ValueError, match="--kv-link"):
        KvLink(-1.0)
    with pytest.raises(ValueError, match="--kv-link.*pcie-server-4x-nvidia-l4"):
        auto_kv_link(SYSTEMS["nvidia-dgx-h100"], Layout(8), SYSTEMS["pcie-server-4x-nvidia-l4"], Layout(4))
