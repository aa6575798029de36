"""Wire compatibility with Genkit itself (``genkit==0.12.0``, module ``genkit.exp.agent``), both ways.

Genkit writes its pydantic models with ``model_dump(by_alias=True,
exclude_none=True, mode="json")`` (its Firestore store and its agent runtime)
or ``model_dump_json()`` with the same defaults (its file store). What Genkit
writes must decode with :func:`from_wire` and encode back to the same JSON;
what we write must validate with Genkit's models and dump back to the same
JSON.

Genkit normalizes in three documented ways, each asserted below:

1. its models forbid keys they do not know (``extra="forbid"``), at every
   level from the snapshot down to a part's ``media``; we keep them;
2. it drops a part without a kind (``{}`` or metadata only) when it reads a
   message or an artifact; we keep it verbatim as an ``UnknownPart``;
3. a part ``{"data": null}`` reads as a data part but, nested in a snapshot,
   state or message, dumps as ``{}`` (``exclude_none`` drops the null); we
   keep ``{"data": null}``.

Everything else (every part kind, a ``custom`` riding on another kind, tool
``partial`` / ``content``, metadata, errors with or without a status, every
status and finish reason, timestamps as written) is identical both ways.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genkit_sessions import (
    AgentInit,
    Artifact,
    CustomPart,
    DataPart,
    ErrorInfo,
    FinishReason,
    Media,
    MediaPart,
    Message,
    ReasoningPart,
    Resource,
    ResourcePart,
    Role,
    SessionSnapshot,
    SessionState,
    SnapshotStatus,
    TextPart,
    ToolRequest,
    ToolRequestPart,
    ToolResponse,
    ToolResponsePart,
    UnknownPart,
    from_wire,
    to_wire,
)
from tests.model.test_wire import FINISH_REASONS, SNAPSHOT_STATUSES, same_json, snapshots

agent = pytest.importorskip("genkit.exp.agent")
genkit = pytest.importorskip("genkit")
pydantic = pytest.importorskip("pydantic")

GSnapshot = agent.SessionSnapshot
GState = agent.SessionState
GInit = agent.AgentInit
GArtifact = agent.Artifact
GMessage = genkit.Message
GPart = genkit.Part


def genkit_dump(model: Any) -> Any:
    """What Genkit writes: its Firestore store and agent runtime dump models exactly like this."""
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def genkit_message() -> Any:
    """A Genkit message holding every part kind Genkit supports, with metadata and a custom rider."""
    return GMessage(
        role="model",
        content=[
            GPart(text="hello", metadata={"lang": "en"}),
            GPart.from_media("data:image/png;base64,AAAA", "image/png"),
            GPart(tool_request=genkit.ToolRequest(ref="r1", name="weather", input={"city": "Oslo"}, partial=True)),
            GPart(
                tool_response=genkit.ToolResponse(
                    ref="r1", name="weather", output={"temp": -3.5, "wind": None}, content=[{"text": "cold"}]
                )
            ),
            GPart.from_data([1, "two", {"three": 3.0}, True]),
            GPart.from_custom({"vendor": {"id": 7}}),
            GPart.from_reasoning("think first", metadata={"signature": "sig"}),
            GPart(resource={"uri": "file:///notes.txt"}),
            GPart(text="signed", custom={"thoughtSignature": "abc"}),
        ],
        metadata={"usage": {"inputTokens": 12}},
    )


def genkit_snapshot(status: str = "completed", finish_reason: str = "stop", error: Any = None) -> Any:
    """A Genkit snapshot using every field, built with Genkit's own models."""
    state = GState(
        session_id="sess-1",
        messages=[GMessage(role="user", content=[GPart(text="hi")]), genkit_message()],
        custom={"cart": ["apple"], "count": 2, "none": None, "nested": {"ok": False}},
        artifacts=[
            GArtifact(name="report", parts=[GPart(text="# Report")], metadata={"version": 2}),
            GArtifact(parts=[GPart.from_media("https://example.com/a.png")]),
        ],
    )
    return GSnapshot(
        snapshot_id="snap-2",
        session_id="sess-1",
        parent_id="snap-1",
        created_at="2026-11-29T10:00:00.123456+00:00",
        updated_at="2026-11-29T10:00:01.000000Z",
        heartbeat_at="2026-11-29T10:00:00.5+00:00",
        status=status,
        finish_reason=finish_reason,
        error=error,
        state=state,
    )


# --- Genkit -> us -------------------------------------------------------------------------------


@pytest.mark.parametrize("finish_reason", FINISH_REASONS)
@pytest.mark.parametrize("status", SNAPSHOT_STATUSES)
def test_a_snapshot_genkit_writes_decodes_and_encodes_back_to_the_same_json(status: str, finish_reason: str) -> None:
    error = {"status": "INTERNAL", "message": "model crashed", "details": {"retry": False}}
    written = genkit_dump(genkit_snapshot(status, finish_reason, error))
    ours = from_wire(SessionSnapshot, written)
    assert same_json(to_wire(ours), written)
    assert ours.status is SnapshotStatus(status) and ours.finish_reason is FinishReason(finish_reason)
    assert ours.error == ErrorInfo(status="INTERNAL", message="model crashed", details={"retry": False})


def test_every_genkit_part_kind_decodes_to_the_matching_part_class() -> None:
    ours = from_wire(Message, genkit_dump(genkit_message()))
    assert [type(p) for p in ours.content] == [
        TextPart,
        MediaPart,
        ToolRequestPart,
        ToolResponsePart,
        DataPart,
        CustomPart,
        ReasoningPart,
        ResourcePart,
        TextPart,
    ]
    request, response = ours.content[2], ours.content[3]
    assert isinstance(request, ToolRequestPart) and request.tool_request.partial is True
    assert isinstance(response, ToolResponsePart) and response.tool_response.content == (TextPart("cold"),)
    rider = ours.content[8]
    assert isinstance(rider, TextPart) and rider.custom == {"thoughtSignature": "abc"} and not rider.extra


def test_a_genkit_error_without_a_status_decodes_and_encodes_back() -> None:
    written = genkit_dump(genkit_snapshot("failed", "failed", {"message": "boom"}))
    assert written["error"] == {"message": "boom"}
    ours = from_wire(SessionSnapshot, written)
    assert ours.error == ErrorInfo(message="boom")
    assert same_json(to_wire(ours), written)


def test_the_json_text_genkits_file_store_writes_decodes_and_encodes_back(tmp_path: Path) -> None:
    store = agent.FileSessionStore(str(tmp_path))
    snapshot = genkit_snapshot()

    async def save() -> None:
        await store.save_snapshot("snap-file", lambda _: snapshot.model_copy(deep=True))

    asyncio.run(save())
    text = (tmp_path / "snap-file.json").read_text(encoding="utf-8")
    ours = from_wire(SessionSnapshot, text)
    assert ours.snapshot_id == "snap-file"
    assert same_json(to_wire(ours), json.loads(text))


def test_a_snapshot_stamped_by_genkits_own_store_decodes_and_encodes_back() -> None:
    store = agent.InMemorySessionStore()
    bare = GSnapshot(snapshot_id="", created_at="", state=GState(session_id="s-9", messages=[genkit_message()]))

    async def save_and_read() -> Any:
        await store.save_snapshot("snap-9", lambda _: bare)
        return await store.get_snapshot(session_id="s-9")

    stored = genkit_dump(asyncio.run(save_and_read()))
    assert stored["status"] == "completed" and stored["sessionId"] == "s-9" and stored["createdAt"]
    ours = from_wire(SessionSnapshot, stored)
    assert ours.session_id == "s-9" and ours.status is SnapshotStatus.COMPLETED
    assert same_json(to_wire(ours), stored)


def test_genkit_session_state_and_agent_init_decode_and_encode_back() -> None:
    state = genkit_dump(genkit_snapshot().state)
    assert same_json(to_wire(from_wire(SessionState, state)), state)
    for init in (
        GInit(session_id="s-1"),
        GInit(snapshot_id="snap-1"),
        GInit(session_id="s-1", snapshot_id="snap-1"),
        GInit(state=genkit_snapshot().state),
        GInit(),
    ):
        written = genkit_dump(init)
        assert same_json(to_wire(from_wire(AgentInit, written)), written)


# --- us -> Genkit -------------------------------------------------------------------------------


def our_snapshot(status: SnapshotStatus, finish_reason: FinishReason) -> SessionSnapshot:
    """A snapshot using every field and part kind, built with our classes."""
    content = (
        TextPart("hello", metadata={"lang": "en"}),
        MediaPart(Media("data:image/png;base64,AAAA", content_type="image/png")),
        ToolRequestPart(ToolRequest("weather", ref="r1", input={"city": "Oslo"})),
        ToolResponsePart(ToolResponse("weather", ref="r1", output={"temp": -3.5, "wind": None})),
        DataPart([1, "two", {"three": 3.0}, False]),
        CustomPart({"vendor": {"id": 7}}),
        ReasoningPart("think first"),
        ResourcePart(Resource("file:///notes.txt"), metadata={"size": 3}),
    )
    state = SessionState(
        session_id="sess-1",
        messages=(Message.of_text(Role.USER, "hi"), Message(Role.MODEL, content, metadata={"usage": {"n": 1}})),
        custom={"cart": ["apple"], "none": None},
        artifacts=(Artifact((TextPart("# Report"),), name="report", metadata={"v": 2}),),
    )
    return SessionSnapshot(
        snapshot_id="snap-2",
        session_id="sess-1",
        parent_id="snap-1",
        created_at="2026-11-29T10:00:00.123456Z",
        updated_at="2026-11-29T10:00:01.000000Z",
        heartbeat_at="2026-11-29T10:00:00.500000Z",
        status=status,
        finish_reason=finish_reason,
        error=ErrorInfo(status="INTERNAL", message="model crashed", details={"rule": "R15"}),
        state=state,
    )


@pytest.mark.parametrize("finish_reason", list(FinishReason))
@pytest.mark.parametrize("status", list(SnapshotStatus))
def test_a_snapshot_we_write_validates_with_genkit_and_genkit_writes_it_back_identically(
    status: SnapshotStatus, finish_reason: FinishReason
) -> None:
    wire = to_wire(our_snapshot(status, finish_reason))
    parsed = GSnapshot.model_validate(wire)
    assert parsed.status == status.value and parsed.finish_reason == finish_reason.value
    assert same_json(genkit_dump(parsed), wire)


def test_session_state_and_agent_init_we_write_validate_with_genkit_and_round_trip() -> None:
    state = our_snapshot(SnapshotStatus.COMPLETED, FinishReason.STOP).state
    assert state is not None
    assert same_json(genkit_dump(GState.model_validate(to_wire(state))), to_wire(state))
    for init in (
        AgentInit(session_id="s-1"),
        AgentInit(snapshot_id="snap-1"),
        AgentInit(session_id="s-1", snapshot_id="snap-1"),
        AgentInit(state=state),
        AgentInit(),
    ):
        wire = to_wire(init)
        assert same_json(genkit_dump(GInit.model_validate(wire)), wire)


def test_genkit_and_we_both_reject_an_agent_init_with_a_misspelled_key() -> None:
    with pytest.raises(pydantic.ValidationError):
        GInit.model_validate({"sessionID": "s-1"})
    with pytest.raises(Exception, match="sessionID") as info:
        from_wire(AgentInit, {"sessionID": "s-1"})
    assert getattr(info.value, "status", None) == "INVALID_ARGUMENT"


def test_a_custom_rider_and_a_status_less_error_we_write_validate_with_genkit() -> None:
    wire = {
        "snapshotId": "a",
        "createdAt": "2026-11-29T00:00:00Z",
        "error": {"message": "boom"},
        "state": {"messages": [{"role": "model", "content": [{"reasoning": "r", "custom": {"sig": "x"}}]}]},
    }
    ours = to_wire(from_wire(SessionSnapshot, wire))
    parsed = GSnapshot.model_validate(ours)
    assert parsed.state.messages[0].content[0].custom == {"sig": "x"}
    assert same_json(genkit_dump(parsed), wire)


# --- documented normalizations ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "wire"),
    [
        ("snapshot", {"snapshotId": "a", "createdAt": "2026-11-29T00:00:00Z", "x-new": 1}),
        ("state", {"snapshotId": "a", "createdAt": "2026-11-29T00:00:00Z", "state": {"x-new": 1}}),
        (
            "message",
            {
                "snapshotId": "a",
                "createdAt": "2026-11-29T00:00:00Z",
                "state": {"messages": [{"role": "user", "content": [], "x-new": 1}]},
            },
        ),
        (
            "part",
            {
                "snapshotId": "a",
                "createdAt": "2026-11-29T00:00:00Z",
                "state": {"messages": [{"role": "user", "content": [{"text": "t", "x-new": 1}]}]},
            },
        ),
        (
            "media",
            {
                "snapshotId": "a",
                "createdAt": "2026-11-29T00:00:00Z",
                "state": {"messages": [{"role": "user", "content": [{"media": {"url": "u", "x-new": 1}}]}]},
            },
        ),
        (
            "artifact",
            {
                "snapshotId": "a",
                "createdAt": "2026-11-29T00:00:00Z",
                "state": {"artifacts": [{"parts": [], "x-new": 1}]},
            },
        ),
        (
            "error",
            {"snapshotId": "a", "createdAt": "2026-11-29T00:00:00Z", "error": {"message": "m", "x-new": 1}},
        ),
    ],
)
def test_genkit_rejects_unknown_keys_that_we_keep(where: str, wire: dict[str, Any]) -> None:
    assert same_json(to_wire(from_wire(SessionSnapshot, wire)), wire), where
    with pytest.raises(pydantic.ValidationError):
        GSnapshot.model_validate(wire)


def test_genkit_drops_parts_without_a_kind_that_we_keep() -> None:
    wire = {"role": "user", "content": [{}, {"metadata": {"m": 1}}, {"text": "kept"}]}
    ours = from_wire(Message, wire)
    assert ours.content[:2] == (UnknownPart({}), UnknownPart({"metadata": {"m": 1}}))
    assert to_wire(ours) == wire
    assert genkit_dump(GMessage.model_validate(wire)) == {"role": "user", "content": [{"text": "kept"}]}


def test_genkit_writes_a_nested_null_data_part_as_an_empty_part_and_we_keep_it() -> None:
    wire = {"sessionId": "s", "messages": [{"role": "tool", "content": [{"data": None}]}]}
    ours = from_wire(SessionState, wire)
    assert ours.message_list[0].content == (UnknownPart({"data": None}),)
    assert to_wire(ours) == wire
    parsed = GState.model_validate(wire)
    assert "data" in parsed.messages[0].content[0].model_fields_set
    assert genkit_dump(parsed) == {"sessionId": "s", "messages": [{"role": "tool", "content": [{}]}]}


# --- properties ---------------------------------------------------------------------------------

_KNOWN: dict[str, frozenset[str]] = {
    "snapshot": frozenset(
        {
            "snapshotId",
            "sessionId",
            "parentId",
            "createdAt",
            "updatedAt",
            "heartbeatAt",
            "status",
            "finishReason",
            "error",
            "state",
        }
    ),
    "error": frozenset({"status", "message", "details"}),
    "state": frozenset({"sessionId", "messages", "custom", "artifacts"}),
    "message": frozenset({"role", "content", "metadata"}),
    "artifact": frozenset({"name", "parts", "metadata"}),
    "part": frozenset(
        {"text", "media", "toolRequest", "toolResponse", "data", "metadata", "custom", "reasoning", "resource"}
    ),
    "media": frozenset({"url", "contentType"}),
    "toolRequest": frozenset({"ref", "name", "input", "partial"}),
    "toolResponse": frozenset({"ref", "name", "output", "content"}),
    "resource": frozenset({"uri"}),
}
_KINDS = ("text", "media", "toolRequest", "toolResponse", "reasoning", "resource", "data", "custom")


def _known(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k in _KNOWN[kind]}


def _genkit_parts(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for part in parts:
        kept = _known("part", part)
        for sub in ("media", "toolRequest", "toolResponse", "resource"):
            if isinstance(kept.get(sub), dict):
                kept[sub] = _known(sub, kept[sub])
        if any(kept.get(k) is not None for k in _KINDS):  # normalization 2: a part without a kind is dropped
            out.append(kept)
    return out


def genkit_view(snapshot: dict[str, Any]) -> dict[str, Any]:
    """What Genkit keeps of a snapshot: its known keys only, parts without a kind dropped."""
    view = _known("snapshot", snapshot)
    if "error" in view:
        view["error"] = _known("error", view["error"])
    if "state" in view:
        state = view["state"] = _known("state", view["state"])
        if "messages" in state:
            state["messages"] = [
                {**_known("message", m), "content": _genkit_parts(m["content"])} for m in state["messages"]
            ]
        if "artifacts" in state:
            state["artifacts"] = [
                {**_known("artifact", a), "parts": _genkit_parts(a["parts"])} for a in state["artifacts"]
            ]
    return view


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.booleans().flatmap(lambda unknown: snapshots(unknown)))
def test_random_genkit_snapshots_round_trip_exactly_and_genkit_agrees_on_the_known_fields(data: dict[str, Any]) -> None:
    ours = to_wire(from_wire(SessionSnapshot, data))
    assert same_json(ours, data)

    expected = genkit_view(ours)
    # Where Genkit can parse the JSON as it is, its reading matches ours on every field it knows.
    try:
        parsed = GSnapshot.model_validate(data)
    except pydantic.ValidationError:
        assert genkit_view(data) != data, "Genkit rejected JSON holding only keys it knows"
    else:
        assert same_json(genkit_dump(parsed), expected)
    # And with the unknown keys left out, Genkit always parses it, and still agrees with us.
    assert same_json(genkit_dump(GSnapshot.model_validate(genkit_view(data))), expected)
