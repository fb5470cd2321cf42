"""The cost table reads money with the one core reader; a bad cell is refused alone, the other prices stay."""

from test_panels import make, settle, ws  # noqa: F401 - ws: the fixture (a small model on a test GPU and NPU)

from explorer.ui.panels import CostPanel


def _price_column(table):
    headers = [table.horizontalHeaderItem(j).text().replace("\n", " ") for j in range(table.columnCount())]
    return headers.index("Price (USD)")


def test_cost_table_reads_every_money_form_and_refuses_a_bad_cell_alone(qtbot, ws):  # noqa: F811
    panel = make(qtbot, CostPanel, ws)
    table = panel.table
    price = _price_column(table)
    names = [table.item(r, 0).text() for r in range(table.rowCount())]
    row = names.index("Test GPU")
    table.item(row, price).setText("30k USD")
    settle(qtbot, panel)
    assert table.item(row, price).text() == "$30,000 *"
    before = {n: table.item(r, price).text() for r, n in enumerate(names)}
    table.item(row, price).setText("3 GB")
    settle(qtbot, panel)
    assert "is a byte count, not a money amount" in panel.message.text()
    assert {n: table.item(r, price).text() for r, n in enumerate(names)} == before


def test_a_cost_panel_price_is_a_quote_in_the_one_store_and_survives_a_device_edit(qtbot, ws):  # noqa: F811
    from dataclasses import replace

    from explorer.core.hardware.device import Cited
    from explorer.core.session.project import Project

    panel = make(qtbot, CostPanel, ws)
    table = panel.table
    price = _price_column(table)
    row = [table.item(r, 0).text() for r in range(table.rowCount())].index("Test GPU")
    table.item(row, price).setText("$30k")
    settle(qtbot, panel)
    req = ws.requirements
    assert req.price == {"gpu": 30000.0} and req.price_source["gpu"].startswith("entered in the cost panel on ")
    assert ws.results.plan.by_id("gpu").price == 30000.0  # the planner reads the same store
    assert Project.of(ws).requirements.price == {"gpu": 30000.0}  # saved with the project
    # editing the device (its TDP) keeps the quote: quotes are keyed by id, not stored in the device
    gpu = next(d for d in ws.devices if d.id == "gpu")
    ws.put_devices([replace(gpu, tdp=Cited(300.0, "300 W", None, "edited"))])
    settle(qtbot, panel)
    assert ws.requirements.price == {"gpu": 30000.0}
    assert table.item(row, price).text() == "$30,000 *"
    assert ws.results.cost.price[list(ws.results.cost.ids).index("gpu")] == 30000.0
    table.item(row, price).setText("")  # an empty cell removes the quote
    settle(qtbot, panel)
    assert ws.requirements.price == {}


def test_a_planner_edit_keeps_the_stores_sources_ranking_and_other_quotes(qtbot, ws):  # noqa: F811
    from explorer.core.analysis.procurement import Requirements
    from explorer.core.analysis.quotes import set_quote
    from explorer.core.session.commands import SetRequirements
    from explorer.ui.planner.planner_panel import PlannerPanel

    req = set_quote(Requirements(rank_by="cheaper"), "gpu", price=15_000.0, source="Acme, 2026-11-01")
    req = set_quote(req, "deselected", price=1_000.0, source="old quote")
    ws.execute(SetRequirements(req))
    panel = PlannerPanel(ws)
    qtbot.addWidget(panel)
    panel.replan()
    panel.target.setText("100 inferences/s")
    panel.target.textEdited.emit("100 inferences/s")
    panel.replan()
    after = ws.requirements
    assert after.target == 100.0 and after.rank_by == "cheaper"
    assert after.price == {"gpu": 15_000.0, "deselected": 1_000.0}
    assert after.price_source == {"gpu": "Acme, 2026-11-01", "deselected": "old quote"}


def test_rank_by_in_the_planner_ranks_a_rent_only_device(qtbot, ws):  # noqa: F811
    from explorer.core.analysis.procurement import Requirements
    from explorer.core.session.commands import SetRequirements
    from explorer.ui.planner.planner_panel import PlannerPanel

    # the test GPU rented at $2/h, no purchase price: unpriced when buying, ranked when renting
    ws.execute(SetRequirements(Requirements(cloud_price={"gpu": 2.0 / 3600})))
    panel = PlannerPanel(ws)
    qtbot.addWidget(panel)
    panel.replan()
    gpu = next(i for i in range(panel.rank_by.count()) if panel.rank_by.itemData(i) == "rent")
    panel.rank_by.activated.emit(gpu)
    assert ws.requirements.rank_by == "rent" and panel.rank_by.basis() == "rent"
    plan = ws.results.plan.by_id("gpu")
    assert plan.rank_basis == "rent" and plan.rank_cost == plan.cloud_cost
    ws.undo()
    assert ws.requirements.rank_by == "buy" and panel.rank_by.basis() == "buy"
