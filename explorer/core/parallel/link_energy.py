"""Energy of the bytes a layout moves over each link, beside the energy spent on the device.

Communication is the next level of the memory hierarchy, and it costs energy per byte as HBM does. A link's
figure comes from its system file (``energy:`` of a domain or the host link, e.g. ``1.3 pJ/bit``; what the figure
covers, SerDes only or NIC + switch + optics, is in its note: ``docs/system-file.md``). Per step and device:

    joules over a link = bytes the device sends over it x 8 x energy per bit   (= bytes x J/B)

The bytes are the system pass's ``level_bytes`` (what one device sends per step on each domain: a collective's
n times its bus factor, nccl-tests' share each link carries, plus pipeline sends) and ``host_bytes`` (what it
streams over the host link when offloading). A byte counts once, when it is sent: a figure per bit sent covers the
sender's transmit and the receiver's receive side. A link whose file states no energy has an **unknown** energy
(NaN), never 0, as soon as it carries bytes; a link that carries nothing costs 0 J whatever its figure.

The device's own energy (MACs and memory levels, :mod:`explorer.core.analysis.evaluate`) is the system pass's
``device_energy``; ``total`` adds the two, and is unknown when any link that carries bytes is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .collectives import BUS_FACTOR
from .system_pass import SystemAnalysis

HOST = "host link"
BITS_PER_BYTE = 8.0


def collective_energy(op: str, n, p, energy_per_bit) -> np.ndarray:
    """J **one rank** spends sending its share of one collective: bus factor(p) x n bytes x 8 x J/bit.

    ``n`` as in :mod:`.collectives` (bytes), ``p`` ranks, ``energy_per_bit`` J per bit sent (NaN: unknown).
    A ring all-reduce of n bytes sends 2 (p - 1) / p x n bytes from every rank; p = 1 sends nothing."""
    p = np.asarray(p, dtype=float)
    sent = np.asarray(n, dtype=float) * BUS_FACTOR[op](p)
    e = np.asarray(energy_per_bit, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(p <= 1, 0.0, np.where(sent > 0, sent * BITS_PER_BYTE * e, 0.0))


def joules(nbytes, energy_per_byte) -> np.ndarray:
    """bytes x J/B; unknown (NaN) only where bytes move over a link of unknown energy, 0 where none move."""
    b = np.asarray(nbytes, dtype=float)
    e = np.broadcast_to(np.asarray(energy_per_byte, dtype=float), b.shape)
    with np.errstate(invalid="ignore"):
        return np.where(b > 0, b * e, 0.0)


@dataclass(frozen=True, eq=False)
class LinkEnergy:
    """Per step and per device, SI units (J, B, J/B); arrays over the analysis's K layouts.

    Levels are the system's domains, innermost first, then the host link when the system states one."""

    names: tuple[str, ...]
    scopes: tuple[str, ...]  # scale_up | scale_out | host
    energy_per_byte: np.ndarray  # (levels,) J/B; NaN: the file states none
    notes: tuple[str, ...]  # what each figure covers, as its file says ("" when unknown)
    nbytes: np.ndarray  # (K, levels)
    joules: np.ndarray  # (K, levels)
    device: np.ndarray  # (K,) on the device: MACs and memory levels
    devices: int

    @property
    def links(self) -> np.ndarray:
        """(K,) J over every link; NaN when a link carrying bytes has no stated energy."""
        return self.joules.sum(axis=1) if self.joules.size else np.zeros(len(self.device))

    @property
    def known_links(self) -> np.ndarray:
        """(K,) J over the links whose energy is stated: a lower bound when some is unknown."""
        return np.nansum(self.joules, axis=1) if self.joules.size else np.zeros(len(self.device))

    @property
    def unknown(self) -> tuple[tuple[str, ...], ...]:
        """Per layout, the links that carry bytes but state no energy."""
        bad = np.isnan(self.joules)
        return tuple(tuple(n for n, b in zip(self.names, row) if b) for row in bad)

    @property
    def total(self) -> np.ndarray:
        """(K,) J per step and device: on the device plus over the links (NaN when a link's is unknown)."""
        return self.device + self.links

    @property
    def link_share(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.links / self.total


def link_energy(r: SystemAnalysis) -> LinkEnergy:
    """The energy of ``r``'s layouts: on the device and over each domain's link and the host link."""
    s = r.system
    links = [d.link for d in s.domains]
    names = [d.name for d in s.domains]
    scopes = [d.scope for d in s.domains]
    nbytes = [np.asarray(r.level_bytes, dtype=float).reshape(len(r), len(s.domains))]
    if s.host_link is not None:
        links.append(s.host_link)
        names.append(f"{HOST}: {s.host_link.name}")
        scopes.append("host")
        host = r.host_bytes if r.host_bytes is not None else np.zeros(len(r))
        nbytes.append(np.asarray(host, dtype=float).reshape(len(r), 1))
    e = np.array([link.energy_per_byte for link in links], dtype=float)
    b = np.concatenate(nbytes, axis=1) if nbytes else np.zeros((len(r), 0))
    device = r.device_energy if r.device_energy is not None else np.full(len(r), math.nan)
    return LinkEnergy(names=tuple(names), scopes=tuple(scopes), energy_per_byte=e,
                      notes=tuple((link.energy.note or "") if link.energy is not None else "" for link in links),
                      nbytes=b, joules=joules(b, e[None, :]), device=np.asarray(device, dtype=float),
                      devices=s.devices)
