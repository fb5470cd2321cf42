"""The pyqtgraph internals our plot items override or read. pyproject.toml bounds pyqtgraph to the versions
these were checked on; when a new pyqtgraph renames one, this test names it (rather than the items failing
quietly: an override of a method that no longer exists is simply never called)."""

from __future__ import annotations

import pyqtgraph as pg
import pytest

# (pyqtgraph class, private name, what of ours depends on it)
OVERRIDDEN = [
    (pg.AxisItem, "_updateLabel", "SiLogAxis._updateLabel (plot_items/axis.py) re-typesets the label only when it changes"),
]
CALLED = [
    (pg.AxisItem, "_adjustSize", "SiLogAxis._updateLabel calls it"),
    (pg.AxisItem, "_updateMaxTextSize", "SiLogAxis.generateDrawSpecs calls it"),
]
ATTRIBUTES = [
    (lambda: pg.AxisItem("left"), "_tickLevels", "SiLogAxis.generateDrawSpecs reads it"),
    (lambda: pg.AxisItem("left"), "_tickPen", "SiLogAxis._level_pen reads it"),
    (lambda: pg.AxisItem("left"), "_pen", "SiLogAxis._level_pen reads it"),
    (lambda: pg.BarGraphItem(x0=[0], y=[0], width=[1], height=1), "_sharedPen", "Bars.pixelPadding reads it"),
    (lambda: pg.BarGraphItem(x0=[0], y=[0], width=[1], height=1), "_pens", "Bars.pixelPadding reads it"),
    (lambda: pg.GraphicsObject(), "_exportOpts", "Dots.paint reads it to draw vectors when exported"),
]


@pytest.mark.parametrize(("cls", "name", "use"), OVERRIDDEN + CALLED, ids=lambda v: getattr(v, "__name__", v))
def test_private_methods_we_override_or_call_exist(cls, name, use):
    assert callable(getattr(cls, name, None)), (
        f"pyqtgraph {pg.__version__}: {cls.__name__}.{name} is gone; {use}. Check plot_items before widening the "
        "pyqtgraph bound in pyproject.toml"
    )


@pytest.mark.parametrize(("make", "name", "use"), ATTRIBUTES, ids=[n for _m, n, _u in ATTRIBUTES])
def test_private_attributes_we_read_exist(qapp, make, name, use):
    item = make()
    assert hasattr(item, name), (
        f"pyqtgraph {pg.__version__}: {type(item).__name__}.{name} is gone; {use}. Check plot_items before "
        "widening the pyqtgraph bound in pyproject.toml"
    )
