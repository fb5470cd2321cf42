"""Our own drawing items for pyqtgraph plots, free of panel logic: each does one job of a pyqtgraph item (or of
a QLabel) in less Python, so that a live panel's edit repaints quickly (docs/benchmarks.md tells what each
saved). One module per item or small family; the panels in ``explorer.ui.panels`` compose them.

Some of them lean on pyqtgraph internals (``SiLogAxis`` overrides ``AxisItem._updateLabel``; ``Bars`` reads
``BarGraphItem._sharedPen``): tests/ui/plot_items/test_pyqtgraph_internals.py names each, and pyproject.toml
bounds pyqtgraph to the versions they were checked on.
"""
