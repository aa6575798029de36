"""V1 with first snapshots: ``create_session(..., snapshots=...)`` lands the record and the snapshots in
one atomic write, on every store and both faces (what a fork stands on)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from genkit_sessions import GenkitError, Message, SessionSnapshot, SessionState


def _snapshot(snapshot_id: str, parent_id: str | None, *texts: str, **fields: Any) -> SessionSnapshot:
    messages = tuple(Message.of_text("user" if i % 2 == 0 else "model", t) for i, t in enumerate(texts))
    return SessionSnapshot(
        snapshot_id=snapshot_id, parent_id=parent_id, state=SessionState(messages=messages), **fields
    )


def _texts(snapshot: SessionSnapshot | None) -> list[str]:
    assert snapshot is not None and snapshot.state is not None
    return [m.text for m in snapshot.state.message_list]


def _nothing_of(store: Any, session_id: str, *snapshot_ids: str) -> None:
    assert store.get_session_record(session_id) is None
    assert store.get_snapshot(session_id=session_id) is None
    for snapshot_id in snapshot_ids:
        assert store.get_snapshot(snapshot_id=snapshot_id) is None


def test_a_session_created_with_its_first_snapshots_holds_them_at_once(store: Any) -> None:
    record = store.create_session(
        "fork",
        metadata={"principal": "alice"},
        ttl=timedelta(days=1),
        snapshots=[_snapshot("a", None, "u0", "m0"), _snapshot("b", "a", "summary", "u1")],
    )
    assert (record.id, record.version, record.leaf_id) == ("fork", 2, "b")
    assert dict(record.metadata) == {"principal": "alice"} and record.ttl == timedelta(days=1)
    assert record.expires_at is not None
    assert store.get_session_record("fork") == record
    leaf = store.get_snapshot(session_id="fork")
    assert leaf is not None and leaf.snapshot_id == "b" and _texts(leaf) == ["summary", "u1"]
    root = store.get_snapshot(snapshot_id="a")
    assert root is not None and root.session_id == "fork" and _texts(root) == ["u0", "m0"]
    # Stamped with the record's creation, as a store stamps what it saves.
    assert root.created_at == leaf.created_at == record.created_at
    assert [r.id for r in store.find_sessions("principal", "alice").records] == ["fork"]


def test_first_snapshots_that_carry_an_older_created_at_keep_it_and_move_the_record_back(store: Any) -> None:
    old = _snapshot("a", None, "u0", created_at="2020-01-01T00:00:00.000Z", updated_at="2020-01-01T00:00:00.000Z")
    record = store.create_session("s", metadata={"principal": "bob"}, snapshots=[old])
    stored = store.get_snapshot(snapshot_id="a")
    assert stored is not None and stored.created_at == "2020-01-01T00:00:00.000Z"
    assert record.created_at == "2020-01-01T00:00:00.000Z" == store.get_session_record("s").created_at
    assert [r.id for r in store.find_sessions("principal", "bob").records] == ["s"]


@pytest.mark.parametrize(
    ("snapshots", "status"),
    [
        ([_snapshot("a", None, "u0"), _snapshot("b", "a", "u1", session_id="other")], "INVALID_ARGUMENT"),
        ([_snapshot("a", None, "u0"), _snapshot("a", None, "u1")], "INVALID_ARGUMENT"),
        ([_snapshot("a", None, "u0", status="expired")], "INVALID_ARGUMENT"),
        ([_snapshot("a", None, "u0"), "not a snapshot"], "INVALID_ARGUMENT"),
    ],
    ids=["another-sessions-snapshot", "an-id-given-twice", "an-expired-status", "not-a-snapshot"],
)
def test_a_bad_first_snapshot_refuses_the_whole_create_before_anything_is_written(
    store: Any, snapshots: list[Any], status: str
) -> None:
    with pytest.raises(GenkitError) as raised:
        store.create_session("s", metadata={"principal": "carol"}, snapshots=snapshots)
    assert raised.value.status.value == status
    _nothing_of(store, "s", "a", "b")
    assert store.find_sessions("principal", "carol").records == ()


def _chain(count: int, last_id: str) -> list[SessionSnapshot]:
    """``count`` first snapshots in a line, the last one named ``last_id``."""
    ids = [f"n{i}" for i in range(count - 1)] + [last_id]
    return [_snapshot(ids[i], ids[i - 1] if i else None, f"u{i}") for i in range(count)]


# 2 snapshots fit one DynamoDB transaction; 150 do not (the create is then a create and a restore).
@pytest.mark.parametrize("count", [2, 150], ids=["one-transaction", "past-one-transaction"])
def test_a_first_snapshot_whose_id_is_taken_refuses_the_create_and_leaves_the_holder_as_it_was(
    store: Any, count: int
) -> None:
    store.create_session("t", snapshots=[_snapshot("taken", None, "mine")])
    with pytest.raises(GenkitError) as raised:
        store.create_session("s", snapshots=_chain(count, "taken"))
    assert raised.value.status.value == "ALREADY_EXISTS"
    _nothing_of(store, "s", "n0")
    held = store.get_snapshot(snapshot_id="taken")
    assert held is not None and held.session_id == "t" and _texts(held) == ["mine"]
    assert store.get_session_record("t").version == 1


def test_a_live_session_refuses_a_create_with_snapshots_and_keeps_its_own(store: Any) -> None:
    store.create_session("s", snapshots=[_snapshot("a", None, "first")])
    with pytest.raises(GenkitError) as raised:
        store.create_session("s", snapshots=[_snapshot("b", None, "second")])
    assert (raised.value.status.value, raised.value.reason) == ("ALREADY_EXISTS", "SESSION_EXISTS")
    assert store.get_snapshot(snapshot_id="b") is None
    assert _texts(store.get_snapshot(session_id="s")) == ["first"]


def test_a_session_made_again_with_snapshots_never_reuses_a_version(store: Any) -> None:
    store.create_session("s", snapshots=[_snapshot("a", None, "u0"), _snapshot("b", "a", "u1")])
    assert store.delete_session("s") == 2
    again = store.create_session("s", snapshots=[_snapshot("c", None, "fresh")])
    assert again.version == 3 == store.get_session_record("s").version
    assert again.leaf_id == "c" and _texts(store.get_snapshot(session_id="s")) == ["fresh"]


def test_an_expired_session_is_replaced_by_a_create_with_snapshots(store: Any) -> None:
    store.create_session("s", ttl=timedelta(milliseconds=1), snapshots=[_snapshot("a", None, "old")])
    asyncio.run(asyncio.sleep(0.01))
    record = store.create_session("s", snapshots=[_snapshot("b", None, "new")])
    assert record.leaf_id == "b" and record.ttl is None
    assert store.get_snapshot(snapshot_id="a") is None
    assert _texts(store.get_snapshot(session_id="s")) == ["new"]


def test_the_async_face_creates_with_snapshots_too(store: Any) -> None:
    async def create() -> Any:
        return await store.aio.create_session("s", snapshots=[_snapshot("a", None, "u0"), _snapshot("b", "a", "u1")])

    record = asyncio.run(create())
    assert (record.version, record.leaf_id) == (2, "b")
    assert _texts(store.get_snapshot(session_id="s")) == ["u1"]


def test_a_refused_create_with_snapshots_leaves_an_expired_session_for_delete_expired(store: Any) -> None:
    from datetime import datetime, timezone

    store.create_session("s", ttl=timedelta(milliseconds=1), snapshots=[_snapshot("a", None, "old")])
    asyncio.run(asyncio.sleep(0.01))
    with pytest.raises(GenkitError) as raised:
        store.create_session("s", snapshots=[_snapshot("b", None, "new", session_id="other")])
    assert raised.value.status.value == "INVALID_ARGUMENT"
    assert store.delete_expired_sessions(datetime.now(timezone.utc) + timedelta(seconds=1)) == 1


@pytest.mark.parametrize("count", [1, 150], ids=["one-transaction", "past-one-transaction"])
def test_a_first_snapshot_id_an_expired_session_holds_reads_as_absent_and_is_taken_over(store: Any, count: int) -> None:
    store.create_session("old", ttl=timedelta(milliseconds=1), snapshots=[_snapshot("a", None, "expired")])
    asyncio.run(asyncio.sleep(0.01))
    record = store.create_session("s", snapshots=_chain(count, "a"))
    assert (record.version, record.leaf_id) == (count, "a")
    taken = store.get_snapshot(snapshot_id="a")
    assert taken is not None and taken.session_id == "s" and _texts(taken) == [f"u{count - 1}"]
    assert store.get_session_record("old") is None
    assert store.list_snapshots("old") == []
