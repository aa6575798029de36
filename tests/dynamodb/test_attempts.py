"""``max_attempts`` bounds attempts lost to concurrent writers, and nothing else: a guess judged again on
what is stored, or an expired session deleted before the write, costs no attempt."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from genkit_sessions import AgentInit, GenkitError, SessionResolver, SessionSnapshot, Status
from tests.conftest import StoreFactory
from tests.dynamodb.helpers import cold


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
