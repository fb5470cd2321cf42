"""``serve --system S --disaggregate P:D`` (issue 19): disaggregated pools whose replicas are the system's layout
(tp x pp devices each), no longer refused. The KV bytes per token of a TP2 replica by hand, the estimate beside the
simulation within the issue's 15 %, and a decode pool on other hardware refused in one line."""

from __future__ import annotations

import json

import pytest

from explorer.__main__ import main

ARGS = ["serve", "llama3-8b", "--system", "pcie-server-4x-nvidia-l4", "--tp", "2", "--rate", "2/s", "--input",
        "1024", "--output", "256", "--disaggregate", "1:1", "--kv-link", "25 GB/s", "--requests", "1000"]


def test_pools_of_a_tp2_layout(capsys):
    assert main([*ARGS, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["devices_per_replica"] == 2
    dis = data["disaggregated"]
    # the whole replica's KV per token: 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 B, each device holding half
    assert dis["kv_bytes_per_token"] == 2 * 32 * 8 * 128 * 2
    sim, est = dis["result"], dis["estimate"]
    assert sim["devices_per_replica"] == est["devices_per_replica"] == 2
    for what in ("ttft", "tpot", "e2e"):
        assert est[what]["mean_s"] == pytest.approx(sim[what]["mean_s"], rel=0.15), what
    assert est["throughput_tokens_per_s"] == pytest.approx(sim["throughput_tokens_per_s"], rel=0.15)


def test_a_decode_device_with_a_system_is_one_line(capsys):
    assert main([*ARGS, "--decode-device", "nvidia-h100-sxm5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--decode-device" in err and "Traceback" not in err
