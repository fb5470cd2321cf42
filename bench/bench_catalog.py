"""Catalog database benchmark: filtered table queries over 10,000 devices, and first-start seeding.

    .venv/bin/python bench/bench_catalog.py [--devices 10000] [--runs 50] [--db URL]

Targets (issue 3): a filtered query for the device table under 50 ms; first-start seeding of the shipped
catalog under 1 s. Without --db the database is a SQLite file in a temporary folder (like a user's);
with --db the benchmark writes synthetic devices into that database and deletes them afterwards.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import report
from sqlalchemy import delete

from explorer.store.engine import open_catalog, redact_url
from explorer.store.query import DeviceFilter
from explorer.store.repository import DEVICES
from explorer.store.synthetic import synthetic_devices

QUERIES = {
    "vendor + min fp16 peak + min bandwidth": DeviceFilter(
        vendors=("Acme", "Cobalt"), precision="fp16", min_peak=100e12, min_bandwidth=500e9
    ),
    "text search 'x12'": DeviceFilter(text="x12"),
    "datacenter GPUs, price 5k-20k USD": DeviceFilter(
        kinds=("gpu",), tiers=("datacenter",), min_price=5000, max_price=20000
    ),
    "supports int4, capacity >= 80 GB": DeviceFilter(precision="int4", min_capacity=80e9),
    "no filter (whole table)": DeviceFilter(),
}


def _time(fn, runs: int) -> tuple[float, float, int, list[float]]:
    times, result = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
    return statistics.median(times), p95, len(result), times


def bench_seeding(folder: Path, repeats: int = 5) -> list[float]:
    """Open a fresh SQLite file: create, migrate, load and validate the shipped files, write them."""
    out = []
    for i in range(repeats):
        path = folder / f"seed-{i}.sqlite3"
        t0 = time.perf_counter()
        repo = open_catalog(f"sqlite:///{path}")
        out.append(time.perf_counter() - t0)
        count = repo.count()
        repo.close()
    print(
        f"first-start seeding ({count} shipped devices, fresh SQLite file): "
        f"median {statistics.median(out) * 1e3:.0f} ms, max {max(out) * 1e3:.0f} ms  (target < 1000 ms)"
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--db", help="database URL (default: a temporary SQLite file)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        report("catalog: first-start seeding of the shipped data", bench_seeding(folder), 1.0)
        url = args.db or f"sqlite:///{folder / 'bench.sqlite3'}"
        repo = open_catalog(url, seed=False)
        devices = synthetic_devices(args.devices)
        t0 = time.perf_counter()
        repo.import_devices(devices, validate=False)
        print(f"database: {redact_url(repo.engine.url)}")
        print(f"inserted {len(devices)} synthetic devices in {time.perf_counter() - t0:.2f} s")
        ids = [d.id for d in devices]
        del devices  # the application does not hold the devices in memory either
        gc.collect()
        try:
            worst, worst_times = 0.0, []
            for label, filters in QUERIES.items():
                median, p95, n, times = _time(lambda f=filters: repo.rows(f), args.runs)
                print(
                    f"rows(): {label:42s} {n:6d} rows  median {median * 1e3:6.1f} ms  p95 {p95 * 1e3:6.1f} ms"
                )
                if label != "no filter (whole table)" and p95 > worst:
                    worst, worst_times = p95, times
            print(f"slowest filtered query p95: {worst * 1e3:.1f} ms  (target < 50 ms)")
            report(f"catalog: slowest filtered query, {args.devices:,} devices", worst_times, 0.05)
        finally:
            if args.db:
                with repo.engine.begin() as conn:
                    conn.execute(delete(DEVICES).where(DEVICES.c.id.in_(ids)))
            repo.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
