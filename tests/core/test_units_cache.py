"""The unit registry read from pint's definition cache is the registry parsed from the text (issue 22: cold start).

``explorer.core.units`` keeps its definitions as a file under the user cache folder and lets pint keep the parsed
copy; these tests build registries both ways in a temporary folder and compare every unit's meaning.
"""

from __future__ import annotations

from pathlib import Path

import pint
import pytest

from explorer.core import units


def _meaning(registry: pint.UnitRegistry, name: str) -> tuple:
    """A unit's definition (name, symbol, aliases, reference, scale and offset) and, computed from it, its
    dimension and its size in base units (what a conversion uses)."""
    definition = registry._units[name]
    unit = registry.UnitsContainer({name: 1})
    root = registry._get_root_units(unit)
    return (definition.name, definition.symbol, definition.aliases, definition.reference, definition.converter,
            dict(registry._get_dimensionality(unit)), root[0], root[1])


def _names(registry: pint.UnitRegistry) -> set[str]:
    return set(registry._units) | {f"prefix:{p}" for p in registry._prefixes}


@pytest.fixture()
def cached(tmp_path: Path) -> tuple[pint.UnitRegistry, Path]:
    folder = tmp_path / "units"
    units.build_registry(folder)  # the first start: parses and writes the cache
    assert list(folder.glob("*.pickle")), "pint wrote no parsed copy"
    return units.build_registry(folder), folder  # a later start: read from the cache


def test_cached_registry_has_every_unit_with_the_same_meaning(cached):
    registry, _ = cached
    plain = units.build_registry(None)
    assert _names(registry) == _names(plain)
    assert len(plain._units) > 500  # pint's whole default set, not a subset
    for name in sorted(plain._units):
        assert _meaning(registry, name) == _meaning(plain, name), name


def test_the_process_registry_has_the_products_units():
    ureg = units.ureg
    assert ureg.Quantity("1 MAC").to("FLOP").magnitude == 2.0
    assert ureg.Quantity("1 OP").to("FLOP").magnitude == 1.0
    assert ureg.Quantity("1 GiB").to("byte").magnitude == 2**30
    assert ureg.Quantity("1 GB").to("byte").magnitude == 1e9
    assert ureg.Quantity("1 byte").to("bit").magnitude == 8.0
    assert ureg.Quantity("1 kWh").to("J").magnitude == 3.6e6
    assert str(ureg.Quantity("1 byte").dimensionality) == "[information]"  # not dimensionless (pint's bit = [])
    assert str(ureg.Quantity("1 USD").dimensionality) == "[currency]"
    assert pint.get_application_registry().get() is ureg or pint.get_application_registry() is ureg


def test_a_damaged_cache_falls_back_to_parsing_and_is_written_anew(cached):
    _, folder = cached
    for pickled in folder.glob("*.pickle"):
        pickled.write_bytes(pickled.read_bytes()[:100])  # a write cut short by a killed start
    registry = units.build_registry(folder)
    assert registry.Quantity("3 MAC").to("FLOP").magnitude == 6.0
    assert registry.Quantity("3.35 TB/s").to("byte/s").magnitude == pytest.approx(3.35e12, rel=1e-15)
    assert not list(folder.glob("*.pickle"))  # removed, so the next start writes it again
    units.build_registry(folder)
    assert list(folder.glob("*.pickle"))


def test_a_folder_that_cannot_be_written_falls_back_to_parsing(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    registry = units.build_registry(blocker / "units")
    assert registry.Quantity("1 kB").to("byte").magnitude == 1000.0


def test_edited_definitions_are_parsed_again(cached, monkeypatch):
    _, folder = cached
    monkeypatch.setattr(units, "_OWN_DEFINITIONS", units._OWN_DEFINITIONS + ("widget = 3 * FLOP",))
    registry = units.build_registry(folder)
    assert registry.Quantity("2 widget").to("FLOP").magnitude == 6.0


def test_the_environment_variable_chooses_or_turns_off_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv(units.CACHE_ENV, str(tmp_path / "x"))
    assert units.cache_folder() == tmp_path / "x"
    monkeypatch.setenv(units.CACHE_ENV, "")
    assert units.cache_folder() is None
    monkeypatch.delenv(units.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert units.cache_folder() == tmp_path / "cache" / "hwexplorer" / "units"
