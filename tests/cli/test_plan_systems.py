"""``plan --system``: replicas, devices and nodes from each system's layouts, by the stated arithmetic."""

import json
import math

from explorer.__main__ import main

ARGS = ("plan", "llama3-70b", "--system", "nvidia-dgx-h100", "--system", "pcie-server-8x-nvidia-l40s",
        "--target", "20000 tokens/s", "--batch", "64", "--seq-len", "4096")


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_fleet_arithmetic_and_the_latency_limit(capsys):
    code, out, _ = run(capsys, *ARGS, "--latency", "50 ms", "--price", 'nvidia-h100-sxm5=30000 USD', "--json")
    assert code == 0
    data = json.loads(out)
    dgx, l40s = data["systems"]
    for p in (dgx, l40s):
        size = p["layout"]["tp"] * p["layout"]["pp"]
        assert p["replica_devices"] == size
        assert p["replicas"] == math.ceil(20000 / p["replica_throughput"])
        assert p["devices"] == p["replicas"] * size and p["nodes"] == math.ceil(p["devices"] / 8)
    assert dgx["feasible"] and dgx["meets_latency"] and dgx["latency_s"] <= 0.05
    assert dgx["capital_usd"] == dgx["devices"] * 30000 and dgx["price_per_device_usd"] == 30000
    assert not l40s["feasible"] and "latency limit of 50 ms" in l40s["reason"]  # PCIe: TP all-reduces are slow
    assert l40s["capital_usd"] is None  # no sourced L40S price in the catalog
    assert "not priced" in data["notes"]["prices"]


def test_the_layout_chosen_needs_the_fewest_devices(capsys):
    from explorer.core.hardware.catalog_files import load_shipped_devices, load_shipped_systems
    from explorer.core.parallel.compare import size_on_systems
    from explorer.core.parallel.sizing import size_fleet
    from explorer.core.workload.layers import Context
    from explorer.core.workload.templates import get_template

    system = next(s for s in load_shipped_systems() if s.id == "nvidia-dgx-h100")
    h100 = next(d for d in load_shipped_devices() if d.id == system.device_id)
    (res,) = size_on_systems(get_template("llama3-70b").build(), [(system, h100)], "fp16",
                             Context(batch=64, phase="decode", seq_len=4096))
    (p,) = size_fleet([res], target=20000.0)
    r = res.analysis
    need = [math.ceil(20000 / (r.throughput[k] / lay.dp)) * lay.tp * lay.pp
            for k, lay in enumerate(r.layouts) if r.fits[k]]
    assert p.devices == min(need)


def test_options_the_system_plan_does_not_use_are_refused(capsys):
    code, out, err = run(capsys, *ARGS, "--budget", "1000000 USD")
    assert code == 2 and out == "" and err.count("\n") == 1 and "--budget: not used with --system" in err
    code, _, err = run(capsys, *ARGS, "--price", "nvidia-b200=1 USD")
    assert code == 2 and "--quote: nvidia-b200 is not the device of any --system" in err
