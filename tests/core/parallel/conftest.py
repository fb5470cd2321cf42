"""Fixtures of the parallel tests."""

import pytest

from explorer.core.hardware.catalog_files import load_shipped_devices


@pytest.fixture(scope="session")
def devices():
    return {d.id: d for d in load_shipped_devices()}
