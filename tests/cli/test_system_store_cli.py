"""Systems of the catalog database from the command line: ``catalog import`` of a system file, ``list --systems``
with filters, ``show --system``, ``export --systems``, ``validate --db``, and ``analyze --system`` finding a system a
user imported (issue 18)."""

from __future__ import annotations

import json

import pytest
import yaml

from explorer.__main__ import main
from explorer.core.hardware.catalog_files import shipped_catalog_dir


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return f"sqlite:///{tmp_path_factory.mktemp('db') / 'catalog.sqlite3'}"


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def system_file(tmp_path, system_id, **fields):
    data = yaml.safe_load((shipped_catalog_dir() / "systems" / "nvidia-dgx-h100.yaml").read_text())
    data.update(id=system_id, **fields)
    path = tmp_path / f"{system_id}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_an_imported_system_is_listed_shown_exported_and_analysed(db, tmp_path, capsys):
    path = system_file(tmp_path, "lab-node", name="Our lab node", notes="rack 4")
    code, out, _ = run(capsys, "catalog", "import", str(path), "--db", db)
    assert code == 0 and out == "lab-node.yaml: imported 1 new and 0 replaced system(s)\n"

    code, out, _ = run(capsys, "catalog", "list", "--systems", "--origin", "user", "--db", db)
    assert code == 0 and out.splitlines()[1].split()[:4] == ["lab-node", "Our", "lab", "node"]
    assert out.splitlines()[1].endswith("user") and out.splitlines()[-1].startswith("1 system(s)")
    code, out, _ = run(capsys, "catalog", "list", "--systems", "--vendor", "nvidia", "--json", "--db", db)
    assert {s["id"] for s in json.loads(out)} == {"lab-node", "nvidia-dgx-b200", "nvidia-dgx-h100",
                                                   "nvidia-dgx-h200", "nvidia-gb200-nvl72", "nvidia-hgx-a100-8gpu"}

    code, out, _ = run(capsys, "catalog", "show", "lab-node", "--system", "--db", db)
    assert code == 0 and out.startswith("# lab-node: user system, version 1\n") and "notes: rack 4" in out

    code, out, _ = run(capsys, "--db", db, "analyze", "llama2-70b", "--system", "lab-node", "--tp", "8", "--phase",
                       "decode", "--batch", "8", "--json")
    assert code == 0 and json.loads(out)["system"]["id"] == "lab-node"

    target = tmp_path / "out.json"
    code, out, _ = run(capsys, "catalog", "export", str(target), "lab", "--systems", "--db", db)
    assert code == 0 and out == f"wrote 1 system(s) to {target}\n"
    exported = json.loads(target.read_text())
    assert exported["count"] == 1 and exported["systems"][0]["notes"] == "rack 4"

    code, out, _ = run(capsys, "catalog", "validate", "--db", db, "--json")
    report = json.loads(out)
    assert code == 0 and report["database_systems"] == 12 and report["problems"] == []


def test_a_system_of_a_device_not_in_the_catalog_imports_nothing(db, tmp_path, capsys):
    path = system_file(tmp_path, "ghost-node", device="ghost-gpu")
    code, out, _ = run(capsys, "catalog", "import", str(path), "--db", db)
    assert code == 1
    assert out.splitlines() == [
        "systems[0]: ghost-node: device: 'ghost-gpu' is not a device of the catalog (import the device first)",
        "ghost-node.yaml: nothing imported: 1 problem(s) in 1 of 1 row(s)",
    ]
    code, out, err = run(capsys, "--db", db, "analyze", "llama2-70b", "--system", "ghost-node")
    assert code == 2 and err.count("\n") == 1 and "--system: unknown system 'ghost-node' in the catalog" in err


@pytest.mark.parametrize("argv, message", [
    (("catalog", "import", "{dir}/x.csv", "--systems"), "x.csv: systems are read and written as YAML or JSON"),
    (("catalog", "export", "-", "--systems", "--format", "csv"), "format: systems are written as yaml or json"),
    (("catalog", "export", "{dir}/x.yaml", "--systems", "--tier", "edge"), "--tier: filters devices, not systems"),
    (("catalog", "show", "no-such-system", "--system"), "no system 'no-such-system' in the catalog"),
])
def test_bad_system_commands_exit_2_with_one_line(db, tmp_path, capsys, argv, message):
    (tmp_path / "x.csv").write_text("id\nx\n")
    code, out, err = run(capsys, *(a.format(dir=tmp_path) for a in argv), "--db", db)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err
    assert not (tmp_path / "x.yaml").exists()
