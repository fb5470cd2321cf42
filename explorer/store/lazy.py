"""The catalog database opened on first use (issue 22: cold start).

Opening the catalog imports SQLAlchemy and the schema (about 0.3 s) and runs the migration and seeding checks; the
main window can be painted before any of it. :class:`LazyCatalog` stands for the
:class:`~explorer.store.repository.CatalogRepository` of ``url``: it opens it the first time something asks for
one of its attributes (or :meth:`open` is called) and then forwards every attribute to it. Code that must wait
for it without opening it (the catalog dock's tables) registers with :meth:`when_open`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .repository import CatalogRepository


class LazyCatalog:
    """``open_catalog(url)`` the first time it is needed; raises its ``CatalogDatabaseError`` then."""

    def __init__(self, url: str | None = None):
        self.url = url
        self._repository: CatalogRepository | None = None
        self._waiting: list[Callable[[CatalogRepository], None]] = []

    @property
    def opened(self) -> bool:
        return self._repository is not None

    def open(self) -> CatalogRepository:
        """The repository, opened now if it was not (every :meth:`when_open` callback runs then, in order)."""
        if self._repository is None:
            from .engine import open_catalog

            self._repository = open_catalog(self.url)
            waiting, self._waiting = self._waiting, []
            for callback in waiting:
                callback(self._repository)
        return self._repository

    def when_open(self, callback: Callable[[CatalogRepository], None]) -> None:
        """Call ``callback(repository)`` once the catalog is open (now, if it is)."""
        if self._repository is not None:
            callback(self._repository)
        else:
            self._waiting.append(callback)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # private and special names are not the repository's to answer
            raise AttributeError(name)
        return getattr(self.open(), name)
