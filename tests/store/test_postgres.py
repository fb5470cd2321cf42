"""The catalog on a real PostgreSQL server (team mode): same schema, concurrent edits lose nothing.

Needs ``HWEXPLORER_TEST_PG_URL``
(``export HWEXPLORER_TEST_PG_URL=$(bash .ci/start_postgres.sh)``); without it,
or when the server is unreachable, the tests are skipped with the reason. Each test works in its own
PostgreSQL schema, dropped afterwards (the fixtures are in ``conftest.py``; the systems' tests run one body on
both backends there).
"""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import select
from sqlalchemy.engine import make_url

from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.hardware.device_file import device_from_dict, device_to_dict
from explorer.store.engine import open_catalog, parse_url
from explorer.store.errors import ConflictError
from explorer.store.io import import_file
from explorer.store.repository import DEVICES, _claim, _rewrite
from explorer.store.schema import Base

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_repo(pg_url):
    repo = open_catalog(pg_url)
    yield repo
    repo.close()


def test_migrations_give_the_orm_schema_on_postgresql(pg_repo):
    with pg_repo.engine.connect() as conn:
        assert conn.dialect.name == "postgresql"
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []


def test_shipped_devices_round_trip_on_postgresql(pg_repo):
    shipped = load_shipped_devices()
    assert pg_repo.devices() == tuple(sorted(shipped, key=lambda d: d.id))
    rows = {r.id: r for r in pg_repo.rows()}
    for device in shipped:
        assert rows[device.id].peak == {p: c.value for p, c in device.peak.items()}


def test_filters_on_postgresql(pg_repo):
    from explorer.store.query import DeviceFilter

    shipped = load_shipped_devices()
    got = {r.id for r in pg_repo.rows(DeviceFilter(text="A", precision="fp16", min_bandwidth=1e12))}
    expected = {
        d.id
        for d in shipped
        if "fp16" in d.peak
        and d.bandwidth >= 1e12
        and "a" in f"{d.id} {d.name} {d.vendor} {d.family or ''}".lower()
    }
    assert got == expected


def _price_plus(device, usd: float):
    data = device_to_dict(device)
    current = device.price.value if device.price is not None else 0.0
    text = f"{current + usd:g} USD"
    source = next(iter(device.sources), None)
    data["price"] = {"value": text, "source": source} if source else text
    return device_from_dict(data)


def test_two_connections_edit_one_device_and_no_update_is_lost(pg_url):
    alice, bob = open_catalog(pg_url), open_catalog(pg_url)  # separate engines = separate connections
    try:
        device_id = next(
            r.id for r in alice.rows() if r.tdp == r.tdp and r.price != r.price
        )  # tdp known, no price
        seen_by_alice, seen_by_bob = alice.record(device_id), bob.record(device_id)
        assert seen_by_alice.version == seen_by_bob.version == 1
        alice_edit = _price_plus(seen_by_alice.device, 1000)
        bob_edit = device_from_dict({**device_to_dict(seen_by_bob.device), "notes": "Bob's note"})
        assert alice.update(alice_edit, 1) == 2
        with pytest.raises(ConflictError) as exc:
            bob.update(bob_edit, 1)
        err = exc.value
        fields = {c.field: (c.mine, c.theirs) for c in err.fields}
        assert fields["price"][0] is None and fields["price"][1]["value"] == "1000 USD"
        assert fields["notes"][0] == "Bob's note"
        assert "price: yours (not set); theirs 1000 USD" in str(err)
        assert err.mine is bob_edit  # Bob's edit is kept for the retry
        merged = device_from_dict({**device_to_dict(err.theirs), "notes": device_to_dict(err.mine)["notes"]})
        assert bob.update(merged, err.theirs_version) == 3
        final = alice.get(device_id)
        assert final.price.text == "1000 USD" and final.notes == "Bob's note"
    finally:
        alice.close()
        bob.close()


def test_concurrent_read_modify_write_loses_no_increment(pg_url):
    repos = [open_catalog(pg_url) for _ in range(4)]
    device_id = repos[0].ids()[0]
    start = repos[0].record(device_id)
    base_price = start.device.price.value if start.device.price is not None else 0.0
    increments, conflicts, errors = 6, [], []
    first_round = threading.Barrier(len(repos))

    def worker(repo):
        waited = False
        try:
            for _ in range(increments):
                while True:
                    stored = repo.record(device_id)
                    if not waited:  # everyone reads version 1 before anyone writes: guaranteed conflicts
                        first_round.wait(timeout=60)
                        waited = True
                    try:
                        repo.update(_price_plus(stored.device, 1), stored.version)
                        break
                    except ConflictError:
                        conflicts.append(1)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(r,)) for r in repos]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    try:
        assert errors == []
        final = repos[0].record(device_id)
        assert final.device.price.value == base_price + len(repos) * increments
        assert final.version == start.version + len(repos) * increments
        assert len(conflicts) >= len(repos) - 1
    finally:
        for r in repos:
            r.close()


def test_a_save_waiting_on_an_uncommitted_edit_gets_a_conflict(pg_url):
    holder, waiter = open_catalog(pg_url), open_catalog(pg_url)
    try:
        device_id = holder.ids()[-1]
        original = holder.get(device_id)
        outcome = {}
        with holder.engine.begin() as conn:  # transaction 1 claims version 1 and rewrites, not yet committed
            assert _claim(conn, device_id, 1)
            _rewrite(conn, _price_plus(original, 7))

            def save():
                try:
                    waiter.update(_price_plus(original, 5), 1)
                    outcome["result"] = "saved"
                except ConflictError as exc:
                    outcome["result"] = exc

            thread = threading.Thread(target=save)
            thread.start()
            thread.join(timeout=0.5)  # the save waits on the row lock (or has not started yet)
        thread.join(timeout=60)
        err = outcome["result"]
        assert isinstance(err, ConflictError)
        assert err.theirs.price.value == (original.price.value if original.price else 0.0) + 7
        assert holder.record(device_id).version == 2
    finally:
        holder.close()
        waiter.close()


def test_concurrent_first_start_migrates_and_seeds_once(pg_url):
    results, errors = [], []

    def start():
        try:
            repo = open_catalog(pg_url)
            results.append(repo.count())
            repo.close()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    n = len(load_shipped_devices())
    assert results == [n, n, n]
    repo = open_catalog(pg_url)
    with repo.engine.connect() as conn:
        assert set(conn.scalars(select(DEVICES.c.version))) == {1}
    repo.close()


def test_import_is_all_or_nothing_on_postgresql(pg_url, tmp_path):
    import yaml

    repo = open_catalog(pg_url, seed=False)
    good = {"id": "team-a", "name": "Team A", "vendor": "Acme", "kind": "gpu", "tdp": "300 W"}
    bad = {"id": "team-b", "name": "Team B", "vendor": "Acme", "kind": "gpu", "tdp": "300 kg"}
    path = tmp_path / "team.yaml"
    path.write_text(yaml.safe_dump({"format": 1, "devices": [good, bad], "count": 2}), encoding="utf-8")
    report = import_file(repo, path)
    assert [(r.device, r.field) for r in report.rejected] == [("team-b", "tdp")]
    assert repo.count() == 0
    path.write_text(
        yaml.safe_dump({"format": 1, "devices": [good, {**bad, "tdp": "300 W"}], "count": 2}),
        encoding="utf-8",
    )
    assert import_file(repo, path).added == ("team-a", "team-b")
    assert repo.get("team-b") == replace(device_from_dict({**bad, "tdp": "300 W"}), origin="user")
    repo.close()


def test_errors_do_not_show_the_password(server_url):
    url = make_url(parse_url(server_url).render_as_string(hide_password=False))
    wrong = url.set(password="Wrong-Pass-123", host="127.0.0.1", query={"connect_timeout": "3"})
    from explorer.store.errors import CatalogDatabaseError

    with pytest.raises(CatalogDatabaseError) as exc:
        open_catalog(wrong.render_as_string(hide_password=False))
    assert "Wrong-Pass-123" not in str(exc.value) and "***" in str(exc.value)
