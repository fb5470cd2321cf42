"""The app's report export includes the Systems section of the workspace's chosen systems."""

from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.workload.templates import get_template


def test_the_app_export_includes_the_chosen_systems(qtbot, tmp_path):
    from PySide6.QtCore import QThreadPool

    from explorer.core.session.commands import SetSystem
    from explorer.core.session.state import Assumptions, SystemChoice
    from explorer.core.session.workspace import Workspace
    from explorer.ui.report_export import start_export

    devices = {d.id: d for d in load_shipped_devices()}
    ws = Workspace(get_template("llama3-70b").build(), lambda ids: tuple(devices[i] for i in ids if i in devices),
                   Assumptions(phase="decode", batch=16, seq_len=4096))
    ws.select_devices(["nvidia-h100-sxm5"])
    ws.execute(SetSystem(SystemChoice(system_ids=("nvidia-dgx-h100",))))
    job = start_export(ws, tmp_path / "app.csv", pool=QThreadPool())
    with qtbot.waitSignal(job.finished, timeout=30000) as blocker:
        pass
    assert str(tmp_path / "app-systems.csv") in blocker.args[0]
    text = (tmp_path / "app-systems.csv").read_text()
    assert "nvidia-dgx-h100" in text and ws.results.systems[0].layout.label() in text


def test_the_app_export_includes_the_training_section(qtbot, tmp_path):
    from PySide6.QtCore import QThreadPool

    from explorer.core.session.commands import SetSystem
    from explorer.core.session.state import SystemChoice
    from explorer.core.session.training import SetTraining
    from explorer.core.session.training_choice import TrainingChoice
    from explorer.core.session.workspace import Workspace
    from explorer.ui.report_export import start_export

    devices = {d.id: d for d in load_shipped_devices()}
    ws = Workspace(get_template("llama3-8b").build(), lambda ids: tuple(devices[i] for i in ids if i in devices))
    ws.select_devices(["nvidia-h100-sxm5"])
    ws.execute(SetSystem(SystemChoice(system_ids=("nvidia-dgx-h100",))))
    ws.execute(SetTraining(TrainingChoice(tokens=1e12, global_batch=512)))
    job = start_export(ws, tmp_path / "app.csv", pool=QThreadPool())
    with qtbot.waitSignal(job.finished, timeout=30000) as blocker:
        pass
    assert str(tmp_path / "app-training.csv") in blocker.args[0]
    r = ws.results.training[0]
    rows = (tmp_path / "app-training.csv").read_text().splitlines()
    assert len(rows) == 2 and f",{r.layout.label()}," in rows[1] and repr(float(r.analysis.step_time[r.chosen])) in rows[1]
