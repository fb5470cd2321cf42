"""Fixtures of the serving tests: shipped devices and Llama-3-8B."""

import pytest

from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.workload.templates import get_template


@pytest.fixture(scope="session")
def devices():
    return {d.id: d for d in load_shipped_devices()}


@pytest.fixture(scope="session")
def llama8b():
    return get_template("llama3-8b").build()
