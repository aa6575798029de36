"""Ids (contract section 4) and frozen JSON values, including property-based round trips."""

from __future__ import annotations

import copy
import json
import pickle
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genkit_sessions import FrozenDict, GenkitError, mint_id, thaw
from genkit_sessions.errors import Reason
from genkit_sessions.model import freeze, validate_id
from genkit_sessions.model.ids import MAX_ID_BYTES, id_problem

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


def test_minted_ids_are_uuid4_strings_and_valid() -> None:
    ids = {mint_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", i) for i in ids)
    assert all(id_problem(i) is None for i in ids)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")), min_size=1))
def test_ids_without_control_characters_are_valid_exactly_when_short_and_not_blank(value: str) -> None:
    ok = value.strip() != "" and len(value.encode("utf-8")) <= MAX_ID_BYTES
    assert (id_problem(value) is None) == ok


@given(st.text(), st.characters(whitelist_categories=("Cc",)), st.text())
def test_any_control_character_makes_an_id_invalid(head: str, control: str, tail: str) -> None:
    assert id_problem(head + control + tail) is not None


def test_validate_id_raises_invalid_argument_naming_the_field_and_the_limit() -> None:
    with pytest.raises(GenkitError) as caught:
        validate_id("x" * 600, "sessionId", Reason.INVALID_SESSION_ID)
    assert caught.value.status == "INVALID_ARGUMENT" and caught.value.reason == "INVALID_SESSION_ID"
    assert "sessionId" in caught.value.message and "512" in caught.value.message
    with pytest.raises(GenkitError):
        validate_id(17, "snapshotId", Reason.INVALID_SNAPSHOT_ID)


@given(json_values)
def test_freeze_then_thaw_gives_back_equal_json(value: Any) -> None:
    frozen = freeze(value)
    assert thaw(frozen) == value
    assert json.loads(json.dumps(frozen)) == json.loads(json.dumps(value))
    hash(frozen)


@given(json_values)
def test_frozen_values_survive_copy_and_pickle(value: Any) -> None:
    frozen = freeze(value)
    assert copy.deepcopy(frozen) == frozen
    assert pickle.loads(pickle.dumps(frozen)) == frozen


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.__setitem__("a", 2),
        lambda d: d.__delitem__("a"),
        lambda d: d.update(a=2),
        lambda d: d.pop("a"),
        lambda d: d.popitem(),
        lambda d: d.clear(),
        lambda d: d.setdefault("b", 1),
    ],
    ids=["setitem", "delitem", "update", "pop", "popitem", "clear", "setdefault"],
)
def test_frozen_dict_refuses_every_mutation(mutate: Any) -> None:
    frozen = FrozenDict({"a": 1})
    with pytest.raises(TypeError, match="immutable"):
        mutate(frozen)
    assert frozen == {"a": 1}


def test_freeze_copies_so_the_original_can_change_without_effect() -> None:
    original = {"a": [1, {"b": 2}]}
    frozen = freeze(original)
    original["a"][1]["b"] = 3  # type: ignore[index]
    assert frozen == {"a": (1, {"b": 2})}


@pytest.mark.parametrize("value", ["\ud800", "a\udfffb", "\ud800" * 300])
def test_a_lone_surrogate_makes_an_id_invalid(value: str) -> None:
    assert "lone surrogate" in (id_problem(value) or "")


def _id_rules(value: str) -> bool:
    """The id rules of contract section 4, written out plainly: the reference the fast check must agree with."""
    return (
        bool(value.strip())
        and not any(0xD800 <= ord(c) <= 0xDFFF for c in value)
        and len(value.encode("utf-8", "surrogatepass")) <= MAX_ID_BYTES
        and not any(ord(c) <= 0x1F or 0x7F <= ord(c) <= 0x9F for c in value)
    )


@given(
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x7F), max_size=600)
    | st.text(max_size=40)
    | st.sampled_from(["", " ", "  a", "a" * 512, "a" * 513, " " * 3, "\t", "é" * 257, "\x7f", "ok id"])
)
def test_the_fast_ascii_check_agrees_with_the_full_id_rules(value: str) -> None:
    assert (id_problem(value) is None) == _id_rules(value)
