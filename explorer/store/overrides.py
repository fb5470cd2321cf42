"""Field-level view of a device file mapping: which fields differ, and copying fields between versions.

A *field* is a top-level key of ``device_to_dict`` (``price``, ``memory``, ``matrix_engine``...) or, for the
per-key mappings, one entry (``peak.fp16``, ``peak_sparse.int8``, ``energy_per_mac.fp16``, ``sources.ds``).
User edits of shipped devices are tracked at this granularity, and conflicts are reported with it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any

from explorer.core.hardware.fields import FIELD_NAMES, MAPPING_FIELDS

MISSING = None  # a field that is absent reads as None


def field_values(data: dict) -> dict[str, Any]:
    """Flatten a device mapping into ``{field: value}`` (``format`` is not a field)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "format":
            continue
        if key in MAPPING_FIELDS and isinstance(value, dict):
            for sub, item in value.items():
                out[f"{key}.{sub}"] = item
        else:
            out[key] = value
    return out


def _order(field: str) -> tuple[int, str]:
    top = field.split(".", 1)[0]
    return (FIELD_NAMES.index(top) if top in FIELD_NAMES else len(FIELD_NAMES), field)


def sort_fields(fields: Iterable[str]) -> list[str]:
    return sorted(set(fields), key=_order)


def changed_fields(a: dict, b: dict) -> list[str]:
    """Fields whose values differ between two device mappings, in file order."""
    va, vb = field_values(a), field_values(b)
    return sort_fields(f for f in set(va) | set(vb) if va.get(f, MISSING) != vb.get(f, MISSING))


def value_of(data: dict, field: str) -> Any:
    return field_values(data).get(field, MISSING)


def copy_fields(base: dict, donor: dict, fields: Iterable[str]) -> dict:
    """``base`` with each of ``fields`` taken from ``donor`` (a field absent in ``donor`` is removed)."""
    out = copy.deepcopy(base)
    donor_values = field_values(donor)
    for field in fields:
        top, _, sub = field.partition(".")
        value = copy.deepcopy(donor_values.get(field, MISSING))
        if sub:
            table = dict(out.get(top) or {})
            if value is MISSING:
                table.pop(sub, None)
            else:
                table[sub] = value
            if table:
                out[top] = table
            else:
                out.pop(top, None)
        elif value is MISSING:
            out.pop(top, None)
        else:
            out[top] = value
    return out


def referenced_sources(data: dict) -> set[str]:
    """Every ``source:`` key used by a figure in the mapping."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("source"), str) and "value" in node:
                found.add(node["source"])
            for key, value in node.items():
                if key != "sources":
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({k: v for k, v in data.items() if k != "sources"})
    return found


def canonical_hash(data: dict) -> str:
    import hashlib  # on use (OpenSSL's loading): the app paints its first window without it (issue 22)

    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def describe_value(value: Any) -> str:
    """A short rendering of a field value for messages (the figure's text, not a repr of the mapping)."""
    if value is MISSING:
        return "(not set)"
    if isinstance(value, dict) and "value" in value and set(value) <= {"value", "source", "note", "date"}:
        text = str(value["value"])
        extras = [f"{k}: {value[k]}" for k in ("source", "date") if k in value]
        return f"{text} ({', '.join(extras)})" if extras else text
    if isinstance(value, str):
        return value if len(value) <= 80 else value[:77] + "..."
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= 80 else text[:77] + "..."
