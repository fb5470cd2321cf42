"""A project's calibrations on the command line (issue 21): every command that takes a project applies its device
calibration chosen by name and its link fits chosen per system level the way the app does (one helper,
``project_devices`` and ``with_project_links`` in ``explorer/cli/resolve.py``, ``project_system`` in ``system_cmd.py``). ``plan PROJECT`` (``--device`` and
``--system``) times with the project's named calibration exactly as ``analyze PROJECT`` does, and ``analyze PROJECT
--system S --time-model calibrated`` equals the app's system pass (the workspace's ``results.systems``) element by
element, naming the fit in its ``-- times:`` line."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from explorer.__main__ import main
from explorer.core.hardware.device_file import device_from_dict
from explorer.core.hardware.system_file import load_system_file, save_system_file
from explorer.core.parallel.layout import Layout
from explorer.core.session.link_calibrations import import_link
from explorer.core.session.project import Project, save_project
from explorer.core.session.state import SystemChoice
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.templates import get_template
from explorer.store.engine import open_catalog
from tests.store.test_named_calibrations_store import DEVICE, named

ROOT = Path(__file__).resolve().parents[2]
# a published rccl-tests all-reduce on 8 AMD MI300X in one node (its source: tests/fixtures/nccl/README.md)
NCCL = ROOT / "tests" / "fixtures" / "nccl" / "mi300x-8gpu-all_reduce_perf.txt"
A = named("Cluster A, 2026-11", 0.7)  # matrix 0.7 of the peak, 6 us; vector 0.85, 4 us
WORK = ("--precision", "fp16", "--phase", "decode", "--batch", "8", "--seq-len", "1024")


@pytest.fixture
def setup(tmp_path, monkeypatch):
    """A catalog database holding the device ``lab-gpu`` and its named calibration A; an 8-device node of it
    (the MI300X platform's domains, as a system file); a project using A on the device and the published MI300X
    all-reduce, fitted on 1 MiB and up, on the node's scale-up level."""
    url = f"sqlite:///{tmp_path / 'catalog.sqlite3'}"
    monkeypatch.setenv("HWEXPLORER_DB", url)
    repo = open_catalog(url, seed=False)
    repo.add(device_from_dict(DEVICE))
    node = replace(load_system_file(ROOT / "catalog" / "systems" / "amd-instinct-mi300x-platform.yaml"),
                   id="lab-node", name="Lab node", device_id="lab-gpu")
    node_file = tmp_path / "lab-node.yaml"
    save_system_file(node, node_file)
    node = load_system_file(node_file)
    ws = Workspace(lookup=lambda ids: repo.devices([i for i in ids if i in repo.ids()]),
                   systems=lambda ids: (node,) if ids is None or "lab-node" in ids else (),
                   calibration_store=repo)
    assumptions = Assumptions(precision="fp16", batch=8, seq_len=1024, phase="decode", time_model="calibrated")
    ws.reset(get_template("llama2-7b").build(), ("lab-gpu",), assumptions,
             system=SystemChoice(system_ids=("lab-node",), layout=Layout(tp=8)))
    ws.add_calibration("lab-gpu", A)
    link, _ = import_link(NCCL, node, "MI300X run", min_size=2**20, today="2026-11-27")
    ws.add_link_calibration("lab-node", link)
    project = tmp_path / "p.hwproj"
    save_project(Project.of(ws), project)
    yield ws, project, node_file, link
    repo.close()


def cli(capsys, *argv) -> tuple[dict, str]:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    out = capsys.readouterr()
    return json.loads(out.out), out.err


def test_plan_times_a_project_with_its_named_calibration_as_analyze_does(setup, capsys):
    _, project, _, _ = setup
    target = ("--target", "100 tokens/s", "--time-model", "calibrated")
    analyzed, err = cli(capsys, "analyze", str(project), "--device", "lab-gpu", "--model", "calibrated", *WORK)
    assert "the project's calibration of lab-gpu is " + A.describe() in err
    planned, err = cli(capsys, "plan", str(project), "--device", "lab-gpu", *WORK, *target)
    assert "the project's calibration of lab-gpu is " + A.describe() in err
    plain, _ = cli(capsys, "plan", "llama2-7b", "--device", "lab-gpu", *WORK, *target)
    t = analyzed["results"][0]["totals"]["calibrated_time_s"]
    assert planned["devices"][0]["latency_s"] == t  # the plan's step is analyze's calibrated total, exactly
    assert planned["devices"][0]["time_source"] == "calibrated"
    assert plain["devices"][0]["time_source"] == "spec"  # lab-gpu has no curve of its own: the ideal time
    assert t > 1.2 * plain["devices"][0]["latency_s"]  # A reaches 0.7 of the peak and 0.85 of the bandwidth


def test_analyze_and_plan_on_a_system_use_the_projects_link_fit_as_the_app_does(setup, capsys):
    ws, project, node_file, link = setup
    app = ws.results.systems[0]
    k = app.chosen
    assert app.analysis.layouts[k] == Layout(tp=8)
    sys_args = ("--system", str(node_file), "--tp", "8", "--time-model", "calibrated", *WORK)
    data, err = cli(capsys, "analyze", str(project), *sys_args)
    assert "the project's link calibration of lab-node scale-up is " + link.describe() in err
    assert "the project's calibration of lab-gpu is " + A.describe() in err
    row = data["layouts"][0]
    for field, name in (("comm_time", "comm_time_s"), ("compute_time", "compute_time_s"),
                        ("step_time", "step_time_s"), ("latency", "latency_s")):
        assert row[name] == float(np.asarray(getattr(app.analysis, field))[k]), field  # the app's, exactly
    fabric = data["system"]["domains"][0]["name"]  # AMD Infinity Fabric (xGMI), ...
    assert data["calibrated_links"] == [fabric] and data["kernel_source"] == "calibrated"
    fit = data["system"]["domains"][0]["calibrated"]
    assert fit["source"] == "fit-mi300x-run" and fit["alpha_s"] == link.alpha_s
    assert fit["bandwidth_per_direction_Bps"] == link.bandwidth_Bps  # 297.789 GB/s (docs/calibration.md)
    assert row["time_source"] == "calibrated"

    plain, _ = cli(capsys, "analyze", "llama2-7b", *sys_args)  # the system as its file states it
    assert plain["calibrated_links"] == [] and plain["layouts"][0]["comm_time_s"] < row["comm_time_s"]
    ideal, _ = cli(capsys, "analyze", str(project), *sys_args[:-len(WORK) - 2], "--time-model", "ideal", *WORK)
    assert ideal["layouts"][0]["comm_time_s"] == plain["layouts"][0]["comm_time_s"]  # the ideal model: stated

    capsys.readouterr()
    assert main(["analyze", str(project), *sys_args]) == 0
    assert f"fitted links: {fabric} (fit-mi300x-run)" in capsys.readouterr().out

    planned, err = cli(capsys, "plan", str(project), "--system", str(node_file), "--target", "1000 tokens/s",
                       "--time-model", "calibrated", *WORK)
    assert "the project's link calibration of lab-node scale-up is" in err
    chosen = planned["systems"][0]
    degrees = [f"--{d}={chosen['layout'][d]}" for d in ("tp", "pp", "ep", "dp")]
    same, _ = cli(capsys, "analyze", str(project), "--system", str(node_file), *degrees, "--time-model",
                  "calibrated", *WORK)
    assert chosen["latency_s"] == same["layouts"][0]["latency_s"] and chosen["time_source"] == "calibrated"


def test_the_reports_systems_section_uses_the_projects_link_fit(setup, capsys, tmp_path):
    _, project, node_file, _ = setup
    out = tmp_path / "r.csv"
    capsys.readouterr()
    assert main(["report", str(project), "--system", str(node_file), "--time-model", "calibrated", *WORK,
                 "--out", str(out)]) == 0
    assert "the project's link calibration of lab-node scale-up is" in capsys.readouterr().err
    import csv

    rows = list(csv.reader((tmp_path / "r-systems.csv").open()))
    head, row = rows[0], next(r for r in rows[1:] if r[0] == "layout")
    col = dict(zip(head, row))
    degrees = [f"--{d}={col[d]}" for d in ("tp", "pp", "ep", "dp")]
    same, _ = cli(capsys, "analyze", str(project), "--system", str(node_file), *degrees, "--time-model",
                  "calibrated", *WORK)
    plain, _ = cli(capsys, "analyze", "llama2-7b", "--system", str(node_file), *degrees, "--time-model",
                   "calibrated", *WORK)
    comm = float(col["communication [s]"])
    assert comm == pytest.approx(same["layouts"][0]["comm_time_s"], rel=1e-12)
    assert float(col["step [s]"]) == pytest.approx(same["layouts"][0]["step_time_s"], rel=1e-12)
    if int(col["tp"]) > 1:  # a layout that communicates: the stated link would be faster than the fit
        assert comm > plain["layouts"][0]["comm_time_s"]


def test_serve_and_plan_rate_take_the_projects_calibrations(setup, capsys):
    _, project, node_file, _ = setup
    served, err = cli(capsys, "serve", str(project), "-d", "lab-gpu", "--time-model", "calibrated")
    assert "the project's calibration of lab-gpu is " + A.describe() in err
    plain, _ = cli(capsys, "serve", "llama2-7b", "-d", "lab-gpu", "--time-model", "calibrated")
    assert (served["time_source"], plain["time_source"]) == ("calibrated", "spec")
    assert "calibration 'Cluster A, 2026-11' fitted to 15 kernels of trace.json" in served["time_label"]
    assert served["estimate"]["tpot"]["mean_s"] > plain["estimate"]["tpot"]["mean_s"]
    rate = ("--rate", "2/s", "--tpot-p90", "200ms", "--time-model", "calibrated")
    planned, err = cli(capsys, "plan", str(project), "--system", str(node_file), *rate)
    assert "the project's link calibration of lab-node scale-up is" in err
    layouts = {x["label"]: x["time_source"] for x in planned["devices"][0]["layouts"]}
    # kernels from the project's calibration and the scale-up link from its fit: every layout is calibrated
    assert layouts and set(layouts.values()) == {"calibrated"} and "TP8 PP1" in layouts
    plain, _ = cli(capsys, "plan", "llama2-7b", "--system", str(node_file), *rate)
    assert {x["time_source"] for x in plain["devices"][0]["layouts"]} == {"spec"}


def test_train_on_a_system_takes_the_projects_calibrations(setup, capsys):
    _, project, node_file, link = setup
    argv = ("--system", str(node_file), "--global-batch", "16", "--seq-len", "1024", "--tp", "8",
            "--time-model", "calibrated")
    trained, err = cli(capsys, "train", str(project), *argv)
    assert "the project's link calibration of lab-node scale-up is " + link.describe() in err
    assert "the project's calibration of lab-gpu is " + A.describe() in err
    plain, _ = cli(capsys, "train", "llama2-7b", *argv)
    # lab-gpu has no curve of its own: without the project the calibrated model is the ideal one (spec)
    assert (trained["time_source"], plain["time_source"]) == ("partly calibrated", "spec")
    assert trained["chosen"]["step_time_s"] > plain["chosen"]["step_time_s"]


def test_sweep_applies_a_project_as_analyze_does(setup, capsys, tmp_path):
    """sweep PROJECT: the project's named calibration on its device and its link fit on the node's level, so a
    point's latency is analyze PROJECT's (device: calibrated_time_s; system: the step of the layout swept)."""
    from explorer.core.sweep import table_io

    _, project, node_file, _ = setup
    grid = ("--batch", "8", "--seq-len", "1024", "--phase", "decode", "--time-model", "calibrated")
    swept, err = cli(capsys, "sweep", str(project), "--device", "lab-gpu", *grid, "--out", str(tmp_path / "d.csv"))
    assert "the project's calibration of lab-gpu is " + A.describe() in err
    analyzed, _ = cli(capsys, "analyze", str(project), "--device", "lab-gpu", "--model", "calibrated", *WORK)
    point = table_io.read(tmp_path / "d.csv")
    assert point["latency_s"][0] == pytest.approx(analyzed["results"][0]["totals"]["calibrated_time_s"], rel=1e-12)
    plain, _ = cli(capsys, "sweep", "llama2-7b", "--device", "lab-gpu", *grid, "--out", str(tmp_path / "p.csv"))
    assert table_io.read(tmp_path / "p.csv")["latency_s"][0] != point["latency_s"][0]
    _, err = cli(capsys, "sweep", str(project), "--system", str(node_file), *grid, "--out", str(tmp_path / "s.csv"))
    assert "the project's link calibration of lab-node" in err
