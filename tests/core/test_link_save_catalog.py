"""The app's "Save to catalog" of a named link fit (issue 21): the workspace stores the fit in the catalog database's
system exactly as ``hwexplorer calibrate link FILE --system S --min-size 1MiB --save --name NAME`` does (the same
stored system, byte for byte), as one undoable command whose undo writes the system's previous figures back; the
catalog's system then carries the fit for every project and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from explorer.__main__ import main
from explorer.core.hardware.system_file import system_to_dict
from explorer.core.parallel.layout import Layout
from explorer.core.session.link_calibrations import import_link
from explorer.core.session.state import SystemChoice
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.templates import get_template
from explorer.store.engine import open_catalog

ROOT = Path(__file__).resolve().parents[2]
# a published rccl-tests all-reduce on 8 AMD MI300X in one node (its source: tests/fixtures/nccl/README.md)
NCCL = ROOT / "tests" / "fixtures" / "nccl" / "mi300x-8gpu-all_reduce_perf.txt"
SYSTEM = "amd-instinct-mi300x-platform"
MIB = 2**20


def stored(repo) -> str:
    """The catalog's system as it is stored: its whole system-file form, the overridden fields and the origin."""
    record = repo.system_record(SYSTEM)
    return json.dumps({"system": system_to_dict(record.system), "overrides": sorted(record.overrides),
                       "origin": record.origin}, sort_keys=True)


def workspace(repo) -> Workspace:
    ws = Workspace(lookup=lambda ids: repo.devices([i for i in ids if i in repo.ids()]),
                   systems=lambda ids: repo.systems() if ids is None else
                   tuple(s for s in repo.systems() if s.id in ids), calibration_store=repo)
    ws.reset(get_template("llama2-70b").build(), (), Assumptions(precision="fp16", batch=8, seq_len=4096,
                                                                  phase="decode", time_model="calibrated"),
             system=SystemChoice(system_ids=(SYSTEM,), layout=Layout(tp=8)))
    return ws


def comm(ws) -> np.ndarray:
    r = ws.results.systems[0]
    return np.asarray(r.analysis.comm_time)[r.chosen]


def test_the_apps_save_equals_the_clis_save_and_undo_gives_the_stated_figures_back(tmp_path, capsys):
    app_url, cli_url = (f"sqlite:///{tmp_path / name}" for name in ("app.sqlite3", "cli.sqlite3"))
    with open_catalog(cli_url) as repo:
        shipped = stored(repo)
    assert main(["--db", cli_url, "calibrate", "link", str(NCCL), "--system", SYSTEM, "--min-size", "1 MiB",
                 "--save", "--name", "MI300X run", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["saved"] == "catalog"
    with open_catalog(cli_url) as repo:
        by_cli = stored(repo)

    repo = open_catalog(app_url)
    try:
        assert stored(repo) == shipped
        ws = workspace(repo)
        t_stated = comm(ws)
        link, _ = import_link(NCCL, ws.system(SYSTEM), "MI300X run", min_size=MIB)
        ws.add_link_calibration(SYSTEM, link)
        t_fit = comm(ws)
        ws.save_link_to_catalog(SYSTEM, "MI300X run")
        assert ws.stack.undo_text == "save link calibration 'MI300X run' to the catalog"
        assert stored(repo) == by_cli != shipped  # the same stored system, byte for byte
        domain = repo.system_record(SYSTEM).system.scale_up
        # the published run, fitted on 1 MiB and up: 1.83626 us, 297.789 GB/s per direction (docs/calibration.md)
        assert (domain.calibration.alpha.text, domain.calibration.bandwidth.text) == ("1.83626 us", "297.789 GB/s")
        assert "domains" in repo.system_record(SYSTEM).overrides
        assert np.array_equal(comm(ws), t_fit)  # the project's fit and the stored one: the same figures

        # the catalog's system now carries it for every project: a new one with no link fit of its own
        fresh = workspace(repo)
        assert fresh.calibrations.links.of(SYSTEM) == () and np.array_equal(comm(fresh), t_fit)
        fresh.set_assumptions(time_model="ideal")
        assert not np.array_equal(comm(fresh), t_fit)  # the ideal model keeps the stated figures

        ws.undo()  # the save: the catalog's system as it was
        assert stored(repo) == shipped
        assert np.array_equal(comm(workspace(repo)), t_stated)
        ws.redo()
        assert stored(repo) == by_cli
        ws.undo()
        ws.undo()  # the import
        assert np.array_equal(comm(ws), t_stated) and stored(repo) == shipped
    finally:
        repo.close()


def test_save_errors_are_one_line_and_change_nothing(tmp_path):
    url = f"sqlite:///{tmp_path / 'c.sqlite3'}"
    repo = open_catalog(url)
    try:
        ws = workspace(repo)
        before = stored(repo)
        with pytest.raises(ValueError, match="no fit named 'nope' of amd-instinct-mi300x-platform"):
            ws.save_link_to_catalog(SYSTEM, "nope")
        link, _ = import_link(NCCL, ws.system(SYSTEM), "run", min_size=MIB)
        ws.add_link_calibration(SYSTEM, link)
        no_store = Workspace(lookup=ws._lookup, systems=ws._system_lookup)
        no_store.reset(ws.state.model, (), ws.state.assumptions, system=ws.state.system,
                       calibrations=ws.calibrations)
        with pytest.raises(ValueError, match="no catalog database to save the fit in"):
            no_store.save_link_to_catalog(SYSTEM, "run")
        assert stored(repo) == before and ws.stack.undo_text == "import link calibration 'run'"
    finally:
        repo.close()
