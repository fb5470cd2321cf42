"""PyInstaller entry script (``explorer/__main__.py`` uses relative imports, so it cannot be the script).

Same behaviour as the ``hwexplorer`` console script: no arguments opens the desktop app, a command runs
headless.
"""

import multiprocessing
import sys

from explorer.__main__ import main

if __name__ == "__main__":
    multiprocessing.freeze_support()  # a no-op on Linux; needed if a frozen Windows build spawns workers
    sys.exit(main())
