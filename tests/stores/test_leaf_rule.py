"""S8, the one leaf rule: the store's commit order decides the leaf, never a writer's clock.

Writers whose clocks disagree stamp createdAt out of order; the leaf must still be the snapshot whose
creation committed last, in a session lookup, in the session's record, after a restore of what the
session holds (which must not move it), and after an export imported into an empty store.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
from hypothesis import given, settings

from genkit_sessions import InMemorySessionStore, Message, SessionSnapshot, SessionState
from genkit_sessions.dynamodb import DynamoDBSessionStore
from genkit_sessions.model.clock import utc_now
from genkit_sessions.stores.transfer import export_sessions, import_snapshots
from genkit_sessions.stores.write_rules import leaf_of, restore_order
from tests.conftest import StoreFactory

AHEAD = timedelta(hours=1)
BEHIND = -timedelta(hours=1)


def skewed(offset: timedelta) -> Callable[[], datetime]:
    return lambda: utc_now() + offset


class Writers:
    """Two writers on one session whose clocks are two hours apart.

    On DynamoDB they are two stores on one table, each with its own clock. An in-memory store lives
    in one process with one clock, so both writers share the store and its clock jumps between their
    offsets (its stamps stay monotonic, so there the skew shows only in restored data)."""

    def __init__(self, make_store: StoreFactory) -> None:
        self.offset = [timedelta(0)]
        offset = self.offset
        self.first = make_store(clock=lambda: utc_now() + offset[0])
        if isinstance(self.first, DynamoDBSessionStore):
            self.ahead: Any = DynamoDBSessionStore(self.first.table_name, self.first.client, clock=skewed(AHEAD))
            self.behind: Any = DynamoDBSessionStore(self.first.table_name, self.first.client, clock=skewed(BEHIND))
        else:
            self.ahead = self.behind = self.first

    def save(self, writer: str, snapshot_id: str, parent_id: str | None) -> SessionSnapshot:
        store = self.ahead if writer == "ahead" else self.behind
        self.offset[0] = AHEAD if writer == "ahead" else BEHIND
        state = SessionState(session_id="s", messages=(Message.of_text("user", snapshot_id),))
        new = SessionSnapshot(snapshot_id=snapshot_id, session_id="s", parent_id=parent_id, state=state)
        saved = store.save_snapshot(snapshot_id, lambda _: new)
        assert saved is not None
        return saved  # type: ignore[no-any-return]


def leaf_id(store: Any) -> str:
    leaf = store.get_snapshot(session_id="s")
    record = store.get_session_record("s")
    assert leaf is not None and record is not None
    assert record.leaf_id == leaf.snapshot_id
    return leaf.snapshot_id  # type: ignore[no-any-return]


def test_the_leaf_is_the_last_saved_snapshot_whatever_the_writers_clocks(make_store: StoreFactory) -> None:
    writers = Writers(make_store)
    writers.save("ahead", "root", None)
    writers.save("behind", "child-1", "root")  # stamped up to two hours before its parent
    assert leaf_id(writers.first) == "child-1"
    fork = writers.save("ahead", "fork", "root")
    assert leaf_id(writers.first) == "fork"
    last = writers.save("behind", "child-2", "child-1")
    for reader in (writers.first, writers.ahead, writers.behind):
        assert leaf_id(reader) == "child-2"
    if isinstance(writers.first, DynamoDBSessionStore):
        assert last.created_at < fork.created_at  # the skew is real: the newest createdAt is not the leaf


def test_a_restore_of_what_the_session_holds_never_moves_its_leaf(make_store: StoreFactory) -> None:
    writers = Writers(make_store)
    writers.save("ahead", "root", None)
    writers.save("behind", "child-1", "root")
    writers.save("ahead", "fork", "root")
    writers.save("behind", "child-2", "child-1")
    store = writers.first
    held = list(store.list_snapshots("s"))
    assert held[-1].snapshot_id == "child-2"  # the commit order as the store keeps it: the leaf last
    store.restore_snapshots(held)
    assert leaf_id(store) == "child-2"
    store.restore_snapshots(list(reversed(held)))  # the order given cannot move what the session holds
    assert leaf_id(store) == "child-2"
    store.restore_snapshots([held[0]])
    assert leaf_id(store) == "child-2"


def test_an_export_imported_into_an_empty_store_keeps_its_leaf(make_store: StoreFactory, tmp_path: Path) -> None:
    writers = Writers(make_store)
    writers.save("ahead", "root", None)
    writers.save("behind", "child-1", "root")
    writers.save("ahead", "fork", "root")
    writers.save("behind", "child-2", "child-1")
    exported = io.StringIO()
    export_sessions(writers.first, ["s"], exported)
    path = tmp_path / "export.jsonl"
    path.write_text(exported.getvalue(), encoding="utf-8")
    for target in (make_store(), InMemorySessionStore()):
        import_snapshots(target, path)
        assert leaf_id(target) == "child-2"
        again = io.StringIO()
        export_sessions(target, ["s"], again)
        assert again.getvalue() == exported.getvalue()


def test_new_snapshots_a_restore_brings_commit_after_those_held_in_the_order_given(store: Any) -> None:
    def at(snapshot_id: str, parent_id: str | None, minute: int) -> SessionSnapshot:
        return SessionSnapshot(
            snapshot_id=snapshot_id,
            session_id="s",
            parent_id=parent_id,
            created_at=f"2026-01-01T00:{minute:02d}:00.000000Z",
        )

    # Written by skewed writers elsewhere: "late" was stamped before "early" though it came after it.
    store.restore_snapshots([at("root", None, 0), at("early", "root", 30), at("late", "root", 10)])
    assert leaf_id(store) == "late"
    store.restore_snapshots([at("newest-stamp", "root", 59), at("branch", "root", 5)])
    assert leaf_id(store) == "branch"
    store.restore_snapshots([at("early", "root", 30)])  # already held: keeps its place
    assert leaf_id(store) == "branch"


# --- the rule itself ----------------------------------------------------------------------------


def _tree(draw: st.DrawFn) -> list[SessionSnapshot]:
    count = draw(st.integers(1, 12))
    snapshots: list[SessionSnapshot] = []
    for index in range(count):
        parent = draw(st.none() | st.integers(0, index - 1)) if index else None
        minute = draw(st.integers(0, 59))
        snapshots.append(
            SessionSnapshot(
                snapshot_id=f"n{index}",
                session_id="s",
                parent_id=f"n{parent}" if parent is not None else None,
                created_at=f"2026-01-01T00:{minute:02d}:00.000000Z",
            )
        )
    return snapshots


trees = st.composite(_tree)()


@settings(max_examples=200, deadline=None)
@given(trees)
def test_the_leaf_of_a_tree_grown_save_by_save_is_its_last_snapshot(tree: list[SessionSnapshot]) -> None:
    # Every snapshot is saved after its parent, so the last one saved has no child: it is the leaf,
    # whatever createdAt its writer stamped.
    assert leaf_of(tree) == tree[-1]


@settings(max_examples=200, deadline=None)
@given(trees, st.data())
def test_restoring_snapshots_held_never_moves_the_leaf(tree: list[SessionSnapshot], data: st.DataObject) -> None:
    again = data.draw(st.lists(st.sampled_from(tree), unique_by=lambda s: s.snapshot_id))
    before = leaf_of(tree)
    assert before is not None
    order = restore_order(tree, again, before.snapshot_id)
    assert leaf_of(order) == before
    assert [s.snapshot_id for s in order][:-1] == [s.snapshot_id for s in tree if s is not before]


def test_a_cycle_has_no_leaf() -> None:
    a = SessionSnapshot(snapshot_id="a", session_id="s", parent_id="b", created_at="2026-01-01T00:00:00Z")
    b = SessionSnapshot(snapshot_id="b", session_id="s", parent_id="a", created_at="2026-01-01T00:00:01Z")
    assert leaf_of([a, b]) is None
