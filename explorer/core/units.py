"""The one pint registry of the process, and unit-checked parsing of user-entered quantities.

Conventions (stated once, used everywhere):

* ``FLOP`` is one floating-point operation; ``OP`` (an integer operation, as in "TOPS") counts the same.
* ``MAC`` (multiply-accumulate) is exactly ``2 FLOP``.
* Byte multiples: ``kB MB GB TB`` are decimal (10^3...), ``KiB MiB GiB TiB`` binary (2^10...). Values are
  stored in bytes; nothing converts between the two families silently.
* ``USD`` is the one currency dimension; other currencies need an explicit rate and are not defined.

Every module imports ``ureg``/``Q_`` from here; the registry is also set as pint's application registry so
that libraries which create quantities share it.
"""

from __future__ import annotations

import math
import os
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from tokenize import TokenError
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported with the registry, on first use (registry)
    import pint

# The registry (pint, and its parsed definitions) is made on first use, not at import: a module that only formats
# numbers or names a kind (``format_si``, ``KINDS``, ``UnitError``), as most of the app's first window does, costs
# no pint; the first parse (or ``ureg``/``Q_``/``PintError`` asked of this module) loads it, 0.1-0.2 s (issue 22:
# the desktop app paints its window before the registry is needed).
#
# pint probes for dask when it is imported (pint.compat: find_spec("dask"), then imports dask.base, 80-180 ms
# here) for its dask-array support, which nothing here uses. Dask is an optional extra (the [cluster] one, for
# `sweep --cluster`): installed, it must cost nothing at start-up, so pint is imported with dask hidden from
# that probe (a None entry in sys.modules makes find_spec answer None); the entry is removed at once, so a later
# `import dask` (explorer.core.pmap) works as usual. Nothing is hidden when dask is already imported.
_LAZY = ("ureg", "Q_", "PintError", "pint")


def _import_pint():
    hide_dask = "dask" not in sys.modules
    if hide_dask:
        sys.modules["dask"] = None  # type: ignore[assignment]
    try:
        import pint
    finally:
        if hide_dask and sys.modules.get("dask", 0) is None:
            del sys.modules["dask"]
    return pint


def registry() -> pint.UnitRegistry:
    """The process's registry (``ureg``), made on first use: pint imported, the definitions read from pint's cache.
    Also sets this module's ``ureg``, ``Q_``, ``PintError`` and ``pint``, and pint's application registry."""
    registry = globals().get("ureg")
    if registry is None:
        with _LOCK:
            registry = globals().get("ureg")
            if registry is None:
                pint = _import_pint()
                registry = build_registry(cache_folder())
                pint.set_application_registry(registry)
                globals().update(pint=pint, PintError=pint.errors.PintError, Q_=registry.Quantity)
                globals()["ureg"] = registry  # last: another thread sees ureg only once the rest is set
    return registry


def _pint():
    """pint, imported (with the registry) on first use."""
    registry()
    return globals()["pint"]


def __getattr__(name: str):
    """``ureg``, ``Q_``, ``PintError`` (for modules that catch pint's errors without importing pint first) and
    ``pint``: the registry is made when one of them is first asked for."""
    if name in _LAZY:
        registry()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Our definitions on top of pint's (one registry: these are part of the definitions text, not added later).
_OWN_DEFINITIONS = (
    "FLOP = [operation] = flop",
    "OP = FLOP = op",
    "MAC = 2 * FLOP = mac",
    "USD = [currency] = usd = dollar",
)

#: Where the definitions file and pint's parsed copy of it are kept (under the user cache folder); the
#: environment variable of this name overrides it, and an empty value turns the cache off.
CACHE_ENV = "HWEXPLORER_UNITS_CACHE"


def _definitions() -> list[str]:
    """pint's default definitions with ``bit`` given its own dimension, then ours (FLOP, OP, MAC, USD).

    pint ships ``bit = []`` (dimensionless), which would let "3.35" pass as a byte count and make
    FLOP/byte indistinguishable from FLOP. Bytes here have the dimension ``[information]``.
    """
    folder = Path(_import_pint().__file__).parent
    text = (folder / "default_en.txt").read_text(encoding="utf-8")
    text = text.replace("@import constants_en.txt", (folder / "constants_en.txt").read_text(encoding="utf-8"))
    if "\nbit = []" not in text:  # pragma: no cover - guards a pint upgrade that changes the file
        raise RuntimeError("pint's definition of 'bit' changed; update explorer/core/units.py")
    return text.replace("\nbit = []", "\nbit = [information]").splitlines() + list(_OWN_DEFINITIONS)


def cache_folder() -> Path | None:
    """The folder of the registry's cache, or None when it is turned off (``HWEXPLORER_UNITS_CACHE=""``)."""
    if CACHE_ENV in os.environ:
        return Path(os.environ[CACHE_ENV]) if os.environ[CACHE_ENV] else None
    import platformdirs  # resolved at call time, like the settings' and the catalog's folders

    return Path(platformdirs.user_cache_dir("hwexplorer", appauthor=False)) / "units"


def _new_registry(folder: Path | None) -> pint.UnitRegistry:
    return _import_pint().UnitRegistry(None, autoconvert_offset_to_baseunit=True, cache_folder=folder)


def build_registry(folder: Path | None) -> pint.UnitRegistry:
    """The registry of :func:`_definitions`; parsed once and then read from pint's definition cache in ``folder``.

    Parsing pint's ~1,000 definitions took 0.2-0.4 s of every start. With a folder, the text is written there
    as ``definitions.txt`` (atomically, when it differs) and loaded as a file, which pint's disk cache keeps
    parsed, keyed by the file's content and pint's version (a pint upgrade or an edit of ours re-parses).
    Anything wrong with the folder or the cache (read-only, a cache file cut short by a killed write) falls
    back to parsing the text, and the damaged cache is removed so that the next start writes it anew.
    """
    lines = _definitions()
    if folder is not None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / "definitions.txt"
            text = "\n".join(lines) + "\n"
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                _write_atomically(path, text)
            registry = _new_registry(folder)
            registry.load_definitions(path)
            return registry
        except Exception:  # noqa: BLE001 - any failure of the cache falls back to the uncached parse
            _clear_cache(folder)
    registry = _new_registry(None)
    registry.load_definitions(lines)
    return registry


def _write_atomically(path: Path, text: str) -> None:
    """Write then rename, so a concurrent start reads the old file or the new one, never half of one (the
    import contract keeps ``units`` and ``files`` apart on the ground floor, hence not ``atomic_write_text``)."""
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _clear_cache(folder: Path) -> None:
    """Remove pint's cache files from ``folder`` (our folder: nothing else is kept there)."""
    for pattern in ("*.pickle", "*.json"):
        for cached in folder.glob(pattern):
            try:
                cached.unlink()
            except OSError:
                pass


_LOCK = threading.Lock()


class UnitError(ValueError):
    """A quantity could not be parsed or has the wrong dimension. ``field`` names what was being read."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


@dataclass(frozen=True)
class Kind:
    """A kind of quantity: its dimension, the SI unit values are stored in, and an example for messages."""

    name: str
    si_unit: str
    example: str

    @property
    def dimensionality(self):
        return registry().parse_units(self.si_unit).dimensionality


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("throughput", "FLOP/s", "989 TFLOP/s"),
        Kind("operations", "FLOP", "58 GFLOP"),
        Kind("bytes", "byte", "80 GB"),
        Kind("bandwidth", "byte/s", "3.35 TB/s"),
        Kind("energy_per_byte", "J/byte", "160 pJ/B"),
        Kind("energy", "J", "1.5 pJ"),
        Kind("time", "s", "300 ns"),
        Kind("frequency", "Hz", "1410 MHz"),
        Kind("power", "W", "400 W"),
        Kind("money", "USD", "25000 USD"),
        Kind("money_rate", "USD/s", "4.10 USD/h"),
        Kind("energy_price", "USD/J", "0.12 USD/kWh"),
        Kind("length", "m", "20 mm"),
        Kind("carbon_intensity", "kg/J", "0.429 kg/kWh"),
    )
}

# Spellings vendors use that pint does not read as intended.
_REWRITES = [
    (re.compile(r"\b([kMGTPE]?)(FLOPS|OPS|MACS)\b"), lambda m: f"{m.group(1)}{m.group(2)[:-1]}/s"),
    (re.compile(r"\bTFLOPs\b"), lambda m: "TFLOP/s"),
    (re.compile(r"\$"), lambda m: " USD "),
]


def _normalize(text: str) -> str:
    out = text.strip().replace(",", "").replace("\u00b5", "u").replace("\u03bc", "u")
    for pattern, repl in _REWRITES:
        out = pattern.sub(repl, out)
    return out


_MULTIPLIER = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "mn": 1e6, "B": 1e9, "bn": 1e9}
_PERIOD = {"s": "second", "sec": "second", "second": "second", "min": "minute", "minute": "minute", "h": "hour",
           "hr": "hour", "hour": "hour", "d": "day", "day": "day", "mo": "month", "month": "month", "y": "year",
           "yr": "year", "year": "year"}
_MONEY = re.compile(
    r"(?P<pre>US\$|\$|USD)?\s*(?P<num>[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*(?P<mult>bn|mn|[kKMB])?\s*"
    r"(?P<post>USD|usd|US\$|\$|dollars?)?\s*(?:(?:/|\bper\b)\s*(?P<per>[a-z]+))?")


def canonical_money(text: str, bare_unit: str | None = None) -> str | None:
    """A money or rate text in the forms people write (``"$30,000"``, ``"30k USD"``, ``"1.2M USD"``,
    ``"$4.10/h"``, ``"4.10 USD per hour"``) rewritten as pint reads it (``"30000.0 USD"``, ``"4.1 USD/hour"``);
    None when ``text`` is not in those forms. ``k`` = 10^3, ``M`` = 10^6, ``B`` = 10^9. The currency must be
    written unless ``bare_unit`` (e.g. "USD" or "USD/h") says what a bare number means."""
    m = _MONEY.fullmatch(str(text).strip().replace(",", ""))
    if not m or (m["pre"] and m["post"]) or (m["per"] and m["per"] not in _PERIOD):
        return None
    amount = float(m["num"]) * _MULTIPLIER[m["mult"] or ""]
    if m["pre"] or m["post"]:
        return f"{amount!r} USD" + (f"/{_PERIOD[m['per']]}" if m["per"] else "")
    if bare_unit is None or m["per"]:
        return None
    return f"{amount!r} {bare_unit}"


def parse_quantity(value: object, kind: str, field: str) -> pint.Quantity:
    """Parse ``"3.35 TB/s"`` (or a pint Quantity) as a quantity of ``kind``; raise UnitError naming ``field``."""
    expected = KINDS[kind]
    reg, pint_ = registry(), _pint()
    if isinstance(value, pint_.Quantity):
        q = value
    elif isinstance(value, str):
        if re.search(r"\dKB\b|\bKB\b", value):
            raise UnitError(field, f"'{value}': 'KB' is ambiguous; write kB (1000 B) or KiB (1024 B)")
        text = _normalize(value)
        if kind in ("money", "money_rate"):  # "$30k", "1.2M USD", "$4.10/h": see canonical_money
            canon = canonical_money(value)
            if canon is None and canonical_money(value, bare_unit="USD") is not None:
                raise UnitError(field, f"'{value}' has no currency; write it with one, e.g. '{expected.example}'")
            text = canon or text
        if not text:
            raise UnitError(field, f"is empty; expected a {kind} such as '{expected.example}'")
        try:
            q = reg.Quantity(text)
        except (pint_.errors.PintError, ValueError, TypeError, AttributeError, SyntaxError, ZeroDivisionError,
                AssertionError, TokenError) as exc:  # pint raises the last two on half-typed text ("3.35 TB/")
            raise UnitError(field, f"cannot read '{value}' ({exc}); expected e.g. '{expected.example}'") from None
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        raise UnitError(field, f"'{value}' has no unit; write it with one, e.g. '{expected.example}'")
    else:
        raise UnitError(field, f"expected a {kind} such as '{expected.example}', got {type(value).__name__}")
    if not isinstance(q, pint_.Quantity) or q.dimensionless:  # a bare number parsed from a string
        raise UnitError(field, f"'{value}' has no unit; write it with one, e.g. '{expected.example}'")
    if q.dimensionality != expected.dimensionality:
        raise UnitError(
            field,
            f"'{value}' is {_describe(q)}, not {_article(kind)} (expected units like '{expected.example}')",
        )
    magnitude = q.to(expected.si_unit).magnitude
    if not math.isfinite(magnitude):
        raise UnitError(field, f"'{value}' is not a finite number")
    return q


def parse_si(value: object, kind: str, field: str) -> float:
    """Parse like :func:`parse_quantity` and return the magnitude in the kind's SI unit as a float."""
    return float(parse_quantity(value, kind, field).to(KINDS[kind].si_unit).magnitude)


_LABELS = {"bytes": "byte count", "money": "money amount"}


def _article(kind: str) -> str:
    words = _LABELS.get(kind, kind.replace("_", " "))
    return f"an {words}" if words[0] in "aeiou" else f"a {words}"


def _describe(q: pint.Quantity) -> str:
    for kind in KINDS.values():
        if q.dimensionality == kind.dimensionality:
            return _article(kind.name)
    return f"a quantity of dimension {q.dimensionality}"


def to_quantity(si_value: float, kind: str) -> pint.Quantity:
    """Wrap an SI float from the analyses back into a quantity (for display and export)."""
    return registry().Quantity(si_value, KINDS[kind].si_unit)


DECIMAL_BYTES = ("B", "kB", "MB", "GB", "TB", "PB")
BINARY_BYTES = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def format_bytes(n: float, binary: bool = False, digits: int = 3) -> str:
    """Format a byte count in one family only: decimal (kB, MB...) or binary (KiB, MiB...)."""
    if n is None or not math.isfinite(n):
        return "\u2014"
    base, names = (1024.0, BINARY_BYTES) if binary else (1000.0, DECIMAL_BYTES)
    i = 0
    x = float(n)
    while abs(x) >= base and i < len(names) - 1:
        x /= base
        i += 1
    return f"{x:.{digits}g} {names[i]}"


_SI_PREFIXES = [(1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""),
                (1e-3, "m"), (1e-6, "\u00b5"), (1e-9, "n"), (1e-12, "p")]


def format_si(x: float, unit: str, digits: int = 4) -> str:
    """Engineering format with an SI prefix: ``format_si(3.1e14, 'FLOP/s') == '310 TFLOP/s'``."""
    if x is None or not math.isfinite(x):
        return "\u2014"
    if x == 0:
        return f"0 {unit}"
    for scale, prefix in _SI_PREFIXES:
        if abs(x) >= scale:
            return f"{x / scale:.{digits}g} {prefix}{unit}"
    scale, prefix = _SI_PREFIXES[-1]
    return f"{x / scale:.{digits}g} {prefix}{unit}"
