"""A key that matches a known field except for case or separators is INVALID_ARGUMENT naming the field
it resembles, at any depth; a truly unknown key is kept and written back unchanged."""

from __future__ import annotations

from typing import Any

import pytest

from genkit_sessions import AgentInit, GenkitError, InMemorySessionStore, SessionResolver, from_wire, to_wire
from genkit_sessions.model.types import Message, SessionSnapshot


@pytest.mark.parametrize(
    ("data", "key", "meant", "path"),
    [
        ({"state": {"sessionID": "s1"}}, "sessionID", "sessionId", "$.state"),
        ({"state": {"session_id": "s1"}}, "session_id", "sessionId", "$.state"),
        ({"state": {"Messages": []}}, "Messages", "messages", "$.state"),
        (
            {"state": {"messages": [{"role": "user", "content": [{"text": "hi", "Metadata": {}}]}]}},
            "Metadata",
            "metadata",
            "$.state.messages[0].content[0]",
        ),
        ({"state": {"messages": [{"role": "user", "content": [{"TEXT": "hi"}]}]}}, "TEXT", "text", "$.state"),
        ({"state": {"artifacts": [{"parts": [], "Name": "n"}]}}, "Name", "name", "$.state.artifacts[0]"),
    ],
)
def test_a_near_miss_key_in_a_client_state_is_invalid_argument_naming_the_field(
    data: dict[str, Any], key: str, meant: str, path: str
) -> None:
    with pytest.raises(GenkitError) as caught:
        from_wire(AgentInit, data)
    error = caught.value
    assert error.status == "INVALID_ARGUMENT"
    assert repr(key) in error.message and f"looks like {meant!r}" in error.message and path in error.message


def test_a_near_miss_at_the_top_of_an_init_names_the_field_it_resembles() -> None:
    with pytest.raises(GenkitError) as caught:
        from_wire(AgentInit, {"snapshotID": "x"})
    assert "'snapshotID' looks like 'snapshotId'" in caught.value.message


def test_a_state_with_session_id_typed_wrong_is_never_hydrated_under_a_new_id() -> None:
    with pytest.raises(GenkitError):
        init = from_wire(AgentInit, {"state": {"sessionID": "mine", "messages": []}})
        SessionResolver.resolve(None, False, init)


@pytest.mark.parametrize(
    ("cls", "data"),
    [
        (AgentInit, {"state": {"sessionId": "s", "futureField": {"a": 1}, "x-trace": "t"}}),
        (Message, {"role": "user", "content": [{"futureKind": {"a": 1}}], "futureMeta": 1}),
        (SessionSnapshot, {"snapshotId": "a", "createdAt": "2026-01-01T00:00:00Z", "labels": ["x"]}),
    ],
)
def test_truly_unknown_keys_stay_lossless(cls: type, data: dict[str, Any]) -> None:
    assert to_wire(from_wire(cls, data)) == data


def test_an_unknown_key_survives_a_save_and_a_read() -> None:
    store = InMemorySessionStore()
    state = from_wire(AgentInit, {"state": {"sessionId": "s", "futureField": 1}}).state
    store.save_snapshot("a", lambda _: SessionSnapshot("a", state=state))
    saved = store.get_snapshot(session_id="s")
    assert saved is not None and saved.state is not None and to_wire(saved.state)["futureField"] == 1
