"""The cold path of the work table (issue 22's cold generate task): the parameter checks remembered per parameter
set (``LayerKind.check``) give what a fresh check gives, for every value's type, and tables built cold equal the
layer-by-layer expansion."""

from __future__ import annotations

import math

import pytest

from explorer.core.workload import layer_memo
from explorer.core.workload.layers import REGISTRY, LayerKind, Param, ParamError
from explorer.core.workload.layers import base as layer_base


def _kind() -> LayerKind:
    return LayerKind("test_cold_kind", "other", (Param("n", int, 2), Param("x", float, 1.0, minimum=None),
                                                  Param("flag", bool, False)), lambda p, s, c, n: (s, []))


def test_a_bool_is_not_a_number_after_a_number_passed():
    kind = _kind()
    assert kind.check({"n": 1}, "a") == {"n": 1, "x": 1.0, "flag": False}
    with pytest.raises(ParamError, match=r"^b\.n: expected a number, got True$"):
        kind.check({"n": True}, "b")  # True == 1 and hash(True) == hash(1): the memo must not answer
    assert kind.check({"flag": False}, "c")["flag"] is False
    with pytest.raises(ParamError, match=r"^d\.flag: expected true or false, got 0$"):
        kind.check({"flag": 0}, "d")


def test_value_types_and_the_sign_of_zero_kept():
    kind = _kind()
    assert type(kind.check({"x": 2}, "a")["x"]) is int  # a float parameter keeps the number as given
    assert type(kind.check({"x": 2.0}, "a")["x"]) is float
    assert type(kind.check({"n": 3.0}, "a")["n"]) is int  # a whole float becomes an int
    assert math.copysign(1.0, kind.check({"x": 0.0}, "a")["x"]) == 1.0
    assert math.copysign(1.0, kind.check({"x": -0.0}, "a")["x"]) == -1.0
    assert math.copysign(1.0, kind.check({"x": 0.0}, "a")["x"]) == 1.0


def test_errors_name_each_callers_place_and_results_are_fresh_dicts():
    dense = REGISTRY["dense"]
    raw = {"in_features": 8, "out_features": 4}
    first = dense.check(raw, "one")
    first["in_features"] = -5  # a caller changing its dict does not change the next answer
    assert dense.check(raw, "two") == {**first, "in_features": 8}
    for where in ("l1", "l2"):
        with pytest.raises(ParamError, match=rf"^{where}\.in_features: must be at least 1, got 0$"):
            dense.check({"in_features": 0, "out_features": 4}, where)


def test_unhashable_values_checked_without_the_memo():
    kind = _kind()
    with pytest.raises(ParamError, match=r"^a\.n: expected a number, got \[1\]$"):
        kind.check({"n": [1]}, "a")
    kept = len(layer_base._CHECKED)
    assert kind.check({"n": 4, "input_shape": [8, 2]}, "b") == {"n": 4, "x": 1.0, "flag": False}
    assert len(layer_base._CHECKED) == kept  # passed, but a list cannot be a key: not kept


def test_memo_emptied_with_the_work_tables():
    _kind().check({"n": 7}, "a")
    assert layer_base._CHECKED
    layer_memo.clear()
    assert not layer_base._CHECKED


def test_decode_contexts_equal_constructed_ones():
    from explorer.core.analysis.generate import _with_lengths
    from explorer.core.workload.layers import Context

    first = Context(batch=3, seq_len=9, phase="decode", attention="fused", lm_head="all")
    made = _with_lengths(first, range(10, 14))
    want = [Context(batch=3, seq_len=s, phase="decode", attention="fused", lm_head="all") for s in range(10, 14)]
    assert made == want and [hash(c) for c in made] == [hash(c) for c in want]
    assert all(type(c) is Context for c in made) and first.seq_len == 9
    with pytest.raises(AttributeError):  # still frozen
        made[0].seq_len = 1
    assert {made[1]: 1}[want[1]] == 1


def test_memo_bounded():
    kind = _kind()
    for n in range(1, layer_base.MAX_CHECKED + 50):
        assert kind.check({"n": n}, "a")["n"] == n
    assert 0 < len(layer_base._CHECKED) <= layer_base.MAX_CHECKED


def test_two_kinds_of_one_name_keep_their_own_schemas():
    a = _kind()
    b = LayerKind("test_cold_kind", "other", (Param("n", int, 2, minimum=5),), lambda p, s, c, n: (s, []))
    assert a.check({"n": 3}, "a") == {"n": 3, "x": 1.0, "flag": False}
    with pytest.raises(ParamError, match=r"^b\.n: must be at least 5, got 3$"):
        b.check({"n": 3}, "b")
