"""Device equality is field by field on the dataclasses, without going through the file format."""

import ast
import copy
import inspect
from dataclasses import replace
from pathlib import Path

import explorer.core.hardware.device as device_module
from explorer.core.hardware.device import Cited, Device
from explorer.core.hardware.device_file import device_from_dict

SOURCED = {
    "format": 1, "id": "acme-x1", "name": "Acme X1", "vendor": "Acme", "kind": "npu",
    "sources": {"ds": {"title": "Acme X1 datasheet", "url": "https://example.com/x1.pdf", "date": "2026-11-22"},
                "wp": {"title": "Acme X1 whitepaper", "url": "https://example.com/wp.pdf", "date": "2026-11-22"}},
    "peak": {"int8": {"value": "26 TOP/s", "source": "ds"}, "fp16": {"value": "13 TFLOP/s", "source": "ds"}},
    "memory": [{"name": "LPDDR5", "role": "offchip", "capacity": {"value": "8 GiB", "source": "ds"},
                "bandwidth": {"value": "68 GB/s", "source": "ds"}},
               {"name": "SRAM", "role": "onchip", "capacity": {"value": "4 MiB", "source": "ds"}, "instances": 2}],
    "tdp": {"value": "10 W", "source": "ds"},
}


def test_devices_built_from_the_same_dict_are_equal_and_hash_alike():
    a, b = device_from_dict(copy.deepcopy(SOURCED)), device_from_dict(copy.deepcopy(SOURCED))
    assert a is not b and a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1


def test_one_nested_field_makes_devices_unequal():
    a = device_from_dict(SOURCED)
    data = copy.deepcopy(SOURCED)
    data["memory"][0]["bandwidth"]["source"] = "wp"
    b = device_from_dict(data)
    assert b.memory[0].bandwidth.source == "wp"
    assert a != b
    assert replace(a, origin="shipped") != a  # origin counts, as before
    assert replace(a, memory=(replace(a.memory[0], instances=3), a.memory[1])) != a


def test_mappings_compare_as_mappings_and_nan_equals_nan():
    a = device_from_dict(SOURCED)
    reordered = replace(a, sources=dict(reversed(list(a.sources.items()))), peak=dict(a.peak))
    assert reordered == a
    nan = replace(a, tdp=Cited(float("nan"), "? W"), efficiency_compute=float("nan"))
    assert nan == replace(a, tdp=Cited(float("nan"), "? W"), efficiency_compute=float("nan"))
    assert nan != a
    assert a != "acme-x1" and a != Device("acme-x1", "Acme X1", "Acme", "npu")


def test_device_module_does_not_import_the_file_format():
    tree = ast.parse(inspect.getsource(device_module))
    imported = [
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    ]
    assert not [name for name in imported if name and "device_file" in name], imported


def test_hardware_imports_only_units_precision_files_calibration_and_itself():
    allowed = ("explorer.core.units", "explorer.core.precision", "explorer.core.files", "explorer.core.hardware",
               "explorer.core.calibration.model")
    folder = Path(device_module.__file__).parent
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else []
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                assert not name.startswith("explorer") or name.startswith(allowed), f"{path.name} imports {name}"
