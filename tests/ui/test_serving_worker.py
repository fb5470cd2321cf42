"""The Serving panel's estimates off the UI thread (explorer/ui/panels/serving_worker.py): a model edit repaints at
once saying it is estimating, the numbers that follow are the core's; an older run's result is dropped; a kept
estimate is read at once (no worker); a CNN is refused as not a token model without a worker run."""

from __future__ import annotations

from test_panels import make, settle

from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.serving import surfaces
from explorer.core.serving.serve import answer, device_setup
from explorer.core.session.commands import ReplaceLayer, SetServing
from explorer.core.session.serving_choice import ServingChoice
from explorer.core.session.workspace import Workspace
from explorer.core.workload.templates import get_template
from explorer.ui.panels import ServingPanel

DEVICES = {d.id: d for d in load_shipped_devices()}
CHOICE = ServingChoice(rate=2.0, input_tokens=512, output_tokens=128, ttft=0.5, tpot=0.05)


def _ws(template="llama3-8b", ids=("nvidia-l4", "nvidia-h100-sxm5")) -> Workspace:
    ws = Workspace(get_template(template).build(), lambda wanted: [DEVICES[i] for i in wanted if i in DEVICES])
    ws.select_devices(ids)
    ws.execute(SetServing(CHOICE))
    return ws


def _edit(ws, i, **params):
    ws.execute(ReplaceLayer(i, ws.model.layers[i].with_params(**params)))


def test_a_model_edit_repaints_at_once_and_the_worker_brings_the_core_numbers(qtbot):
    ws = _ws()
    p = make(qtbot, ServingPanel, ws, (1400, 900))
    assert len(p.answers) == 2
    runs, drawn = p.estimator.runs, p.redraws
    head = next(i for i, spec in enumerate(ws.model.layers) if spec.kind == "dense")
    _edit(ws, head, bias=not ws.model.layers[head].params.get("bias", False))  # a new model: new surfaces
    qtbot.waitUntil(lambda: p.redraws == drawn + 1, timeout=5000)
    if p.estimator.busy:  # the first repaint says so (unless the worker was already done)
        assert p.answers == () and "Estimating serving on 2 devices" in p.message.text()
    settle(qtbot, p)
    assert p.estimator.runs == runs + 1 and len(p.answers) == 2
    core = answer(CHOICE.workload, device_setup(ws.model, DEVICES["nvidia-h100-sxm5"], CHOICE.workload,
                                                CHOICE.policy), CHOICE.slo)
    assert p.answers[1].curve.capacity == core.curve.capacity
    assert p.answers[1].estimate.ttft.p90 == core.estimate.ttft.p90


def test_an_older_run_is_dropped_and_a_kept_estimate_needs_no_worker(qtbot):
    ws = _ws()
    p = make(qtbot, ServingPanel, ws, (1400, 900))
    first = ws.model
    runs = p.estimator.runs
    _edit(ws, 1, name="renamed-a")
    p.flush()  # the first run starts
    _edit(ws, 1, name="renamed-b")
    p.flush()  # the second: the first's result, when it comes, is stale
    settle(qtbot, p)
    assert p.estimator.runs == runs + 2
    assert p.workspace.results.serving_ready()
    core = device_setup(ws.model, DEVICES["nvidia-l4"], CHOICE.workload, CHOICE.policy)
    assert p.answers[0].setup.surface is core.surface  # the latest model's (kept) surface
    ws.undo()
    ws.undo()  # back to the first model: its surfaces and estimates are kept
    assert ws.model == first and ws.results.serving_ready()
    runs = p.estimator.runs
    settle(qtbot, p)
    assert p.estimator.runs == runs and len(p.answers) == 2


def test_a_cnn_is_not_a_token_model(qtbot):
    surfaces.WORK.clear()
    ws = _ws("resnet50", ("nvidia-l4",))
    p = make(qtbot, ServingPanel, ws, (1200, 800))
    assert p.estimator.runs == 0 and p.answers == ()
    assert "Serving not estimated: model: ResNet-50 (torchvision, v1.5) is not a token model" in p.message.text()
    assert surfaces.WORK.misses == 0


class _SlowResults:
    """A results bundle whose ``serving`` entry takes until ``gate`` opens, logging which inputs it computed."""

    def __init__(self, key, gate, log):
        from types import SimpleNamespace

        self.key, self.gate, self.log = key, gate, log
        self.state = SimpleNamespace(model=key, assumptions=SimpleNamespace(precision="fp16", tensor_formats=None,
                                                                               time_model="ideal"))
        self.devices, self.serving_choice = (), None

    def serving_ready(self, name="serving"):
        return False

    @property
    def serving(self):
        self.log.append(self.key)
        self.gate.wait(10)
        return ("estimated", self.key)


def test_edits_during_a_long_run_start_only_the_latest_after_it(qtbot):
    """One run at a time per estimator: the inputs of edits made while it runs are not each computed (on a large
    model every run takes seconds of the interpreter beside the UI thread); the latest is, when the run is done."""
    import threading
    from types import SimpleNamespace

    from explorer.ui.panels.serving_worker import Estimator

    gate, log = threading.Event(), []
    ws = SimpleNamespace(results=_SlowResults(1, gate, log))
    est = Estimator(ws, "serving")
    ready = []
    est.ready.connect(lambda: ready.append(est.get()))
    assert est.get() == ((), "", True)
    qtbot.waitUntil(lambda: log == [1], timeout=5000)  # the first run is computing
    for key in (2, 3, 4):
        ws.results = _SlowResults(key, gate, log)
        est.get()
        qtbot.wait(80)  # past the start delay: each would start now
    assert log == [1]  # none started beside the first
    gate.set()
    qtbot.waitUntil(lambda: bool(ready), timeout=10000)
    assert log == [1, 4]  # the first (its result dropped: stale), then only the latest
    assert ready == [(("estimated", 4), "", False)]
