"""Session records kept in step with the snapshots (contract section 6, V3 and V8), on every store."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import attrs

from genkit_sessions import AgentInit, Message, SessionResolver, SessionSnapshot, SessionState
from genkit_sessions.stores import SupportsAsyncRecords, SupportsRecords


def _turn(store: Any, session_id: str, text: str) -> str:
    resolution = SessionResolver.resolve(store, True, AgentInit(session_id=session_id))
    assert resolution.ok and resolution.session is not None
    resolution.session.add_messages(Message.of_text("user", text), Message.of_text("model", "ok " + text))
    return resolution.session.save().snapshot_id


def test_both_stores_offer_records_on_both_faces(store: Any) -> None:
    assert isinstance(store, SupportsRecords)
    assert isinstance(store.aio, SupportsAsyncRecords)


def test_a_session_made_by_resolver_turns_has_a_record_created_when_its_root_was(store: Any) -> None:
    assert store.get_session_record("chat") is None
    first = _turn(store, "chat", "one")
    second = _turn(store, "chat", "two")
    record = store.get_session_record("chat")
    root = store.get_snapshot(snapshot_id=first)
    leaf = store.get_snapshot(snapshot_id=second)
    assert record is not None and root is not None and leaf is not None
    assert (record.id, record.version, record.leaf_id) == ("chat", 2, second)
    assert record.created_at == root.created_at
    assert record.updated_at == leaf.updated_at
    assert dict(record.metadata) == {}


def test_the_version_moves_on_state_and_status_changes_and_never_on_a_heartbeat(store: Any) -> None:
    state = SessionState(session_id="s", messages=(Message.of_text("user", "hi"),))
    store.save_snapshot("p", lambda _: SessionSnapshot(snapshot_id="p", state=state, status="pending"))
    assert store.get_session_record("s").version == 1
    store.heartbeat("p")
    assert store.get_session_record("s").version == 1
    bigger = attrs.evolve(state, messages=(*state.messages, Message.of_text("model", "...")))
    store.save_snapshot("p", lambda current: attrs.evolve(current, state=bigger))
    assert store.get_session_record("s").version == 2
    assert store.abort_snapshot("p") == "pending"
    assert store.get_session_record("s").version == 3
    store.save_snapshot("p", lambda current: attrs.evolve(current, finish_reason="aborted"))  # neither changes
    assert store.get_session_record("s").version == 3


def test_a_session_deleted_and_made_again_never_reuses_a_version(store: Any) -> None:
    for text in ("one", "two", "three"):
        _turn(store, "again", text)
    assert store.get_session_record("again").version == 3
    assert store.delete_session("again") == 3
    assert store.get_session_record("again") is None
    _turn(store, "again", "fresh")
    record = store.get_session_record("again")
    assert record is not None and record.version == 4


def test_a_restore_counts_each_snapshot_it_writes(store: Any) -> None:
    _turn(store, "r", "one")
    root = SessionSnapshot(
        snapshot_id="x1", session_id="r", created_at="2026-01-01T00:00:00Z", state=SessionState(session_id="r")
    )
    child = attrs.evolve(root, snapshot_id="x2", parent_id="x1", created_at="2026-01-02T00:00:00Z")
    assert store.restore_snapshots([root, child]) == 2
    record = store.get_session_record("r")
    assert record is not None and record.version == 3 and record.created_at == "2026-01-01T00:00:00Z"


def test_racing_writers_move_the_version_once_per_snapshot_they_write(store: Any) -> None:
    _turn(store, "race", "seed")
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(3):
                _turn(store, "race", f"w{n}-{i}")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    record = store.get_session_record("race")
    assert record is not None and record.version == 1 + 9 == len(store.list_snapshots("race"))


def test_the_async_face_reads_the_same_record(store: Any) -> None:
    _turn(store, "a", "one")

    async def read() -> Any:
        return await store.aio.get_session_record("a")

    assert asyncio.run(read()) == store.get_session_record("a")
