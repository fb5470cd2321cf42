"""Where to filter the catalog table: in the Qt proxy over loaded rows, or in SQL (repository.rows(filter))?

Run by hand: ``QT_QPA_PLATFORM=offscreen .venv/bin/python bench/catalog_filter.py [N]`` (default 10,000
devices, made by copying the shipped catalog under new ids into an in-memory SQLite database).
Prints the median time of each way for a few typical filters, including the model reset the SQL way needs.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from dataclasses import replace

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QApplication

from explorer.core.session.workspace import Workspace
from explorer.store.engine import open_catalog
from explorer.store.query import DeviceFilter
from explorer.ui.catalog.proxy import CatalogFilterProxy
from explorer.ui.catalog.table_model import CatalogTableModel

FILTERS = {
    "search 'h100'": DeviceFilter(text="h100"),
    "search 'a' (most rows)": DeviceFilter(text="a"),
    "vendor NVIDIA": DeviceFilter(vendors=("NVIDIA",)),
    "kind tpu + tier edge": DeviceFilter(kinds=("tpu",), tiers=("edge",)),
    "precision fp8": DeviceFilter(precision="fp8"),
    "no filter": DeviceFilter(),
}


def median_ms(fn, repeat: int = 7, setup=None) -> float:
    times = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main(n: int) -> None:
    app = QApplication.instance() or QApplication([])  # noqa: F841 - models need an application
    repo = open_catalog("sqlite://")
    shipped = repo.devices()
    copies = [replace(d, id=f"{d.id}-{i}", name=f"{d.name} #{i}", origin="user")
              for i in range(n // len(shipped) + 1) for d in shipped][: n - len(shipped)]
    repo.import_devices(copies, validate=False)
    total = repo.count()
    model = CatalogTableModel(Workspace())
    proxy = CatalogFilterProxy()
    proxy.setSourceModel(model)
    load_ms = median_ms(lambda: model.set_rows(repo.rows()), 3)
    print(f"{total} devices; loading every row (repository.rows() + model reset): {load_ms:.0f} ms")
    print(f"{'filter':28} {'rows':>6} {'proxy ms':>9} {'SQL+reset ms':>13}")
    sql_model = CatalogTableModel(Workspace())
    for label, f in FILTERS.items():
        def other():  # a different filter first, so each timed call really re-filters
            proxy.set_filter(DeviceFilter(text="\0"))

        def in_proxy(f=f):
            proxy.set_filter(f)

        def in_sql(f=f):
            sql_model.set_rows(repo.rows(f))

        proxy_ms = median_ms(in_proxy, setup=other)
        sql_ms = median_ms(in_sql)
        assert proxy.rowCount() == sql_model.rowCount()
        print(f"{label:28} {proxy.rowCount():6d} {proxy_ms:9.1f} {sql_ms:13.1f}")
    repo.engine.dispose()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
