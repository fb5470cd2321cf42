"""The catalog opened on first use (``explorer/store/lazy.py``, issue 22): nothing is opened until asked for; then
it answers as the repository does, and the callbacks waiting for it run once, in order."""

from __future__ import annotations

import pytest

from explorer.store.errors import CatalogDatabaseError
from explorer.store.lazy import LazyCatalog


def test_nothing_is_opened_until_an_attribute_is_asked_for_then_it_answers_as_the_repository(tmp_path):
    path = tmp_path / "catalog.sqlite3"
    catalog = LazyCatalog(f"sqlite:///{path}")
    seen = []
    catalog.when_open(lambda repo: seen.append(("first", repo)))
    catalog.when_open(lambda repo: seen.append(("second", repo)))
    assert not catalog.opened and not path.exists() and seen == []
    count = catalog.count()  # forwarded: opens (creates, migrates, seeds) the database
    assert catalog.opened and path.exists() and count == len(catalog.ids()) > 30
    repo = catalog.open()
    assert [name for name, _ in seen] == ["first", "second"] and all(r is repo for _, r in seen)
    assert catalog.get("nvidia-h100-sxm5") == repo.get("nvidia-h100-sxm5")
    catalog.when_open(lambda r: seen.append(("late", r)))  # already open: called at once
    assert seen[-1] == ("late", repo) and len(seen) == 3
    repo.engine.dispose()


def test_an_unreadable_url_fails_when_opened_and_private_names_are_not_forwarded():
    catalog = LazyCatalog("mysql://someone@somewhere/catalog")
    with pytest.raises(AttributeError):
        catalog._engine  # noqa: B018 - a private name: never opens the catalog
    assert not catalog.opened
    with pytest.raises(CatalogDatabaseError, match="unsupported database 'mysql'"):
        catalog.open()
    assert not catalog.opened
