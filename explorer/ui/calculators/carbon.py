"""Carbon calculator: operational energy and emissions of a baseline fleet and its replacement."""

from __future__ import annotations

import pyqtgraph as pg

from explorer.core.calculators.carbon import JOULES_PER_KWH, US_AVERAGE_GRID, CarbonResult, carbon_comparison
from explorer.core.units import format_si

from ._widgets import PLOT_COLORS, CalculatorWidget, Section, UnitSpinBox, bar_labels, make_plot, ratio

# The UI shows kg CO2 per kWh; the core takes kg per joule.
_KG_PER_KWH = 1.0 / JOULES_PER_KWH


class CarbonSection(Section):
    def __init__(self):
        super().__init__([carbon_comparison])
        self.boxes: dict[str, UnitSpinBox] = {}
        for prefix, label, units, power, peak in (
            ("baseline", "Baseline", 1000.0, 100.0, 1e12),
            ("replacement", "Replacement", 100.0, 5.0, 10e12),
        ):
            self._box(
                f"{prefix}_units",
                f"{label}: units",
                UnitSpinBox("units", maximum=1e9, decimals=0, value_si=units),
            )
            self._box(
                f"{prefix}_power",
                f"{label}: power per unit",
                UnitSpinBox("W", si_unit="W", minimum=1e-3, maximum=1e7, decimals=2, value_si=power),
            )
            self._box(
                f"{prefix}_peak",
                f"{label}: throughput per unit",
                UnitSpinBox(
                    "TFLOP/s", si_unit="FLOP/s", minimum=1e-6, maximum=1e7, decimals=3, value_si=peak
                ),
            )
        self._box(
            "grid_intensity",
            "Grid carbon intensity",
            UnitSpinBox(
                "kg CO\u2082/kWh", scale=_KG_PER_KWH, maximum=10.0, decimals=3, value_si=US_AVERAGE_GRID
            ),
        )
        self._box(
            "hours_per_day",
            "Hours of use per day",
            UnitSpinBox("h/day", maximum=24.0, decimals=1, value_si=24.0),
        )
        self._box(
            "days_per_year", "Days per year", UnitSpinBox("days", maximum=366.0, decimals=0, value_si=365.0)
        )
        self.plot = make_plot("Operational CO\u2082 per year", "", "tonnes CO\u2082 per year")
        self.bars = pg.BarGraphItem(
            x=[0, 1], height=[0, 0], width=0.6, brushes=[PLOT_COLORS[1], PLOT_COLORS[2]]
        )
        self.plot.addItem(self.bars)
        bar_labels(self.plot, ["baseline fleet", "replacement fleet"])
        self.saved_text = pg.TextItem(color="k", anchor=(0.5, 1.0))
        self.plot.addItem(self.saved_text)
        self.plots.addWidget(self.plot)

    def _box(self, name: str, label: str, box: UnitSpinBox) -> None:
        self.boxes[name] = box
        self.field(name, label, box)

    def compute(self) -> CarbonResult:
        return carbon_comparison(**{name: box.si_value() for name, box in self.boxes.items()})

    def render(self, r: CarbonResult) -> None:
        b, n = r.baseline, r.replacement
        self.results.set_rows(
            [
                ("Baseline efficiency", format_si(b.efficiency, "FLOP/s/W")),
                ("Replacement efficiency", format_si(n.efficiency, "FLOP/s/W")),
                ("Efficiency gap", ratio(r.efficiency_gap)),
                ("Baseline energy per day", f"{b.energy_per_day / JOULES_PER_KWH:,.4g} kWh"),
                ("Replacement energy per day", f"{n.energy_per_day / JOULES_PER_KWH:,.4g} kWh"),
                ("Baseline CO\u2082 per year", f"{b.emissions_per_year / 1000:,.4g} t"),
                ("Replacement CO\u2082 per year", f"{n.emissions_per_year / 1000:,.4g} t"),
                ("CO\u2082 saved per year", f"{r.emissions_saved_per_year / 1000:,.4g} t"),
                (
                    "Fleet throughput, baseline vs replacement",
                    f"{format_si(b.throughput, 'FLOP/s')} vs {format_si(n.throughput, 'FLOP/s')}",
                ),
                ("Replacement units for equal throughput", f"{r.equal_throughput_units:,}"),
            ]
        )
        tonnes = [b.emissions_per_year / 1000.0, n.emissions_per_year / 1000.0]
        self.bars.setOpts(height=tonnes)
        top = max(max(tonnes), 1e-9)
        self.saved_text.setText(f"saves {r.emissions_saved_per_year / 1000:,.1f} t/yr")
        self.saved_text.setPos(0.5, top * 1.12)
        self.plot.setYRange(0, top * 1.2)


class CarbonCalculator(CalculatorWidget):
    calculator_id = "carbon"

    def __init__(self):
        self.section = CarbonSection()
        super().__init__([self.section])
