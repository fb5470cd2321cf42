"""The ``serving`` entry of the results bundle: computed once for the same inputs, again when one changes."""

import dataclasses

from explorer.core.serving.workload import SLO, Lengths, Workload
from explorer.core.session.results import DEPENDS, Results
from explorer.core.session.state import State


def test_serving_result_is_reused_until_an_input_changes(devices, llama8b):
    h100 = devices["nvidia-h100-sxm5"]
    state = State(model=llama8b, device_ids=(h100.id,))
    w, slo = Workload(rate=10.0, lengths=Lengths.fixed(1024, 256)), SLO(ttft=0.5, tpot=0.05)
    r = Results(state, [h100])
    ans = r.serving_for(w, slo)
    assert ans.estimate.slo_met and ans.curve.knee >= 0
    assert r.serving_for(w, slo) is ans and r.computed.count("serving_for") == 1
    again = r.successor(state, [h100])
    assert again.serving_for(w, slo) is ans and "serving_for" not in again.computed  # a new state, same inputs
    fp8 = dataclasses.replace(state, assumptions=dataclasses.replace(state.assumptions, precision="fp8"))
    other = r.successor(fp8, [h100]).serving_for(w, slo)
    assert other is not ans and other.setup.memory.weights < ans.setup.memory.weights
    assert "args" in DEPENDS["serving_for"] and "model" in DEPENDS["serving_for"]
    assert Results(State(model=llama8b), []).serving_for(w, slo) is None
