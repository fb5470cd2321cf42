"""Shared headless fixtures (chapter devices): never import PySide6 or pyqtgraph here."""

import pytest

from explorer.core.hardware.device_file import device_from_dict


def chapter_device(id_, peak, bw, precision="fp16", **extra):
    """A device with the chapter's figures (not the catalog's vendor-sourced ones)."""
    data = {"id": id_, "name": id_, "vendor": "test", "kind": "gpu", "peak": {precision: peak},
            "memory": [{"name": "HBM", "role": "offchip", "capacity": "80 GB", "bandwidth": bw}]}
    data.update(extra)
    return device_from_dict(data)


@pytest.fixture
def v100():
    return chapter_device("v100", "125 TFLOP/s", "900 GB/s")


@pytest.fixture
def a100():
    return chapter_device("a100", "312 TFLOP/s", "2039 GB/s")


@pytest.fixture
def h100():
    return chapter_device("h100", "989 TFLOP/s", "3.35 TB/s")


@pytest.fixture
def t4():
    return chapter_device("t4", "65 TFLOP/s", "320 GB/s")


@pytest.fixture
def make_device():
    return chapter_device


@pytest.fixture(autouse=True, scope="session")
def isolated_user_data(tmp_path_factory):
    """The catalog database and settings of a test session live under a temporary folder, never in the user's data
    folder (a database written by another version there made catalog-id tests fail). Tests that set their own
    folders (the UI suite, per test) override this."""
    mp = pytest.MonkeyPatch()
    home = tmp_path_factory.mktemp("user-data")
    mp.setenv("XDG_DATA_HOME", str(home / "data"))
    mp.setenv("XDG_CONFIG_HOME", str(home / "config"))
    mp.delenv("HWEXPLORER_DB", raising=False)
    yield home
    mp.undo()
