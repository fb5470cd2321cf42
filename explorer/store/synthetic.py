"""Synthetic devices for load tests and benchmarks of the catalog (deterministic for a given seed).

They are valid device files (every figure cited, units as a vendor would write them) but describe no real
product: ids start with ``synthetic-`` and the vendor names are invented.
"""

from __future__ import annotations

import random

from explorer.core.hardware.device import Cited, Device, MemoryLevel, Source

VENDORS = ("Acme", "Borealis", "Cobalt", "Dynamo", "Ember", "Fathom", "Gantry", "Helix")
KIND_TIERS = (
    ("gpu", "datacenter"),
    ("gpu", "workstation"),
    ("npu", "edge"),
    ("tpu", "datacenter"),
    ("npu", "mobile"),
    ("cpu", "datacenter"),
    ("mcu", "mcu"),
)
SOURCE = Source(
    "syn", "Synthetic benchmark data (not a real device)", "https://example.invalid/synthetic", "2026-01-01"
)


def _cited(number: float, unit: str, scale: float) -> Cited:
    text = f"{number:g} {unit}"
    return Cited(float(f"{number:g}") * scale, text, "syn")


def synthetic_device(i: int, rng: random.Random) -> Device:
    kind, tier = KIND_TIERS[rng.randrange(len(KIND_TIERS))]
    fp16 = rng.choice((2, 8, 30, 120, 400, 1000, 2000)) * rng.uniform(0.5, 1.5)
    precisions = rng.sample(("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4"), rng.randint(2, 6))
    factors = {"fp32": 0.1, "tf32": 0.5, "fp16": 1.0, "bf16": 1.0, "fp8": 2.0, "int8": 2.0, "int4": 4.0}
    peak = {p: _cited(round(fp16 * factors[p], 1), "TFLOP/s", 1e12) for p in precisions}
    sparse = {p: _cited(round(2 * fp16 * factors[p], 1), "TFLOP/s", 1e12) for p in precisions[:2]}
    bandwidth = round(fp16 * rng.uniform(2, 8))
    capacity = rng.choice((8, 16, 24, 32, 48, 80, 96, 141, 192))
    memory = (
        MemoryLevel(
            "DRAM", "offchip", capacity=_cited(capacity, "GB", 1e9), bandwidth=_cited(bandwidth, "GB/s", 1e9)
        ),
        MemoryLevel("SRAM", "onchip", capacity=_cited(rng.choice((4, 24, 50)), "MB", 1e6)),
    )
    has_price = rng.random() < 0.7
    return Device(
        id=f"synthetic-{i:05d}",
        name=f"Synthetic {rng.choice(VENDORS)} X{i}",
        vendor=rng.choice(VENDORS),
        kind=kind,
        tier=tier,
        year=rng.randint(2016, 2026),
        sources={"syn": SOURCE},
        peak=peak,
        peak_sparse=sparse,
        memory=memory,
        tdp=_cited(rng.choice((5, 15, 75, 300, 400, 700)), "W", 1.0),
        price=_cited(rng.randrange(100, 40000, 100), "USD", 1.0) if has_price else None,
        cloud_price=_cited(round(rng.uniform(0.2, 6.0), 2), "USD/h", 1 / 3600)
        if rng.random() < 0.4
        else None,
    )


def synthetic_devices(n: int, seed: int = 0) -> list[Device]:
    rng = random.Random(seed)
    return [synthetic_device(i, rng) for i in range(n)]
