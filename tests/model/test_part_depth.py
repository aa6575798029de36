"""Parts nest in parts through tool responses' ``content``. How deeply is checked when a tool response is
built, counting every level its JSON will have (free-form JSON included): the model accepts exactly the
parts a snapshot can hold within the depth the wire decoder reads, so the JSON of anything the model
accepts decodes, and no encoder or store walks a value deep enough to exhaust the stack."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genkit_sessions import GenkitError, SessionSnapshot, SessionState, from_wire, to_wire
from genkit_sessions.model.types import MAX_PART_DEPTH, Artifact, Message, TextPart, ToolResponse, ToolResponsePart
from genkit_sessions.model.wire import MAX_WIRE_DEPTH

STAMP = "2026-01-01T00:00:00Z"


def _nested(levels: int, inner: Any = None) -> Any:
    part: Any = inner if inner is not None else TextPart("x")
    for _ in range(levels):
        part = ToolResponsePart(ToolResponse(name="t", content=(part,)))
    return part


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _snapshot(part: Any) -> SessionSnapshot:
    message = Message("tool", (part,))
    state = SessionState(messages=[message], artifacts=[Artifact((part,))])
    return SessionSnapshot("s", session_id="sess", created_at=STAMP, state=state)


def _deepest_accepted(inner: Any = None) -> int:
    levels = 0
    while True:
        try:
            _nested(levels + 1, inner)
        except GenkitError:
            return levels
        levels += 1


def test_the_deepest_part_the_model_accepts_fills_a_snapshot_to_the_wire_limit_and_reads_back() -> None:
    part = _nested(_deepest_accepted())
    wire = to_wire(_snapshot(part))
    assert MAX_WIRE_DEPTH - 2 <= _depth(wire) <= MAX_WIRE_DEPTH
    assert from_wire(SessionSnapshot, json.dumps(wire)) == _snapshot(part)


def test_a_part_nested_one_level_too_deep_is_refused_naming_the_field_and_the_limit() -> None:
    with pytest.raises(GenkitError) as caught:
        _nested(_deepest_accepted() + 1)
    assert caught.value.status == "INVALID_ARGUMENT" and caught.value.reason == "INVALID_INPUT"
    assert "ToolResponse.content" in caught.value.message and str(MAX_PART_DEPTH) in caught.value.message


def test_deep_free_form_json_in_the_innermost_part_counts_towards_the_depth() -> None:
    deep: Any = 1
    for _ in range(60):
        deep = {"k": deep}
    inner = TextPart("x", metadata=deep)
    assert _deepest_accepted(inner) < _deepest_accepted()
    part = _nested(_deepest_accepted(inner), inner)
    assert from_wire(SessionSnapshot, to_wire(_snapshot(part))) == _snapshot(part)


def test_four_hundred_levels_are_refused_when_built_not_by_a_recursion_error() -> None:
    with pytest.raises(GenkitError):
        _nested(400)


def test_from_wire_refuses_a_message_whose_parts_nest_too_deeply_for_a_snapshot() -> None:
    content: Any = [{"text": "x"}]
    for _ in range(41):
        content = [{"toolResponse": {"name": "t", "content": content}}]
    with pytest.raises(GenkitError) as caught:
        from_wire(Message, {"role": "tool", "content": content})
    assert caught.value.status == "INVALID_ARGUMENT" and "content" in caught.value.message


@given(st.integers(min_value=0, max_value=45), st.integers(min_value=0, max_value=64))
def test_any_nesting_is_refused_when_built_or_its_snapshot_json_decodes(levels: int, json_depth: int) -> None:
    deep: Any = 1
    for _ in range(json_depth):
        deep = [deep]
    try:
        part = _nested(levels, TextPart("x", custom=deep))
    except GenkitError as error:
        assert error.status == "INVALID_ARGUMENT"
        return
    snapshot = _snapshot(part)
    assert from_wire(SessionSnapshot, json.dumps(to_wire(snapshot))) == snapshot
