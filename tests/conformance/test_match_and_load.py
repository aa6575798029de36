"""Properties of the matcher and the case loader: the two places the runner parses and compares."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from genkit_sessions_conformance.cases import expand, parse_case_file
from genkit_sessions_conformance.match import Mismatch, match

keys = st.text(min_size=1, max_size=8).filter(lambda k: not k.startswith("$"))
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_every_value_matches_itself_as_a_pattern(value: Any) -> None:
    match(value, value)
    match(value, {"$exact": value})


@given(st.dictionaries(keys, json_values, max_size=4), keys, json_values)
def test_objects_match_as_subsets_but_not_exactly(value: dict[str, Any], extra: str, extra_value: Any) -> None:
    assume(extra not in value)
    wider = {**value, extra: extra_value}
    match(wider, value)
    with pytest.raises(Mismatch):
        match(wider, {"$exact": value})


@given(st.dictionaries(keys, st.integers(), min_size=1, max_size=4))
def test_a_changed_leaf_is_reported_at_its_path(value: dict[str, int]) -> None:
    key = sorted(value)[0]
    changed = {**value, key: value[key] + 1}
    with pytest.raises(Mismatch) as raised:
        match(changed, value)
    assert raised.value.path == f"$.{key}"


@given(st.lists(st.integers(), max_size=5), st.integers())
def test_arrays_must_have_the_same_length(items: list[int], more: int) -> None:
    with pytest.raises(Mismatch):
        match([*items, more], items)


@given(json_values.filter(lambda v: v is not None))
def test_a_captured_value_is_the_same_later(value: Any) -> None:
    captures: dict[str, Any] = {}
    match({"v": value}, {"v": {"$capture": "x"}}, captures)
    match({"w": copy.deepcopy(value)}, {"w": {"$same": "x"}}, captures)


def test_booleans_are_not_numbers_and_numbers_compare_by_value() -> None:
    match(1.0, 1)
    with pytest.raises(Mismatch):
        match(1, True)
    with pytest.raises(Mismatch):
        match(0, False)


@pytest.mark.parametrize(
    ("actual", "pattern"),
    [
        ("5b8e2c1a-3f4d-4e6a-9b7c-0d1e2f3a4b5c", {"$uuid": True}),
        ("2026-11-29T23:06:05.123456Z", {"$timestamp": True}),
        ("2026-11-29T23:06:05+01:00", {"$timestamp": True}),
        ("a needle here", {"$contains": "needle"}),
        ([1, 2, 3], {"$length": 3}),
    ],
)
def test_tokens_accept_what_they_describe(actual: Any, pattern: Any) -> None:
    match(actual, pattern)


@pytest.mark.parametrize(
    ("actual", "pattern"),
    [
        ("5b8e2c1a-3f4d-1e6a-9b7c-0d1e2f3a4b5c", {"$uuid": True}),
        ("yesterday", {"$timestamp": True}),
        ("haystack", {"$contains": "needle"}),
        ("x", {"$absent": True}),
    ],
)
def test_tokens_refuse_what_they_do_not_describe(actual: Any, pattern: Any) -> None:
    with pytest.raises(Mismatch):
        match(actual, pattern)


def test_absent_matches_a_missing_key_and_not_before_orders_timestamps() -> None:
    match({}, {"k": {"$absent": True}})
    captures = {"t": "2026-01-01T00:00:00Z"}
    match("2026-01-01T00:00:00.000001Z", {"$notBefore": "t"}, captures)
    with pytest.raises(Mismatch):
        match("2025-12-31T23:59:59Z", {"$notBefore": "t"}, captures)


@given(json_values)
def test_expand_leaves_values_without_repeat_unchanged(value: Any) -> None:
    assert expand(value) == value


@given(st.text(max_size=3), st.integers(min_value=0, max_value=600), st.lists(keys, max_size=3))
def test_expand_replaces_repeat_at_any_depth(text: str, count: int, path: list[str]) -> None:
    nested: Any = {"$repeat": [text, count]}
    expected: Any = text * count
    for key in reversed(path):
        nested, expected = {key: [nested]}, {key: [expected]}
    assert expand(nested) == expected


@given(st.lists(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,10}", fullmatch=True), unique=True, max_size=8))
def test_parsed_case_files_keep_every_case_in_order(ids: list[str]) -> None:
    document = {"area": "a", "cases": [{"id": i, "rule": "S1", "description": "d", "steps": []} for i in ids]}
    assert [c.id for c in parse_case_file(document)] == ids


@pytest.mark.parametrize("token", [{"$any": True}, {"$capture": "x"}], ids=["any", "capture"])
@pytest.mark.parametrize("actual", [{}, {"v": None}], ids=["missing", "null"])
def test_a_present_value_pattern_does_not_match_a_missing_or_null_value(token: dict[str, Any], actual: Any) -> None:
    with pytest.raises(Mismatch) as raised:
        match(actual, {"v": token})
    assert raised.value.path == "$.v"


@given(json_values.filter(lambda v: v is not None))
def test_any_matches_every_non_null_value(value: Any) -> None:
    match({"v": value}, {"v": {"$any": True}})
