"""``max_attempts`` bounds attempts lost to concurrent writers, and nothing else: a guess judged again on
what is stored, or an expired session deleted before the write, costs no attempt."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from genkit_sessions import AgentInit, GenkitError, SessionResolver, SessionSnapshot, Status
from tests.conftest import StoreFactory
from tests.dynamodb.helpers import cold, scan


class _Clock:
    def __init__(self) -> None:
        self.now = datetime(2030, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now


def test_one_attempt_still_judges_a_missing_parent_as_s7(make_dynamo: StoreFactory) -> None:
    store = make_dynamo(max_attempts=1)
    with pytest.raises(GenkitError) as caught:
        store.save_snapshot(
            "child", lambda _: SessionSnapshot(snapshot_id="child", session_id="x", parent_id="missing")
        )
    assert caught.value.status is Status.INVALID_ARGUMENT


def test_one_attempt_judges_a_turn_whose_origin_was_deleted_on_what_is_stored(make_dynamo: StoreFactory) -> None:
    store = make_dynamo(max_attempts=1)
    session = SessionResolver.resolve(store, True, AgentInit(session_id="chat")).session
    session.save()
    store.delete_session("chat")
    with pytest.raises(GenkitError) as caught:
        session.save()
    assert caught.value.status in (Status.INVALID_ARGUMENT, Status.FAILED_PRECONDITION)
    assert caught.value.status is not Status.ABORTED


def test_one_attempt_writes_a_fresh_turn_into_an_expired_session(make_dynamo: StoreFactory) -> None:
    clock = _Clock()
    store = make_dynamo(max_attempts=1, clock=clock)
    store.create_session("e", ttl=timedelta(minutes=5))
    SessionResolver.resolve(store, True, AgentInit(session_id="e")).session.save()
    clock.now += timedelta(minutes=10)
    fresh = SessionResolver.resolve(store, True, AgentInit(session_id="e"))
    assert fresh.ok
    saved = fresh.session.save()
    assert cold(store, clock=clock).get_snapshot(session_id="e").snapshot_id == saved.snapshot_id


def test_one_attempt_reuses_an_id_last_used_in_an_expired_session(make_dynamo: StoreFactory) -> None:
    clock = _Clock()
    store = make_dynamo(max_attempts=1, clock=clock)
    store.create_session("old", ttl=timedelta(minutes=5))
    store.save_snapshot("e", lambda _: SessionSnapshot(snapshot_id="e", session_id="old"))
    clock.now += timedelta(minutes=10)
    saved = cold(store, max_attempts=1, clock=clock).save_snapshot(
        "e", lambda current: SessionSnapshot(snapshot_id="e", session_id="new") if current is None else None
    )
    assert saved is not None and saved.session_id == "new"
    assert [s.snapshot_id for s in cold(store, clock=clock).list_snapshots("new")] == ["e"]


def test_an_id_held_by_a_session_whose_deletion_stopped_part_way_is_failed_precondition_naming_it(
    make_dynamo: StoreFactory,
) -> None:
    store = make_dynamo()
    store.save_snapshot("e", lambda _: SessionSnapshot(snapshot_id="e", session_id="old"))
    (head,) = [item for item in scan(store) if item["sk"]["S"] == "h"]
    # a deletion that took the head and stopped: the snapshot's item is left, and reads as absent
    store.client.delete_item(TableName=store.table_name, Key={"pk": head["pk"], "sk": head["sk"]})
    assert cold(store).get_snapshot(snapshot_id="e") is None
    with pytest.raises(GenkitError) as caught:
        cold(store).save_snapshot(
            "e", lambda current: SessionSnapshot(snapshot_id="e", session_id="new") if current is None else None
        )
    assert caught.value.status is Status.FAILED_PRECONDITION
    assert "delete_session('old')" in caught.value.message
    assert cold(store).list_snapshots("new") == []


def test_a_child_refused_because_its_parent_expired_with_its_session_deletes_nothing(
    make_dynamo: StoreFactory,
) -> None:
    # S7 refuses the child (its parent reads as absent) before anything is written: the expired session
    # is left for delete_expired_sessions, as on the in-memory store
    clock = _Clock()
    store = make_dynamo(clock=clock)
    store.create_session("e", ttl=timedelta(minutes=5))
    store.save_snapshot("root", lambda _: SessionSnapshot(snapshot_id="root", session_id="e"))
    clock.now += timedelta(minutes=10)
    for writer in (store, cold(store, clock=clock)):  # one that holds the parent, one that reads it
        with pytest.raises(GenkitError) as caught:
            writer.save_snapshot(
                "child", lambda _: SessionSnapshot(snapshot_id="child", session_id="e", parent_id="root")
            )
        assert caught.value.status is Status.INVALID_ARGUMENT
    assert store.delete_expired_sessions(clock.now) == 1
