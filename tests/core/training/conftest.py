"""Fixtures of the training tests: the shipped catalog's devices and systems."""

import pytest

from explorer.core.hardware.catalog_files import load_shipped_devices, load_shipped_systems


@pytest.fixture(scope="session")
def devices():
    return {d.id: d for d in load_shipped_devices()}


@pytest.fixture(scope="session")
def systems():
    return {s.id: s for s in load_shipped_systems()}
