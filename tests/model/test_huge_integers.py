"""Integers with more digits than JSON text can carry (Python's 4,300-digit limit on int/str conversion)
are refused when a model object is built, INVALID_ARGUMENT naming the path, so every store refuses them
alike instead of one keeping them and another failing to save or export them."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genkit_sessions import GenkitError, SessionSnapshot, SessionState, from_wire, to_wire
from genkit_sessions.model.frozen_json import MAX_INT_DIGITS, freeze
from genkit_sessions.model.types import DataPart, Message, ToolRequest

LARGEST = 10**MAX_INT_DIGITS - 1


@pytest.mark.parametrize("huge", [10**MAX_INT_DIGITS, -(10**MAX_INT_DIGITS), 10**5000], ids=["limit", "neg", "5000"])
def test_state_holding_an_integer_over_the_digit_limit_is_refused_naming_its_path(huge: int) -> None:
    with pytest.raises(GenkitError) as caught:
        SessionState(custom={"n": [1, huge]})
    assert caught.value.status == "INVALID_ARGUMENT" and caught.value.reason == "INVALID_INPUT"
    assert "custom.n[1]" in caught.value.message and "store it as a string" in caught.value.message


def test_a_bare_huge_integer_is_refused_where_free_form_json_is_taken() -> None:
    with pytest.raises(GenkitError, match="digits"):
        ToolRequest(name="t", input=10**5000)
    with pytest.raises(GenkitError, match="digits"):
        DataPart(data=-(10**5000))
    with pytest.raises(GenkitError, match="digits"):
        freeze(10**MAX_INT_DIGITS)


def test_from_wire_refuses_parsed_data_holding_a_huge_integer() -> None:
    with pytest.raises(GenkitError) as caught:
        from_wire(Message, {"role": "user", "content": [{"data": {"n": 10**5000}}]})
    assert caught.value.status == "INVALID_ARGUMENT" and "digits" in caught.value.message


@given(st.integers(min_value=-LARGEST, max_value=LARGEST) | st.sampled_from([LARGEST, -LARGEST]))
def test_every_integer_the_model_accepts_round_trips_through_json_text(n: int) -> None:
    snapshot = SessionSnapshot("s", created_at="2026-01-01T00:00:00Z", state=SessionState(custom={"n": n}))
    text = json.dumps(to_wire(snapshot))
    assert from_wire(SessionSnapshot, text).state.custom["n"] == n
