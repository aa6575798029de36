"""The wire format on its own: lossless round trips, unknown keys, nulls, strict typing, error paths.

The strategies here generate Genkit-shaped JSON (camelCase, every part kind,
free-form JSON where Genkit allows any) and are shared with the Genkit
interop tests.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genkit_sessions import (
    AgentInit,
    CustomPart,
    DataPart,
    ErrorInfo,
    FinishReason,
    FrozenDict,
    GenkitError,
    InMemorySessionStore,
    MediaPart,
    Message,
    Role,
    SessionResolver,
    SessionSnapshot,
    SessionState,
    SnapshotStatus,
    TextPart,
    ToolRequestPart,
    ToolResponsePart,
    UnknownPart,
    from_wire,
    to_wire,
)
from genkit_sessions.model.wire import messages_from_wire

# --- strategies ---------------------------------------------------------------------------------

SNAPSHOT_STATUSES = [s.value for s in SnapshotStatus]
FINISH_REASONS = [r.value for r in FinishReason]
ROLES = [r.value for r in Role]

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
"""Any JSON value, nulls included (free-form JSON keeps them verbatim)."""
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=3)
present_json = json_values.filter(lambda v: v is not None)
"""A JSON value for a known key: null there means absent, so it is never generated."""
short_text = st.text(max_size=10)
ids = st.text(min_size=1, max_size=12)
timestamps = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 1, 1)).map(
    lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
)
unknown_keys = st.text(min_size=1, max_size=6).map(lambda k: "x-" + k)
"""Keys no Genkit type defines."""


@st.composite
def with_optional(draw: st.DrawFn, required: dict[str, Any], optional: dict[str, st.SearchStrategy[Any]]) -> dict:
    """An object with the required keys and a random subset of the optional ones."""
    obj = dict(required)
    for key, strategy in optional.items():
        if draw(st.booleans()):
            obj[key] = draw(strategy)
    return obj


@st.composite
def with_unknown(draw: st.DrawFn, obj: dict[str, Any], unknown: bool) -> dict[str, Any]:
    """``obj`` plus, when ``unknown``, up to two keys no Genkit type knows (values may be null)."""
    if unknown:
        for key in draw(st.lists(unknown_keys, max_size=2, unique=True)):
            obj[key] = draw(json_values)
    return obj


def parts(unknown: bool, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """One Genkit part of any kind, with optional metadata and a custom rider (a tool response's
    ``content`` holds parts in turn, one level deep)."""

    def part(kind: str, payload: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
        riders: dict[str, st.SearchStrategy[Any]] = {"metadata": json_objects}
        if kind != "custom":
            riders["custom"] = json_objects
        return (
            st.builds(lambda p: {kind: p}, payload)
            .flatmap(lambda req: with_optional(req, riders))
            .flatmap(lambda obj: with_unknown(obj, unknown))
        )

    media = st.builds(lambda url: {"url": url}, short_text).flatmap(
        lambda req: with_optional(req, {"contentType": short_text})
    )
    tool_request = st.builds(lambda n: {"name": n}, short_text).flatmap(
        lambda req: with_optional(req, {"ref": short_text, "input": present_json, "partial": st.booleans()})
    )
    inner = parts(unknown, depth + 1) if depth < 1 else st.builds(lambda t: {"text": t}, short_text)
    content = st.lists(inner, max_size=2)
    tool_response = st.builds(lambda n: {"name": n}, short_text).flatmap(
        lambda req: with_optional(req, {"ref": short_text, "output": present_json, "content": content})
    )
    resource = st.builds(lambda uri: {"uri": uri}, short_text)
    if unknown:
        media, tool_request, tool_response, resource = (
            s.flatmap(lambda obj: with_unknown(obj, True)) for s in (media, tool_request, tool_response, resource)
        )
    kinds = [
        part("text", short_text),
        part("media", media),
        part("toolRequest", tool_request),
        part("toolResponse", tool_response),
        part("data", present_json),
        part("custom", json_objects),
        part("reasoning", short_text),
        part("resource", resource),
    ]
    if unknown:
        # A part of a kind this version does not know, or no kind at all.
        kinds.append(st.dictionaries(unknown_keys, json_values, max_size=2))
        kinds.append(st.builds(lambda m: {"metadata": m}, json_objects))
    return st.one_of(kinds)


any_roles = st.sampled_from(ROLES) | st.text(max_size=8)
"""A message role: Genkit defines four and accepts any string."""


def messages(unknown: bool) -> st.SearchStrategy[dict[str, Any]]:
    """A Genkit message."""
    return (
        st.builds(
            lambda role, content: {"role": role, "content": content},
            any_roles,
            st.lists(parts(unknown), max_size=3),
        )
        .flatmap(lambda req: with_optional(req, {"metadata": json_objects}))
        .flatmap(lambda obj: with_unknown(obj, unknown))
    )


def artifacts(unknown: bool) -> st.SearchStrategy[dict[str, Any]]:
    """A Genkit artifact."""
    return (
        st.builds(lambda p: {"parts": p}, st.lists(parts(unknown), max_size=2))
        .flatmap(lambda req: with_optional(req, {"name": short_text, "metadata": json_objects}))
        .flatmap(lambda obj: with_unknown(obj, unknown))
    )


def states(unknown: bool) -> st.SearchStrategy[dict[str, Any]]:
    """A Genkit SessionState."""
    optional = {
        "sessionId": ids,
        "messages": st.lists(messages(unknown), max_size=3),
        "custom": present_json,
        "artifacts": st.lists(artifacts(unknown), max_size=2),
    }
    return with_optional({}, optional).flatmap(lambda obj: with_unknown(obj, unknown))


def errors(unknown: bool) -> st.SearchStrategy[dict[str, Any]]:
    """A Genkit error payload (status is optional in Genkit's schema)."""
    return (
        st.builds(lambda m: {"message": m}, short_text)
        .flatmap(
            lambda req: with_optional(
                req, {"status": st.sampled_from(["INTERNAL", "ABORTED"]), "details": present_json}
            )
        )
        .flatmap(lambda obj: with_unknown(obj, unknown))
    )


def snapshots(unknown: bool) -> st.SearchStrategy[dict[str, Any]]:
    """A Genkit SessionSnapshot, with unknown keys at every level when ``unknown``."""
    optional = {
        "sessionId": ids,
        "parentId": ids | st.just(""),
        "updatedAt": timestamps,
        "heartbeatAt": timestamps,
        "status": st.sampled_from(SNAPSHOT_STATUSES),
        "finishReason": st.sampled_from(FINISH_REASONS),
        "error": errors(unknown),
        "state": states(unknown),
    }
    return (
        st.builds(lambda i, t: {"snapshotId": i, "createdAt": t}, ids, timestamps)
        .flatmap(lambda req: with_optional(req, optional))
        .flatmap(lambda obj: with_unknown(obj, unknown))
    )


def same_json(left: Any, right: Any) -> bool:
    """Equal as JSON text, so ``true`` is not ``1`` and ``1.0`` is not ``1``."""
    return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)


def invalid(call: Any) -> GenkitError:
    """Run ``call`` and return the GenkitError it must raise."""
    with pytest.raises(GenkitError) as info:
        call()
    return info.value


FULL_SNAPSHOT: dict[str, Any] = {
    "snapshotId": "snap-2",
    "sessionId": "sess-1",
    "parentId": "snap-1",
    "createdAt": "2026-11-29T10:00:00.000001Z",
    "updatedAt": "2026-11-29T10:00:01.000000Z",
    "heartbeatAt": "2026-11-29T10:00:00.500000+00:00",
    "status": "failed",
    "finishReason": "failed",
    "error": {"status": "INTERNAL", "message": "model crashed", "details": {"retry": False}},
    "state": {
        "sessionId": "sess-1",
        "messages": [
            {"role": "system", "content": [{"text": "be brief"}]},
            {
                "role": "model",
                "content": [
                    {"text": "hi", "metadata": {"lang": "en"}},
                    {"media": {"url": "data:image/png;base64,AAAA", "contentType": "image/png"}},
                    {"toolRequest": {"ref": "1", "name": "weather", "input": {"city": "Oslo"}}},
                    {"toolResponse": {"ref": "1", "name": "weather", "output": {"temp": -3.5}}},
                    {"data": [1, "two", None, {"three": 3}]},
                    {"custom": {"vendor": "x"}},
                    {"reasoning": "think first"},
                    {"resource": {"uri": "file:///notes.txt"}},
                ],
                "metadata": {"usage": {"tokens": 12}},
            },
        ],
        "custom": {"cart": ["apple"], "count": 2, "nothing": None},
        "artifacts": [{"name": "report", "parts": [{"text": "# Report"}], "metadata": {"v": 1}}],
    },
}


# --- round trips ----------------------------------------------------------------------------------


def test_a_snapshot_using_every_field_and_part_kind_round_trips_exactly() -> None:
    snapshot = from_wire(SessionSnapshot, FULL_SNAPSHOT)
    assert same_json(to_wire(snapshot), FULL_SNAPSHOT)
    assert snapshot.status is SnapshotStatus.FAILED and snapshot.finish_reason is FinishReason.FAILED
    kinds = [type(p).__name__ for p in snapshot.state.messages[1].content]  # type: ignore[union-attr,index]
    assert kinds == [
        "TextPart",
        "MediaPart",
        "ToolRequestPart",
        "ToolResponsePart",
        "DataPart",
        "CustomPart",
        "ReasoningPart",
        "ResourcePart",
    ]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots(unknown=True))
def test_any_genkit_snapshot_json_round_trips_exactly_including_unknown_keys(data: dict[str, Any]) -> None:
    assert same_json(to_wire(from_wire(SessionSnapshot, data)), data)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots(unknown=True))
def test_decoding_json_text_equals_decoding_the_parsed_value(data: dict[str, Any]) -> None:
    text = json.dumps(data)
    decoded = from_wire(SessionSnapshot, data)
    assert from_wire(SessionSnapshot, text) == decoded
    assert from_wire(SessionSnapshot, text.encode("utf-8")) == decoded


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(states(unknown=True))
def test_any_session_state_json_round_trips_exactly(data: dict[str, Any]) -> None:
    assert same_json(to_wire(from_wire(SessionState, data)), data)


@given(st.builds(AgentInit, session_id=st.none() | ids, snapshot_id=st.none() | ids))
def test_agent_init_round_trips_through_the_wire(init: AgentInit) -> None:
    wire = to_wire(init)
    assert set(wire) <= {"sessionId", "snapshotId"}
    assert from_wire(AgentInit, wire) == init


def test_agent_init_carries_client_state_on_the_wire() -> None:
    wire = {"sessionId": "s", "state": {"sessionId": "s", "messages": [{"role": "user", "content": [{"text": "x"}]}]}}
    init = from_wire(AgentInit, wire)
    assert init.state is not None and init.state.message_list[0].text == "x"
    assert same_json(to_wire(init), wire)


def test_to_wire_returns_plain_mutable_json_detached_from_the_object() -> None:
    snapshot = from_wire(SessionSnapshot, FULL_SNAPSHOT)
    wire = to_wire(snapshot)
    assert type(wire["state"]["custom"]) is dict and type(wire["state"]["messages"]) is list
    wire["state"]["custom"]["cart"].append("pear")
    assert snapshot.state.custom["cart"] == ("apple",)  # type: ignore[union-attr]


def test_decoded_objects_do_not_change_when_the_input_json_does() -> None:
    data = json.loads(json.dumps(FULL_SNAPSHOT))
    snapshot = from_wire(SessionSnapshot, data)
    data["state"]["custom"]["cart"].append("pear")
    data["state"]["messages"][0]["content"][0]["text"] = "changed"
    assert snapshot.state.custom["cart"] == ("apple",)  # type: ignore[union-attr]
    assert snapshot.state.messages[0].text == "be brief"  # type: ignore[union-attr,index]
    assert isinstance(snapshot.state.custom, FrozenDict)  # type: ignore[union-attr]
    with pytest.raises(TypeError):
        snapshot.state.custom["count"] = 3  # type: ignore[union-attr,index]


# --- unknown keys ---------------------------------------------------------------------------------


def test_unknown_keys_are_kept_at_every_level() -> None:
    data = {
        "snapshotId": "a",
        "createdAt": "2026-11-29T00:00:00Z",
        "x-snapshot": 1,
        "error": {"status": "INTERNAL", "message": "m", "x-error": [1]},
        "state": {
            "x-state": {"deep": None},
            "messages": [
                {
                    "role": "user",
                    "x-message": "m",
                    "content": [
                        {"text": "t", "x-part": True},
                        {"media": {"url": "u", "x-media": 2}},
                        {"toolRequest": {"name": "n", "partial": True}},
                        {"toolResponse": {"name": "n", "content": [{"text": "c"}]}},
                        {"futureKind": {"a": 1}},
                    ],
                }
            ],
            "artifacts": [{"parts": [], "x-artifact": "a"}],
        },
    }
    snapshot = from_wire(SessionSnapshot, data)
    assert snapshot.extra == {"x-snapshot": 1}
    assert snapshot.error is not None and snapshot.error.extra == {"x-error": (1,)}
    state = snapshot.state
    assert state is not None and state.extra == {"x-state": {"deep": None}}
    message = state.message_list[0]
    assert message.extra == {"x-message": "m"}
    assert message.content[0].extra == {"x-part": True}  # type: ignore[union-attr]
    assert message.content[1].media.extra == {"x-media": 2}  # type: ignore[union-attr]
    assert message.content[2].tool_request.extra == {}  # type: ignore[union-attr]
    assert message.content[3].tool_response.extra == {}  # type: ignore[union-attr]
    assert message.content[4] == UnknownPart({"futureKind": {"a": 1}})
    assert state.artifact_list[0].extra == {"x-artifact": "a"}
    assert same_json(to_wire(snapshot), data)


def test_custom_may_ride_on_another_part_kind_and_round_trips() -> None:
    data = {"role": "model", "content": [{"text": "t", "custom": {"sig": "x"}}, {"custom": {"only": 1}}]}
    message = from_wire(Message, data)
    assert isinstance(message.content[0], TextPart) and message.content[0].custom == {"sig": "x"}
    assert message.content[0].extra == {}
    assert isinstance(message.content[1], CustomPart) and message.content[1].custom == {"only": 1}
    assert same_json(to_wire(message), data)


@pytest.mark.parametrize("part", [{}, {"metadata": {"m": 1}}, {"data": None}, {"text": None}])
def test_a_part_without_a_kind_is_kept_verbatim(part: dict[str, Any]) -> None:
    message = from_wire(Message, {"role": "user", "content": [part]})
    assert message.content == (UnknownPart(part),)
    assert to_wire(message)["content"] == [part]


def test_agent_init_rejects_an_unknown_key_instead_of_starting_a_fresh_session() -> None:
    error = invalid(lambda: from_wire(AgentInit, {"sessionID": "s-1"}))
    assert error.status == "INVALID_ARGUMENT" and error.reason == "INVALID_INPUT"
    assert "sessionID" in error.message and "sessionId" in error.message


# --- nulls ----------------------------------------------------------------------------------------


def test_null_for_a_known_key_reads_as_absent_and_is_not_written_back() -> None:
    data = {
        "snapshotId": "a",
        "createdAt": "2026-11-29T00:00:00Z",
        "sessionId": None,
        "parentId": None,
        "status": None,
        "error": None,
        "state": {"sessionId": None, "messages": None, "custom": None},
    }
    snapshot = from_wire(SessionSnapshot, data)
    assert snapshot.session_id is None and snapshot.status is None and snapshot.error is None
    assert snapshot.effective_status is SnapshotStatus.COMPLETED
    assert snapshot.state == SessionState()
    assert to_wire(snapshot) == {"snapshotId": "a", "createdAt": "2026-11-29T00:00:00Z", "state": {}}


def test_null_inside_free_form_json_is_kept() -> None:
    data = {"custom": {"a": None, "list": [None, 1]}, "messages": [{"role": "user", "content": [{"data": [None]}]}]}
    state = from_wire(SessionState, data)
    assert isinstance(state.message_list[0].content[0], DataPart)
    assert same_json(to_wire(state), data)


def test_agent_init_nulls_read_as_absent() -> None:
    assert from_wire(AgentInit, {"sessionId": None, "snapshotId": None, "state": None}) == AgentInit()


def test_an_error_without_a_status_round_trips() -> None:
    error = from_wire(ErrorInfo, {"message": "boom"})
    assert error.status is None and error.message == "boom"
    assert to_wire(error) == {"message": "boom"}


# --- strict typing, with JSON paths ---------------------------------------------------------------


def _snapshot_with_text(value: Any) -> dict[str, Any]:
    return {
        "snapshotId": "a",
        "createdAt": "2026-11-29T00:00:00Z",
        "state": {"messages": [{"role": "user", "content": [{"text": value}]}]},
    }


@pytest.mark.parametrize(("value", "kind"), [(123, "a number"), (True, "a boolean"), (["x"], "an array")])
def test_a_wrongly_typed_text_is_rejected_naming_its_json_path(value: Any, kind: str) -> None:
    error = invalid(lambda: from_wire(SessionSnapshot, _snapshot_with_text(value)))
    assert error.status == "INVALID_ARGUMENT" and error.reason == "INVALID_INPUT"
    assert f"expected a string, got {kind} at $.state.messages[0].content[0].text" in error.message
    assert error.details == {"problems": [f"expected a string, got {kind} at $.state.messages[0].content[0].text"]}


@settings(max_examples=60)
@given(
    st.lists(st.just({"role": "user", "content": [{"text": "ok"}]}), min_size=1, max_size=4),
    st.data(),
    st.integers(min_value=-(10**6), max_value=10**6) | st.booleans() | st.lists(st.text(max_size=2), max_size=2),
)
def test_every_wrongly_typed_text_is_reported_at_its_own_path(
    base: list[dict[str, Any]], data: st.DataObject, bad: Any
) -> None:
    msgs = json.loads(json.dumps(base))
    index = data.draw(st.integers(min_value=0, max_value=len(msgs) - 1))
    msgs[index]["content"].append({"text": bad})
    doc = {"snapshotId": "a", "createdAt": "2026-11-29T00:00:00Z", "state": {"messages": msgs}}
    kind = "a boolean" if type(bad) is bool else "a number" if isinstance(bad, int) else "an array"
    error = invalid(lambda: from_wire(SessionSnapshot, doc))
    assert error.details["problems"] == [f"expected a string, got {kind} at $.state.messages[{index}].content[1].text"]


@pytest.mark.parametrize(
    ("data", "path", "fragment"),
    [
        ({"snapshotId": 7, "createdAt": "2026-11-29T00:00:00Z"}, "$.snapshotId", "expected a string"),
        (
            {"snapshotId": "a", "createdAt": "yesterday"},
            "$.createdAt",
            "'yesterday' is not an ISO-8601 timestamp",
        ),
        (
            {"snapshotId": "a", "createdAt": "2026-11-29T00:00:00Z", "status": "done"},
            "$.status",
            "'done' is not one of",
        ),
        (
            {"snapshotId": "a", "createdAt": "2026-11-29T00:00:00Z", "finishReason": "STOP"},
            "$.finishReason",
            "'STOP' is not one of",
        ),
        (
            {
                "snapshotId": "a",
                "createdAt": "2026-11-29T00:00:00Z",
                "state": {"messages": [{"role": 7, "content": []}]},
            },
            "$.state.messages[0].role",
            "expected a string, got a number",
        ),
        (
            {
                "snapshotId": "a",
                "createdAt": "2026-11-29T00:00:00Z",
                "state": {"messages": [{"role": "user", "content": [{"toolRequest": {"name": "n", "partial": 1}}]}]},
            },
            "$.state.messages[0].content[0].toolRequest.partial",
            "expected a boolean, got a number",
        ),
        (
            {
                "snapshotId": "a",
                "createdAt": "2026-11-29T00:00:00Z",
                "state": {"messages": [{"role": "user", "content": [{"toolResponse": {"name": "n", "content": [3]}}]}]},
            },
            "$.state.messages[0].content[0].toolResponse.content[0]",
            "expected a JSON object for a part",
        ),
        (
            {"snapshotId": "a", "createdAt": "2026-11-29T00:00:00Z", "state": {"messages": {"role": "user"}}},
            "$.state.messages",
            "expected an array, got an object",
        ),
        (
            {
                "snapshotId": "a",
                "createdAt": "2026-11-29T00:00:00Z",
                "state": {"messages": [{"role": "user", "content": "hi"}]},
            },
            "$.state.messages[0].content",
            "expected an array, got a string",
        ),
        (
            {"snapshotId": "a", "createdAt": "2026-11-29T00:00:00Z", "state": {"artifacts": [{"parts": {}}]}},
            "$.state.artifacts[0].parts",
            "expected an array, got an object",
        ),
        (
            {
                "snapshotId": "a",
                "createdAt": "2026-11-29T00:00:00Z",
                "state": {"messages": [{"role": "user", "content": [7]}]},
            },
            "$.state.messages[0].content[0]",
            "expected a JSON object for a part, got a number",
        ),
        (
            {
                "snapshotId": "a",
                "createdAt": "2026-11-29T00:00:00Z",
                "state": {"messages": [{"role": "user", "content": [{"text": "t", "media": {"url": "u"}}]}]},
            },
            "$.state.messages[0].content[0]",
            "this one holds text, media",
        ),
        (
            {"snapshotId": "a", "createdAt": "2026-11-29T00:00:00Z", "error": {"status": "INTERNAL"}},
            "$.error.message",
            "a required key is missing",
        ),
    ],
)
def test_invalid_json_is_rejected_naming_the_path_of_the_bad_field(data: Any, path: str, fragment: str) -> None:
    error = invalid(lambda: from_wire(SessionSnapshot, data))
    assert error.status == "INVALID_ARGUMENT" and error.reason == "INVALID_INPUT"
    problems = error.details["problems"]
    assert len(problems) == 1 and problems[0].endswith(f" at {path}") and fragment in problems[0], problems


def test_a_snapshot_without_its_required_keys_names_them() -> None:
    assert "'snapshotId'" in invalid(lambda: from_wire(SessionSnapshot, {"createdAt": "2026-11-29T00:00:00Z"})).message
    assert "'createdAt'" in invalid(lambda: from_wire(SessionSnapshot, {"snapshotId": "a"})).message


def test_every_problem_is_reported_not_only_the_first() -> None:
    data = {
        "snapshotId": 1,
        "createdAt": "2026-11-29T00:00:00Z",
        "status": "nope",
        "state": {"messages": [{"role": "user", "content": [{"text": 2}]}]},
    }
    problems = invalid(lambda: from_wire(SessionSnapshot, data)).details["problems"]
    assert sorted(p.rsplit(" at ", 1)[1] for p in problems) == [
        "$.snapshotId",
        "$.state.messages[0].content[0].text",
        "$.status",
    ]


@pytest.mark.parametrize("value", [None, [], "text", 3])
def test_a_non_object_where_an_object_belongs_is_rejected(value: Any) -> None:
    error = invalid(lambda: from_wire(SessionSnapshot, value))
    assert error.status == "INVALID_ARGUMENT" and "SessionSnapshot" in error.message


@pytest.mark.parametrize("text", ["{", '{"snapshotId": "a",}', "", b"\xff\xfe", "[1, 2"])
def test_malformed_json_text_is_invalid_argument(text: str | bytes) -> None:
    error = invalid(lambda: from_wire(SessionSnapshot, text))
    assert error.status == "INVALID_ARGUMENT" and error.reason == "INVALID_INPUT"
    assert "is not valid JSON" in error.message


# --- what the wire layer leaves to others -----------------------------------------------------------


@pytest.mark.parametrize("bad_id", ["x" * 600, "a\x00b", "tab\there", "   "])
def test_id_limits_are_not_the_wire_layers_job_but_the_resolver_rejects_them(bad_id: str) -> None:
    init = from_wire(AgentInit, {"sessionId": bad_id})
    assert init.session_id == bad_id
    assert to_wire(init) == {"sessionId": bad_id}
    error = invalid(lambda: SessionResolver.resolve(InMemorySessionStore(), True, init))
    assert error.status == "INVALID_ARGUMENT" and error.reason == "INVALID_SESSION_ID"


plain_text_messages = st.builds(
    lambda role, texts: {"role": role, "content": [{"text": t} for t in texts]},
    st.sampled_from(ROLES),
    st.lists(short_text, max_size=3),
)
"""Messages the fast decoding path takes: a role and text parts, nothing else."""


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(plain_text_messages | messages(unknown=True), max_size=6))
def test_decoding_a_message_list_builds_exactly_what_decoding_each_message_builds(data: list[dict[str, Any]]) -> None:
    decoded = messages_from_wire(data)
    assert decoded == tuple(from_wire(Message, m) for m in data)
    assert same_json([to_wire(m) for m in decoded], data)


@pytest.mark.parametrize(
    "message",
    [
        {"role": "user", "content": {"text": "x"}},
        {"role": "user", "content": [{"text": 3}]},
        {"role": 1, "content": []},
    ],
)
def test_a_message_list_with_a_bad_message_fails_as_decoding_that_message_fails(message: dict[str, Any]) -> None:
    with pytest.raises(GenkitError) as one:
        from_wire(Message, message)
    with pytest.raises(GenkitError) as listed:
        messages_from_wire([{"role": "user", "content": [{"text": "fine"}]}, message])
    assert listed.value.message == one.value.message


# --- roles and roots as Genkit writes them ------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_the_four_known_roles_decode_to_the_role_enum(role: str) -> None:
    message = from_wire(Message, {"role": role, "content": []})
    assert message.role is Role(role)


@pytest.mark.parametrize("role", ["narrator", "", "USER", "assistant"])
def test_any_other_role_string_is_kept_as_it_is_and_round_trips(role: str) -> None:
    data = {"role": role, "content": [{"text": "x"}]}
    message = from_wire(Message, data)
    assert message.role == role and not isinstance(message.role, Role)
    assert to_wire(message) == data
    assert messages_from_wire([data]) == (message,)
    assert Message.of_text(role, "x") == message


def test_a_root_written_with_an_empty_parent_id_has_no_parent_and_round_trips_exactly() -> None:
    data = {"snapshotId": "a", "sessionId": "s", "parentId": "", "createdAt": "2026-11-29T00:00:00Z"}
    snapshot = from_wire(SessionSnapshot, data)
    assert snapshot.parent_id is None
    assert to_wire(snapshot) == data
    assert to_wire(from_wire(SessionSnapshot, to_wire(snapshot))) == data


def test_an_empty_parent_id_given_in_code_means_no_parent() -> None:
    assert SessionSnapshot(snapshot_id="a", parent_id="").parent_id is None
    assert "parentId" not in to_wire(SessionSnapshot(snapshot_id="a", parent_id="", created_at="2026-01-01T00:00:00Z"))


def test_a_snapshot_given_a_parent_after_an_empty_parent_id_writes_the_new_parent() -> None:
    root = from_wire(SessionSnapshot, {"snapshotId": "a", "parentId": "", "createdAt": "2026-11-29T00:00:00Z"})
    moved = attrs.evolve(root, parent_id="p")
    assert to_wire(moved)["parentId"] == "p"


def test_typed_tool_fields_and_part_riders_are_fields_not_unknown_keys() -> None:
    data = {
        "role": "tool",
        "content": [
            {"toolRequest": {"name": "n", "partial": False}, "custom": {"c": 1}},
            {"toolResponse": {"name": "n", "content": [{"media": {"url": "u"}}, {"x-future": 1}]}},
        ],
    }
    message = from_wire(Message, data)
    request, response = message.content
    assert isinstance(request, ToolRequestPart) and request.tool_request.partial is False
    assert request.custom == {"c": 1} and not request.extra
    assert isinstance(response, ToolResponsePart) and response.tool_response.content is not None
    assert [type(p) for p in response.tool_response.content] == [MediaPart, UnknownPart]
    assert to_wire(message) == data
