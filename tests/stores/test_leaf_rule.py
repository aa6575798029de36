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


def at(snapshot_id: str, parent_id: str | None, minute: int, session_id: str = "s") -> SessionSnapshot:
    return SessionSnapshot(
        snapshot_id=snapshot_id,
        session_id=session_id,
        parent_id=parent_id,
        created_at=f"2026-01-01T00:{minute:02d}:00.000000Z",
    )


def test_new_snapshots_a_restore_brings_commit_after_those_held_in_the_order_given(store: Any) -> None:
    # Written by skewed writers elsewhere: "late" was stamped before "early" though it came after it.
    store.restore_snapshots([at("root", None, 0), at("early", "root", 30), at("late", "root", 10)])
    assert leaf_id(store) == "late"
    store.restore_snapshots([at("newest-stamp", "root", 59), at("branch", "root", 5)])
    assert leaf_id(store) == "branch"
    store.restore_snapshots([at("early", "root", 30)])  # already held: keeps its place
    assert leaf_id(store) == "branch"


def test_a_restore_that_moves_the_leaf_away_leaves_the_last_childless_snapshot_by_created_at(
    store: Any,
) -> None:
    # Committed x, y, z in that order, stamped 30, 10 and 20 minutes past: z is the leaf.
    store.restore_snapshots([at("x", None, 30), at("y", None, 10), at("z", None, 20)])
    assert leaf_id(store) == "z"
    store.restore_snapshots([at("z", None, 20, session_id="t")])  # the leaf moves to another session
    # The snapshots left are taken by createdAt, as every store lists them: y (10), then x (30). The
    # commit order (x before y) is not what decides, for DynamoDB keeps only the leaf of it.
    assert leaf_id(store) == "x"
    assert [s.snapshot_id for s in store.list_snapshots("s")] == ["y", "x"]


def test_a_restore_that_gives_the_leaf_a_child_it_already_held_leaves_the_last_childless_by_created_at(
    store: Any,
) -> None:
    store.restore_snapshots([at("x", None, 30), at("y", None, 10), at("z", None, 20)])
    store.restore_snapshots([at("y", "z", 10)])  # y, already held, now names the leaf z as its parent
    assert leaf_id(store) == "x"  # childless are y (10) and x (30): x has the later createdAt


def test_snapshots_left_with_one_created_at_are_taken_by_snapshot_id_when_the_leaf_moves_away(
    store: Any,
) -> None:
    store.restore_snapshots([at("e", None, 0), at("d", None, 0), at("b", None, 0)])
    assert leaf_id(store) == "b"
    store.restore_snapshots([at("e", None, 0)])  # held: keeps its place, the leaf stays
    assert leaf_id(store) == "b"
    store.restore_snapshots([at("b", None, 0, session_id="t")])
    assert leaf_id(store) == "e"  # one createdAt: d, then e


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
    others = sorted((s for s in tree if s is not before), key=lambda s: (s.created_at, s.snapshot_id))
    assert [s.snapshot_id for s in order][:-1] == [s.snapshot_id for s in others]


@settings(max_examples=200, deadline=None)
@given(trees, st.data())
def test_the_leaf_after_a_restore_does_not_depend_on_the_order_a_store_holds_its_snapshots_in(
    tree: list[SessionSnapshot], data: st.DataObject
) -> None:
    # A store may hold a session's snapshots in any order (DynamoDB keeps them in a set): with the same
    # snapshots, the same leaf and the same batch, every store must reach the same leaf, whatever the
    # batch moves away or re-parents.
    held = data.draw(st.permutations(tree))
    leaf = data.draw(st.sampled_from(tree)).snapshot_id
    batch = data.draw(st.lists(st.sampled_from(tree), unique_by=lambda s: s.snapshot_id))
    assert leaf_of(restore_order(held, (), leaf)) == leaf_of(restore_order(tree, (), leaf))
    assert [s.snapshot_id for s in restore_order(held, batch, leaf)] == [
        s.snapshot_id for s in restore_order(tree, batch, leaf)
    ]


def test_a_cycle_has_no_leaf() -> None:
    a = SessionSnapshot(snapshot_id="a", session_id="s", parent_id="b", created_at="2026-01-01T00:00:00Z")
    b = SessionSnapshot(snapshot_id="b", session_id="s", parent_id="a", created_at="2026-01-01T00:00:01Z")
    assert leaf_of([a, b]) is None
