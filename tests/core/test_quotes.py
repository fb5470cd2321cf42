"""The one quote store (issue 23): quotes with their source and date live in the requirements, are saved with the
project, feed the cost figures as they feed the plan, and survive a device edit."""

from dataclasses import replace

import pytest
from test_procurement import dense_model, device

from explorer.core.analysis.cost import CostAssumptions, compute_cost
from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.procurement import Requirements, plan
from explorer.core.analysis.quotes import apply_quotes, set_quote
from explorer.core.session.project import Project, load_project, requirements_from_dict, save_project
from explorer.core.session.workspace import Assumptions
from explorer.core.workload.templates import get_template

COSTS = CostAssumptions(years=3.0, electricity_usd_per_kwh=0.10, pue=1.5, utilization=0.5)


def test_set_quote_keeps_the_source_and_removes_cleanly():
    req = set_quote(Requirements(), "a", price=30_000.0, cloud_price=4.1 / 3600, source="Acme quote, 2026-11-01")
    assert req.price == {"a": 30_000.0} and req.cloud_price == {"a": 4.1 / 3600}
    assert req.price_source == {"a": "Acme quote, 2026-11-01"} == req.cloud_price_source
    req = set_quote(req, "a", price=None)
    assert req.price == {} and req.price_source == {} and req.cloud_price == {"a": 4.1 / 3600}


def test_cost_figures_use_the_quotes_as_the_plan_does():
    analysis = evaluate(dense_model(1000, 1000), [device("a", tdp="500 W"), device("b", tdp="500 W")], "fp16")
    req = Requirements(1.0, "inferences/s", price={"a": 10_000.0, "gone": 5.0})  # "gone": deselected since
    cost = compute_cost(apply_quotes(analysis, req), COSTS)
    electricity = 0.375 * 3 * 365.25 * 24 * 0.10
    assert cost.tco[0] == pytest.approx(10_000 + electricity, rel=1e-12)
    assert cost.price[1] != cost.price[1]  # NaN: "b" has neither a catalog price nor a quote
    p = plan(analysis, replace(req, price={"a": 10_000.0}), COSTS)
    assert p.by_id("a").tco == pytest.approx(cost.tco[0], rel=1e-12)


def test_project_round_trip_keeps_quotes_sources_and_ranking(tmp_path):
    req = set_quote(Requirements(2000.0, "tokens/s", latency=0.05, budget=5e5, rank_by="cheaper"), "nvidia-l4",
                    price=2_500.0, cloud_price=0.7 / 3600, source="reseller quote 2026-11-20")
    project = Project(get_template("gpt2").build(), ("nvidia-l4",), Assumptions(), requirements=req)
    path = tmp_path / "p.hwproj"
    save_project(project, path)
    back = load_project(path)
    assert back.requirements == req
    assert back.requirements.price_source == {"nvidia-l4": "reseller quote 2026-11-20"}


def test_old_files_without_sources_still_read():
    req = requirements_from_dict({"price": {"a": 1000.0}, "cloud_price": {"a": 0.001}})
    assert req.price == {"a": 1000.0} and req.price_source == {}
    with pytest.raises(ValueError, match="price_source: expected an object of texts"):
        requirements_from_dict({"price_source": {"a": 5}})
