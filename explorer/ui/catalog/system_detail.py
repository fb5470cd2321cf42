"""SystemDetailView: every figure of one system with its unit and source, per direction or bidirectional explicit.

Each link figure is shown as written (``900 GB/s``, bidirectional) and as the model reads it: per device and per
direction in B/s (a bidirectional total halved, a figure per node divided over the node's devices, an
oversubscribed network divided by its ratio). Unknown figures are "—", never guessed. A read-only QTextBrowser;
source titles are links that open in the system browser.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from html import escape

from PySide6.QtWidgets import QTextBrowser, QWidget

from explorer.core.hardware.device import Cited, Link
from explorer.core.hardware.system import System
from explorer.core.units import format_si
from explorer.store.query import origin_label

DASH = "\u2014"
PLACEHOLDER = "<p style='color:#666'>Select a system in the table to see every figure and its source.</p>"
TITLE_CHARS = 48
DIRECTION = {"per_direction": "per direction", "bidirectional": "bidirectional (both directions together)"}
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

# (label, figure as written or None, what follows the written text (its direction), the figure as the model
# reads it with its unit, or DASH)
Figure = tuple[str, Cited | None, str, str]


def _per_direction(value: float) -> str:
    return f"{format_si(value, 'B/s', 4)} per device, per direction" if math.isfinite(value) else DASH


def _link_figure(label: str, link: Link, model_value: float) -> Figure:
    return f"{label} bandwidth", link.bandwidth, f", {DIRECTION[link.direction]}", _per_direction(model_value)


def _figures(system: System) -> Iterator[Figure]:
    for d in system.domains:
        where = f"{d.name} ({d.scope.replace('_', '-')})"
        yield _link_figure(where, d.link, system.bandwidth(d))
        latency = DASH if d.latency is None else format_si(d.latency.value, "s", 4)
        yield f"{where} latency per message", d.latency, "", latency
    if system.host_link is not None:
        link = system.host_link
        yield _link_figure(f"Host link {link.name}", link, system.host_bandwidth())
    else:
        yield "Host link bandwidth", None, "", DASH
    memory = system.host_memory
    yield "Host memory per node", memory, "", DASH if memory is None else format_si(memory.value, "B", 4)


def _domain_items(system: System) -> list[str]:
    """One line per domain: its scope, size [devices], topology, whose figure the bandwidth is, oversubscription."""
    items = []
    for d in system.domains:
        per = "each device's figure" if d.per == "device" else (f"one node's figure, shared by its "
                                                                f"{system.node_devices} devices")
        over = "not oversubscribed" if d.oversubscription == 1.0 else f"oversubscribed {d.oversubscription:g}:1"
        facts = f"{d.scope.replace('_', '-')}, {d.size} devices, {d.topology.replace('_', ' ')}, {per}, {over}"
        items.append(f"<li><b>{escape(d.name)}</b>: {escape(facts)}</li>")
    return items


def _source_cell(system: System, cited: Cited) -> str:
    source = system.sources.get(cited.source) if cited.source else None
    if source is None:
        return escape(cited.source) if cited.source else "<i>no source</i>"
    title = source.title if len(source.title) <= TITLE_CHARS else source.title[:TITLE_CHARS - 1] + "\u2026"
    url, full = escape(source.url, quote=True), escape(source.title, quote=True)
    return f'<a href="{url}" title="{full}">{escape(title)}</a>'


def system_html(system: System, overridden: bool = False) -> str:
    """The detail page of ``system`` as HTML (a pure function, tested directly); ``overridden``: a shipped system
    with user edits."""
    facts = [("Id", system.id), ("Vendor", system.vendor), ("Kind", system.kind),
             ("Device", system.device_id), ("Devices", f"{system.devices} [count]"),
             ("Devices per node", f"{system.node_devices} [count]"), ("Nodes", f"{system.nodes} [count]"),
             ("Origin", origin_label(system.origin, overridden))]
    parts = [STYLE, f"<h2>{escape(system.name)}</h2>", "<table>"]
    parts += [f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in facts]
    parts.append("</table><h3>Communication domains (innermost first)</h3>")
    if system.domains:
        parts += ["<ol>", *_domain_items(system), "</ol>"]
    else:
        parts.append(f"<p>{DASH} (one device: no links)</p>")
    parts.append("<h3><a name='figures'></a>Figures</h3><table class='fields'>")
    parts.append("<tr><th>Field</th><th>Value [as written]</th><th>As the model reads it [SI]</th>"
                 "<th>Source</th></tr>")
    for label, cited, direction, read in _figures(system):
        if cited is None:
            parts.append(f"<tr><td>{escape(label)}</td><td>{DASH}</td><td>{DASH}</td><td></td></tr>")
            continue
        note = f"<br><span class='note'>{escape(cited.note)}</span>" if cited.note else ""
        written = escape(cited.text + direction)
        parts.append(f"<tr><td>{escape(label)}</td><td>{written}{note}</td><td>{escape(read)}</td>"
                     f"<td>{_source_cell(system, cited)}</td></tr>")
    parts.append("</table>")
    if system.notes:
        parts.append("<h3>Notes</h3><p>" + escape(system.notes.strip()).replace("\n", "<br>") + "</p>")
    if system.conflicts:
        parts.append("<h3>Conflicts between references</h3><ul>")
        parts += [f"<li class='conflict'><b>{escape(c.field)}</b>: {escape(c.note)}</li>" for c in system.conflicts]
        parts.append("</ul>")
    if system.sources:
        parts.append("<h3>Sources</h3><ul>")
        parts += [f'<li>[{escape(key)}] <a href="{escape(s.url, quote=True)}">{escape(s.title)}</a>, read '
                  f"{escape(s.date)}</li>" for key, s in system.sources.items()]
        parts.append("</ul>")
    return "".join(parts)


class SystemDetailView(QTextBrowser):
    """Read-only detail of one system; links open externally."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setOpenExternalLinks(True)
        self.setReadOnly(True)
        self.system: System | None = None
        self.show_system(None)

    def show_system(self, system: System | None, overridden: bool = False) -> None:
        self.system = system
        self.setHtml(PLACEHOLDER if system is None else system_html(system, overridden))
