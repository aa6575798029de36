"""The in-memory store's writes that move a session's leaf, with its clock failing at every read.

The clock is the one thing outside the store a write calls (besides the caller's mutator). For each
write and each of the clock reads it makes, the clock fails at that read: the store must read exactly
as before the write or as after it, the error must carry a status (UNAVAILABLE), and the same write
retried with a working clock must succeed. The session slides its expiry, so every save reads the
clock again after the stamp.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
import pytest

from genkit_sessions import GenkitError, InMemorySessionStore, Message, SessionSnapshot, SessionState

START = datetime(2026, 1, 1, tzinfo=timezone.utc)


class FailingClock:
    """A clock one microsecond on at every read, failing at its ``fail_at``-th read once armed."""

    def __init__(self) -> None:
        self.now = START
        self.reads = 0
        self.fail_at: int | None = None

    def __call__(self) -> datetime:
        self.reads += 1
        if self.fail_at is not None and self.reads == self.fail_at:
            raise OSError("the clock is unavailable")
        self.now += timedelta(microseconds=1)
        return self.now


def _snapshot(snapshot_id: str, parent_id: str | None, text: str, status: str = "completed") -> SessionSnapshot:
    state = SessionState(session_id="s", messages=(Message.of_text("user", text),))
    return SessionSnapshot(snapshot_id=snapshot_id, session_id="s", parent_id=parent_id, status=status, state=state)


def _write(store: InMemorySessionStore, snapshot: SessionSnapshot) -> SessionSnapshot | None:
    return store.save_snapshot(snapshot.snapshot_id, lambda _: snapshot)


def _sliding_session(store: InMemorySessionStore) -> None:
    store.create_session("s", ttl=timedelta(hours=1), sliding=True)
    _write(store, _snapshot("a", None, "one"))
    _write(store, _snapshot("b", "a", "two", status="pending"))


WRITES: dict[str, Callable[[InMemorySessionStore], Any]] = {
    "save a child of the leaf": lambda store: _write(store, _snapshot("c", "b", "three")),
    "save the pending leaf as completed": lambda store: _write(store, _snapshot("b", "a", "two")),
    "save a sibling, which becomes the leaf": lambda store: _write(store, _snapshot("c", "a", "other")),
    "restore a child of the leaf": lambda store: store.restore_snapshots(
        [attrs.evolve(_snapshot("c", "b", "restored"), created_at="2026-02-01T00:00:00.000000Z")]
    ),
    "delete the session": lambda store: store.delete_session("s"),
    "create another session with snapshots": lambda store: store.create_session(
        "t",
        ttl=timedelta(hours=1),
        sliding=True,
        snapshots=[
            SessionSnapshot(
                snapshot_id="t1",
                session_id="t",
                state=SessionState(session_id="t", messages=(Message.of_text("user", "t"),)),
            )
        ],
    ),
}


CLOCKLESS = {"delete the session", "restore a child of the leaf"}
"""Writes that call nothing outside the store (a restore stamps nothing, a delete keeps no time): no
read can fail part-way, and the sweep checks that they stay so."""


def _view(store: InMemorySessionStore, clock: FailingClock) -> Any:
    """What a reader sees of both sessions, read with a working clock that stands still."""
    armed, clock.fail_at = clock.fail_at, None
    now, reads = clock.now, clock.reads
    try:
        seen = []
        for session_id in ("s", "t"):
            leaf = store.get_snapshot(session_id=session_id)
            record = store.get_session_record(session_id)
            listed = [(s.snapshot_id, s.status, len(s.state.message_list)) for s in store.list_snapshots(session_id)]
            seen.append(
                (
                    leaf.snapshot_id if leaf is not None else None,
                    None if record is None else (record.version, record.leaf_id),
                    listed,
                )
            )
        return seen
    finally:
        clock.fail_at, clock.now, clock.reads = armed, now, reads


def _store() -> tuple[InMemorySessionStore, FailingClock]:
    clock = FailingClock()
    store = InMemorySessionStore(clock=clock)
    _sliding_session(store)
    return store, clock


def _reads_of(write: Callable[[InMemorySessionStore], Any]) -> int:
    store, clock = _store()
    before = clock.reads
    write(store)
    return clock.reads - before


@pytest.mark.parametrize("name", sorted(WRITES))
def test_a_clock_failing_at_any_read_of_a_write_leaves_the_store_as_before_or_after(name: str) -> None:
    write = WRITES[name]
    reads = _reads_of(write)
    if name in CLOCKLESS:
        assert reads == 0, f"{name} reads the clock {reads} time(s): sweep them as the others"
        return
    assert reads >= 1, "the write reads the clock, so there is a read to fail"
    expected_store, expected_clock = _store()
    write(expected_store)
    after = _view(expected_store, expected_clock)
    for k in range(1, reads + 1):
        store, clock = _store()
        before = _view(store, clock)
        clock.fail_at = clock.reads + k
        with pytest.raises(GenkitError) as raised:
            write(store)
        assert raised.value.status == "UNAVAILABLE", (name, k, raised.value)
        assert "clock" in raised.value.message
        seen = _view(store, clock)
        assert seen in (before, after), (name, k, seen)
        clock.fail_at = None
        write(store)  # the retry succeeds
        assert _view(store, clock) == after, (name, k)


def _consistent(store: InMemorySessionStore, session_id: str) -> None:
    """A session reads whole: its leaf is its last listed snapshot and its record names it, or it is gone."""
    leaf = store.get_snapshot(session_id=session_id)
    listed = store.list_snapshots(session_id)
    record = store.get_session_record(session_id)
    if leaf is None:
        assert listed == [] and (record is None or record.leaf_id is None)
        return
    assert listed[-1] is leaf
    assert record is not None and record.leaf_id == leaf.snapshot_id
    assert all(store.get_snapshot(snapshot_id=s.snapshot_id) is s for s in listed)


def test_a_delete_racing_saves_from_threads_leaves_every_session_whole_or_gone() -> None:
    store = InMemorySessionStore()
    done = threading.Event()
    refused: list[str] = []
    landed: list[str] = []
    deleted: list[int] = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)

    def writer(w: int) -> None:
        for i in range(200):
            leaf = store.get_snapshot(session_id="s")
            child = _snapshot(f"w{w}-{i}", leaf.snapshot_id if leaf is not None else None, f"{w}-{i}")
            try:
                _write(store, child)
            except GenkitError as error:  # the parent went with a delete: refused, with a status
                assert error.status in ("FAILED_PRECONDITION", "INVALID_ARGUMENT", "NOT_FOUND"), error
                refused.append(child.snapshot_id)
            else:
                landed.append(child.snapshot_id)

    def deleter() -> None:
        while not done.is_set():
            deleted.append(store.delete_session("s"))
            record, leaf = store.get_session_leaf("s")  # read together: they must agree mid-race
            assert (record.leaf_id if record is not None else None) == (leaf.snapshot_id if leaf else None)

    try:
        with ThreadPoolExecutor(4) as pool:
            deleting = pool.submit(deleter)
            writers = [pool.submit(writer, w) for w in range(3)]
            for future in writers:
                future.result()
            done.set()
            deleting.result()
    finally:
        sys.setswitchinterval(interval)
    _consistent(store, "s")
    assert len(landed) + len(refused) == 600
    assert landed, "some saves land between the deletes"
    assert sum(deleted) > 0, "some deletes take saved snapshots with them"
    survivors = [s.snapshot_id for s in store.list_snapshots("s")]
    assert set(survivors) <= set(landed)  # nothing refused was stored
