"""Preferences: typed defaults, atomic JSON storage under the user config dir, corrupt files fall back."""

import json
import os

import pytest

from explorer.core.session.workspace import Assumptions
from explorer.core.settings import (
    Preferences,
    PreferencesWarning,
    default_path,
    load_preferences,
    save_preferences,
)


@pytest.fixture(autouse=True)
def config_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config"


def test_defaults_match_the_workspace_assumptions():
    prefs = Preferences()
    assert prefs.currency == "USD"
    assumptions = Assumptions(**prefs.assumption_defaults()).checked()
    assert assumptions == Assumptions()  # a new project starts from the same figures either way


def test_missing_file_gives_defaults_without_warning(recwarn):
    assert load_preferences() == Preferences()
    assert not recwarn.list


def test_round_trip_in_the_user_config_dir(config_home):
    prefs = Preferences(default_precision="BF16", electricity_usd_per_kwh=0.31, pue=1.1, years=5, utilization=0.8)
    path = save_preferences(prefs)
    assert path == default_path()
    assert path.parent == config_home / "hwexplorer"
    data = json.loads(path.read_text())
    assert data == {"format": 1, "default_precision": "bf16", "electricity_usd_per_kwh": 0.31, "pue": 1.1,
                    "currency": "USD", "years": 5.0, "utilization": 0.8}
    loaded = load_preferences()
    assert loaded == Preferences("bf16", 0.31, 1.1, "USD", 5.0, 0.8)
    assert loaded.assumption_defaults() == {"precision": "bf16", "electricity_usd_per_kwh": 0.31, "pue": 1.1,
                                            "years": 5.0, "utilization": 0.8}


@pytest.mark.parametrize("text, field", [
    ("{not json", "invalid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"pue": 0.9}', "pue: must be at least 1"),
    ('{"currency": "EUR"}', "currency: only USD"),
    ('{"default_precision": "fp12"}', "default_precision: unknown precision"),
    ('{"years": "three"}', "years: expected a finite number"),
    ('{"utilization": 1.5}', "utilization: must be in (0, 1]"),
    ('{"colour": "blue"}', "unknown keys colour"),
    ('{"format": 2}', "format: this version reads format 1"),
])
def test_corrupt_file_falls_back_to_defaults_with_a_warning(text, field):
    path = default_path()
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.warns(PreferencesWarning, match="using the default preferences") as record:
        assert load_preferences() == Preferences()
    assert field in str(record[0].message)


@pytest.mark.parametrize("bad, field", [
    ({"pue": 0.5}, "pue"), ({"electricity_usd_per_kwh": 0.0}, "electricity_usd_per_kwh"),
    ({"years": -1.0}, "years"), ({"currency": "GBP"}, "currency"), ({"utilization": 0.0}, "utilization"),
])
def test_save_rejects_bad_values_naming_the_field(bad, field):
    with pytest.raises(ValueError, match=field):
        save_preferences(Preferences(**bad))
    assert not default_path().exists()


def test_save_is_atomic(monkeypatch):
    save_preferences(Preferences(pue=1.2))
    before = default_path().read_text()

    def crash(src, dst):
        raise OSError("disk full")

    with monkeypatch.context() as m:
        m.setattr(os, "replace", crash)
        with pytest.raises(OSError, match="disk full"):
            save_preferences(Preferences(pue=1.5))
    assert default_path().read_text() == before
    assert [p.name for p in default_path().parent.iterdir()] == ["preferences.json"]  # no temporary left
    assert load_preferences().pue == 1.2
