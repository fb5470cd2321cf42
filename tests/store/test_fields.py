"""The store's lists of device fields are derived from the one field list, and say what they said before."""

from pathlib import Path

from explorer.core.hardware import fields as F
from explorer.core.hardware.device_file import (
    RANGES,
    TOP_LEVEL,
    device_to_dict,
    dump_device_yaml,
    load_device_file,
)
from explorer.store import csv_columns, mapping, overrides, query
from explorer.store.io import export_text
from explorer.store.schema import TABLES

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "fields"
# copies of two shipped catalog files, and their exports made before the field list existed
DEVICES = ("nvidia-h100-sxm5.yaml", "aws-trainium.yaml")


def _devices():
    return [load_device_file(FIXTURES / name) for name in DEVICES]


def test_file_and_csv_exports_are_unchanged():
    devices = _devices()
    assert "".join(dump_device_yaml(d) for d in devices) == (FIXTURES / "expected.yaml").read_text()
    assert export_text(devices, "csv") == (FIXTURES / "expected.csv").read_text()
    for device in devices:
        keys = list(device_to_dict(device))
        assert keys[0] == "format" and keys[1:] == [f for f in F.FIELD_NAMES if f in keys]


def test_derived_lists_equal_the_lists_they_replace():
    assert F.FIELD_NAMES == (
        "id", "name", "vendor", "kind", "tier", "family", "year", "sources", "peak", "peak_sparse", "memory",
        "energy_per_mac", "matrix_engine", "clock", "tdp", "price", "cloud_price", "host_link", "interconnects",
        "efficiency", "notes", "conflicts",
    )
    assert TOP_LEVEL == {"format", *F.FIELD_NAMES, "calibration"}
    assert overrides.MAPPING_FIELDS == ("sources", "peak", "peak_sparse", "energy_per_mac")
    assert mapping.DEVICE_FIGURES == ("clock", "tdp", "price", "cloud_price")
    assert mapping.MEMORY_FIGURES == ("capacity", "bandwidth", "energy", "latency")
    assert mapping.ENGINE_COUNTS == ("rows", "cols", "units", "sm_count")
    assert query._COLUMNS == (
        "id", "name", "vendor", "kind", "tier", "family", "year", "bandwidth", "capacity", "tdp", "price",
        "cloud_price", "origin",
    )
    assert csv_columns._KEYED == ("peak", "peak_sparse", "energy_per_mac")
    assert csv_columns._FIGURE == {
        "clock": "frequency", "tdp": "power", "price": "money", "cloud_price": "money_rate",
        "peak.*": "throughput", "peak_sparse.*": "throughput", "energy_per_mac.*": "energy",
        "memory[].capacity": "bytes", "memory[].bandwidth": "bandwidth", "memory[].energy": "energy_per_byte",
        "memory[].latency": "time", "host_link.bandwidth": "bandwidth", "interconnects[].bandwidth": "bandwidth",
        "matrix_engine.rows": "count", "matrix_engine.cols": "count", "matrix_engine.units": "count",
        "matrix_engine.sm_count": "count",
    }
    text = ("id", "name", "vendor", "kind", "tier", "family", "notes", "price.date", "matrix_engine.type",
            "matrix_engine.dataflow", "memory[].name", "memory[].role", "host_link.name", "host_link.direction",
            "interconnects[].name", "interconnects[].direction", "sources[].key", "sources[].title",
            "sources[].url", "sources[].date", "conflicts[].field", "conflicts[].note")
    whole = ("year", "memory[].instances", "matrix_engine.tile.m", "matrix_engine.tile.n", "matrix_engine.tile.k",
             "matrix_engine.block_tile.m", "matrix_engine.block_tile.n")
    assert csv_columns._PLAIN == {
        **dict.fromkeys(text, str), **dict.fromkeys(whole, int),
        **dict.fromkeys(("efficiency.compute", "efficiency.memory"), float),
    }
    assert csv_columns.HEADER_UNITS == {
        "throughput": "TFLOP/s", "bytes": "GB", "bandwidth": "GB/s", "energy_per_byte": "pJ/B", "energy": "pJ",
        "time": "ns", "frequency": "MHz", "power": "W", "money": "USD", "money_rate": "USD/h",
    }
    assert RANGES["money_rate"] == (1e-7, 1.0) and set(RANGES) == set(csv_columns.HEADER_UNITS)


def test_every_field_reaches_every_list():
    assert overrides.sort_fields(reversed(F.FIELD_NAMES)) == list(F.FIELD_NAMES)
    columns = {csv_columns.template(path) for path in [*csv_columns._FIGURE, *csv_columns._PLAIN]}
    for f in F.FIELDS:
        assert any(c == f.name or c.startswith((f"{f.name}.", f"{f.name}[]")) for c in columns), f.name
        for part in f.parts:
            assert any(c.startswith((f"{f.name}.{part.name}", f"{f.name}[].{part.name}")) for c in columns), part
    devices = TABLES["devices"].c
    for name in F.PLAIN_ATTRIBUTES + mapping.DEVICE_FIGURES + query._COLUMNS:
        assert name in devices, name
    for name in mapping.DEVICE_FIGURES:
        assert {f"{name}_text", f"{name}_source", f"{name}_note"} <= set(devices.keys())
    for table, names in (("memory_levels", mapping.MEMORY_FIGURES), ("matrix_engines", mapping.ENGINE_COUNTS),
                         ("links", mapping.LINK_FIGURES)):
        assert set(names) <= set(TABLES[table].c.keys()), table
    assert [f for f in query.DeviceRow.__dataclass_fields__][:len(query._PLAIN)] == list(query._PLAIN)
    row_fields = list(query.DeviceRow.__dataclass_fields__)
    assert row_fields[len(query._PLAIN) + 2:][:len(query._FIGURES)] == list(query._FIGURES)


def test_csv_header_order_follows_the_field_list():
    headers = export_text(_devices(), "csv").splitlines()[0].split(",")
    tops = [h.split("[")[0].split(".")[0].split(" ")[0] for h in headers]
    seen = list(dict.fromkeys(tops))
    assert seen == [f for f in F.FIELD_NAMES if f in seen]
    engine = [h.split(".")[1].split(" ")[0] for h in headers if h.startswith("matrix_engine.")]
    assert list(dict.fromkeys(engine)) == [p for p in F.FIELD["matrix_engine"].csv_order if p in engine]
