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
