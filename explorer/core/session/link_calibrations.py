"""Named link calibrations of the project's systems (issue 21): a system level's latency and bandwidth fitted to an
nccl-tests run, kept under a name, and the one the calibrated time model uses on each level.

A :class:`NamedLink` is what ``hwexplorer calibrate link FILE --system S --save --name N`` stores in the system's
domain (the ``calibrated:`` entry: alpha and bandwidth written in us and GB/s to 6 significant digits, citing
``fit-<name>``), plus the run it was fitted to (the messages and their times, so the app can draw the fit again
when the project is reopened). :class:`LinkCalibrations` holds them by system id and the name in use per level;
:meth:`LinkCalibrations.apply` gives a system its chosen fits, which :meth:`System.for_time_model` then uses under
the calibrated model exactly as it uses a fit saved by the CLI. Saved in the project (``link_calibrations``,
format 9, ``docs/project-file.md``). Pure, Qt-free.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from types import MappingProxyType

import numpy as np

from explorer.core.hardware.device import Cited, Source
from explorer.core.hardware.system import Domain, LinkCalibration, System
from explorer.core.parallel.collectives import ALGORITHMS, BUS_FACTOR, collective_time
from explorer.core.parallel.link_fit import ABOVE, JOINS, LEVELS, LinkFit, fit_link, level_domain
from explorer.core.units import UnitError, parse_si


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def source_key(name: str) -> str:
    """``fit-<name>``: the key a calibration named ``name`` cites (as ``calibrate kernels|link --save --name``)."""
    return "fit-" + slug(name)


KEYS = ("name", "level", "file", "date", "op", "ranks", "dtype", "algorithm", "join", "min_size", "alpha",
        "bandwidth", "sharpness", "conditions", "mape", "mape_above", "size", "time")
OPTIONAL = ("url",)  # added within format 9: a fit saved by an earlier build has none (its file name stands in)


def _size(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n:g} B"


def link_conditions(fit: LinkFit, dtype: str) -> str:
    """The run and the fit in words, stored beside a saved fit (``calibrate link --save`` writes the same)."""
    above = "" if not math.isfinite(fit.mape_above) else f", {fit.mape_above * 100:.1f} % at 1 MiB and above"
    return (f"{fit.op} on {fit.ranks} ranks ({dtype}), {fit.size.size} messages of {_size(fit.size.min())} to "
            f"{_size(fit.size.max())}, {fit.algorithm} model; bus-bandwidth MAPE {fit.mape * 100:.1f} %{above}")


def stored_texts(fit: LinkFit) -> tuple[str, str]:
    """The fitted alpha and bandwidth as a saved fit writes them: us and GB/s, 6 significant digits."""
    return f"{fit.alpha * 1e6:.6g} us", f"{fit.bandwidth / 1e9:.6g} GB/s"


def link_calibration(alpha: str, bandwidth: str, op: str, ranks: int, algorithm: str, conditions: str,
                     sharpness: float, key: str) -> LinkCalibration:
    """The :class:`LinkCalibration` of a saved fit, its values read back from their text (so a saved file, a
    project and the catalog all give the same numbers)."""
    return LinkCalibration(Cited(parse_si(alpha, "time", "alpha"), alpha, key),
                           Cited(parse_si(bandwidth, "bandwidth", "bandwidth"), bandwidth, key),
                           op, ranks, algorithm, conditions, round(float(sharpness), 4))


def domain_of(system: System, level: str) -> Domain | None:
    return system.scale_up if level == "scale-up" else system.scale_out


def level_of(domain: Domain) -> str:
    return "scale-up" if domain.scope == "scale_up" else "scale-out"


@dataclass(frozen=True)
class NamedLink:
    """One named fit of a system level. ``alpha`` and ``bandwidth`` are the stored texts (``"1.84 us"``,
    ``"297.8 GB/s"``: s per step, B/s one device sends per direction); ``size`` (B) and ``time`` (s) the run's
    messages (every one of the file, the fit used those of ``min_size`` B or more); ``mape`` and ``mape_above`` the
    fit's bus-bandwidth error (fractions; ``mape_above`` over the messages of 1 MiB and more, None without any)."""

    name: str
    level: str
    file: str
    date: str
    op: str
    ranks: int
    dtype: str
    algorithm: str
    join: str
    min_size: float
    alpha: str
    bandwidth: str
    sharpness: float
    conditions: str
    mape: float
    mape_above: float | None
    size: tuple[float, ...]
    time: tuple[float, ...]
    url: str = ""  # the measurement file's file:// URL (what a fit saved in a system cites)

    @property
    def key(self) -> str:
        return source_key(self.name)

    @property
    def alpha_s(self) -> float:
        return parse_si(self.alpha, "time", "alpha")

    @property
    def bandwidth_Bps(self) -> float:
        return parse_si(self.bandwidth, "bandwidth", "bandwidth")

    def calibration(self) -> LinkCalibration:
        return link_calibration(self.alpha, self.bandwidth, self.op, self.ranks, self.algorithm, self.conditions,
                                self.sharpness, self.key)

    def source(self) -> Source:
        return Source(self.key, f"collective times measured in {self.file}, fitted in the app ('{self.name}')",
                      self.file, self.date)

    def curve(self, size) -> tuple[np.ndarray, np.ndarray]:
        """The bus bandwidth (B/s) the fit predicts at ``size`` (B), and the run's measured bus bandwidth."""
        n = np.asarray(size, dtype=float)
        t = collective_time(self.op, n, float(self.ranks), self.bandwidth_Bps, self.alpha_s, self.algorithm,
                            self.sharpness)
        share = float(BUS_FACTOR[self.op](float(self.ranks)))
        measured = np.asarray(self.size) / np.asarray(self.time) * share
        return n / t * share, measured

    def describe(self) -> str:
        above = "" if self.mape_above is None else f", {self.mape_above * 100:.1f} % at 1 MiB and above"
        return (f"'{self.name}' ({self.key}): {self.op} on {self.ranks} ranks of {self.file}, {self.date}: alpha "
                f"{self.alpha}, {self.bandwidth} per direction; bus-bandwidth MAPE {self.mape * 100:.1f} %{above}")

    def to_dict(self) -> dict:
        out = {k: (list(getattr(self, k)) if k in ("size", "time") else getattr(self, k)) for k in KEYS}
        return {**out, "url": self.url} if self.url else out

    @classmethod
    def from_dict(cls, data, where: str) -> NamedLink:
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected an object")  # noqa: TRY004 - one-line file error
        unknown, missing = sorted(set(data) - set(KEYS) - set(OPTIONAL)), sorted(set(KEYS) - set(data))
        if unknown or missing:
            raise ValueError(f"{where}: " + (f"unknown keys {', '.join(unknown)}" if unknown else
                                               f"missing keys {', '.join(missing)}"))
        for k in ("name", "file", "date", "op", "dtype", "conditions", "alpha", "bandwidth", *OPTIONAL):
            if k in data and not isinstance(data[k], str):
                raise ValueError(f"{where}.{k}: expected text, got {data[k]!r:.40}")
        for k in ("size", "time"):
            v = data[k]
            if not isinstance(v, list) or not v or not all(_positive(x) for x in v):
                raise ValueError(f"{where}.{k}: expected a list of numbers > 0")
        if len(data["size"]) != len(data["time"]):
            raise ValueError(f"{where}.time: expected one time per size")
        out = cls(**{k: (tuple(float(x) for x in data[k]) if k in ("size", "time") else data[k]) for k in KEYS},
                  url=data.get("url", ""))
        return out.checked(where)

    def checked(self, where: str = "link") -> NamedLink:
        if not slug(self.name):
            raise ValueError(f"{where}.name: expected a name with letters or digits, got {self.name!r}")
        if self.level not in LEVELS:
            raise ValueError(f"{where}.level: expected one of {', '.join(LEVELS)}, got {self.level!r}")
        if self.op not in BUS_FACTOR or self.op == "send_recv":
            raise ValueError(f"{where}.op: expected all_reduce, all_gather, reduce_scatter or all_to_all, "
                             f"got {self.op!r}")
        if isinstance(self.ranks, bool) or not isinstance(self.ranks, int) or self.ranks < 2:
            raise ValueError(f"{where}.ranks: expected a whole number >= 2, got {self.ranks!r}")
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"{where}.algorithm: expected one of {', '.join(ALGORITHMS)}, got {self.algorithm!r}")
        if self.join not in JOINS:
            raise ValueError(f"{where}.join: expected one of {', '.join(JOINS)}, got {self.join!r}")
        for k in ("min_size", "mape"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{where}.{k}: expected a number >= 0, got {v!r}")
        if self.mape_above is not None and not (_positive(self.mape_above) or self.mape_above == 0):
            raise ValueError(f"{where}.mape_above: expected a number >= 0 or null, got {self.mape_above!r}")
        if isinstance(self.sharpness, bool) or not isinstance(self.sharpness, (int, float)) or \
                not 0 < self.sharpness <= 1:
            raise ValueError(f"{where}.sharpness: expected a number in (0, 1], got {self.sharpness!r}")
        try:
            ok = self.alpha_s >= 0 and self.bandwidth_Bps > 0
        except UnitError as exc:
            raise ValueError(f"{where}.{exc}") from None
        if not ok:
            raise ValueError(f"{where}.bandwidth: expected a bandwidth > 0 and an alpha >= 0")
        return self


def _positive(x) -> bool:
    return not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def _proxy(mapping) -> MappingProxyType:
    return MappingProxyType(dict(sorted(mapping.items())))


@dataclass(frozen=True)
class LinkCalibrations:
    """Named link fits by system id (``named``) and the name in use per system and level (``in_use``)."""

    named: Mapping[str, tuple[NamedLink, ...]] = field(default_factory=dict)
    in_use: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "named", _proxy({s: tuple(v) for s, v in self.named.items() if v}))
        object.__setattr__(self, "in_use", _proxy({s: _proxy(v) for s, v in self.in_use.items() if v}))

    def of(self, system_id: str, level: str | None = None) -> tuple[NamedLink, ...]:
        return tuple(c for c in self.named.get(system_id, ()) if level is None or c.level == level)

    def find(self, system_id: str, name: str) -> NamedLink | None:
        return next((c for c in self.of(system_id) if c.key == source_key(name)), None)

    def used(self, system_id: str, level: str) -> NamedLink | None:
        name = self.in_use.get(system_id, {}).get(level)
        return None if name is None else self.find(system_id, name)

    def add(self, system_id: str, link: NamedLink, use: bool = True) -> LinkCalibrations:
        """Keep ``link`` (one of the same name is replaced) and, with ``use``, use it on its level."""
        link.checked()
        kept = tuple(c for c in self.of(system_id) if c.key != link.key)
        out = replace(self, named={**self.named, system_id: (*kept, link)})
        return out.choose(system_id, link.level, link.name) if use else out

    def choose(self, system_id: str, level: str, name: str | None) -> LinkCalibrations:
        """Use the fit named ``name`` on ``system_id``'s ``level`` (None: the system's own figures)."""
        found = None if name is None else self.find(system_id, name)
        if name is not None and (found is None or found.level != level):
            raise ValueError(f"link calibration: no {level} fit named {name!r} of {system_id}")
        levels = {k: v for k, v in self.in_use.get(system_id, {}).items() if k != level}
        if found is not None:
            levels[level] = found.name
        return replace(self, in_use={**self.in_use, system_id: levels})

    def remove(self, system_id: str, name: str) -> LinkCalibrations:
        gone = self.find(system_id, name)
        if gone is None:
            return self
        out = replace(self, named={**self.named, system_id: tuple(c for c in self.of(system_id) if c is not gone)})
        if self.used(system_id, gone.level) == gone:
            out = out.choose(system_id, gone.level, None)
        return out

    def apply(self, system: System) -> System:
        """``system`` with the fits in use stored on their domains (as ``calibrate link --save`` stores one)."""
        chosen = [(domain_of(system, level), link) for level in LEVELS
                  if (link := self.used(system.id, level)) is not None and domain_of(system, level) is not None]
        if not chosen:
            return system
        by_domain = {id(d): link for d, link in chosen}
        domains = tuple(replace(d, calibration=by_domain[id(d)].calibration()) if id(d) in by_domain else d
                        for d in system.domains)
        return replace(system, domains=domains,
                       sources={**system.sources, **{link.key: link.source() for _, link in chosen}})

    def checked(self) -> LinkCalibrations:
        for system_id, links in self.named.items():
            seen = set()
            for i, link in enumerate(links):
                link.checked(f"link_calibrations.{system_id}.named[{i}]")
                if link.key in seen:
                    raise ValueError(f"link_calibrations.{system_id}.named[{i}].name: '{link.name}' is the name of "
                                     "another fit of this system")
                seen.add(link.key)
        for system_id, levels in self.in_use.items():
            for level, name in levels.items():
                found = self.find(system_id, name)
                if level not in LEVELS or found is None or found.level != level:
                    raise ValueError(f"link_calibrations.{system_id}.in_use.{level}: no {level} fit named {name!r}")
        return self

    def to_dict(self) -> dict:
        systems = sorted(set(self.named) | set(self.in_use))
        return {s: {"in_use": dict(self.in_use.get(s, {})), "named": [c.to_dict() for c in self.of(s)]}
                for s in systems}

    @classmethod
    def from_dict(cls, data, where: str = "link_calibrations") -> LinkCalibrations:
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected an object of link calibrations by system id")  # noqa: TRY004
        named, in_use = {}, {}
        for system_id, entry in data.items():
            if not isinstance(entry, Mapping) or set(entry) - {"in_use", "named"}:
                raise ValueError(f"{where}.{system_id}: expected an object with in_use and named")
            links = entry.get("named", [])
            if not isinstance(links, list):
                raise ValueError(f"{where}.{system_id}.named: expected a list of fits")  # noqa: TRY004
            named[system_id] = tuple(NamedLink.from_dict(c, f"{where}.{system_id}.named[{i}]")
                                     for i, c in enumerate(links))
            levels = entry.get("in_use", {}) or {}
            if not isinstance(levels, Mapping) or not all(isinstance(v, str) for v in levels.values()):
                raise ValueError(f"{where}.{system_id}.in_use: expected a fit's name by level")
            in_use[system_id] = dict(levels)
        return cls(named, in_use).checked()


def import_link(path: str | Path, system: System, name: str, level: str | None = None, algorithm: str = "ring",
                min_size: float = 0.0, join: str = "sum", op: str | None = None, ranks: int | None = None,
                today: str | None = None) -> tuple[NamedLink, LinkFit]:
    """Fit ``system``'s ``level`` (default: the innermost domain holding the run's ranks) to the nccl-tests output
    ``path`` as ``calibrate link`` does, and name the result. Raise ValueError in one line naming the field."""
    from explorer.core.importers import ImporterError, load

    path = Path(path)
    if not slug(name or ""):
        raise ValueError(f"name: expected letters or digits, got {name!r}")
    if not path.is_file():
        raise ValueError(f"file: no such file: {path}")
    options = {k: v for k, v in (("op", op), ("ranks", ranks)) if v is not None}
    try:
        table = load(path, kind="collectives", **options).value
    except ImporterError as exc:
        raise ValueError(str(exc)) from None
    domain = level_domain(system, table.ranks, level)
    fit = fit_link(table.op, table.size, table.time, table.ranks, algorithm, min_size, join)
    alpha, bandwidth = stored_texts(fit)
    above = fit.mape_above
    link = NamedLink(name.strip(), level_of(domain), path.name, today or date.today().isoformat(), fit.op,
                     fit.ranks, table.dtype, fit.algorithm, fit.join, float(min_size), alpha, bandwidth,
                     round(fit.sharpness, 4), link_conditions(fit, table.dtype), round(fit.mape, 4),
                     None if not math.isfinite(above) else round(above, 4),
                     tuple(float(x) for x in table.size), tuple(float(x) for x in table.time),
                     path.resolve().as_uri())
    return link.checked(), fit


def link_source(key: str, file: str, url: str, day: str) -> Source:
    """The source a fit saved in a system cites (``calibrate link --save`` and the app's Save to catalog alike)."""
    return Source(key, f"collective times measured in {file}, fitted by 'hwexplorer calibrate link'", url, day)


def with_link(system: System, domain: Domain, calibration: LinkCalibration, source: Source) -> System:
    """``system`` with ``calibration`` stored on ``domain`` (its ``calibrated:`` entry), citing ``source``."""
    domains = tuple(replace(d, calibration=calibration) if d is domain else d for d in system.domains)
    return replace(system, domains=domains, sources={**system.sources, source.key: source})


def saved_system(system: System, link: NamedLink) -> System:
    """``system`` (as the catalog states it) with ``link`` saved on its level's domain exactly as ``hwexplorer
    calibrate link FILE --system S --save --name NAME`` saves the same fit: the same stored alpha, bandwidth,
    run and conditions, citing ``fit-<name>`` with the measurement file's URL and the fit's date."""
    domain = domain_of(system, link.level)
    if domain is None:
        raise ValueError(f"level: {system.id} states no {link.level} domain")
    return with_link(system, domain, link.calibration(), link_source(link.key, link.file, link.url or link.file,
                                                                     link.date))


@dataclass(frozen=True)
class SystemEdit:
    """A command's write of a system to the catalog database (the app's Save to catalog): ``after`` on do and redo,
    ``before`` (the system as it was stored) on undo. ``store``: the catalog repository (``system_record``,
    ``update_system``)."""

    system_id: str
    after: System
    before: System
    device_id: str = ""  # not a device's calibrations: nothing of the workspace's device cache to forget

    def run(self, store, forward: bool = True) -> None:
        store.update_system(self.after if forward else self.before, store.system_record(self.system_id).version)


__all__ = ["ABOVE", "LinkCalibrations", "NamedLink", "SystemEdit", "import_link", "link_calibration",
           "link_conditions", "link_source", "saved_system", "stored_texts", "with_link"]
