"""The Training panel's table (the ranked training layouts of one system, units in the headers) and its CSV rows.

One row per layout of the system in focus, in the order of the search (the layout given by hand first, then those
that fit, then by step time); the chosen layout's row is bold and marked. A double-click on a row chooses it.
"""

from __future__ import annotations

import numpy as np

from explorer.core.training.step import STEP_PARTS

from .ranked import RankedTable, fits_text, number

MEMORY_PARTS = ("weights", "gradients", "optimizer states", "activations")
MEMORY_FIELDS = ("weight_bytes", "gradient_bytes", "optimizer_bytes", "activation_bytes")
#: (header, where the value is: "a" the TrainingAnalysis, "c" the TrainingCost; its field; scale to the header's unit)
COLUMNS = (
    ("micro-\nbatches", "a", "microbatches", 1.0),
    ("memory/device\n(GB)", "a", "memory_bytes", 1e-9),
    ("activations\n(GB)", "a", "activation_bytes", 1e-9),
    ("step\n(s)", "a", "step_time", 1.0),
    ("bubble\n(s)", "a", "bubble_time", 1.0),
    ("throughput\n(tokens/s)", "a", "tokens_per_s", 1.0),
    ("MFU\n(%)", "a", "mfu", 100.0),
    ("HFU\n(%)", "a", "hfu", 100.0),
    ("time to train\n(days)", "c", "time_s", 1 / 86400),
    ("energy to train\n(MWh)", "c", "energy_j", 1 / 3.6e9),
)


class TrainingTable(RankedTable):
    """The ranked layouts of one :class:`~explorer.core.training.compare.TrainingResult`."""

    def __init__(self, parent=None):
        super().__init__("The training layouts of the system in focus, the chosen one first; double-click one to "
                         "choose it for every system", parent)
        self.horizontalHeader().setMinimumHeight(36)
        headers = ["rank", "layout", "fits", *[h for h, *_ in COLUMNS]]
        self.setColumnCount(len(headers))
        self.setHorizontalHeaderLabels(headers)

    def fill(self, result) -> None:
        """The rows of ``result`` (every layout, ranked, the chosen first); None or an error: no rows."""
        r = None if result is None else result.analysis
        if r is None:
            self.put_rows([], [])
            return
        c = result.cost
        order = [int(k) for k in result.order]
        values = [np.asarray(getattr(r if where == "a" else c, f), float) * s for _, where, f, s in COLUMNS]
        rows = [(k == result.chosen, [r.layouts[k].label(), fits_text(r, k), *[number(float(v[k])) for v in values]])
                for k in order]
        self.put_rows([r.layouts[k] for k in order], rows)


def csv_rows(results) -> tuple[list[str], list[list]]:
    """Header and rows for CSV: every training layout of every system (SI units in the headers), the chosen one
    marked; a system with no valid layout gives one row with its reason."""
    header = ["system_id", "system", "device", "devices", "layout", "tp", "cp", "pp", "dp", "schedule",
              "virtual stages", "chosen", "fits", "microbatches", "step [s]", *[f"{p} [s]" for p in STEP_PARTS],
              *[f"{p} per device [B]" for p in MEMORY_PARTS], "memory per device [B]", "device memory [B]",
              "throughput [tokens/s]", "MFU [fraction]", "HFU [fraction]", "time to train [s]",
              "energy to train [J]", "electricity [USD]", "rent [USD]", "TCO share [USD]", "error"]
    rows = []
    for res in results:
        base = [res.system.id, res.system.name, res.device.name, res.system.devices]
        r, c = res.analysis, res.cost
        if r is None:
            rows.append(base + [""] * (len(header) - len(base) - 1) + [res.error or ""])
            continue
        parts = r.step_parts
        for k in (int(k) for k in res.order):
            lay = r.layouts[k]
            rows.append(base + [lay.label(), lay.tp, lay.cp, lay.pp, lay.dp, lay.schedule, lay.virtual,
                                "yes" if k == res.chosen else "", "yes" if r.fits[k] else "no",
                                int(r.microbatches[k]), float(r.step_time[k]), *[float(x) for x in parts[k]],
                                *[float(getattr(r, f)[k]) for f in MEMORY_FIELDS], float(r.memory_bytes[k]),
                                float(r.capacity), float(r.tokens_per_s[k]), float(r.mfu[k]), float(r.hfu[k]),
                                float(c.time_s[k]), float(c.energy_j[k]), float(c.electricity_usd[k]),
                                float(c.rent_usd[k]), float(c.tco_usd[k]), ""])
    return header, rows
