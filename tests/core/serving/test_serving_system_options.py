"""System serving under the system pass's options (issue 19): overlap, collective algorithm and format, skew,
offload and nodes reach the replica's step surface on the command line (``serve --system``, ``plan --rate
--system``) and in the app (the Systems panel's choices: part of the setups' key, so an edit re-sizes), and the JSON
says which options were used.

The hand-checked case: Llama-3-70B on a DGX H100, one TP8 replica, a decode step of one sequence at context 1. Its
all-reduces (auto: the faster of ring and tree per message) over NVLink 4 (450 GB/s per direction, 0.6 us):

    161 all-reduces (2 per block x 80, one after the vocabulary-parallel embedding) of 1 x 8192 x 2 B = 16,384 B:
        tree  2 ceil(log2 8) alpha + 2 n / B = 3.6 us + 32,768 B / 450 GB/s = 3.672818 us   (ring: 8.464 us)
    1 all-gather of the logits, 128,256 x 2 B = 256,512 B:
        ring  (p - 1) alpha + (p - 1) / p n / B = 4.2 us + 0.875 x 256,512 / 450e9 = 4.698773 us
    exposed communication = 161 x 3.672818 + 4.698773 = 596.0225 us

Exposed, the step is compute 5.4111 ms + 0.5960 ms = 6.0072 ms; with --overlap the communication hides behind the
longer compute and the step is 5.4111 ms: shorter by exactly the exposed communication.
"""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import replace

import pytest

from explorer.__main__ import main
from explorer.core.hardware.catalog_files import load_shipped_systems
from explorer.core.parallel.layout import Layout
from explorer.core.parallel.system_pass import Options, analyze_system
from explorer.core.serving import system_serving
from explorer.core.serving.serve import system_setup
from explorer.core.serving.workload import Lengths, Workload
from explorer.core.session.results import DEPENDS, Results
from explorer.core.session.serving_choice import ServingChoice
from explorer.core.session.state import State, SystemChoice
from explorer.core.workload.layers import Context
from explorer.core.workload.templates import get_template

DGX = "nvidia-dgx-h100"
SYSTEMS = {s.id: s for s in load_shipped_systems()}
TP8 = Layout(8, 1, 1, 1, 1)
HAND_COMM = 161 * (2 * 3 * 0.6e-6 + 2 * 16384 / 450e9) + (7 * 0.6e-6 + 7 / 8 * 128256 * 2 / 450e9)


@pytest.fixture(scope="module")
def llama70b():
    return get_template("llama3-70b").build()


def _run(argv) -> tuple[int, dict | None, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, (json.loads(out.getvalue()) if code == 0 and "--json" in argv else None), err.getvalue()


def test_overlap_shortens_a_tp8_decode_step_by_the_exposed_communication(devices, llama70b):
    dgx, h100 = SYSTEMS[DGX], devices["nvidia-h100-sxm5"]
    assert HAND_COMM == pytest.approx(596.0225e-6, rel=1e-6)
    ctx = Context(batch=1, seq_len=1, phase="decode")
    exposed = analyze_system(llama70b, dgx, h100, [TP8], "fp16", ctx, None, Options())
    hidden = analyze_system(llama70b, dgx, h100, [TP8], "fp16", ctx, None, Options(overlap=True))
    assert exposed.comm_time[0] == pytest.approx(HAND_COMM, rel=1e-9) and hidden.comm_time[0] == 0.0
    assert exposed.compute_time[0] == pytest.approx(5.4111e-3, rel=1e-4)
    assert exposed.compute_time[0] > HAND_COMM  # all of it hides behind the compute
    w = Workload(rate=1.0, lengths=Lengths("fixed", (1024, 1024), (256, 256)))
    plain = system_setup(llama70b, dgx, h100, TP8, w)
    overlapped = system_setup(llama70b, dgx, h100, TP8, w, options=Options(overlap=True))
    d0, d1 = plain.surface.decode(1, 1), overlapped.surface.decode(1, 1)
    assert d0 == pytest.approx(6.0072e-3, rel=1e-4) and d1 == pytest.approx(5.4111e-3, rel=1e-4)
    assert d0 - d1 == pytest.approx(HAND_COMM, rel=1e-9)
    # the ring alone (every message): more exposed communication, a longer step
    ring = system_setup(llama70b, dgx, h100, TP8, w, options=Options(algorithm="ring"))
    assert ring.surface.decode(1, 1) - d1 == pytest.approx(
        161 * (14 * 0.6e-6 + 14 / 8 * 16384 / 450e9) + (7 * 0.6e-6 + 7 / 8 * 128256 * 2 / 450e9), rel=1e-9)


def test_serve_system_takes_the_options_and_says_them():
    base = ["serve", "llama3-70b", "--system", DGX, "--tp", "8", "--rate", "1/s", "--input", "1024", "--output",
            "256", "--json"]
    code, plain, _ = _run(base)
    assert code == 0
    assert plain["system_options"] == {"overlap": False, "collective": "auto", "skew": 0.0, "offload": False,
                                       "collective_format": "engine", "nodes": 1}
    code, hidden, _ = _run([*base, "--overlap"])
    assert code == 0 and hidden["system_options"]["overlap"] is True
    # TPOT is a decode step (of a mean batch of about 1.6 at 1 request/s, stretched by the prefill steps' share):
    # the overlap takes at least the lone sequence's 0.596 ms of all-reduces off it, and little more (a larger
    # batch's all-reduces are longer: 0.78 ms at 16 sequences)
    t0, t1 = plain["estimate"]["tpot"]["mean_s"], hidden["estimate"]["tpot"]["mean_s"]
    assert HAND_COMM < t0 - t1 < 1.2 * HAND_COMM
    code, _, err = _run([*base[:-1], "--skew", "-1"])
    assert code == 2 and err.count("\n") == 1 and "--skew" in err


def test_plan_rate_system_takes_the_options():
    argv = ["plan", "llama3-8b", "--system", DGX, "--rate", "10/s", "--input", "1024", "--output", "256",
            "--ttft-p90", "500ms", "--tpot-p90", "50ms", "--quote", "nvidia-h100-sxm5=25000 USD", "--json"]
    code, plain, _ = _run(argv)
    code2, hidden, _ = _run([*argv, "--overlap", "--collective", "ring"])
    assert code == code2 == 0
    assert plain["system_options"]["overlap"] is False and hidden["system_options"] == {
        "overlap": True, "collective": "ring", "skew": 0.0, "offload": False, "collective_format": "engine",
        "nodes": 1}
    tp = {x["label"]: x for x in plain["devices"][0]["layouts"]}
    tp_h = {x["label"]: x for x in hidden["devices"][0]["layouts"]}
    assert tp["TP1 PP1"]["slo_rate_per_s"] == tp_h["TP1 PP1"]["slo_rate_per_s"]  # no communication to hide
    assert tp_h["TP8 PP1"]["slo_rate_per_s"] > tp["TP8 PP1"]["slo_rate_per_s"]  # hidden all-reduces: faster


def test_system_options_without_a_system_or_without_rate_are_refused():
    code, _, err = _run(["plan", "llama3-8b", "--device", "nvidia-h100-sxm5", "--rate", "10/s", "--tpot-p90",
                         "50ms", "--overlap"])
    assert code == 2 and err.count("\n") == 1 and "--overlap" in err
    code, _, err = _run(["plan", "llama3-8b", "--system", DGX, "--target", "1000 tokens/s", "--nodes", "2"])
    assert code == 2 and err.count("\n") == 1 and "--nodes" in err


def _results(devices, model, system: SystemChoice) -> Results:
    state = State(model=model, system=system, serving=ServingChoice(rate=10.0, input_tokens=1024,
                                                                    output_tokens=256, ttft=0.5, tpot=0.05))
    sy = SYSTEMS[system.system_ids[0]]
    return Results(state, [], hardware=((sy, devices[sy.device_id]),))


def test_the_apps_systems_serve_with_the_systems_panels_options(devices, llama8b):
    for name in ("system.overlap", "system.collective", "system.skew", "system.offload", "system.nodes"):
        assert name in DEPENDS["serving_systems"]
    choice = SystemChoice(system_ids=(DGX,))
    plain = _results(devices, llama8b, choice)
    first = plain.serving_systems[0]
    assert _results(devices, llama8b, choice).serving_ready("serving_systems")  # kept
    hidden = _results(devices, llama8b, replace(choice, overlap=True))
    assert not hidden.serving_ready("serving_systems")  # an option edit re-sizes: a new key
    misses = system_serving.SETUPS.misses
    got = hidden.serving_systems[0]
    assert system_serving.SETUPS.misses == misses + 1
    by_label = {f.label: f for f in got.fleets}
    plain_by_label = {f.label: f for f in first.fleets}
    assert by_label["TP1 PP1"].fleet.slo_rate == plain_by_label["TP1 PP1"].fleet.slo_rate
    assert by_label["TP8 PP1"].fleet.slo_rate > plain_by_label["TP8 PP1"].fleet.slo_rate
    # the numbers are plan --rate --system --overlap's
    code, data, _ = _run(["plan", "llama3-8b", "--system", DGX, "--rate", "10/s", "--input", "1024", "--output",
                          "256", "--ttft-p90", "500ms", "--tpot-p90", "50ms", "--overlap", "--json"])
    assert code == 0
    for x in data["devices"][0]["layouts"]:
        assert by_label[x["label"]].fleet.slo_rate == x["slo_rate_per_s"]
    # two nodes: the cluster of the Systems panel, 16 devices searched (TP16 over the scale-out network)
    two = _results(devices, llama8b, replace(choice, nodes=2)).serving_systems[0]
    assert two.system.devices == 16 and "TP16 PP1" in {f.label for f in two.fleets}
