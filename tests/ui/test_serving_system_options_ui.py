"""The Serving panel's worker tags a systems run with the Systems panel's nodes and communication options: an edit of
one is new inputs (the result computed under the old options is dropped, the panel re-sizes)."""

from __future__ import annotations

from dataclasses import replace

from explorer.core.session.results import Results
from explorer.core.session.state import State, SystemChoice
from explorer.ui.panels.serving_worker import inputs_token


def test_a_systems_option_edit_is_new_inputs():
    base = State(system=SystemChoice(system_ids=("nvidia-dgx-h100",)))
    token = inputs_token(Results(base, []), "serving_systems")
    assert inputs_token(Results(base, []), "serving_systems") == token
    for edit in ({"overlap": True}, {"offload": True}, {"collective": "ring"}, {"skew": 0.5}, {"nodes": 2}):
        edited = replace(base, system=replace(base.system, **edit))
        assert inputs_token(Results(edited, []), "serving_systems") != token, edit
    # the devices' serving does not read the systems' options
    edited = replace(base, system=replace(base.system, overlap=True))
    assert inputs_token(Results(edited, []), "serving") == inputs_token(Results(base, []), "serving")
