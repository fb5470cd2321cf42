"""The registry of importers: which file formats the app reads, how each is recognized, and its loader.

An entry (:class:`Importer`) has a stable ``name`` (scripts and ``find_importer(name=...)`` use it), a human
``label``, the file ``suffixes`` it claims, a cheap ``sniff(path) -> bool`` that looks at the head of the file,
the ``kind`` of thing it produces (``"model"`` or ``"trace"``), and a loader. The loader is given as
``"package.module:function"`` and imported only when a file is loaded, so that importing the registry stays
light (the ONNX loader needs ``onnx``). See ``docs/importers.md``.

Qt-free: the app's file dialogs and drag and drop, and the command line, all ask this module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

KINDS = ("model", "trace", "collectives")
#: the file inside a folder that the importers are asked about (a Hugging Face model folder holds its config.json)
FOLDER_FILE = "config.json"
KIND_NOUNS = {"model": "Models", "trace": "Profiler traces", "collectives": "Collective benchmarks"}


class ImporterError(ValueError):
    """No importer reads this file, or an unknown importer was asked for. The message names the file and
    lists the accepted formats."""


@dataclass(frozen=True)
class Imported:
    """What a loader returns: the ``value`` (a ``Model`` for kind ``model``, a ``Trace`` for ``trace``), what
    the importer had to assume (``warnings``) and importer-specific facts (``details``; for ONNX:
    ``unsupported``, ``skipped``, ``graph_macs``, ``graph_params``, ``attention_patterns``). ``importer`` and
    ``path`` are filled in by :func:`load`."""

    kind: str
    value: Any
    warnings: tuple[str, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)
    importer: str = ""
    path: Path | None = None


@dataclass(frozen=True)
class Importer:
    name: str
    label: str
    kind: str
    suffixes: tuple[str, ...]
    sniff: Callable[[Path], bool]
    loader: str | Callable[..., Imported]  # "module:function" (imported on first use) or the function
    options: tuple[str, ...] = ()  # keyword options the loader takes (documentation; load() checks them)

    def load(self, path: str | Path, **options) -> Imported:
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            accepted = ", ".join(self.options) or "none"
            raise ImporterError(f"{path}: the {self.name} importer takes no option {', '.join(unknown)} "
                                f"(its options: {accepted})")
        loader = self.loader
        if isinstance(loader, str):
            module, _, attr = loader.partition(":")
            loader = getattr(importlib.import_module(module), attr)
        result = loader(Path(path), **options)
        return replace(result, importer=self.name, path=Path(path))

    def describe(self) -> str:
        return f"{self.label} ({', '.join(self.suffixes)})" if self.suffixes else self.label


_REGISTRY: dict[str, Importer] = {}


def register(name: str, label: str, kind: str, suffixes: tuple[str, ...] | list[str],
             sniff: Callable[[Path], bool], loader: str | Callable[..., Imported],
             options: tuple[str, ...] = (), *, replace_existing: bool = False) -> Importer:
    """Add an importer. Entries are tried in the order they were registered (sniff, then suffix), so
    register the more specific formats first. A name already taken is an error unless ``replace_existing``."""
    if kind not in KINDS:
        raise ValueError(f"importer {name!r}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if name in _REGISTRY and not replace_existing:
        raise ValueError(f"an importer named {name!r} is already registered")
    entry = Importer(name, label, kind, tuple(s.lower() for s in suffixes), sniff, loader, tuple(options))
    _REGISTRY[name] = entry
    return entry


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def importers(kind: str | None = None) -> tuple[Importer, ...]:
    """The registered importers in the order they are tried, all or those producing ``kind``."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    return tuple(e for e in _REGISTRY.values() if kind is None or e.kind == kind)


def suffixes(kind: str | None = None) -> tuple[str, ...]:
    """The file suffixes claimed by the importers (of ``kind``), each once, lower case with the dot."""
    return tuple(dict.fromkeys(s for e in importers(kind) for s in e.suffixes))


def accepted_formats(kind: str | None = None) -> str:
    return "; ".join(e.describe() for e in importers(kind))


def _sniffs(entry: Importer, path: Path) -> bool:
    try:
        return bool(entry.sniff(path))
    except (OSError, ValueError):  # unreadable or not text: this entry does not recognize it
        return False


def find_importer(path: str | Path, kind: str | None = None, name: str | None = None) -> Importer:
    """The importer for ``path``: the one called ``name`` if given; else the first whose ``sniff`` recognizes
    the content; else the only one claiming the file's suffix. A folder is a model folder: the model importers are
    asked about its ``config.json`` (by content only). :class:`ImporterError` otherwise."""
    candidates = importers(kind)
    what = {"model": "model", "trace": "trace"}.get(kind or "", "file")
    if name is not None:
        entry = _REGISTRY.get(name)
        if entry is None or entry not in candidates:
            raise ImporterError(f"{path}: unknown {what} importer '{name}'; expected one of "
                                f"{', '.join(e.name for e in candidates)}")
        return entry
    p = Path(path)
    folder = p.is_dir()
    if folder:  # a model folder (Hugging Face): read as a model through its config.json
        p = p / FOLDER_FILE
        if not p.is_file():
            raise ImporterError(f"{path}: cannot be read (it is a folder without a {FOLDER_FILE})")
        candidates = tuple(e for e in candidates if e.kind == "model")
    elif not p.is_file():
        raise ImporterError(f"{path}: cannot be read (no such file)")
    for entry in candidates:
        if _sniffs(entry, p):
            return entry
    if folder:  # a folder is read only through a config.json that an importer recognizes
        raise ImporterError(f"{path}: its {FOLDER_FILE} is not a format the app reads. "
                            f"Accepted formats: {accepted_formats(kind)}")
    claiming = [e for e in candidates if p.suffix.lower() in e.suffixes]
    if len(claiming) == 1:
        return claiming[0]
    why = (f"'{p.suffix}' could be {' or '.join(e.label for e in claiming)}" if claiming
           else f"no importer claims the suffix '{p.suffix}'" if p.suffix else "the file has no suffix")
    raise ImporterError(f"{path}: cannot tell the {what} format from its content ({why}). "
                        f"Accepted formats: {accepted_formats(kind)}")


def load(path: str | Path, kind: str | None = None, name: str | None = None, **options) -> Imported:
    """Find the importer for ``path`` (see :func:`find_importer`) and load the file with ``options``
    (``dims=`` for ONNX, ``clock_hz=`` for traces); a folder loads its ``config.json``. The loader's own errors (``ModelError``, ``TraceError``,
    ``OnnxImportError``, all ``ValueError``) pass through."""
    entry = find_importer(path, kind, name)
    p = Path(path)
    return entry.load(p / FOLDER_FILE if p.is_dir() else p, **options)


def file_filter(kind: str | None = None) -> str:
    """A Qt file-dialog filter: all supported suffixes first, one line per importer, then all files."""
    entries = importers(kind)
    patterns = " ".join(f"*{s}" for s in suffixes(kind))
    title = KIND_NOUNS.get(kind or "", "Supported files")
    lines = [f"{title} ({patterns})"] + [f"{e.label} ({' '.join('*' + s for s in e.suffixes)})" for e in entries
                                         if e.suffixes]  # a suffix-less format is found by content, under "all"
    return ";;".join([*lines, "All files (*)"])
