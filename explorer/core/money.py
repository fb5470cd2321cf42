"""One reader for every money and rate field: purchase prices, quotes, budgets, cloud prices per hour.

Accepted forms (commas as thousands separators, the currency before or after the amount, a k/M/B multiplier):

* amounts: ``"$30,000"``, ``"30000 USD"``, ``"30k USD"``, ``"$30k"``, ``"500k USD"``, ``"1.2M USD"``, ``"2B USD"``,
  ``"15 kUSD"`` (pint's own prefix);
* rates: ``"4.10 USD/h"``, ``"$4.10/h"``, ``"4.10 USD per hour"``, ``"$3,000/month"`` (a month is 1/12 of a Julian
  year), ``"0.0011 USD/s"``.

``k`` is 10^3, ``M`` 10^6, ``B`` (or ``bn``) 10^9. ``USD`` is the only currency; anything else (a byte count such
as ``"3 GB"``, an amount where a rate is asked for, garbage) raises :class:`~explorer.core.units.UnitError` with
one line that names the field. Where a column states its unit (a table cell headed "USD" or "USD/h"),
``bare=True`` reads a bare number in that unit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .units import UnitError, canonical_money, parse_quantity

if TYPE_CHECKING:  # imported through .units (which imports pint without dask's start-up cost)
    import pint

MONEY = "money"  # USD
RATE = "money_rate"  # USD per unit of time, stored as USD/s


def parse_money(value: object, field: str, *, rate: bool = False, bare: bool = False,
                positive: bool = True) -> pint.Quantity:
    """``value`` as a quantity in USD (``rate=False``) or USD/h (``rate=True``); UnitError naming ``field``."""
    kind = RATE if rate else MONEY
    if bare and isinstance(value, (int, float)) and not isinstance(value, bool):
        value = f"{value!r}"
    if bare and isinstance(value, str):
        value = canonical_money(value, bare_unit="USD/h" if rate else "USD") or value
    q = parse_quantity(value, kind, field)
    q = q.to("USD/hour" if rate else "USD")
    if positive and not q.magnitude > 0:
        raise UnitError(field, f"'{value}' must be a positive {'rate' if rate else 'amount'}")
    return q


def parse_usd(value: object, field: str, *, bare: bool = False) -> float:
    """An amount in USD as a float (``"$30k"`` -> 30000.0)."""
    return float(parse_money(value, field, bare=bare).magnitude)


def parse_usd_per_hour(value: object, field: str, *, bare: bool = False) -> float:
    """A rate in USD per hour as a float (``"$4.10/h"`` -> 4.1)."""
    return float(parse_money(value, field, rate=True, bare=bare).magnitude)


def parse_usd_per_second(value: object, field: str, *, bare: bool = False) -> float:
    """A rate in USD per second (the SI form the cost models use): ``"3.6 USD/h"`` -> 0.001."""
    return parse_usd_per_hour(value, field, bare=bare) / 3600.0

