"""``LayerKind._check`` (each kind's defaults checked once, an int given taken without the general path) gives what
the check did before, field by field with types, and the same message for every bad parameter set: hypothesis over
every registered kind, with parameters missing, given, None, of the wrong type, negative, fractional, huge, NaN,
infinite, and unknown names."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.files import names
from explorer.core.workload.layers import REGISTRY, ParamError
from explorer.core.workload.layers.base import MAX_WHOLE, Param

KINDS = sorted(REGISTRY)


def _coerce_before(p: Param, value, where: str):
    """``_coerce`` as it was (no fast path for ints)."""
    if p.type is bool:
        if not isinstance(value, bool):
            raise ParamError(f"{where}: expected true or false, got {value!r}")
        return value
    if p.type is str:
        if not isinstance(value, str) or (p.choices and value not in p.choices):
            raise ParamError(f"{where}: expected one of {', '.join(p.choices or ())}, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParamError(f"{where}: expected a number, got {value!r}")
    if not math.isfinite(value):
        raise ParamError(f"{where}: expected a finite number, got {value!r}")
    if p.type is int:
        if value != int(value):
            raise ParamError(f"{where}: expected a whole number, got {value!r}")
        value = int(value)
        if abs(value) > MAX_WHOLE:
            raise ParamError(f"{where}: must be at most 2^53 = {MAX_WHOLE:,}, got {value:.3g}")
    if p.minimum is not None and value < p.minimum:
        raise ParamError(f"{where}: must be at least {p.minimum:g}, got {value!r}")
    return value


def _check_before(kind, raw: dict, where: str) -> dict:
    """``LayerKind._check`` as it was (every default coerced on every call)."""
    known = {p.name for p in kind.params} | {"kind", "name", "repeat", "input_shape"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ParamError(f"{where}: unknown parameter(s) {names(unknown)} for '{kind.kind}'")
    out = {}
    for p in kind.params:
        value = raw.get(p.name, p.default)
        if value is None:
            raise ParamError(f"{where}.{p.name}: is required for '{kind.kind}'")
        out[p.name] = _coerce_before(p, value, f"{where}.{p.name}")
    return out


def _outcome(fn, *args):
    try:
        out = fn(*args)
    except ParamError as exc:
        return "error", str(exc)
    return "ok", [(k, type(v), v) for k, v in out.items()]


VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 5000), st.integers(2**53 - 2, 2**53 + 2),
    st.integers(-2**53 - 2, -2**53 + 2), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, 64.0, 1e300]), st.text(max_size=8),
    st.sampled_from(["gelu", "swiglu", "rmsnorm", "pre", "post", "q,k,v,o", "all", "max", "avg"]),
)


@st.composite
def raw_params(draw):
    kind = REGISTRY[draw(st.sampled_from(KINDS))]
    raw = {}
    for p in kind.params:
        choice = draw(st.integers(0, 3))
        if choice == 1:  # a value of its own type near its range
            if p.type is int:
                raw[p.name] = draw(st.integers(-2, 4096))
            elif p.type is float:
                raw[p.name] = draw(st.floats(-2, 1e6))
            elif p.type is bool:
                raw[p.name] = draw(st.booleans())
            else:
                raw[p.name] = draw(st.sampled_from(list(p.choices or ("x",))))
        elif choice == 2:
            raw[p.name] = draw(VALUES)
    if draw(st.booleans()):
        raw[draw(st.sampled_from(["name", "repeat", "kind", "bogus", "heads2"]))] = draw(VALUES)
    return kind, raw


@settings(max_examples=600, deadline=None)
@given(raw_params())
def test_the_check_is_the_check_as_it_was(case):
    kind, raw = case
    assert _outcome(kind._check, raw, "m.layer") == _outcome(_check_before, kind, raw, "m.layer")


def test_defaults_checked_once_are_each_kinds_own():
    """A kind's defaults as checked are kept on that kind (two kinds with a parameter of one name do not share)."""
    for kind in REGISTRY.values():
        known, defaults = kind._schema()
        assert {p.name for p in kind.params} <= known
        for p in kind.params:
            if p.default is not None:
                assert defaults[p.name] == p.default and type(defaults[p.name]) is type(p.default)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "heads", "window"]), VALUES, max_size=4))
def test_the_inline_key_is_checked_key(raw):
    """``LayerKind.check`` keys its memo as :func:`_checked_key` does (inline there): the same key, or none."""
    from explorer.core.workload.layers import base

    kind = REGISTRY["attention"]
    seen = []
    real = base._CHECKED

    class Spy(dict):
        def get(self, key, default=None):
            seen.append(key)

    base._CHECKED = Spy()
    try:
        try:
            kind.check(raw, "m")
        except (ParamError, TypeError):
            pass
    finally:
        base._CHECKED = real
    want = base._checked_key(id(kind), raw)
    assert seen == ([want] if want is not None else [])
