"""Systems: a catalog device times a count, in a hierarchy of communication domains.

The chapter's frame: communication is the next level of the memory hierarchy (on-chip -> HBM -> scale-up ->
scale-out). A :class:`System` lists its domains from the innermost out; each domain groups ``size`` devices and
joins them with one interconnect, whose bandwidth is stated per device and per direction (a bidirectional total
is halved, never silently doubled; see :attr:`Link.per_direction_bandwidth`). A collective among devices that all
sit in one domain runs on that domain's link; one that spans domains crosses the outer link
(:meth:`System.domain_for`).

System files (YAML/JSON, ``docs/system-file.md``) are read and written by :mod:`.system_file`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from .device import NAN, Cited, Conflict, Link, Source, _same

SCOPES = ("scale_up", "scale_out")
TOPOLOGIES = ("switched", "ring", "torus2d", "torus3d", "fully_connected", "pcie_switch")
PER = ("device", "node")  # whose bandwidth a domain's link figure is: each device's, or shared by a node
SYSTEM_KINDS = ("node", "rack", "slice", "cluster")


@dataclass(frozen=True)
class LinkCalibration:
    """A domain's link fitted to measured collectives (``hwexplorer calibrate link --save``, docs/calibration.md):
    ``alpha`` (s per step) and ``bandwidth`` (B/s one device sends in one direction) of the alpha-beta model, each
    citing the measurement file as its source (whose entry carries the date); ``op``, ``ranks`` and
    ``algorithm`` of the run and fit, ``conditions`` in words (dtype, message sizes, error of the fit)."""

    alpha: Cited
    bandwidth: Cited
    op: str
    ranks: int
    algorithm: str = "ring"
    conditions: str = ""
    sharpness: float = 1.0  # the join of the latency and bandwidth terms (1: their sum, the alpha-beta model)


@dataclass(frozen=True)
class Domain:
    """One level of the communication hierarchy: ``size`` devices joined by ``link``.

    ``size`` counts devices (8 for an HGX board's NVLink domain, 72 for an NVL72 rack, all devices for the
    scale-out network). ``per="node"`` means the link figure is one node's, shared by its ``node_devices``.
    ``oversubscription`` (>= 1, e.g. 2.0 for 2:1) divides the bandwidth when every node sends at once.
    ``latency`` is the per-message start-up cost (alpha); unknown stays None and the time is then a lower bound.
    """

    name: str
    scope: str
    size: int
    topology: str
    link: Link
    latency: Cited | None = None
    per: str = "device"
    oversubscription: float = 1.0
    calibration: LinkCalibration | None = None  # the fitted link, used by the calibrated time model only
    sharpness: float = 1.0  # the join of a collective's latency and bandwidth terms: 1 (their sum) unless fitted

    def calibrated(self) -> Domain:
        """This domain as the calibrated time model sees it: the fitted bandwidth (already what one device sends,
        so per device and with no oversubscription) and alpha where a fit is stored; itself otherwise."""
        fit = self.calibration
        if fit is None:
            return self
        return replace(self, link=replace(self.link, bandwidth=fit.bandwidth, direction="per_direction"),
                       latency=fit.alpha, per="device", oversubscription=1.0, sharpness=fit.sharpness)

    def bandwidth_per_device(self, node_devices: int = 1) -> float:
        """B/s one device can send in one direction across this domain (NaN when unknown)."""
        bw = self.link.per_direction_bandwidth
        if self.per == "node":
            bw /= max(node_devices, 1)
        return bw / self.oversubscription

    @property
    def alpha(self) -> float:
        """Per-message latency in s; NaN when the file states none."""
        return self.latency.value if self.latency is not None else NAN


@dataclass(frozen=True, eq=False)
class System:
    """``devices`` of catalog device ``device_id``; ``domains`` from the innermost (scale-up) outward."""

    id: str
    name: str
    vendor: str
    kind: str
    device_id: str
    devices: int
    domains: tuple[Domain, ...]
    node_devices: int = 0  # devices per node (0: the scale-up domain's size)
    host_link: Link | None = None  # per device, to its host's memory (PCIe, NVLink-C2C)
    host_memory: Cited | None = None  # bytes per node
    sources: Mapping[str, Source] = field(default_factory=dict)
    notes: str = ""
    conflicts: tuple[Conflict, ...] = ()
    origin: str = "user"

    def __post_init__(self):
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources or {})))
        if not self.node_devices:
            object.__setattr__(self, "node_devices", self.domains[0].size if self.domains else self.devices)

    def __eq__(self, other):
        if not isinstance(other, System):
            return NotImplemented
        return all(_same(getattr(self, n), getattr(other, n)) for n in self.__dataclass_fields__)

    def __hash__(self):
        return hash(self.id)

    @property
    def nodes(self) -> int:
        return max(1, self.devices // max(self.node_devices, 1))

    @property
    def scale_up(self) -> Domain | None:
        return next((d for d in self.domains if d.scope == "scale_up"), None)

    @property
    def scale_out(self) -> Domain | None:
        return next((d for d in self.domains if d.scope == "scale_out"), None)

    def domain_for(self, span: int) -> Domain | None:
        """The innermost domain holding ``span`` consecutive devices (a group of ranks placed innermost first);
        None when the system is smaller than ``span``."""
        for domain in self.domains:
            if span <= domain.size:
                return domain
        return None

    def bandwidth(self, domain: Domain) -> float:
        return domain.bandwidth_per_device(self.node_devices)

    def host_bandwidth(self) -> float:
        """Per-direction host-link bandwidth of one device (B/s), NaN when unknown."""
        return self.host_link.per_direction_bandwidth if self.host_link is not None else NAN

    @property
    def link_calibrations(self) -> tuple[str, ...]:
        """The names of the domains that carry a fitted link."""
        return tuple(d.name for d in self.domains if d.calibration is not None)

    def for_time_model(self, model: str) -> System:
        """The system the ``model`` time model uses: itself for 'ideal'; for 'calibrated', every domain with a
        stored fit takes the fitted alpha and bandwidth (:meth:`Domain.calibrated`), the others stay as stated."""
        if model == "ideal" or not self.link_calibrations:
            return self
        if model != "calibrated":
            raise ValueError(f"time_model: expected ideal or calibrated, got {model!r}")
        return replace(self, domains=tuple(d.calibrated() for d in self.domains))

    def with_nodes(self, nodes: int, network: Domain | None = None) -> System:
        """A cluster of ``nodes`` copies of this system over its own scale-out network (or ``network``)."""
        if nodes < 1:
            raise ValueError("nodes: expected a whole number >= 1")
        out = network or self.scale_out
        if nodes > 1 and out is None:
            raise ValueError(f"nodes: {self.id} states no scale-out network to join {nodes} nodes")
        total = self.devices * nodes
        inner = tuple(d for d in self.domains if d.scope == "scale_up")
        domains = inner + ((replace(out, size=total),) if out is not None else ())
        return replace(self, id=f"{self.id}x{nodes}" if nodes > 1 else self.id,
                       name=f"{nodes} x {self.name}" if nodes > 1 else self.name,
                       kind="cluster" if nodes > 1 else self.kind, devices=total, domains=domains)


def single_device(device_id: str, name: str = "") -> System:
    """A one-device 'system' (no domains): a layout of 1 equals the single-device analysis."""
    return System(id=device_id, name=name or device_id, vendor="", kind="node", device_id=device_id, devices=1,
                  domains=(), node_devices=1)
