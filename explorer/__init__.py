"""Hardware Explorer: choose, size and tune ML accelerators."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hardware-explorer")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"
