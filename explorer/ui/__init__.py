"""explorer.ui: the desktop app (PySide6 + pyqtgraph) over the Qt-free core.

Importing the package first imports the Qt-free modules that the main window's first frame needs (:data:`CORE_FIRST`),
before any module imports PySide6 (issue 22: cold start). Once imported, PySide6 reads the source file of every module
imported after it (``shibokensupport.feature`` looks for ``from __feature__ import`` in the text): 0.1-0.4 ms a
module, measured 70-95 ms for the ~500 modules the app imported after it. Of those, ~160 (numpy's, psygnal's and the
core's inner modules) are no longer read; a module a Qt module imports by name is still read once then.
"""

from importlib import import_module

#: Imported by this package before PySide6, in this order (``tests/ui/test_cold_start.py`` checks it).
CORE_FIRST = (
    "numpy",
    "explorer.core.session.workspace",  # psygnal, the session and the core it imports
    "explorer.core.settings",
    "explorer.core.analysis.roofline_measured",  # the roofline tab's core (the tab on screen at start)
    "explorer.store.errors",
    "explorer.store.lazy",
    "explorer.store.rows",
    "explorer.store.system_io",  # the catalog dock's readers (explorer.store.io with it)
)

for _name in CORE_FIRST:
    import_module(_name)
