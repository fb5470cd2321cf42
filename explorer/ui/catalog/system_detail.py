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

from PySide6.QtWidgets import QWidget

from explorer.core.hardware.device import Cited, Link
from explorer.core.hardware.system import System
from explorer.core.units import format_si
from explorer.store.rows import origin_label
from explorer.ui.catalog.detail import DASH, DetailView, figure_row, page_head, page_tail

PLACEHOLDER = "<p style='color:#666'>Select a system in the table to see every figure and its source.</p>"
DIRECTION = {"per_direction": "per direction", "bidirectional": "bidirectional (both directions together)"}

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


def system_html(system: System, overridden: bool = False) -> str:
    """The detail page of ``system`` as HTML (a pure function, tested directly); ``overridden``: a shipped system
    with user edits."""
    facts = [("Id", system.id), ("Vendor", system.vendor), ("Kind", system.kind),
             ("Device", system.device_id), ("Devices", f"{system.devices} [count]"),
             ("Devices per node", f"{system.node_devices} [count]"), ("Nodes", f"{system.nodes} [count]"),
             ("Origin", origin_label(system.origin, overridden))]
    parts = page_head(system.name, facts)
    parts.append("</table><h3>Communication domains (innermost first)</h3>")
    if system.domains:
        parts += ["<ol>", *_domain_items(system), "</ol>"]
    else:
        parts.append(f"<p>{DASH} (one device: no links)</p>")
    parts.append("<h3><a name='figures'></a>Figures</h3><table class='fields'>")
    parts.append("<tr><th>Field</th><th>Value [as written]</th><th>As the model reads it [SI]</th>"
                 "<th>Source</th></tr>")
    parts += [figure_row(label, cited, direction, read, system.sources)
              for label, cited, direction, read in _figures(system)]
    parts.append("</table>")
    return "".join(parts + page_tail(system))


class SystemDetailView(DetailView):
    """Read-only detail of one system."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(PLACEHOLDER, system_html, parent)

    @property
    def system(self) -> System | None:
        return self.item

    show_system = DetailView.show_item
