"""``extra`` holds only wire keys the model does not know. A known key there (``parentId``, ``messages``,
``role``...), a near miss of one, or, on a part, another part kind, is refused when the object is built,
INVALID_ARGUMENT naming the key and the field to set instead: otherwise the object's JSON would say what
the object does not, and stores acting on the object would disagree with stores keeping its JSON."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from genkit_sessions import GenkitError, SessionSnapshot, SessionState, from_wire, to_wire
from genkit_sessions.model.types import (
    Artifact,
    CustomPart,
    DataPart,
    ErrorInfo,
    Media,
    MediaPart,
    Message,
    ReasoningPart,
    Resource,
    ResourcePart,
    TextPart,
    ToolRequest,
    ToolRequestPart,
    ToolResponse,
    ToolResponsePart,
    UnknownPart,
)

STAMP = "2026-01-01T00:00:00Z"

# One valid instance of every class with ``extra``, built from its required fields.
SAMPLES: dict[type, dict[str, Any]] = {
    Media: {"url": "https://x"},
    ToolRequest: {"name": "t"},
    ToolResponse: {"name": "t"},
    Resource: {"uri": "file:///x"},
    TextPart: {"text": "x"},
    MediaPart: {"media": Media("https://x")},
    ToolRequestPart: {"tool_request": ToolRequest("t")},
    ToolResponsePart: {"tool_response": ToolResponse("t")},
    DataPart: {"data": 1},
    CustomPart: {"custom": {"a": 1}},
    ReasoningPart: {"reasoning": "x"},
    ResourcePart: {"resource": Resource("file:///x")},
    Message: {"role": "user", "content": ()},
    Artifact: {"parts": ()},
    SessionState: {},
    ErrorInfo: {"message": "m"},
    SessionSnapshot: {"snapshot_id": "s", "created_at": STAMP},
}

KNOWN_KEYS = [
    (cls, "".join(w if i == 0 else w.title() for i, w in enumerate(f.name.split("_"))))
    for cls in SAMPLES
    for f in attrs.fields(cls)
    if f.name != "extra"
]


def test_every_class_with_extra_has_a_sample() -> None:
    import genkit_sessions.model.types as types

    with_extra = {c for c in vars(types).values() if attrs.has(c) and any(f.name == "extra" for f in attrs.fields(c))}
    assert with_extra == set(SAMPLES)


@pytest.mark.parametrize(("cls", "key"), KNOWN_KEYS, ids=[f"{c.__name__}.{k}" for c, k in KNOWN_KEYS])
def test_a_known_key_in_extra_is_refused_naming_the_field_to_set(cls: type, key: str) -> None:
    with pytest.raises(GenkitError) as caught:
        cls(**SAMPLES[cls], extra={key: "x"})
    assert caught.value.status == "INVALID_ARGUMENT" and caught.value.reason == "INVALID_INPUT"
    assert repr(key) in caught.value.message and "set the field" in caught.value.message


def test_the_reproduced_snapshot_with_a_parent_and_messages_in_extra_is_refused() -> None:
    with pytest.raises(GenkitError, match="'parentId'"):
        SessionSnapshot("s1", session_id="sess", extra={"parentId": "ghost"})
    with pytest.raises(GenkitError, match="'messages'"):
        SessionState(extra={"messages": [{"role": "user", "content": [{"text": "hi"}]}]})


def test_a_near_miss_of_a_known_key_in_extra_is_refused_as_the_decoder_refuses_it() -> None:
    with pytest.raises(GenkitError, match="looks like the key 'sessionId'"):
        SessionSnapshot("s", created_at=STAMP, extra={"sessionID": "x"})
    with pytest.raises(GenkitError):
        from_wire(SessionSnapshot, {"snapshotId": "s", "createdAt": STAMP, "sessionID": "x"})


@pytest.mark.parametrize("kind", ["media", "toolRequest", "data", "reasoning"])
def test_a_part_holding_another_part_kind_in_extra_is_refused(kind: str) -> None:
    with pytest.raises(GenkitError, match="exactly one kind"):
        TextPart("x", extra={kind: {"url": "https://x"}})


def test_a_part_may_hold_another_kind_as_null_as_decoded_json_does() -> None:
    part = from_wire(Message, {"role": "user", "content": [{"text": "hi", "media": None}]}).content[0]
    assert part == TextPart("hi", extra={"media": None})
    assert to_wire(part) == {"text": "hi", "media": None}


def test_a_root_keeps_the_empty_parent_id_genkit_python_writes() -> None:
    wire = {"snapshotId": "s", "createdAt": STAMP, "parentId": ""}
    snapshot = from_wire(SessionSnapshot, wire)
    assert snapshot.parent_id is None and to_wire(snapshot) == wire
    assert SessionSnapshot("s", created_at=STAMP, extra={"parentId": ""}) == snapshot


@pytest.mark.parametrize("fields", [{"text": "x"}, {"custom": {}}, {"Text": "x"}, {"tool_request": {}}])
def test_an_unknown_part_holding_a_known_kind_or_a_near_miss_is_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(GenkitError) as caught:
        UnknownPart(fields)
    assert caught.value.status == "INVALID_ARGUMENT"


_unknown_keys = st.text(st.sampled_from("xyz-K"), min_size=1, max_size=4)
_values = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3)


@given(
    st.sampled_from(sorted(SAMPLES, key=lambda c: c.__name__)),
    st.dictionaries(st.sampled_from([k for _, k in KNOWN_KEYS]) | _unknown_keys, _values, max_size=3),
)
def test_an_object_built_with_any_extra_is_refused_or_its_json_decodes_to_it(cls: type, extra: dict[str, Any]) -> None:
    try:
        obj = cls(**SAMPLES[cls], extra=extra)
    except GenkitError as error:
        assert error.status == "INVALID_ARGUMENT"
        return
    assert from_wire(cls, to_wire(obj)) == obj
