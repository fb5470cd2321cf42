"""The fields of a device file, listed once.

The file reader and writer (:mod:`explorer.core.hardware.device_file`), the catalog's rows and columns
(``explorer.store``: ``mapping``, ``query``, ``overrides``, ``csv_columns``) derive their lists from
:data:`FIELDS`: adding a field is one entry here plus its attribute on :class:`~.device.Device`.

Naming rules that tie the three together: a top-level field is the ``Device`` attribute of the same name,
and in the ``devices`` table a cited figure ``f`` is the columns ``f``, ``f_text``, ``f_source``, ``f_note``
(``f_date`` for a dated figure); the parts ``p`` of a record of numbers ``r`` are ``r_p`` (``efficiency``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from explorer.core.hardware.device import DATAFLOWS, DIRECTIONS, ENGINE_TYPES, KINDS, ROLES, TIERS

#: Shapes of a field
TEXT = "text"  # a string (``choices`` when only some are allowed)
WHOLE = "whole"  # a whole number
NUMBER = "number"  # a plain number
FIGURE = "figure"  # a cited figure with a unit: {value: "80 GB", source, note}
COUNT = "count"  # a cited whole number without unit: {value: 432, source, note}
BY_PRECISION = "by_precision"  # a mapping from precision to a cited figure
BY_KEY = "by_key"  # a mapping from a key to a record
RECORD = "record"  # a mapping of ``parts``
RECORDS = "records"  # a list of records of ``parts``
SHAPES = (TEXT, WHOLE, NUMBER, FIGURE, COUNT, BY_PRECISION, BY_KEY, RECORD, RECORDS)

#: Each kind of figure: its plausible range in SI units (checked when a file is read) and the unit in which
#: tables write it (the CSV headers); throughput in integer precisions is written in TOP/s.
FIGURE_KINDS = {
    "throughput": (1e3, 1e19, "TFLOP/s"),
    "bytes": (1.0, 1e16, "GB"),
    "bandwidth": (1e3, 1e17, "GB/s"),
    "energy_per_byte": (1e-16, 1e-8, "pJ/B"),
    "energy": (1e-16, 1e-8, "pJ"),
    "time": (1e-12, 1.0, "ns"),
    "frequency": (1e3, 1e11, "MHz"),
    "power": (1e-4, 1e6, "W"),
    "money": (0.01, 1e8, "USD"),
    "money_rate": (1e-7, 1.0, "USD/h"),
}


@dataclass(frozen=True)
class Field:
    name: str
    shape: str
    unit: str | None = None  # FIGURE, BY_PRECISION: a key of FIGURE_KINDS
    parts: tuple[Field, ...] = ()  # RECORD, RECORDS, BY_KEY: the fields of one record, in file order
    choices: tuple[str, ...] = ()  # TEXT: the allowed values (any text when empty)
    required: bool = False
    default: Any = None  # the value a file may leave out (a record of numbers is left out when all are)
    dated: bool = False  # FIGURE: may carry the date it was quoted (``price: {value, date}``)
    listed: bool = False  # a column of the device table (``explorer.store.query``)
    csv_order: tuple[str, ...] = ()  # RECORD: the order of the parts in CSV headers where it is not the file's

    def part(self, name: str) -> Field:
        return next(p for p in self.parts if p.name == name)

    def parts_of(self, *shapes: str) -> tuple[str, ...]:
        return tuple(p.name for p in self.parts if p.shape in shapes)


def _dims(name: str, keys: str) -> Field:
    return Field(name, RECORD, parts=tuple(Field(k, WHOLE) for k in keys))


_LINK = (Field("name", TEXT, required=True), Field("bandwidth", FIGURE, "bandwidth"),
         Field("direction", TEXT, choices=DIRECTIONS))

#: Every top-level field of a device file, in file order (``format`` comes first and is not a field).
FIELDS = (
    Field("id", TEXT, required=True, listed=True),
    Field("name", TEXT, required=True, listed=True),
    Field("vendor", TEXT, required=True, listed=True),
    Field("kind", TEXT, choices=KINDS, required=True, listed=True),
    Field("tier", TEXT, choices=TIERS, listed=True),
    Field("family", TEXT, listed=True),
    Field("year", WHOLE, listed=True),
    Field("sources", BY_KEY, parts=(Field("title", TEXT), Field("url", TEXT), Field("date", TEXT))),
    Field("peak", BY_PRECISION, "throughput"),
    Field("peak_sparse", BY_PRECISION, "throughput"),
    Field("memory", RECORDS, parts=(
        Field("name", TEXT, required=True),
        Field("role", TEXT, choices=ROLES),
        Field("capacity", FIGURE, "bytes"),
        Field("bandwidth", FIGURE, "bandwidth"),
        Field("energy", FIGURE, "energy_per_byte"),
        Field("latency", FIGURE, "time"),
        Field("instances", WHOLE, default=1),
    )),
    Field("energy_per_mac", BY_PRECISION, "energy"),
    Field("matrix_engine", RECORD, parts=(
        Field("type", TEXT, choices=ENGINE_TYPES, required=True),
        Field("rows", COUNT),
        Field("cols", COUNT),
        Field("dataflow", TEXT, choices=DATAFLOWS),
        _dims("tile", "mnk"),
        Field("units", COUNT),
        Field("sm_count", COUNT),
        _dims("block_tile", "mn"),
    ), csv_order=("type", "dataflow", "tile", "rows", "cols", "units", "sm_count", "block_tile")),
    Field("clock", FIGURE, "frequency"),
    Field("tdp", FIGURE, "power", listed=True),
    Field("price", FIGURE, "money", dated=True, listed=True),
    Field("cloud_price", FIGURE, "money_rate", listed=True),
    Field("host_link", RECORD, parts=_LINK),
    Field("interconnects", RECORDS, parts=_LINK),
    Field("efficiency", RECORD, parts=(Field("compute", NUMBER, default=1.0), Field("memory", NUMBER, default=1.0))),
    Field("notes", TEXT),
    Field("conflicts", RECORDS, parts=(Field("field", TEXT, required=True), Field("note", TEXT, required=True))),
)
FIELD = {f.name: f for f in FIELDS}
FIELD_NAMES = tuple(FIELD)


def named(*shapes: str, listed: bool | None = None) -> tuple[str, ...]:
    """The names of the top-level fields of these shapes, in file order (only the listed ones, or unlisted)."""
    return tuple(f.name for f in FIELDS if f.shape in shapes and (listed is None or f.listed == listed))


#: The fields that are mappings; user edits and conflicts are tracked per entry (``peak.fp16``).
MAPPING_FIELDS = named(BY_KEY, BY_PRECISION)
#: The ``Device`` attributes holding plain values, stored as they are (the ``devices`` columns of the same
#: name): text and whole-number fields, the dates of dated figures, the parts of records of numbers.
PLAIN_ATTRIBUTES = (
    named(TEXT, WHOLE)
    + tuple(f"{f.name}_date" for f in FIELDS if f.dated)
    + tuple(
        f"{f.name}_{p.name}"
        for f in FIELDS
        if f.shape == RECORD and all(p.shape == NUMBER for p in f.parts)
        for p in f.parts
    )
)
