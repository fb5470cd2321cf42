"""Cost per million tokens as the layout search's third objective: hand-made rankings, the TCO by hand, unpriced."""

import math
from dataclasses import replace

import numpy as np
import pytest
from hand_systems import hgx

from explorer.core.analysis.cost import CostAssumptions
from explorer.core.hardware.device import Cited
from explorer.core.parallel.compare import choose, size_on_systems
from explorer.core.parallel.layout import Layout
from explorer.core.parallel.layout_cost import device_price, layout_cost
from explorer.core.parallel.system_pass import analyze_system
from explorer.core.session.state import SystemChoice
from explorer.core.workload.layers import Context
from explorer.core.workload.templates import get_template

LLAMA70 = get_template("llama2-70b").build()
DECODE = Context(batch=8, phase="decode", seq_len=4096)
SECONDS = 3 * 365.25 * 86400  # three Julian years


class Ranked:
    """The four arrays :func:`choose` reads, made by hand."""

    def __init__(self, fits, tput, latency=None):
        self.fits = np.array(fits)
        self.throughput_per_device = np.array(tput, float)
        self.latency = np.array(latency if latency is not None else [1.0] * len(fits), float)

    def __len__(self):
        return len(self.fits)


def test_cost_ranking_by_hand_unpriced_after_priced():
    r = Ranked(fits=[True, True, True, False, True], tput=[1, 5, 1, 9, 7])
    cost = [3.0, math.nan, 1.0, 0.5, math.nan]
    chosen, order = choose(r, "cost", cost)
    # fitting and priced by cost (2: 1.0, 0: 3.0); fitting without a price by throughput (4: 7, 1: 5); then the
    # layout that does not fit, however cheap
    assert list(order) == [2, 0, 4, 1, 3] and chosen == 2
    # with no price at all the ranking is the throughput's
    _, by_tput = choose(r, "throughput")
    assert list(choose(r, "cost", [math.nan] * 5)[1]) == list(by_tput)
    with pytest.raises(ValueError, match="objective"):
        choose(r, "speed")


def test_tco_and_cost_per_million_by_hand(devices):
    """30,000 USD per H100 (a quote), TDP 700 W, 3 years at 60 % utilization, PUE 1.3, 0.12 USD/kWh:
    electricity 700 x 0.6 x 1.3 W x 94,672,800 s = 14,358.7 kWh = 1,723.05 USD, TCO 31,723.05 USD per device.
    Eight devices serving T tokens/s: 8 x 31,723.05 / (T x 0.6 x 94,672,800 s) x 10^6 USD per million."""
    h100 = devices["nvidia-h100-sxm5"]
    r = analyze_system(LLAMA70, hgx(), h100, [Layout(tp=8), Layout(tp=4, dp=2), Layout(tp=2, pp=4)], "fp16", DECODE)
    c = layout_cost(r, {h100.id: 30_000.0})
    assert (c.price_per_device, c.price_source, c.tdp, c.unit) == (30_000.0, "quote", 700.0, "token")
    assert c.tco_per_device == pytest.approx(31_723.05, abs=0.01)
    assert c.cost_per_million == pytest.approx(8 * 31_723.0450 / (r.throughput * 0.6 * SECONDS) * 1e6, rel=1e-7)
    # one system: the TCO is the same for every layout, so the cheapest layout is the fastest per device
    assert choose(r, "cost", c.cost_per_million)[0] == choose(r, "throughput")[0]
    assert c.priced and c.reason == ""


def test_unpriced_device_has_an_unknown_cost_and_says_why(devices):
    h100 = replace(devices["nvidia-h100-sxm5"], price=None)  # the catalog's street price taken away
    r = analyze_system(LLAMA70, hgx(), h100, [Layout(tp=8)], "fp16", DECODE)
    c = layout_cost(r)
    assert math.isnan(c.cost_per_million[0]) and not c.priced and "no price for nvidia-h100-sxm5" in c.reason
    listed = replace(h100, price=Cited(25_000.0, "25000 USD"))
    assert device_price(listed) == (25_000.0, "list price")
    assert device_price(listed, {h100.id: 20_000.0}) == (20_000.0, "quote")  # a quote wins over the list price
    with pytest.raises(ValueError, match="price"):
        device_price(h100, {h100.id: -1.0})


def test_size_on_systems_ranks_by_cost_and_carries_it(devices):
    h100 = devices["nvidia-h100-sxm5"]
    (priced,) = size_on_systems(LLAMA70, [(hgx(), h100)], "fp16", DECODE, objective="cost",
                                quotes={h100.id: 30_000.0})
    costs = priced.cost.cost_per_million[priced.order]
    fitting = priced.analysis.fits[priced.order]
    assert np.all(np.diff(costs[fitting]) >= 0) and priced.objective == "cost"
    bare = replace(h100, price=None)
    (unpriced,) = size_on_systems(LLAMA70, [(hgx(), bare)], "fp16", DECODE, objective="cost",
                                  costs=CostAssumptions())
    assert not unpriced.cost.priced and unpriced.chosen == priced.chosen  # by throughput, as the cheapest is


def test_the_session_accepts_cost_as_an_objective():
    assert SystemChoice(system_ids=("x",), objective="cost").checked().objective == "cost"
    saved = SystemChoice(system_ids=("x",), objective="cost").to_dict()  # as the project file stores it
    assert SystemChoice.from_dict(saved).objective == "cost"
    with pytest.raises(ValueError, match="objective"):
        SystemChoice(system_ids=("x",), objective="price").checked()


def test_the_workspace_recosts_on_a_price_edit_without_searching_again():
    from explorer.core.analysis.procurement import Requirements
    from explorer.core.hardware.catalog_files import load_shipped_devices
    from explorer.core.session.commands import SetAssumptions, SetRequirements, SetSystem
    from explorer.core.session.state import Assumptions
    from explorer.core.session.workspace import Workspace

    shipped = {d.id: d for d in load_shipped_devices()}
    ws = Workspace(get_template("llama3-70b").build(), lambda ids: tuple(shipped[i] for i in ids if i in shipped),
                   Assumptions(phase="decode", batch=16, seq_len=4096))
    ws.execute(SetSystem(SystemChoice(system_ids=("nvidia-dgx-h100",), objective="cost")))
    layouts = ws.results.system_layouts
    (listed,) = ws.results.system_costs
    assert listed.price_source == "list price" and listed.price_per_device == 25_000.0  # the catalog's street price
    ws.execute(SetRequirements(Requirements(price={"nvidia-h100-sxm5": 30_000.0})))
    (priced,) = ws.results.system_costs
    assert ws.results.system_layouts is layouts and priced.price_source == "quote"
    ws.execute(SetAssumptions({"electricity_usd_per_kwh": 0.2}))
    (dearer,) = ws.results.system_costs
    assert ws.results.system_layouts is layouts
    assert np.all(dearer.cost_per_million[np.isfinite(dearer.cost_per_million)]
                  > priced.cost_per_million[np.isfinite(priced.cost_per_million)])
