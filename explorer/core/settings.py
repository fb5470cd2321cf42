"""User preferences: a typed, frozen object stored as JSON in the user's config folder. Qt-free.

Preferences are the defaults a *new* project starts from (precision, electricity price, PUE, years of
ownership, utilization); a project file keeps its own assumptions. The file is
``platformdirs.user_config_dir("hwexplorer")/preferences.json``, written atomically. A file that cannot be
read (corrupt JSON, a wrong type, an out-of-range value) falls back to the defaults with a warning naming
the field, so a bad file never stops the application from starting.

Currency: only US dollars (``USD``) exist for now; the unit registry defines no other currency and no
exchange rates, so :class:`Preferences` rejects anything else rather than mislabel a dollar figure.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from explorer.core.files import NestingError, atomic_write_text, names, parse_nested

from .precision import check_precision

APP_NAME = "hwexplorer"
FILE_NAME = "preferences.json"
FORMAT = 1
CURRENCIES = ("USD",)


class PreferencesWarning(UserWarning):
    """The preferences file could not be used; the defaults apply."""


@dataclass(frozen=True)
class Preferences:
    """Defaults for new projects. Units: USD per kWh, years, fractions; PUE is a ratio >= 1."""

    default_precision: str = "fp16"
    electricity_usd_per_kwh: float = 0.12
    pue: float = 1.3
    currency: str = "USD"
    years: float = 3.0
    utilization: float = 0.6

    def checked(self) -> Preferences:
        """Return a normalized copy; raise ValueError naming the field of the first bad value."""
        precision = check_precision(self.default_precision, "default_precision")
        for name in ("electricity_usd_per_kwh", "pue", "years", "utilization"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{name}: expected a finite number, got {value!r}")
        if self.electricity_usd_per_kwh <= 0:
            raise ValueError(f"electricity_usd_per_kwh: must be positive, got {self.electricity_usd_per_kwh!r}")
        if self.pue < 1:
            raise ValueError(f"pue: must be at least 1, got {self.pue!r}")
        if self.years <= 0:
            raise ValueError(f"years: must be positive, got {self.years!r}")
        if not 0 < self.utilization <= 1:
            raise ValueError(f"utilization: must be in (0, 1], got {self.utilization!r}")
        if self.currency not in CURRENCIES:
            raise ValueError(f"currency: only {', '.join(CURRENCIES)} is supported for now, got {self.currency!r}")
        return replace(self, default_precision=precision, electricity_usd_per_kwh=float(self.electricity_usd_per_kwh),
                       pue=float(self.pue), years=float(self.years), utilization=float(self.utilization))

    def assumption_defaults(self) -> dict:
        """The keyword arguments of ``workspace.Assumptions`` that these preferences provide."""
        return {"precision": self.default_precision, "electricity_usd_per_kwh": self.electricity_usd_per_kwh,
                "pue": self.pue, "years": self.years, "utilization": self.utilization}

    def to_dict(self) -> dict:
        return {"format": FORMAT, **asdict(self)}

    @classmethod
    def from_dict(cls, data, where: str = FILE_NAME) -> Preferences:
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a JSON object")  # noqa: TRY004 - bad input is a ValueError here
        fmt = data.get("format", FORMAT)
        if fmt != FORMAT:
            raise ValueError(f"{where}: format: this version reads format {FORMAT}, got {fmt!r}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known - {"format"})
        if unknown:
            raise ValueError(f"{where}: unknown keys {names(unknown)}")
        values = {k: v for k, v in data.items() if k in known}
        try:
            return cls(**values).checked()
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None


def default_path() -> Path:
    import platformdirs  # imported here: the path is resolved at call time (tests redirect XDG_CONFIG_HOME)

    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)) / FILE_NAME


def load_preferences(path: str | Path | None = None) -> Preferences:
    """Read the preferences; a missing file gives the defaults silently, an unreadable one with a warning."""
    path = Path(path) if path is not None else default_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Preferences()
    except (OSError, UnicodeDecodeError) as exc:
        return _fallback(f"{path}: cannot read ({exc})")
    try:
        data = parse_nested(json.loads, text)
    except NestingError as exc:
        return _fallback(f"{path}: {exc}")
    except json.JSONDecodeError as exc:
        return _fallback(f"{path}: line {exc.lineno}: invalid JSON ({exc.msg})")
    try:
        return Preferences.from_dict(data, str(path))
    except ValueError as exc:
        return _fallback(str(exc))


def _fallback(reason: str) -> Preferences:
    warnings.warn(f"{reason}; using the default preferences", PreferencesWarning, stacklevel=3)
    return Preferences()


def save_preferences(prefs: Preferences, path: str | Path | None = None) -> Path:
    """Validate and write atomically (the previous file survives a crash mid-save). Returns the path."""
    prefs = prefs.checked()
    path = Path(path) if path is not None else default_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(prefs.to_dict(), indent=2) + "\n")
    return path
