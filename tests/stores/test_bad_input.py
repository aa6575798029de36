"""Bad input is refused with INVALID_ARGUMENT at the call that received it, the same way on every store,
and nothing is written (issue 13, first list)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from genkit_sessions import (
    AgentInit,
    GenkitError,
    InMemorySessionStore,
    Message,
    SessionResolver,
    SessionSnapshot,
    SessionState,
    SessionStoreOptions,
    from_wire,
    to_wire,
)
from genkit_sessions.dynamodb.store import DynamoDBSessionStore


def refused(call: Callable[[], Any], *fragments: str) -> GenkitError:
    with pytest.raises(GenkitError) as caught:
        call()
    error = caught.value
    assert error.status == "INVALID_ARGUMENT", error
    for fragment in fragments:
        assert fragment in error.message, error.message
    return error


def fresh_session(store: Any) -> Any:
    resolution = SessionResolver.resolve(store, True, AgentInit())
    assert resolution.session is not None
    return resolution.session


# --- the Session a framework calls ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [("hello", "argument 0 is str"), ({"role": "user"}, "argument 0 is dict"), ([1], "unpack the list")],
)
def test_add_messages_refuses_anything_but_messages_and_adds_nothing(store: Any, bad: Any, fragment: str) -> None:
    session = fresh_session(store)
    refused(lambda: session.add_messages(bad), fragment)
    assert session.messages == ()
    session.save()
    assert store.get_snapshot(session_id=session.id).state.message_list == ()


def test_add_messages_names_the_unpacking_fix_for_a_list_of_messages(store: Any) -> None:
    session = fresh_session(store)
    refused(lambda: session.add_messages([Message.of_text("user", "hi")]), "add_messages(*items)")


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda s: s.save("failed", error="boom"), "ErrorInfo"),
        (lambda s: s.save("done"), "'done'"),
        (lambda s: s.save(finish_reason="tired"), "'tired' is not one of"),
        (lambda s: s.save(7), "snapshot status"),
    ],
)
def test_save_refuses_a_bad_status_error_or_finish_reason_and_writes_nothing(
    store: Any, call: Callable[[Any], Any], fragment: str
) -> None:
    session = fresh_session(store)
    refused(lambda: call(session), fragment)
    assert store.list_snapshots(session.id) == []


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ({1: "a"}, "JSON object keys are strings"),
        ({"tags": {"a", "b"}}, "custom.tags: is a set"),
        (b"bytes", "is a bytes"),
        ({"when": dt.datetime(2026, 1, 1)}, "is a datetime"),
        ("\ud83d", "lone surrogate"),
        (float("nan"), "no NaN"),
        ([[[[]]]] * 1 if False else json.loads("[" * 400 + "]" * 400), "nests more than 64 levels"),
    ],
)
def test_custom_state_that_is_not_json_is_refused_on_every_store(store: Any, value: Any, fragment: str) -> None:
    session = fresh_session(store)
    refused(lambda: session.set_custom(value), fragment)
    refused(lambda: SessionState(custom=value), fragment)
    session.save()
    assert store.get_snapshot(session_id=session.id).state.custom is None


def test_json_state_at_the_depth_limit_round_trips_on_every_store(store: Any) -> None:
    deep = json.loads("[" * 64 + "]" * 64)
    session = fresh_session(store)
    session.set_custom({"ok": "\u00e9\U0001f600", "deep": deep[0]})
    saved = session.save()
    assert store.get_snapshot(snapshot_id=saved.snapshot_id).state.custom == saved.state.custom


# --- model constructors and the wire decoder -------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda: AgentInit(state={"sessionId": "s"}), "AgentInit.state: must be a SessionState"),
        (lambda: Message.of_text("assistant", 3), "TextPart.text: must be a string"),
        (lambda: Message("user", "hello"), "must be a list or tuple"),
        (lambda: Message(3, ()), "Message.role"),
        (lambda: SessionSnapshot("a", finish_reason="tired"), "'tired' is not one of"),
        (lambda: SessionSnapshot("a", created_at="yesterday"), "not an ISO-8601 timestamp"),
        (lambda: SessionSnapshot(snapshot_id=["a"]), "must be a string id"),
        (lambda: SessionState(messages=["hi"]), "SessionState.messages[0]: must be a Message"),
    ],
)
def test_model_constructors_refuse_bad_values_naming_the_field(call: Callable[[], Any], fragment: str) -> None:
    refused(call, fragment)


@pytest.mark.parametrize("data", [[], "[]", 7, "null", ["sessionId"]])
def test_from_wire_refuses_json_that_is_not_an_object(data: Any) -> None:
    refused(lambda: from_wire(AgentInit, data), "expected a JSON object at $")


def test_from_wire_refuses_json_nested_past_the_limit_naming_the_path() -> None:
    error = refused(lambda: from_wire(SessionState, {"custom": json.loads("[" * 400 + "]" * 400)}))
    assert "$.custom[0][0]" in error.message and "128 levels" in error.message


def test_from_wire_refuses_json_text_nested_thousands_deep() -> None:
    refused(lambda: from_wire(SessionState, '{"custom":' + "[" * 5000 + "]" * 5000 + "}"), "128 levels")


def test_from_wire_refuses_a_lone_surrogate_naming_the_path() -> None:
    error = refused(lambda: from_wire(SessionState, '{"custom": {"a": "\\ud83d"}}'), "lone surrogate")
    assert error.details["problems"] == [error.details["problems"][0]] and "$.custom.a" in error.message


def test_a_decoded_state_encodes_back_to_the_same_json() -> None:
    data = {"sessionId": "s", "custom": {"a": [1, 2.5, None, True, "\u00e9"]}}
    assert to_wire(from_wire(SessionState, data)) == data


# --- stores, their constructors, the resolver -------------------------------------------------------


@pytest.mark.parametrize("bad", [{"a": 1}, ["a"], bytearray(b"a"), 7, None])
def test_store_methods_refuse_unhashable_or_non_string_ids(store: Any, bad: Any) -> None:
    refused(lambda: store.save_snapshot(bad, lambda _: None), "snapshot_id")
    refused(lambda: store.abort_snapshot(bad), "snapshot_id")
    refused(lambda: store.heartbeat(bad), "snapshot_id")
    if bad is not None:
        refused(lambda: store.get_snapshot(snapshot_id=bad), "snapshot_id")
        refused(lambda: store.list_snapshots(bad), "session_id")
        refused(lambda: store.delete_session(bad), "session_id")


def test_save_snapshot_refuses_a_mutator_that_is_not_a_function(store: Any) -> None:
    refused(lambda: store.save_snapshot("a", SessionSnapshot("a", session_id="s")), "mutator function")
    assert store.get_snapshot(snapshot_id="a") is None


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("snapshot_id", ""),
        ("snapshot_id", "   "),
        ("snapshot_id", "a\x00b"),
        ("snapshot_id", "x" * 513),
        ("session_id", ""),
        ("session_id", " \t"),
        ("session_id", "s\x07"),
        ("session_id", "s" * 513),
        ("parent_id", "p\n"),
        ("parent_id", "p" * 600),
    ],
)
def test_restore_refuses_ids_that_section_4_forbids_and_writes_nothing(store: Any, field: str, bad: str) -> None:
    good = SessionSnapshot("ok", session_id="s", created_at="2026-01-01T00:00:00Z")
    fields = {"snapshot_id": "a", "session_id": "s", "created_at": "2026-01-01T00:00:00Z", field: bad}
    refused(lambda: store.restore_snapshots([good, SessionSnapshot(**fields)]))
    assert store.get_snapshot(snapshot_id="ok") is None


def test_restore_refuses_a_snapshot_that_was_never_stamped_and_writes_nothing(store: Any) -> None:
    good = SessionSnapshot("ok", session_id="s", created_at="2026-01-01T00:00:00Z")
    refused(lambda: store.restore_snapshots([good, SessionSnapshot("a", session_id="s")]), "createdAt")
    assert store.get_snapshot(snapshot_id="ok") is None


def test_restore_refuses_items_that_are_not_snapshots(store: Any) -> None:
    refused(lambda: store.restore_snapshots([{"snapshotId": "a"}]), "from_wire(SessionSnapshot, data)")


def test_dynamodb_store_refuses_a_region_in_the_client_slot_and_a_ttl_in_seconds() -> None:
    refused(lambda: DynamoDBSessionStore("t", "eu-west-1"), "region_name='eu-west-1'")
    refused(lambda: DynamoDBSessionStore("t", region_name="eu-west-1", ttl=3600), "timedelta(hours=1)")  # type: ignore[arg-type]
    refused(lambda: DynamoDBSessionStore("t", region_name="eu-west-1", checkpoint_every="5"), "checkpoint_every")  # type: ignore[arg-type]
    refused(lambda: DynamoDBSessionStore("t", region_name="eu-west-1", watch_interval=0), "watch_interval")


def test_in_memory_store_refuses_options_of_the_wrong_kind() -> None:
    refused(lambda: InMemorySessionStore(tenant_of="tenant"), "tenant_of")  # type: ignore[arg-type]
    refused(lambda: InMemorySessionStore(indexed_metadata="team"), "indexed_metadata")


def test_resolver_refuses_a_server_managed_flag_that_is_not_a_bool(store: Any) -> None:
    refused(lambda: SessionResolver.resolve(store, "yes", AgentInit()), "True or False")  # type: ignore[arg-type]


def test_resolver_refuses_options_passed_as_a_dict(store: Any) -> None:
    refused(lambda: SessionResolver.resolve(store, True, AgentInit(), {"context": {}}), "SessionStoreOptions")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"resume_policy": "sometimes"}, "resume_policy"),
        ({"heartbeat_timeout": "60"}, "heartbeat_timeout"),
        ({"heartbeat_timeout": timedelta(0)}, "positive"),
        ({"context": "acme"}, "context must be a mapping"),
        ({"state_validator": 3}, "state_validator"),
    ],
)
def test_session_store_options_refuse_bad_values(options: dict[str, Any], fragment: str) -> None:
    refused(lambda: SessionStoreOptions(**options), fragment)
