"""What one store instance knows must never outlive what another instance did to the same table.

Instance A reads or writes a snapshot; instance B (another process, on the same table) then deletes the
session and writes the same ids again, restores it, or moves a snapshot to another session. A's next
write must be judged on what is stored now, as the in-memory store judges it: a child planned on a
parent as A remembered it, or an update run on A's copy, would point at data B removed or overwrite
what B wrote. For memory, B is the same store (there is nothing to go stale).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
import pytest

from genkit_sessions import GenkitError, InMemorySessionStore, Message, SessionSnapshot, SessionState, Status
from genkit_sessions.stores.protocol import CallOptions
from tests.conftest import StoreFactory


def _other(store: Any) -> Any:
    """Another instance on the same data, with nothing cached (the same store, for memory)."""
    if isinstance(store, InMemorySessionStore):
        return store
    return type(store)(store.table_name, store.client)


def _state(session_id: str, texts: list[str]) -> SessionState:
    return SessionState(
        session_id=session_id,
        messages=tuple(Message.of_text("user" if i % 2 == 0 else "model", t) for i, t in enumerate(texts)),
    )


def _texts(snapshot: SessionSnapshot | None) -> list[str] | None:
    if snapshot is None or snapshot.state is None:
        return None
    return [m.content[0].text for m in snapshot.state.messages]


def _new(
    store: Any,
    snapshot_id: str,
    session_id: str,
    texts: list[str],
    parent: str | None = None,
    status: str | None = None,
) -> SessionSnapshot:
    snapshot = SessionSnapshot(
        snapshot_id=snapshot_id, session_id=session_id, parent_id=parent, status=status, state=_state(session_id, texts)
    )
    saved = store.save_snapshot(snapshot_id, lambda current: snapshot if current is None else None)
    assert saved is not None
    return saved


def _append(text: str) -> Any:
    def mutate(current: SessionSnapshot | None) -> SessionSnapshot | None:
        if current is None:
            return None
        assert current.state is not None and current.session_id is not None
        return attrs.evolve(current, state=_state(current.session_id, [*(_texts(current) or []), text]))

    return mutate


def _readable(store: Any, session_id: str) -> dict[str, list[str] | None]:
    cold = _other(store)
    return {s.snapshot_id: _texts(s) for s in cold.list_snapshots(session_id)}


def test_a_child_of_a_snapshot_another_instance_deleted_and_wrote_again_is_stored_whole(
    make_store: StoreFactory,
) -> None:
    a = make_store()
    b = _other(a)
    _new(a, "d", "s", ["old-1", "old-2"])
    b.delete_session("s")
    _new(b, "d", "s", ["new-1"])
    saved = _new(a, "c", "s", ["old-1", "old-2", "child"], parent="d")
    assert _texts(saved) == ["old-1", "old-2", "child"]
    assert _readable(a, "s") == {"d": ["new-1"], "c": ["old-1", "old-2", "child"]}
    assert _texts(_other(a).get_snapshot(session_id="s")) == ["old-1", "old-2", "child"]


def test_a_turn_finished_after_another_instance_deleted_and_restored_the_session_stays_readable(
    make_store: StoreFactory,
) -> None:
    a = make_store()
    b = _other(a)
    _new(a, "a", "s", ["hello", "hi"])
    _new(a, "p", "s", ["hello", "hi", "q"], parent="a", status="pending")
    backup = b.list_snapshots("s")
    b.delete_session("s")
    assert b.restore_snapshots(backup) == 2
    done = a.save_snapshot("p", lambda c: attrs.evolve(_append("answer")(c), status="completed"))
    assert _texts(done) == ["hello", "hi", "q", "answer"]
    _new(a, "c", "s", ["hello", "hi", "other"], parent="a")
    assert _readable(a, "s") == {
        "a": ["hello", "hi"],
        "p": ["hello", "hi", "q", "answer"],
        "c": ["hello", "hi", "other"],
    }


def test_an_update_after_another_instance_deleted_and_wrote_the_snapshot_again_runs_on_what_is_stored(
    make_store: StoreFactory,
) -> None:
    a = make_store()
    b = _other(a)
    _new(a, "p", "s", ["old"], status="pending")
    b.delete_session("s")
    _new(b, "p", "s", ["B-new"], status="pending")
    seen: list[list[str] | None] = []

    def progress(current: SessionSnapshot | None) -> SessionSnapshot | None:
        seen.append(_texts(current))
        return _append("A-progress")(current)

    assert _texts(a.save_snapshot("p", progress)) == ["B-new", "A-progress"]
    assert seen[-1] == ["B-new"]
    assert _readable(a, "s") == {"p": ["B-new", "A-progress"]}


@pytest.mark.parametrize("updates_before", [0, 1, 2])
def test_an_update_after_another_instance_restored_the_snapshot_runs_on_the_restored_state(
    make_store: StoreFactory, updates_before: int
) -> None:
    a = make_store()
    b = _other(a)
    _new(a, "p", "s", ["old"], status="pending")
    for i in range(updates_before):
        a.save_snapshot("p", _append(f"u{i}"))
    current = b.get_snapshot(snapshot_id="p")
    b.restore_snapshots([attrs.evolve(current, state=_state("s", ["RESTORED"]))])
    seen: list[list[str] | None] = []

    def progress(current: SessionSnapshot | None) -> SessionSnapshot | None:
        seen.append(_texts(current))
        return _append("A")(current)

    a.save_snapshot("p", progress)
    assert seen[-1] == ["RESTORED"]
    assert _readable(a, "s") == {"p": ["RESTORED", "A"]}


def test_a_child_of_a_snapshot_now_rooted_in_another_session_is_judged_where_it_is_now(
    make_store: StoreFactory,
) -> None:
    a = make_store()
    b = _other(a)
    _new(a, "d", "s2", ["x"])
    b.delete_session("s2")
    _new(b, "d", "s3", ["y"])
    _new(a, "a", "s3", ["y", "child"], parent="d")
    assert _readable(a, "s3") == {"d": ["y"], "a": ["y", "child"]}
    with pytest.raises(GenkitError) as caught:  # and one in the session d left is refused, on what is stored
        _new(a, "b", "s2", ["x", "child"], parent="d")
    assert caught.value.status in (Status.INVALID_ARGUMENT, Status.FAILED_PRECONDITION)


# With 149 more snapshots the restore is past one DynamoDB transaction: items in batches, then each head.
@pytest.mark.parametrize("more", [0, 149], ids=["one-transaction", "past-one-transaction"])
def test_a_session_whose_snapshots_a_restore_moved_elsewhere_keeps_its_record(
    make_store: StoreFactory, more: int
) -> None:
    store = make_store()
    store.create_session("s2", metadata={"principal": "ana"})
    _new(store, "h", "s2", ["hi"])
    h = store.get_snapshot(snapshot_id="h")
    assert h is not None and h.state is not None
    moved = attrs.evolve(h, session_id="s3", state=attrs.evolve(h.state, session_id="s3"))
    others = [attrs.evolve(moved, snapshot_id=f"o{n}", parent_id="h") for n in range(more)]
    store.restore_snapshots([moved, *others])
    record = store.get_session_record("s2")
    assert record is not None
    assert (record.version, record.leaf_id, dict(record.metadata)) == (0, None, {"principal": "ana"})
    assert store.list_snapshots("s2") == []
    assert sorted(s.snapshot_id for s in store.list_snapshots("s3")) == sorted(["h", *(o.snapshot_id for o in others)])
    with pytest.raises(GenkitError) as caught:
        store.create_session("s2")
    assert caught.value.status is Status.ALREADY_EXISTS
    _new(store, "k", "s2", ["again"])
    again = store.get_session_record("s2")
    assert again is not None and again.leaf_id == "k" and again.version == 2


class _Clock:
    now = datetime(2030, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now


def test_a_heartbeat_of_a_running_turn_in_an_expired_session_finds_nothing(make_store: StoreFactory) -> None:
    clock = _Clock()
    store = make_store(clock=clock)
    store.create_session("s", ttl=timedelta(seconds=30), sliding=True)
    _new(store, "g", "s", ["working"], status="pending")
    assert store.heartbeat("g").heartbeat_at is not None
    clock.now += timedelta(minutes=5)
    with pytest.raises(GenkitError) as caught:
        store.heartbeat("g")
    assert caught.value.status is Status.NOT_FOUND
    assert store.get_session_record("s") is None and store.get_snapshot(snapshot_id="g") is None


@pytest.mark.parametrize("writer", ["same instance", "another instance"])
def test_an_id_last_used_in_an_expired_session_starts_a_new_session_and_the_expired_one_is_deleted(
    make_store: StoreFactory, writer: str
) -> None:
    clock = _Clock()
    store = make_store(clock=clock)
    store.create_session("old", ttl=timedelta(seconds=30))
    _new(store, "e", "old", ["before"])
    _new(store, "f", "old", ["before", "again"], parent="e")
    clock.now += timedelta(minutes=5)  # "old" reads as absent, and so does "e"
    assert store.get_snapshot(snapshot_id="e") is None
    saver = store
    if writer == "another instance" and not isinstance(store, InMemorySessionStore):
        saver = type(store)(store.table_name, store.client, clock=clock)
    saved = _new(saver, "e", "new", ["fresh"])
    assert saved.session_id == "new" and saved.parent_id is None
    assert _readable(store, "new") == {"e": ["fresh"]}
    assert store.get_session_record("old") is None and store.get_snapshot(snapshot_id="f") is None
    assert store.delete_expired_sessions(clock.now + timedelta(days=1)) == 0  # written over means deleted


def test_a_sliding_session_written_in_the_instant_it_was_created_is_still_deleted_once_expired(
    make_store: StoreFactory,
) -> None:
    clock = _Clock()  # a clock that does not move between the create and the write
    store = make_store(clock=clock)
    _new(store, "z", "other", ["stamped first"])  # so the create's stamp is a microsecond past the clock
    store.create_session("s", ttl=timedelta(seconds=30), sliding=True)
    _new(store, "a", "s", ["first"])
    clock.now += timedelta(minutes=5)
    assert store.get_session_record("s") is None
    assert store.delete_expired_sessions(clock.now) == 1
    assert store.get_snapshot(snapshot_id="a") is None and store.delete_expired_sessions(clock.now) == 0


def test_a_save_refused_by_its_parent_rule_leaves_the_expired_session_it_named_for_delete_expired(
    make_store: StoreFactory,
) -> None:
    clock = _Clock()
    store = make_store(clock=clock)
    store.create_session("s", ttl=timedelta(seconds=30))
    _new(store, "a", "s", ["kept until deleted"])
    clock.now += timedelta(minutes=5)
    with pytest.raises(GenkitError) as caught:
        _new(store, "b", "s", ["orphan"], parent="missing")
    assert caught.value.status is Status.INVALID_ARGUMENT
    with pytest.raises(GenkitError):
        _new(store, "c", "s", ["child of an expired parent"], parent="a")
    assert store.delete_expired_sessions(clock.now) == 1  # the refused saves changed nothing


@pytest.mark.parametrize("into", ["another session", "the expired session"])
def test_a_save_refused_by_its_expected_version_leaves_the_expired_session_holding_its_id_for_delete_expired(
    make_store: StoreFactory, into: str
) -> None:
    clock = _Clock()
    store = make_store(clock=clock)
    store.create_session("old", ttl=timedelta(seconds=30))
    _new(store, "e", "old", ["in the expired session"])
    _new(store, "a", "live", ["a live session at version 1"])
    clock.now += timedelta(minutes=5)  # "old" reads as absent, and so does its "e"
    session_id = "live" if into == "another session" else "old"
    parent = "a" if into == "another session" else None
    mine = SessionSnapshot(snapshot_id="e", session_id=session_id, parent_id=parent, state=_state(session_id, ["x"]))
    with pytest.raises(GenkitError) as caught:  # the live session is at 1, the expired one at 0
        store.save_snapshot("e", lambda _: mine, options=CallOptions(expected_version=7))
    assert caught.value.status is Status.ABORTED and caught.value.reason == "VERSION_CONFLICT"
    assert store.get_snapshot(snapshot_id="e") is None
    assert store.delete_expired_sessions(clock.now) == 1  # the refused save deleted nothing


def test_a_first_save_on_an_expected_version_above_zero_is_a_version_conflict_after_a_read_of_the_session(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    assert store.get_snapshot(session_id="s") is None  # the store now knows "s" has no head
    snapshot = SessionSnapshot(snapshot_id="a", session_id="s", state=_state("s", ["x"]))
    with pytest.raises(GenkitError) as caught:
        store.save_snapshot("a", lambda _: snapshot, options=CallOptions(expected_version=1))
    assert caught.value.status is Status.ABORTED and caught.value.reason == "VERSION_CONFLICT"
    assert store.get_snapshot(snapshot_id="a") is None


@pytest.mark.parametrize("after", ["a root", "a child"])
def test_a_save_expecting_the_version_it_read_is_a_version_conflict_once_another_instance_wrote(
    make_store: StoreFactory, after: str
) -> None:
    store = make_store()
    expected = 0
    if after == "a child":
        _new(store, "r", "s", ["r"])
        expected = 1
    assert (store.get_snapshot(session_id="s") is None) == (after == "a root")  # A now knows the session
    other = _other(store)
    parent = "r" if after == "a child" else None
    _new(other, "b", "s", ["b"], parent=parent)  # B moves the version on
    mine = SessionSnapshot(snapshot_id="a", session_id="s", parent_id=parent, state=_state("s", ["a"]))
    with pytest.raises(GenkitError) as caught:
        store.save_snapshot("a", lambda _: mine, options=CallOptions(expected_version=expected))
    assert caught.value.status is Status.ABORTED and caught.value.reason == "VERSION_CONFLICT"
    assert store.get_snapshot(snapshot_id="a") is None
    assert _other(store).get_snapshot(session_id="s").snapshot_id == "b"  # type: ignore[union-attr]


@pytest.mark.parametrize("change", ["abort", "complete"])
def test_a_change_of_a_snapshot_deleted_elsewhere_leaves_the_expired_session_its_id_reuses_to_delete_expired(
    make_store: StoreFactory, change: str
) -> None:
    # A holds pending "d" in s2; B deletes s2; s2 is made again with a ttl and expires. A's change of "d" (a
    # guess from its copy) finds nothing, and must not delete the expired s2 on the way: that is
    # delete_expired_sessions' to count, as on every store.
    clock = _Clock()
    a = make_store(clock=clock)
    b = type(a)(a.table_name, a.client, clock=clock) if not isinstance(a, InMemorySessionStore) else a
    _new(a, "d", "s2", ["working"], status="pending")
    b.delete_session("s2")
    a.create_session("s2", ttl=timedelta(seconds=30))
    clock.now += timedelta(seconds=46)
    if change == "abort":
        assert a.abort_snapshot("d") is None
    else:
        done = a.save_snapshot("d", lambda cur: attrs.evolve(cur, status="completed") if cur else None)
        assert done is None
    assert b.delete_expired_sessions(clock.now) == 1
    assert a.get_session_record("s2") is None and a.get_snapshot(snapshot_id="d") is None
