"""explorer.core.pmap: the same results in the same order in process, over forked or spawned local processes, and
the worker count checked; the serving sweep's task run through it equals the in-process loop."""

from __future__ import annotations

import threading

import pytest

from explorer.core import pmap
from explorer.core.serving.simulate import Policy
from explorer.core.serving.workload import SLO, Lengths, Workload
from explorer.core.sweep.serving import ServingGrid, SimInputs, build_setups, simulate_point
from explorer.core.workload.templates import get_template
from explorer.store.engine import open_catalog


def _setup_inputs():
    model = get_template("llama3-8b").build()
    with open_catalog() as repo:
        devices = repo.devices(["nvidia-h100-sxm5"])
    workload = Workload(rate=1.0, lengths=Lengths.fixed(256, 32))
    grid = ServingGrid(("fp16",), (8, 64), (4.0, 16.0))
    setups = build_setups(model, devices, grid, workload, Policy())
    items = [(k, r) for k in range(len(setups)) for r in grid.rates]
    return SimInputs(workload, SLO(ttft=0.2), 60, 7, setups), items


def test_spawned_workers_when_a_thread_runs_give_the_in_process_rows():
    """Beside another thread (the app's case) the pool spawns instead of forking; the rows are the same."""
    shared, items = _setup_inputs()
    here = pmap.parallel_map(simulate_point, shared, items, workers=1)
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, daemon=True)
    t.start()
    try:
        assert pmap._context().get_start_method() == "spawn"
        spawned = pmap.parallel_map(simulate_point, shared, items, workers=2)
    finally:
        stop.set()
        t.join()
    assert pmap._context().get_start_method() in ("fork", "spawn")
    assert repr(spawned) == repr(here)  # bit for bit, NaN included
    assert here[0][:7] != here[1][:7]  # two rates, two different answers (not one row repeated)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_worker_count_checked(bad):
    with pytest.raises(pmap.PoolError, match="--workers"):
        pmap.parallel_map(simulate_point, None, [1, 2], workers=bad)


def test_default_workers_is_the_cpus_we_may_use():
    assert pmap.check_workers(None) == pmap.default_workers() >= 1
