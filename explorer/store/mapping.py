"""Convert a :class:`Device` to table rows and back, losslessly (SI value, text, source, note per figure)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from explorer.core.hardware.calibration_file import calibration_to_dict, read_calibration
from explorer.core.hardware.cited_reader import Reader
from explorer.core.hardware.device import Cited, Conflict, Device, Link, MatrixEngine, MemoryLevel, Source
from explorer.core.hardware.fields import COUNT, FIELD, FIGURE, PLAIN_ATTRIBUTES, named
from explorer.core.precision import PRECISIONS

Row = dict[str, Any]

#: The cited figures stored as four columns each (``f``, ``f_text``, ``f_source``, ``f_note``) in ``devices``,
#: ``memory_levels``, ``matrix_engines`` and ``links``.
DEVICE_FIGURES = named(FIGURE)
MEMORY_FIGURES = FIELD["memory"].parts_of(FIGURE)
ENGINE_COUNTS = FIELD["matrix_engine"].parts_of(COUNT)
LINK_FIGURES = FIELD["interconnects"].parts_of(FIGURE)


def _cited_columns(prefix: str, c: Cited | None) -> Row:
    names = _names(prefix)
    if c is None:
        return dict.fromkeys(names)
    return dict(zip(names, (c.value, c.text, c.source, c.note)))


def _cited(row: Mapping[str, Any], prefix: str) -> Cited | None:
    value, text, source, note = (row[n] for n in _names(prefix))
    if text is None:
        return None
    return Cited(float(value), text, source, note)


def _names(prefix: str) -> tuple[str, str, str, str]:
    if not prefix:
        return ("value", "text", "source", "note")
    return (prefix, f"{prefix}_text", f"{prefix}_source", f"{prefix}_note")


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def device_row(device: Device) -> Row:
    """The ``devices`` row of ``device`` without the bookkeeping columns (origin, version, times...)."""
    row: Row = {
        **{name: getattr(device, name) for name in PLAIN_ATTRIBUTES},
        "bandwidth": _finite_or_none(device.bandwidth),
        "capacity": _finite_or_none(device.memory_capacity),
        "calibration": calibration_to_dict(device.calibration),
    }
    for name in DEVICE_FIGURES:
        row.update(_cited_columns(name, getattr(device, name)))
    for p in PRECISIONS:
        dense, sparse = device.peak.get(p), device.peak_sparse.get(p)
        row[f"peak_{p}"] = dense.value if dense is not None else None
        row[f"peak_sparse_{p}"] = sparse.value if sparse is not None else None
    return row


def child_rows(device: Device) -> dict[str, list[Row]]:
    """Rows of every child table for ``device``, keyed by table name."""
    did = device.id
    peaks = [
        {"device_id": did, "sparse": sparse, "precision": p, "position": i, **_cited_columns("", c)}
        for sparse, table in ((False, device.peak), (True, device.peak_sparse))
        for i, (p, c) in enumerate(table.items())
    ]
    links = []
    if device.host_link is not None:
        links.append(_link_row(did, "host", 0, device.host_link))
    links.extend(_link_row(did, "interconnect", i, x) for i, x in enumerate(device.interconnects))
    engines = []
    e = device.matrix_engine
    if e is not None:
        engine: Row = {
            "device_id": did,
            "type": e.type,
            "dataflow": e.dataflow,
            "tile_m": e.tile[0] if e.tile else None,
            "tile_n": e.tile[1] if e.tile else None,
            "tile_k": e.tile[2] if e.tile else None,
            "block_m": e.block_tile[0] if e.block_tile else None,
            "block_n": e.block_tile[1] if e.block_tile else None,
        }
        for name in ENGINE_COUNTS:
            engine.update(_cited_columns(name, getattr(e, name)))
        engines.append(engine)
    return {
        "sources": [
            {"device_id": did, "key": s.key, "position": i, "title": s.title, "url": s.url, "date": s.date}
            for i, s in enumerate(device.sources.values())
        ],
        "peaks": peaks,
        "mac_energies": [
            {"device_id": did, "precision": p, "position": i, **_cited_columns("", c)}
            for i, (p, c) in enumerate(device.energy_per_mac.items())
        ],
        "memory_levels": [_memory_row(did, i, m) for i, m in enumerate(device.memory)],
        "matrix_engines": engines,
        "links": links,
        "conflicts": [
            {"device_id": did, "position": i, "field": c.field, "note": c.note}
            for i, c in enumerate(device.conflicts)
        ],
    }


def _memory_row(did: str, i: int, m: MemoryLevel) -> Row:
    row: Row = {"device_id": did, "position": i, "name": m.name, "role": m.role, "instances": m.instances}
    for name in MEMORY_FIGURES:
        row.update(_cited_columns(name, getattr(m, name)))
    return row


def _link_row(did: str, role: str, i: int, link: Link) -> Row:
    row: Row = {"device_id": did, "role": role, "position": i, "name": link.name, "direction": link.direction}
    for name in LINK_FIGURES:
        row.update(_cited_columns(name, getattr(link, name)))
    return row


def _sorted(rows: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(rows, key=lambda r: r["position"])


def device_from_rows(row: Mapping[str, Any], children: Mapping[str, list[Mapping[str, Any]]]) -> Device:
    """Rebuild the device from its ``devices`` row and its child rows (each list for this device only)."""
    peaks = _sorted(children.get("peaks", []))
    links = _sorted(children.get("links", []))
    host = [r for r in links if r["role"] == "host"]
    engines = children.get("matrix_engines", [])
    engine = None
    if engines:
        e = engines[0]
        engine = MatrixEngine(
            type=e["type"],
            dataflow=e["dataflow"],
            tile=(e["tile_m"], e["tile_n"], e["tile_k"]) if e["tile_m"] is not None else None,
            block_tile=(e["block_m"], e["block_n"]) if e["block_m"] is not None else None,
            **{name: _cited(e, name) for name in ENGINE_COUNTS},
        )
    return Device(
        **{name: row[name] for name in PLAIN_ATTRIBUTES},
        sources={
            r["key"]: Source(r["key"], r["title"], r["url"], r["date"])
            for r in _sorted(children.get("sources", []))
        },
        peak={r["precision"]: _cited(r, "") for r in peaks if not r["sparse"]},
        peak_sparse={r["precision"]: _cited(r, "") for r in peaks if r["sparse"]},
        memory=tuple(
            MemoryLevel(
                name=r["name"],
                role=r["role"],
                instances=r["instances"],
                **{name: _cited(r, name) for name in MEMORY_FIGURES},
            )
            for r in _sorted(children.get("memory_levels", []))
        ),
        energy_per_mac={r["precision"]: _cited(r, "") for r in _sorted(children.get("mac_energies", []))},
        matrix_engine=engine,
        host_link=_link(host[0]) if host else None,
        interconnects=tuple(_link(r) for r in links if r["role"] == "interconnect"),
        conflicts=tuple(Conflict(r["field"], r["note"]) for r in _sorted(children.get("conflicts", []))),
        origin=row["origin"],
        calibration=_calibration(row.get("calibration"), row["id"], children),
        **{name: _cited(row, name) for name in DEVICE_FIGURES},
    )


def _calibration(raw: Any, device_id: str, children: Mapping[str, list[Mapping[str, Any]]]):
    """The stored ``calibration:`` block, read as the file reader reads it (it was checked when written)."""
    if raw is None:
        return None
    r = Reader("<catalog database>", require_sources=False)
    r.owner = device_id
    r.source_keys = {s["key"] for s in children.get("sources", [])}
    cal = read_calibration(r, raw)
    if r.problems:
        raise ValueError("; ".join(r.problems))
    return cal


def _link(r: Mapping[str, Any]) -> Link:
    return Link(r["name"], direction=r["direction"], **{name: _cited(r, name) for name in LINK_FIGURES})
