"""``strict_equal`` is JSON equality: two values are equal exactly when they encode to the same JSON text
(key order aside), so it tells apart what Python's ``==`` confuses (1, 1.0, True; 0.0 and -0.0)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from genkit_sessions.model.frozen_json import freeze, strict_equal

_scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.0, -0.0, 1.0, 2.5, -1.0])
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
    max_leaves=12,
)


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


@given(_json, _json)
def test_strict_equal_agrees_with_equality_of_json_text(a: Any, b: Any) -> None:
    assert strict_equal(a, b) == (_text(a) == _text(b))


@given(_json)
def test_a_frozen_value_is_strictly_equal_to_the_plain_value_it_came_from(value: Any) -> None:
    assert strict_equal(freeze(value), value)


def test_strict_equal_tells_apart_what_python_equality_confuses() -> None:
    assert not strict_equal(1, True)
    assert not strict_equal(1, 1.0)
    assert not strict_equal(0.0, -0.0)
    assert not strict_equal({"a": [0]}, {"a": [False]})
    assert strict_equal({"a": [1, {"b": None}]}, {"a": (1, {"b": None})})
