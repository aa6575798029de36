"""S3: a save's mutator may read the store it saves to; on the in-memory store it may not write to it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from genkit_sessions import GenkitError, InMemorySessionStore, SessionSnapshot, SessionState
from genkit_sessions.model.clock import utc_now
from tests.conftest import StoreFactory


def in_thread(action: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Run ``action`` on a thread and return what it returned: a deadlock fails the test instead of hanging it."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(("returned", action()))
        except BaseException as exc:  # handed back to the test
            outcome.append(("raised", exc))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout)
    assert outcome, f"still blocked after {timeout} s: the store deadlocked"
    kind, value = outcome[0]
    if kind == "raised":
        raise value
    return value


def root(snapshot_id: str, session_id: str = "s", parent_id: str | None = None) -> SessionSnapshot:
    return SessionSnapshot(
        snapshot_id=snapshot_id, session_id=session_id, parent_id=parent_id, state=SessionState(session_id=session_id)
    )


def test_a_mutator_reading_the_store_it_saves_to_sees_the_stored_data(make_store: StoreFactory) -> None:
    store = make_store()
    store.save_snapshot("a", lambda _: root("a"))

    def chain_onto_leaf(current: SessionSnapshot | None) -> SessionSnapshot:
        leaf = store.get_snapshot(session_id="s")
        assert store.get_snapshot(snapshot_id="b") is None
        return root("b", parent_id=leaf.snapshot_id if leaf is not None else None)

    saved = in_thread(lambda: store.save_snapshot("b", chain_onto_leaf))
    assert saved.parent_id == "a"
    assert store.get_snapshot(session_id="s").snapshot_id == "b"


def test_a_mutator_reading_listings_records_and_history_of_the_memory_store_does_not_block() -> None:
    store = InMemorySessionStore()
    store.create_session("s")
    store.save_snapshot("a", lambda _: root("a"))

    def look_around(current: SessionSnapshot | None) -> SessionSnapshot:
        assert [s.snapshot_id for s in store.list_snapshots("s")] == ["a"]
        assert store.get_session_record("s") is not None
        assert store.read_window("s").messages == ()
        return root("b", parent_id="a")

    assert in_thread(lambda: store.save_snapshot("b", look_around)).snapshot_id == "b"


WRITES: dict[str, Callable[[InMemorySessionStore], Any]] = {
    "save_snapshot": lambda store: store.save_snapshot("other", lambda _: root("other", "t")),
    "save_snapshot of the same snapshot": lambda store: store.save_snapshot("b", lambda _: root("b")),
    "abort_snapshot": lambda store: store.abort_snapshot("a"),
    "heartbeat": lambda store: store.heartbeat("a"),
    "delete_session": lambda store: store.delete_session("s"),
    "restore_snapshots": lambda store: store.restore_snapshots(
        [attrs.evolve(root("other", "t"), created_at="2026-01-01T00:00:00.000000Z")]
    ),
    "create_session": lambda store: store.create_session("t"),
    "set_session_metadata": lambda store: store.set_session_metadata("s", "team", "x"),
    "delete_expired_sessions": lambda store: store.delete_expired_sessions(utc_now()),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_mutator_writing_to_the_memory_store_it_saves_to_is_failed_precondition_and_nothing_lands(
    write: str,
) -> None:
    store = InMemorySessionStore()
    store.save_snapshot("a", lambda _: root("a"))

    def writes_inside(current: SessionSnapshot | None) -> SessionSnapshot:
        WRITES[write](store)
        return root("b", parent_id="a")

    with pytest.raises(GenkitError) as caught:
        in_thread(lambda: store.save_snapshot("b", writes_inside))
    assert caught.value.status == "FAILED_PRECONDITION"
    assert "mutator" in caught.value.message and "after save_snapshot returns" in caught.value.message
    assert [s.snapshot_id for s in store.list_snapshots("s")] == ["a"]
    assert store.get_snapshot(session_id="t") is None and store.get_session_record("t") is None
    assert store.get_snapshot(snapshot_id="a").status.value == "completed"
    # the store is usable again afterwards
    assert store.save_snapshot("b", lambda _: root("b", parent_id="a")) is not None
