"""The accelerator catalog database (SQLAlchemy; SQLite by default, PostgreSQL for a shared team catalog).

Qt-free. Open it with :func:`explorer.store.engine.open_catalog`; read and write through
:class:`explorer.store.repository.CatalogRepository`; import and export with :mod:`explorer.store.io`.
"""
