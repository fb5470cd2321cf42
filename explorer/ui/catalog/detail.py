"""DeviceDetailView: every field of one device with its value as written, in SI units, and its cited source.

A read-only QTextBrowser; source titles are links that open in the system browser. Notes and the
recorded conflicts (where references disagree about a field) follow the figures.
"""

from __future__ import annotations

from collections.abc import Iterator
from html import escape

from PySide6.QtWidgets import QTextBrowser, QWidget

from explorer.core.hardware.device import Cited, Device
from explorer.core.precision import PRECISIONS
from explorer.core.units import KINDS
from explorer.store.rows import origin_label

DASH = "\u2014"
PLACEHOLDER = "<p style='color:#666'>Select a device in the table to see every figure and its source.</p>"
TITLE_CHARS = 48  # a source title longer than this is shortened in the table (in full under Sources)
STYLE = """
<style>
 h2 { margin-bottom: 2px; }
 table.fields { border-collapse: collapse; }
 table.fields td, table.fields th { padding: 2px 8px 2px 0; vertical-align: top; }
 th { text-align: left; }
 .note { color: #555; font-size: small; }
 .conflict { color: #8a4b00; }
</style>
"""

# (label, figure, unit kind or None for a count) in the order shown
Figure = tuple[str, Cited | None, str | None]


def _figures(device: Device) -> Iterator[Figure]:
    for precision in PRECISIONS:
        if precision in device.peak:
            yield f"Peak {precision} (dense)", device.peak[precision], "throughput"
        if precision in device.peak_sparse:
            yield f"Peak {precision} (2:4 sparse)", device.peak_sparse[precision], "throughput"
    for level in device.memory:
        copies = f", \u00d7{level.instances}" if level.instances != 1 else ""
        where = f"{level.name} ({level.role}{copies})"
        yield f"{where} capacity", level.capacity, "bytes"
        yield f"{where} bandwidth", level.bandwidth, "bandwidth"
        yield f"{where} access energy", level.energy, "energy_per_byte"
        yield f"{where} latency", level.latency, "time"
    for precision in PRECISIONS:
        if precision in device.energy_per_mac:
            yield f"Energy per MAC {precision}", device.energy_per_mac[precision], "energy"
    engine = device.matrix_engine
    if engine is not None:
        for attr, label in (("rows", "rows"), ("cols", "columns"), ("units", "units"), ("sm_count", "SMs")):
            yield f"Matrix engine {label}", getattr(engine, attr), None
    yield "Clock", device.clock, "frequency"
    yield "TDP", device.tdp, "power"
    yield "Purchase price" + (f" ({device.price_date})" if device.price_date else ""), device.price, "money"
    yield "Cloud price", device.cloud_price, "money_rate"
    if device.host_link is not None:
        link = device.host_link
        yield f"Host link {link.name} ({link.direction})", link.bandwidth, "bandwidth"
    for link in device.interconnects:
        yield f"Interconnect {link.name} ({link.direction})", link.bandwidth, "bandwidth"


def _si(cited: Cited, kind: str | None) -> str:
    if kind is None:
        return f"{cited.value:g}"
    return f"{cited.value:.6g} {KINDS[kind].si_unit}"


def source_cell(sources: dict, cited: Cited) -> str:
    """The figure's source as a link (title shortened, in full in its tooltip), its key if ``sources`` lacks it,
    or "no source"."""
    source = sources.get(cited.source) if cited.source else None
    if source is None:
        return escape(cited.source) if cited.source else "<i>no source</i>"
    title = source.title if len(source.title) <= TITLE_CHARS else source.title[:TITLE_CHARS - 1] + "\u2026"
    url, full = escape(source.url, quote=True), escape(source.title, quote=True)
    return f'<a href="{url}" title="{full}">{escape(title)}</a>'


def page_head(name: str, facts: list[tuple[str, str]]) -> list[str]:
    """The page's style, title and table of facts (left open: the caller closes the table)."""
    return [STYLE, f"<h2>{escape(name)}</h2>", "<table>",
            *(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in facts)]


def figure_row(label: str, cited: Cited | None, suffix: str, read: str, sources: dict) -> str:
    """One figure's row: the label, the value as written (+ ``suffix``) with its note, ``read`` (the value as
    the model reads it) and the source; dashes for an unknown figure."""
    if cited is None:
        return f"<tr><td>{escape(label)}</td><td>{DASH}</td><td>{DASH}</td><td></td></tr>"
    note = f"<br><span class='note'>{escape(cited.note)}</span>" if cited.note else ""
    return (f"<tr><td>{escape(label)}</td><td>{escape(cited.text + suffix)}{note}</td><td>{escape(read)}</td>"
            f"<td>{source_cell(sources, cited)}</td></tr>")


def page_tail(item) -> list[str]:
    """A device's or system's notes, conflicts between references and sources."""
    parts = []
    if item.notes:
        parts.append("<h3>Notes</h3><p>" + escape(item.notes.strip()).replace("\n", "<br>") + "</p>")
    if item.conflicts:
        parts.append("<h3>Conflicts between references</h3><ul>")
        parts += [f"<li class='conflict'><b>{escape(c.field)}</b>: {escape(c.note)}</li>" for c in item.conflicts]
        parts.append("</ul>")
    if item.sources:
        parts.append("<h3>Sources</h3><ul>")
        parts += [f'<li>[{escape(key)}] <a href="{escape(s.url, quote=True)}">{escape(s.title)}</a>, read '
                  f"{escape(s.date)}</li>" for key, s in item.sources.items()]
        parts.append("</ul>")
    return parts


def device_html(device: Device, overridden: bool = False) -> str:
    """The detail page of ``device`` as HTML (pure function, tested directly); ``overridden``: a shipped device
    with user edits (its origin reads "shipped (edited)", as in the table and the command line)."""
    engine = device.matrix_engine
    facts = [
        ("Id", device.id), ("Vendor", device.vendor), ("Kind", device.kind), ("Tier", device.tier or DASH),
        ("Family", device.family or DASH), ("Year", str(device.year) if device.year else DASH),
        ("Origin", origin_label(device.origin, overridden)),
    ]
    if engine is not None:
        extra = [engine.type.replace("_", " ")]
        if engine.dataflow:
            extra.append(f"dataflow {engine.dataflow}")
        if engine.tile:
            extra.append("tile m\u00d7n\u00d7k = " + "\u00d7".join(map(str, engine.tile)))
        if engine.block_tile:
            extra.append("block tile " + "\u00d7".join(map(str, engine.block_tile)))
        facts.append(("Matrix engine", ", ".join(extra)))
    if device.efficiency_compute != 1.0 or device.efficiency_memory != 1.0:
        etas = f"compute {device.efficiency_compute:g}, memory {device.efficiency_memory:g}"
        facts.append(("Efficiency", etas))
    parts = page_head(device.name, facts)
    parts.append("</table><h3>Figures</h3><table class='fields'>")
    parts.append("<tr><th>Field</th><th>Value [as written]</th><th>Value [SI]</th><th>Source</th></tr>")
    parts += [figure_row(label, cited, "", cited and _si(cited, kind), device.sources)
              for label, cited, kind in _figures(device)]
    parts.append("</table>")
    return "".join(parts + page_tail(device))


class DetailView(QTextBrowser):
    """Read-only detail of one catalog item (``render(item, overridden)`` gives its page); links open
    externally."""

    def __init__(self, placeholder: str, render, parent: QWidget | None = None):
        super().__init__(parent)
        self.setOpenExternalLinks(True)
        self.setReadOnly(True)
        self._placeholder, self._render = placeholder, render
        self.item = None
        self.show_item(None)

    def show_item(self, item, overridden: bool = False) -> None:
        self.item = item
        self.setHtml(self._placeholder if item is None else self._render(item, overridden))


class DeviceDetailView(DetailView):
    """Read-only detail of one device."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(PLACEHOLDER, device_html, parent)

    @property
    def device(self) -> Device | None:
        return self.item

    show_device = DetailView.show_item
