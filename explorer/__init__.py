"""Hardware Explorer: choose, size and tune ML accelerators."""


def __getattr__(name: str):
    """``__version__``, read from the installed package's metadata on first use: ``importlib.metadata`` (and the
    email parser it brings) is not needed to start the app or the CLI (issue 22)."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("hardware-explorer")
    except PackageNotFoundError:  # running from a source tree that was not installed
        value = "0.0.0+unknown"
    globals()["__version__"] = value
    return value
