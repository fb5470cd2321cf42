"""Read and write system files (``docs/system-file.md``): a catalog device times a count, in domains from the
innermost out. Every problem is one line ``file: system: field: message``; the reader is the device file's
(:mod:`.cited_reader`), so figures take the same units, ``source`` keys, notes and conflicts."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from explorer.core.files import atomic_write_text
from explorer.core.hardware.cited_reader import (
    Reader,
    cited_out,
    drop_none,
    read_conflicts,
    read_data,
    read_sources,
)
from explorer.core.hardware.device import DIRECTIONS, Link
from explorer.core.hardware.device_file import ID_PATTERN
from explorer.core.hardware.system import (
    PER,
    SCOPES,
    SYSTEM_KINDS,
    TOPOLOGIES,
    Domain,
    LinkCalibration,
    System,
)

FORMAT = 1
SYSTEM_FILE_SUFFIXES = (".yaml", ".yml", ".json")
TOP_LEVEL = ("format", "id", "name", "vendor", "kind", "device", "devices", "node_devices", "sources", "domains",
             "host_link", "host_memory", "notes", "conflicts")
DOMAIN_KEYS = ("name", "scope", "size", "topology", "bandwidth", "direction", "per", "latency", "oversubscription",
               "energy", "calibrated")
CALIBRATED_KEYS = ("alpha", "bandwidth", "op", "ranks", "algorithm", "conditions", "sharpness")
FIT_OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
FIT_ALGORITHMS = ("ring", "tree", "auto")
LINK_KEYS = ("name", "bandwidth", "direction", "energy")
#: The largest count a file may state (devices, sizes): far above any machine, small enough to stay exact.
MAX_COUNT = 10**9


class SystemFileError(ValueError):
    """Problems in a system file. ``str()`` is always one line (the first problem, and how many more there are);
    ``problems`` lists every ``file: system: field: message`` line."""

    def __init__(self, problems: list[str]):
        # a line break inside a quoted value (an id, a name) is shown escaped: the message stays one line
        self.problems = [p.replace("\r", "\\r").replace("\n", "\\n") for p in problems]
        self.problems = self.problems or ["<system>: unknown problem"]
        more = len(self.problems) - 1
        super().__init__(self.problems[0] + (f" (and {more} more problem{'s' * (more > 1)})" if more else ""))


def _whole(r: Reader, raw: Any, field: str, low: int = 1) -> int | None:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw) or raw != int(raw) \
            or not low <= raw <= MAX_COUNT:
        r.problem(field, f"expected a whole number >= {low}, got {raw!r}")
        return None
    return int(raw)


def _unknown(r: Reader, raw: dict, allowed: tuple[str, ...], field: str) -> None:
    unknown = sorted(str(k) for k in set(raw) - set(allowed))
    if unknown:
        r.problem(field, f"unknown keys {unknown}; expected some of {', '.join(allowed)}")


def _link(r: Reader, raw: dict, field: str, name: str) -> Link:
    """The bandwidth and its direction, which must be stated whenever a bandwidth is."""
    bandwidth = r.cited(raw.get("bandwidth"), "bandwidth", f"{field}.bandwidth")
    direction = r.choice(raw, "direction", f"{field}.direction", DIRECTIONS, required="bandwidth" in raw)
    energy = r.cited(raw.get("energy"), "energy_per_byte", f"{field}.energy")  # optional: pJ/bit, J/B...
    return Link(name, bandwidth, direction or "per_direction", energy)


def _calibration(r: Reader, raw: Any, field: str) -> LinkCalibration | None:
    """A fitted link (``calibrated:``): alpha and per-direction bandwidth, both cited, and the run they fit."""
    if not isinstance(raw, dict):
        r.problem(field, "expected a mapping with alpha, bandwidth, op, ranks (a fitted link)")
        return None
    _unknown(r, raw, CALIBRATED_KEYS, field)
    alpha = r.cited(raw.get("alpha"), "time", f"{field}.alpha")
    bandwidth = r.cited(raw.get("bandwidth"), "bandwidth", f"{field}.bandwidth")
    for name, c in (("alpha", alpha), ("bandwidth", bandwidth)):
        if name not in raw:
            r.problem(f"{field}.{name}", "is required")
        elif c is not None and not (c.value > 0 or (name == "alpha" and c.value == 0)):
            r.problem(f"{field}.{name}", f"expected a {'time >= 0' if name == 'alpha' else 'bandwidth > 0'}, "
                                         f"got {c.text!r}")
    op = r.choice(raw, "op", f"{field}.op", FIT_OPS, required=True)
    ranks = _whole(r, raw.get("ranks"), f"{field}.ranks", 2) if "ranks" in raw else \
        r.problem(f"{field}.ranks", "is required")
    algorithm = r.choice(raw, "algorithm", f"{field}.algorithm", FIT_ALGORITHMS) or "ring"
    conditions = raw.get("conditions") or ""
    if not isinstance(conditions, str):
        r.problem(f"{field}.conditions", f"expected text, got {type(conditions).__name__}")
    sharpness = raw.get("sharpness", 1.0)
    if isinstance(sharpness, bool) or not isinstance(sharpness, (int, float)) or not 0.1 <= sharpness <= 1:
        r.problem(f"{field}.sharpness", f"expected a number from 0.1 to 1 (1: latency + size / bandwidth), got "
                                        f"{sharpness!r}")
        sharpness = 1.0
    if alpha is None or bandwidth is None or op is None or ranks is None:
        return None
    return LinkCalibration(alpha, bandwidth, op, ranks, algorithm, str(conditions), float(sharpness))


def _domain(r: Reader, raw: Any, field: str) -> Domain | None:
    if not isinstance(raw, dict):
        r.problem(field, "expected a mapping with name, scope, size, topology, bandwidth, direction")
        return None
    _unknown(r, raw, DOMAIN_KEYS, field)
    name = r.text(raw, "name", f"{field}.name", required=True) or "?"
    scope = r.choice(raw, "scope", f"{field}.scope", SCOPES, required=True)
    size = _whole(r, raw.get("size"), f"{field}.size") if "size" in raw else r.problem(f"{field}.size", "is required")
    topology = r.choice(raw, "topology", f"{field}.topology", TOPOLOGIES, required=True)
    per = r.choice(raw, "per", f"{field}.per", PER) or "device"
    latency = r.cited(raw.get("latency"), "time", f"{field}.latency")
    over = raw.get("oversubscription", 1.0)
    if isinstance(over, bool) or not isinstance(over, (int, float)) or not 1 <= over <= 1e6:
        r.problem(f"{field}.oversubscription", f"expected a number >= 1 (2 for 2:1), got {over!r}")
        over = 1.0
    link = _link(r, raw, field, name)
    fit = _calibration(r, raw["calibrated"], f"{field}.calibrated") if raw.get("calibrated") is not None else None
    if scope is None or size is None or topology is None:
        return None
    if fit is not None and fit.ranks > size:
        r.problem(f"{field}.calibrated.ranks", f"{fit.ranks} ranks do not fit in the domain's {size} devices")
    return Domain(name, scope, size, topology, link, latency, per, float(over), fit)


def _hierarchy(r: Reader, domains: list[Domain], devices: int, node_devices: int) -> None:
    """Innermost first: sizes grow and divide one another, the outermost covers every device, scale-up first."""
    if devices > 1 and not domains:
        r.problem("domains", f"a system of {devices} devices needs at least one domain (its scale-up or "
                             "scale-out level); none is stated")
        return
    for i, d in enumerate(domains):
        if devices % d.size:
            r.problem(f"domains[{i}].size", f"{d.size} does not divide the {devices} devices")
        if i and d.size % domains[i - 1].size:
            r.problem(f"domains[{i}].size", f"{d.size} is not a multiple of the inner domain's {domains[i - 1].size}"
                                            " (list the domains from the innermost outward)")
        if i and d.scope == "scale_up" and domains[i - 1].scope == "scale_out":
            r.problem(f"domains[{i}].scope", "a scale-up domain after a scale-out one (innermost first)")
    if domains and domains[-1].size != devices:
        r.problem(f"domains[{len(domains) - 1}].size",
                  f"the outermost domain holds {domains[-1].size} of the {devices} devices; a level is missing")
    if devices % node_devices:
        r.problem("node_devices", f"{node_devices} does not divide the {devices} devices")


def check_system_dict(data: Any, where: str = "<data>", require_sources: bool = False,
                      ) -> tuple[System | None, list[str]]:
    """Parse a system mapping; return the system (None if unusable) and every problem found."""
    r = Reader(where, require_sources)
    if not isinstance(data, dict):
        r.problem("(file)", "expected a mapping at the top level")
        return None, r.problems
    r.owner = str(data.get("id", "?"))
    if data.get("format", FORMAT) != FORMAT:
        r.problem("format", f"this version reads format {FORMAT}, the file says {data.get('format')!r}")
        return None, r.problems
    _unknown(r, data, TOP_LEVEL, "(top level)")
    system_id = r.text(data, "id", "id", required=True)
    if system_id is not None and not ID_PATTERN.fullmatch(system_id):
        r.problem("id", f"'{system_id}' must be lowercase letters, digits and '-'")
    sources = read_sources(r, data)
    device = r.text(data, "device", "device", required=True)
    if device is not None and not ID_PATTERN.fullmatch(device):
        r.problem("device", f"'{device}' is not a catalog device id")
    devices = _whole(r, data.get("devices"), "devices") if "devices" in data else r.problem("devices", "is required")
    raw_domains = data.get("domains") or []
    if not isinstance(raw_domains, list):
        r.problem("domains", "expected a list of domains, innermost first")
        raw_domains = []
    domains = [_domain(r, d, f"domains[{i}]") for i, d in enumerate(raw_domains)]
    node_devices = data.get("node_devices")
    if node_devices is not None:
        node_devices = _whole(r, node_devices, "node_devices")
    host_link = None
    raw_host = data.get("host_link")
    if raw_host is not None:
        if isinstance(raw_host, dict):
            _unknown(r, raw_host, LINK_KEYS, "host_link")
            host_link = _link(r, raw_host, "host_link", r.text(raw_host, "name", "host_link.name", required=True) or "?")
        else:
            r.problem("host_link", "expected a mapping with name, bandwidth, direction")
    host_memory = r.cited(data.get("host_memory"), "bytes", "host_memory")
    name = r.text(data, "name", "name", required=True)
    vendor = r.text(data, "vendor", "vendor", required=True)
    kind = r.choice(data, "kind", "kind", SYSTEM_KINDS, required=True)
    notes = data.get("notes") or ""
    if not isinstance(notes, str):
        r.problem("notes", f"expected text, got {type(notes).__name__}")
    conflicts = read_conflicts(r, data)
    if devices is None or None in domains:
        return None, r.problems
    node = node_devices or (domains[0].size if domains else devices)
    _hierarchy(r, domains, devices, node)
    system = System(id=system_id or "?", name=name or "?", vendor=vendor or "?", kind=kind or "node",
                    device_id=device or "?", devices=devices, domains=tuple(domains), node_devices=node_devices or 0,
                    host_link=host_link, host_memory=host_memory, sources=sources, notes=str(notes),
                    conflicts=conflicts)
    return system, r.problems


def system_from_dict(data: Any, where: str = "<data>", require_sources: bool = False) -> System:
    system, problems = check_system_dict(data, where, require_sources)
    if problems or system is None:
        raise SystemFileError(problems)
    return system


def read_system_data(path: str | Path) -> Any:
    return read_data(path, SystemFileError)


def load_system_file(path: str | Path, require_sources: bool = False) -> System:
    """The system in ``path``; :class:`SystemFileError` (one line) names the file, system and field otherwise."""
    return system_from_dict(read_system_data(path), Path(path).name, require_sources)


# ----------------------------------------------------------------------------------------------- writing
def _link_out(link: Link) -> dict:
    bandwidth = cited_out(link.bandwidth)
    return drop_none({"bandwidth": bandwidth, "direction": link.direction if bandwidth is not None else None,
                      "energy": cited_out(link.energy)})


def _domain_out(d: Domain) -> dict:
    return drop_none({
        "name": d.name, "scope": d.scope, "size": d.size, "topology": d.topology, **_link_out(d.link),
        "per": None if d.per == "device" else d.per, "latency": cited_out(d.latency),
        "oversubscription": None if d.oversubscription == 1.0 else d.oversubscription,
        "calibrated": _calibration_out(d.calibration),
    })


def _calibration_out(fit: LinkCalibration | None) -> dict | None:
    if fit is None:
        return None
    return drop_none({"alpha": cited_out(fit.alpha), "bandwidth": cited_out(fit.bandwidth), "op": fit.op,
                      "ranks": fit.ranks, "algorithm": fit.algorithm, "conditions": fit.conditions or None,
                      "sharpness": None if fit.sharpness == 1.0 else fit.sharpness})


def system_to_dict(system: System) -> dict:
    """The inverse of :func:`system_from_dict`: figures keep the text the source wrote."""
    explicit_node = system.node_devices != (system.domains[0].size if system.domains else system.devices)
    host = system.host_link
    return drop_none({
        "format": FORMAT, "id": system.id, "name": system.name, "vendor": system.vendor, "kind": system.kind,
        "device": system.device_id, "devices": system.devices,
        "node_devices": system.node_devices if explicit_node else None,
        "sources": {k: {"title": s.title, "url": s.url, "date": s.date} for k, s in system.sources.items()},
        "domains": [_domain_out(d) for d in system.domains],
        "host_link": None if host is None else {"name": host.name, **_link_out(host)},
        "host_memory": cited_out(system.host_memory),
        "notes": system.notes,
        "conflicts": [{"field": c.field, "note": c.note} for c in system.conflicts],
    })


def dump_system_yaml(system: System) -> str:
    import yaml  # on use: the app paints its first window without it (issue 22)

    return yaml.safe_dump(system_to_dict(system), sort_keys=False, allow_unicode=True, width=110)


def save_system_file(system: System, path: str | Path) -> None:
    """Write ``system`` atomically as YAML, or JSON when ``path`` ends in ``.json``."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        text = json.dumps(system_to_dict(system), indent=2, ensure_ascii=False) + "\n"
    else:
        text = dump_system_yaml(system)
    atomic_write_text(path, text)

