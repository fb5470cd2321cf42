"""The report as CSV: a summary (one row per device) and a per-operator table, units in the headers.

``report.csv`` holds the summary and the plan; ``report-layers.csv`` (next to it) every operator on every device.
Numbers are plain SI floats at full precision so a spreadsheet or a script reads them without parsing units.
The same tables as one XLSX workbook: xlsx_export.py.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

from explorer.core.files import SafeCsvWriter

from .build import ReportData


def _num(x):
    if isinstance(x, str):
        return x
    x = float(x)
    return repr(x) if math.isfinite(x) else ""


def sibling_path(path: str | Path, part: str) -> Path:
    """``report.csv`` -> ``report-<part>.csv``: the report's other tables beside it."""
    path = Path(path)
    return path.with_name(f"{path.stem}-{part}{path.suffix or '.csv'}")


def layers_path(path: str | Path) -> Path:
    return sibling_path(path, "layers")


def summary_csv(data: ReportData) -> str:
    out = io.StringIO()
    w = SafeCsvWriter(out)
    metrics = data.summary
    header = ["device_id", "device"] + [f"{m.label} [{m.unit}]" if m.unit else m.label for m in metrics]
    header += ["rank", "units", "capital [USD]", "electricity over horizon [USD]", "fleet TCO [USD]",
               "rent over horizon [USD]", "rank basis", "break-even [months]", "buy or rent", "feasible",
               "memory check", "memory needed [B]", "latency floor check", "latency floor [s]", "compute check",
               "compute time [s]", "reason", "missing figures"]
    w.writerow(header)
    for i, (dev_id, name) in enumerate(zip(data.device_ids, data.device_names)):
        p = data.plan.by_id(dev_id)
        mem, bw, comp = p.checks
        (mem_status, _), (bw_status, _), (comp_status, _) = p.verdicts  # "split", not "fail", for a split model
        row = [dev_id, name] + [_num(m.values[i]) for m in metrics]
        row += [p.rank, p.units or "", _num(p.capital), _num(p.energy_cost), _num(p.tco), _num(p.cloud_cost),
                p.rank_basis, _num(p.break_even_months), p.buy_or_rent, {True: "yes", False: "no", None: "unknown"}[p.feasible],
                mem_status, _num(mem.value), bw_status, _num(bw.value), comp_status, _num(comp.value), p.reason,
                "; ".join(p.missing)]
        w.writerow(row)
    return out.getvalue()


def layers_csv(data: ReportData) -> str:
    a = data.analysis
    t = a.table
    bounds = a.bound_names()
    out = io.StringIO()
    w = SafeCsvWriter(out)
    w.writerow(["device_id", "operator", "kind", "repeat", "FLOPs [FLOP]", "bytes [B]", "intensity [FLOP/B]",
                "attainable [FLOP/s]", "time per execution [s]", "time share [fraction]", "bound",
                "mapping efficiency [fraction]", "energy per execution [J]"])
    share = a.time_share
    for j, dev_id in enumerate(a.devices.ids):
        for i in range(len(t)):
            w.writerow([dev_id, t.names[i], t.kinds[i], int(a.count[i]), _num(a.flops[i]), _num(a.bytes[i]),
                        _num(a.intensity[i]), _num(a.attainable[i, j]), _num(a.time[i, j]), _num(share[i, j]),
                        bounds[i, j] if a.bound_known[i, j] else "", _num(a.mapping_efficiency[i, j]) if a.mapping_known[i, j] else "",
                        _num(a.energy[i, j])])
    return out.getvalue()


def _rows_csv(rows) -> str:
    """One section's rows (numbers in SI units, floats written as the rest of the report's CSV writes them)."""
    out = io.StringIO()
    w = SafeCsvWriter(out)
    for row in rows:
        w.writerow([_num(x) if isinstance(x, float) else x for x in row])
    return out.getvalue()


def systems_csv(data: ReportData) -> str:
    """The Systems section: each system's chosen layout and, with a target, the fleet sized on it."""
    from .systems_section import csv_rows

    return _rows_csv(csv_rows(data.systems))


def training_csv(data: ReportData) -> str:
    """The Training section: each system's chosen training layout, its step, memory, MFU and cost to train."""
    from .training_section import csv_rows

    return _rows_csv(csv_rows(data.training))


def serving_csv(data: ReportData) -> str:
    """The Serving section: per device the estimate, the simulation and the estimate at the knee (SI units)."""
    from .serving_section import csv_rows

    return _rows_csv(csv_rows(data.serving))
