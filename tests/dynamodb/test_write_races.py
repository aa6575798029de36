"""Writers racing each other, and writes at the edges of DynamoDB's limits: one test per known bug.

Each test states the behaviour the store owes (the in-memory store's, where there is one) and goes
through the public API only; the table is read with ``scan`` just to check what DynamoDB would keep.
A second instance of the store is a second writer: it either runs between two calls of the first
(from a guard fault, through a client of its own: see ``twin``) or after it.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
import pytest
from botocore.exceptions import ReadTimeoutError

from genkit_sessions import (
    ErrorInfo,
    GenkitError,
    InMemorySessionStore,
    Message,
    SessionSnapshot,
    SessionState,
    SnapshotStatus,
    Status,
)
from genkit_sessions.dynamodb import DynamoDBSessionStore
from genkit_sessions.stores.protocol import CallOptions
from tests.dynamodb.helpers import (
    cold,
    hidden_items_unlisted,
    left_behind,
    noise,
    parts_left_forever,
    readable_ids,
    save_new,
    scan,
    six_megabytes,
    state_of,
    twin,
)
from tests.dynamodb.write_paths import many_snapshots
from tests.dynamodb_backends import guard_of

StoreFactory = Any
READS = {"GetItem", "BatchGetItem", "Query", "Scan"}


def _outcome(call: Callable[[], Any]) -> Any:
    """What a call returned, or the GenkitError it raised."""
    try:
        return call()
    except GenkitError as exc:
        return exc


def _before_first(operation: str, action: Callable[[], Any]) -> Callable[[str, dict[str, Any]], None]:
    """A guard fault that runs ``action`` once, just before the first call of ``operation``."""
    done: list[Any] = []

    def fault(op: str, params: dict[str, Any]) -> None:
        if op == operation and not done:
            done.append(action())

    fault.results = done  # type: ignore[attr-defined]
    return fault


def _at_call(index: int, action: Callable[[], Any]) -> Callable[[str, dict[str, Any]], None]:
    """A guard fault that runs ``action`` once, just before the call at ``index`` (0-based) from now."""
    seen = [0]

    def fault(op: str, params: dict[str, Any]) -> None:
        seen[0] += 1
        if seen[0] == index + 1:
            action()

    return fault


# --- 1. delete_session racing the first, staged write of a session --------------------------------


def _before_the_first_lift(action: Callable[[], Any]) -> Callable[[str, dict[str, Any]], None]:
    """A guard fault that runs ``action`` once, just before the first UpdateItem after the staged parts
    were written (the lift of the first part's orphan expiry)."""
    seen: list[str] = []

    def fault(op: str, params: dict[str, Any]) -> None:
        if op == "UpdateItem" and "BatchWriteItem" in seen and not fault.results:  # type: ignore[attr-defined]
            fault.results.append(action())  # type: ignore[attr-defined]
        seen.append(op)

    fault.results = []  # type: ignore[attr-defined]
    return fault


@pytest.mark.parametrize("moment", ["before-the-commit", "before-the-first-lift"])
def test_delete_racing_a_first_large_write_never_leaves_a_session_that_reads_data_loss(
    make_dynamo: StoreFactory, moment: str
) -> None:
    store = make_dynamo()
    deleter = twin(store)
    big = six_megabytes("s")
    guard = guard_of(store)
    # Parts (BatchWriteItem), their expiry lifted (UpdateItems), then the commit (TransactWriteItems). The
    # deletion runs just before the commit, or just before the first lift (it deletes the staged parts).
    delete = lambda: _outcome(lambda: deleter.delete_session("s"))  # noqa: E731
    race = (
        _before_first("TransactWriteItems", delete) if moment == "before-the-commit" else _before_the_first_lift(delete)
    )
    guard.faults.append(race)
    outcome = _outcome(lambda: save_new(store, "big", big))
    guard.faults.clear()
    assert len(race.results) == 1, "the deletion did not run between the staged parts and the commit"  # type: ignore[attr-defined]
    assert "BatchWriteItem" in guard.log[: guard.log.index("TransactWriteItems")]  # parts went ahead of the commit
    if moment == "before-the-first-lift":  # the write lost its parts to the deletion: it wrote them again
        assert guard.log.count("BatchWriteItem") >= 2 and not isinstance(outcome, GenkitError), outcome
    reader = cold(store)
    if isinstance(outcome, GenkitError):  # the delete won: the store reads as if the save never happened
        assert outcome.status in set(Status) - {Status.OK}
        assert reader.get_snapshot(snapshot_id="big") is None
        assert reader.get_snapshot(session_id="s") is None
        assert reader.list_snapshots("s") == []
    else:  # the save won: it reads back whole
        assert reader.get_snapshot(snapshot_id="big") == outcome
        assert reader.get_snapshot(session_id="s") == outcome
        assert reader.list_snapshots("s") == [outcome]


# --- 2. a write after another instance deleted the session ------------------------------------------


def _pending_session(store: DynamoDBSessionStore) -> None:
    save_new(store, "r", state_of("s", ["hello"]))
    save_new(store, "p", state_of("s", ["hello", "working"]), "r", status=SnapshotStatus.PENDING)


def _complete(store: Any) -> Any:
    seen: list[SessionSnapshot | None] = []

    def complete(current: SessionSnapshot | None) -> SessionSnapshot | None:
        seen.append(current)
        return attrs.evolve(current, status=SnapshotStatus.COMPLETED) if current is not None else None

    return store.save_snapshot("p", complete), seen[-1] if seen else "never called"


def _abort(store: Any) -> Any:
    return store.abort_snapshot("p"), None


def _heartbeat(store: Any) -> Any:
    try:
        return store.heartbeat("p"), None
    except GenkitError as exc:
        return exc.status, None


WRITES_AFTER_DELETE = {
    # what the write returns, and (for the save) what its mutator saw last: the in-memory store's answer
    "complete": (_complete, (None, None)),
    "abort": (_abort, (None, None)),
    "heartbeat": (_heartbeat, (Status.NOT_FOUND, None)),
}


@pytest.mark.parametrize("write", list(WRITES_AFTER_DELETE))
def test_a_write_after_another_instance_deleted_the_session_sees_nothing_and_leaves_nothing(
    make_dynamo: StoreFactory, write: str
) -> None:
    run, expected = WRITES_AFTER_DELETE[write]
    memory = InMemorySessionStore()  # the reference: the same steps on the in-memory store
    _pending_session(memory)  # type: ignore[arg-type]
    assert memory.delete_session("s") == 2
    assert run(memory) == expected

    store = make_dynamo()
    _pending_session(store)  # instance A wrote the pending turn, and remembers it
    assert cold(store).delete_session("s") == 2  # instance B deletes the session
    assert left_behind(store) == []
    assert run(store) == expected  # A finishes, aborts or keeps alive the turn it started
    assert left_behind(store) == [], "the write left an item of the deleted session behind"
    assert cold(store).get_snapshot(snapshot_id="p") is None


# --- 3. restore_snapshots racing a new turn --------------------------------------------------------


def test_restore_racing_a_new_turn_keeps_the_turn_listed_and_the_leaf_on_it(make_dynamo: StoreFactory) -> None:
    store = make_dynamo()
    writer = twin(store)
    save_new(store, "a", state_of("s", ["one"]))
    save_new(store, "b", state_of("s", ["one", "two"]), "a")
    backup = list(cold(store).list_snapshots("s"))  # restored verbatim over the session: an idempotent import
    guard = guard_of(store)
    guard.reset()
    assert store.restore_snapshots(backup) == 2
    log = list(guard.log)
    last_read = max(i for i, op in enumerate(log) if op in READS)
    assert last_read + 1 < len(log) and log[last_read + 1] not in READS  # the head rewrite follows the reads
    turns: list[SessionSnapshot] = []

    def new_turn() -> None:
        leaf = writer.get_snapshot(session_id="s")
        assert leaf is not None and leaf.snapshot_id == "b" and leaf.state is not None
        state = attrs.evolve(leaf.state, messages=(*leaf.state.message_list, Message.of_text("user", "three")))
        turns.append(save_new(writer, "t", state, "b"))

    guard.faults.append(_at_call(last_read + 1, new_turn))  # after restore's reads, before its head rewrite
    assert store.restore_snapshots(backup) == 2
    guard.faults.clear()
    assert len(turns) == 1, "the new turn did not run between the restore's reads and its head rewrite"
    reader = cold(store)
    assert [s.snapshot_id for s in reader.list_snapshots("s")] == ["a", "b", "t"]
    assert reader.get_snapshot(session_id="s") == turns[0]
    assert reader.delete_session("s") == 3
    assert left_behind(store) == [], "the deletion left items of the session behind"


# --- 4. a staged write whose commit has an unknown outcome ------------------------------------------


def test_a_staged_write_whose_commit_outcome_stays_unknown_leaves_parts_a_sweep_removes(
    make_dynamo: StoreFactory,
) -> None:
    store = make_dynamo()
    save_new(store, "p", state_of("s", ["small"]))
    guard = guard_of(store)

    def answer_lost() -> None:  # raised before the call: the commit is not applied, and the store cannot know
        raise ReadTimeoutError(endpoint_url="http://127.0.0.1:1/")

    guard.faults.append(_before_first("TransactWriteItems", answer_lost))
    outcome = _outcome(lambda: save_new(store, "big", six_megabytes("s"), "p"))
    guard.faults.clear()
    assert guard.calls["BatchWriteItem"] >= 1  # the parts were staged
    reader = cold(store)
    if isinstance(outcome, GenkitError):  # the store reads as before
        assert outcome.status == Status.DEADLINE_EXCEEDED
        assert reader.get_snapshot(snapshot_id="big") is None
        assert [s.snapshot_id for s in reader.list_snapshots("s")] == ["p"]
    else:  # the store found out and committed after all
        assert reader.get_snapshot(snapshot_id="big") == outcome
    # Parts of a commit whose outcome stayed unknown are permanent (had it landed, they must never expire),
    # and their staging marker names them; sweeping the session's stale markers removes them.
    assert store.sweep_staged("s", older_than=timedelta(0)) == (1 if isinstance(outcome, GenkitError) else 0)
    assert parts_left_forever(store, readable_ids(store, ["s"])) == []
    assert [s.snapshot_id for s in cold(store).list_snapshots("s")] == (
        ["p"] if isinstance(outcome, GenkitError) else ["p", "big"]
    )


@pytest.mark.parametrize("sweep", ["finished", "stopped-after-deleting-parts"])
def test_a_sweep_between_a_staged_writes_staging_and_its_commit_wins_and_the_write_never_lands_on_its_parts(
    make_dynamo: StoreFactory, sweep: str
) -> None:
    """A sweep (another instance) takes back a staged write whose commit has not been sent yet; the
    commit must then be refused, whether the sweep finished or stopped after deleting the parts (its
    marker void, still there): a commit that landed would reference parts that are gone."""
    store = make_dynamo()
    save_new(store, "p", state_of("s", ["small"]))
    sweeper = twin(store)
    swept: list[Any] = []

    def parts_deleted_answer_lost(operation: str, params: dict[str, Any]) -> None:
        if operation == "BatchWriteItem":
            raise ReadTimeoutError(endpoint_url="http://127.0.0.1:1/")

    if sweep == "stopped-after-deleting-parts":  # the marker void, the parts gone, the marker still there
        guard_of(sweeper).after_faults.append(parts_deleted_answer_lost)

    def sweep_now() -> None:
        swept.append(_outcome(lambda: sweeper.sweep_staged("s", older_than=timedelta(0))))

    guard_of(store).faults.append(_before_first("TransactWriteItems", sweep_now))
    outcome = _outcome(lambda: save_new(store, "big", six_megabytes("s"), "p"))
    guard_of(store).faults.clear()
    guard_of(sweeper).after_faults.clear()
    if sweep == "finished":
        assert swept == [1], swept
    else:
        assert isinstance(swept[0], GenkitError), swept

    rerun = sweeper.sweep_staged("s", older_than=timedelta(0))
    reader = cold(store)
    if isinstance(outcome, GenkitError):  # the store reads as before
        assert outcome.status is not Status.OK
        assert reader.get_snapshot(snapshot_id="big") is None
        assert [s.snapshot_id for s in reader.list_snapshots("s")] == ["p"]
    else:  # the save staged again after the refusal, and committed: every part of it reads
        assert reader.get_snapshot(snapshot_id="big") == outcome
        assert [s.snapshot_id for s in reader.list_snapshots("s")] == ["p", "big"]
    assert rerun == 0  # the refused writer took its own parts back, and the void marker with them
    assert parts_left_forever(store, readable_ids(store, ["s"])) == []
    assert not [i for i in scan(store, "pk, sk") if i["sk"]["S"].startswith("g\x1f")], "a marker was left"


# --- 5. restore of a long session with long ids ----------------------------------------------------


def test_a_restore_of_many_long_ids_fits_every_item_in_400_kb_and_lists_them_all(make_dynamo: StoreFactory) -> None:
    store = make_dynamo()
    count = 1_100
    ids = [f"{i:04d}-" + "x" * 470 for i in range(count)]  # 475 bytes: valid (at most 512), no control characters
    snapshots = [
        SessionSnapshot(
            snapshot_id=ids[i],
            session_id="s",
            parent_id=ids[i - 1] if i else None,
            created_at=f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}.000000Z",
            updated_at=f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}.000000Z",
            state=SessionState(session_id="s", messages=(Message.of_text("user", f"turn {i}"),)),
        )
        for i in range(count)
    ]
    try:
        restored = store.restore_snapshots(snapshots)
    except GenkitError as exc:  # refusing is fine, if it is clear and comes before any write
        assert exc.status == Status.INVALID_ARGUMENT
        assert scan(store) == []
        return
    assert restored == count
    reader = cold(store)
    assert [s.snapshot_id for s in reader.list_snapshots("s")] == ids
    leaf = reader.get_snapshot(session_id="s")
    assert leaf is not None and leaf.snapshot_id == ids[-1]


# --- 6. a pending snapshot with a large record ------------------------------------------------------


def _large_pending(store: DynamoDBSessionStore) -> SessionSnapshot:
    """A pending snapshot whose record (everything but the state) is as large as the store accepts,
    in its error details, with a state that compresses to about 150 KB.

    The largest record is found by trying: the store refuses a record over its limit with
    INVALID_ARGUMENT before writing anything.
    """
    rng = random.Random(6)
    state = state_of("s", ["hello", noise(rng, 200_000)])
    trace = noise(random.Random(7), 230_000)
    for size in range(len(trace), 0, -1_000):
        error = ErrorInfo(status="UNKNOWN", message="a partial answer", details={"trace": trace[:size]})
        try:
            return save_new(store, "p", state, status=SnapshotStatus.PENDING, error=error)
        except GenkitError as exc:
            assert exc.status == Status.INVALID_ARGUMENT, exc
            assert scan(store) == []
    raise AssertionError("no record size was accepted")


LARGE_RECORD_WRITES = {
    "complete": lambda store: store.save_snapshot(
        "p", lambda current: attrs.evolve(current, status=SnapshotStatus.COMPLETED) if current else None
    ),
    "abort": lambda store: store.abort_snapshot("p"),
    "heartbeat": lambda store: store.heartbeat("p"),
    # state changes: a small one's blob fits beside the record, a large one's (one part) must go outside it
    "progress": lambda store: store.save_snapshot(
        "p", lambda current: attrs.evolve(current, state=_with_progress(current.state, 9_000)) if current else None
    ),
    "large-progress": lambda store: store.save_snapshot(
        "p", lambda current: attrs.evolve(current, state=_with_progress(current.state, 250_000)) if current else None
    ),
}
LARGE_RECORD_STATUS = {
    "complete": "completed",
    "abort": "aborted",
    "heartbeat": "pending",
    "progress": "pending",
    "large-progress": "pending",
}
PROGRESS = {"progress": 9_000, "large-progress": 250_000}


def _with_progress(state: SessionState | None, size: int) -> SessionState:
    assert state is not None
    return attrs.evolve(state, messages=(*state.message_list, Message.of_text("model", noise(random.Random(8), size))))


@pytest.mark.parametrize("write", list(LARGE_RECORD_WRITES))
def test_a_pending_snapshot_with_a_record_just_under_the_limit_can_still_be_completed_aborted_or_heartbeated(
    make_dynamo: StoreFactory, write: str
) -> None:
    store = make_dynamo()
    pending = _large_pending(store)
    LARGE_RECORD_WRITES[write](store)
    stored = cold(store).get_snapshot(snapshot_id="p")
    assert stored is not None and stored.effective_status.value == LARGE_RECORD_STATUS[write]
    expected = _with_progress(pending.state, PROGRESS[write]) if write in PROGRESS else pending.state
    assert stored.state == expected and stored.error == pending.error


# --- 7. a guess that the snapshot is absent -------------------------------------------------------


def _write_only_when_absent(current: SessionSnapshot | None) -> SessionSnapshot | None:
    """Declines when the snapshot exists; when absent, returns one whose parent does not exist."""
    if current is not None:
        return None
    return SessionSnapshot(snapshot_id="g-1", parent_id="nowhere", state=state_of("s", ["guess"]))


def test_a_mutator_guessed_on_an_absent_snapshot_is_judged_on_the_real_one_before_the_parent_check(
    make_dynamo: StoreFactory,
) -> None:
    memory = InMemorySessionStore()  # the reference: the mutator sees the stored g-1 and declines
    save_new(memory, "g-1", state_of("s", ["real"]))  # type: ignore[arg-type]
    assert memory.save_snapshot("g-1", _write_only_when_absent) is None

    store = make_dynamo()
    written = save_new(store, "g-1", state_of("s", ["real"]))  # instance A
    other = cold(store)  # instance B, which never read g-1
    assert other.save_snapshot("g-1", _write_only_when_absent) is None
    assert cold(store).get_snapshot(snapshot_id="g-1") == written


# --- compare-and-set: a write landing between the save's read and its commit -------------------------


@pytest.mark.parametrize("session_holds", ["nothing yet", "one snapshot"])
def test_a_save_expecting_a_version_loses_to_a_write_landing_between_its_read_and_its_commit(
    make_dynamo: StoreFactory, session_holds: str
) -> None:
    store = make_dynamo()
    parent, expected = (None, 0) if session_holds == "nothing yet" else ("r", 1)
    if parent is not None:
        save_new(store, "r", state_of("s", ["r"]))
    writer = twin(store)
    # The other writer's snapshot lands after this save read the session's head, before its commit.
    race = _before_first("TransactWriteItems", lambda: save_new(writer, "b", state_of("s", ["b"]), parent_id=parent))
    guard_of(store).faults.append(race)
    mine = SessionSnapshot(snapshot_id="a", session_id="s", parent_id=parent, state=state_of("s", ["a"]))
    outcome = _outcome(lambda: store.save_snapshot("a", lambda _: mine, options=CallOptions(expected_version=expected)))
    guard_of(store).faults.clear()
    assert len(race.results) == 1, "the other write did not run between the read and the commit"  # type: ignore[attr-defined]
    assert isinstance(outcome, GenkitError) and outcome.reason == "VERSION_CONFLICT", outcome
    assert outcome.status is Status.ABORTED
    reader = cold(store)
    assert reader.get_snapshot(snapshot_id="a") is None
    assert reader.get_snapshot(session_id="s").snapshot_id == "b"  # type: ignore[union-attr]
    assert reader.get_session_record("s").version == expected + 1  # type: ignore[union-attr]


@pytest.mark.parametrize("change", ["status", "state"])
def test_a_change_expecting_a_version_loses_to_a_write_landing_between_its_read_and_its_commit(
    make_dynamo: StoreFactory, change: str
) -> None:
    store = make_dynamo()
    save_new(store, "p", state_of("s", ["p"]), status=SnapshotStatus.PENDING)
    writer = twin(store)
    race = _before_first("TransactWriteItems", lambda: save_new(writer, "b", state_of("s", ["b"]), parent_id="p"))
    guard_of(store).faults.append(race)

    def finish(current: SessionSnapshot | None) -> SessionSnapshot | None:
        if current is None:
            return None
        if change == "status":
            return attrs.evolve(current, status=SnapshotStatus.COMPLETED)
        return attrs.evolve(current, state=state_of("s", ["p", "more"]))

    outcome = _outcome(lambda: store.save_snapshot("p", finish, options=CallOptions(expected_version=1)))
    guard_of(store).faults.clear()
    assert len(race.results) == 1, "the other write did not run between the read and the commit"  # type: ignore[attr-defined]
    assert isinstance(outcome, GenkitError) and outcome.reason == "VERSION_CONFLICT", outcome
    assert outcome.status is Status.ABORTED
    reader = cold(store)
    stored = reader.get_snapshot(snapshot_id="p")
    assert stored is not None and stored.status is SnapshotStatus.PENDING and stored.state == state_of("s", ["p"])
    assert reader.get_session_record("s").version == 2  # type: ignore[union-attr]


class _Clock:
    def __init__(self) -> None:
        self.now = datetime(2030, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now


def _finish_reason(current: SessionSnapshot | None) -> SessionSnapshot | None:
    """A change of neither state nor status: the session's version does not move."""
    return attrs.evolve(current, finish_reason="stop") if current is not None else None


@pytest.mark.parametrize("changed", ["p", "c"], ids=["root", "child"])
def test_a_change_to_a_snapshot_whose_session_expired_after_it_was_read_sees_it_absent_like_memory(
    make_dynamo: StoreFactory, changed: str
) -> None:
    clocks = (_Clock(), _Clock())
    memory = InMemorySessionStore(clock=clocks[0])
    store = make_dynamo(clock=clocks[1])
    for each in (memory, store):
        each.create_session("s", ttl=timedelta(minutes=5))
        save_new(each, "p", state_of("s", ["p"]))  # type: ignore[arg-type]
        save_new(each, "c", state_of("s", ["p", "c"]), "p")  # type: ignore[arg-type]
        assert each.get_snapshot(snapshot_id=changed) is not None  # read while the session is alive
    for clock in clocks:
        clock.now += timedelta(minutes=10)
    assert memory.save_snapshot(changed, _finish_reason) is None  # the reference: expired reads as absent
    assert store.save_snapshot(changed, _finish_reason) is None
    assert cold(store, clock=clocks[1]).get_snapshot(snapshot_id=changed) is None
    assert left_behind(store) == [], "the expired session the write found is deleted before it is judged again"


def test_a_change_to_a_snapshot_whose_session_is_deleted_between_its_read_and_its_commit_writes_nothing(
    make_dynamo: StoreFactory,
) -> None:
    store = make_dynamo()
    save_new(store, "p", state_of("s", ["p"]), status=SnapshotStatus.PENDING)
    assert store.get_snapshot(snapshot_id="p") is not None
    other = twin(store)
    race = _before_first("TransactWriteItems", lambda: other.delete_session("s"))
    guard_of(store).faults.append(race)
    outcome = _outcome(
        lambda: store.save_snapshot("p", lambda c: attrs.evolve(c, status=SnapshotStatus.COMPLETED) if c else None)
    )
    guard_of(store).faults.clear()
    assert len(race.results) == 1  # type: ignore[attr-defined]
    assert outcome is None or (isinstance(outcome, GenkitError) and outcome.status is Status.FAILED_PRECONDITION)
    assert left_behind(store) == [], "no snapshot item may outlive its session's deletion"


@pytest.mark.parametrize("expected", [0, 1, 7])
def test_a_child_of_a_missing_parent_expecting_a_version_is_judged_on_the_version_first_like_memory(
    make_dynamo: StoreFactory, expected: int
) -> None:
    outcomes = []
    for store in (InMemorySessionStore(), make_dynamo()):
        save_new(store, "r", state_of("s", ["r"]))  # type: ignore[arg-type]  # the session is at version 1
        orphan = SessionSnapshot(snapshot_id="c", session_id="s", parent_id="missing", state=state_of("s", ["c"]))
        with pytest.raises(GenkitError) as raised:
            store.save_snapshot("c", lambda _, o=orphan: o, options=CallOptions(expected_version=expected))
        outcome = raised.value
        outcomes.append((outcome.status, outcome.reason))
        assert store.get_snapshot(snapshot_id="c") is None
    assert outcomes[0] == outcomes[1]
    if expected == 1:
        assert outcomes[1][0] is Status.INVALID_ARGUMENT  # the version holds: S7 refuses the missing parent
    else:
        assert outcomes[1] == (Status.ABORTED, "VERSION_CONFLICT")


@pytest.mark.parametrize("change", ["status", "state"])
def test_a_change_racing_a_new_turn_of_its_session_retries_on_the_moved_head_and_keeps_the_turn(
    make_dynamo: StoreFactory, change: str
) -> None:
    store = make_dynamo()
    save_new(store, "p", state_of("s", ["p"]), status=SnapshotStatus.PENDING)
    writer = twin(store)
    race = _before_first("TransactWriteItems", lambda: save_new(writer, "b", state_of("s", ["b"]), parent_id="p"))
    guard_of(store).faults.append(race)

    def finish(current: SessionSnapshot | None) -> SessionSnapshot | None:
        if current is None:
            return None
        if change == "status":
            return attrs.evolve(current, status=SnapshotStatus.COMPLETED)
        return attrs.evolve(current, state=state_of("s", ["p", "more"]))

    saved = store.save_snapshot("p", finish)
    guard_of(store).faults.clear()
    assert len(race.results) == 1  # type: ignore[attr-defined]
    assert saved is not None
    reader = cold(store)
    assert reader.get_snapshot(snapshot_id="p") == saved
    assert [s.snapshot_id for s in reader.list_snapshots("s")] == ["p", "b"], "the racing turn is kept"
    assert reader.get_session_record("s").version == 3  # type: ignore[union-attr]


# --- a child planned on a parent another instance changed since this one read it -------------------


@pytest.mark.parametrize("size", [40, 200_000], ids=["packed", "in-parts"])
def test_a_child_of_a_parent_another_instance_changed_since_this_one_read_it_reads_back_exactly(
    make_dynamo: StoreFactory, size: int
) -> None:
    # The parent's state changed twice: once by this store, which then resumes the session (holding the
    # parent, update blob and all, with the head it read), then by another instance, whose update blob
    # replaces the first. A child this store saves is planned on what is stored, not on the copy it
    # holds: its delta must not name the replaced blob.
    store = make_dynamo()
    rng = random.Random(12)
    save_new(store, "a", state_of("s", ["hello"]))
    save_new(store, "p", state_of("s", ["hello", "working"]), "a", status=SnapshotStatus.PENDING)
    mine = state_of("s", ["hello", "working", noise(rng, size)])
    assert store.save_snapshot("p", lambda cur: attrs.evolve(cur, state=mine) if cur else None) is not None
    resumed = store.get_snapshot(session_id="s")
    assert resumed is not None and resumed.snapshot_id == "p" and resumed.state == mine
    theirs = state_of("s", ["hello", "working", noise(rng, size), "edited elsewhere"])
    other = cold(store)
    assert other.save_snapshot("p", lambda cur: attrs.evolve(cur, state=theirs) if cur else None) is not None
    child_state = attrs.evolve(mine, messages=(*mine.message_list, Message.of_text("model", "done")))
    child = save_new(store, "c", child_state, "p")
    reader = cold(store)
    assert reader.get_snapshot(snapshot_id="c") == child
    assert reader.get_snapshot(snapshot_id="p").state == theirs  # type: ignore[union-attr]


# --- a create with first snapshots (a fork's one write) racing a rival create, and a delete ----------------


def _first(snapshot_id: str, text: str) -> SessionSnapshot:
    return SessionSnapshot(snapshot_id=snapshot_id, state=state_of("s", [text]))


# A rival before each kind of call of the create. A small create is a head read and one transaction; a create
# past one transaction (a fork of a large state) stages its large blob first: the head named (a reminder, a
# bare tombstone), a marker, the parts, each part's lift, then the one commit.
_CALLS = [("small", "head-read", 0), ("small", "transaction", 1)] + [
    ("staged", name, index)
    for name, index in (
        ("head-read", 0),
        ("reminder", 1),
        ("tombstone", 2),
        ("marker", 3),
        ("parts", 4),
        ("lift", 5),
        ("last-lift", 17),
        ("commit", 18),
    )
]


def _with_a_rival(make_dynamo: StoreFactory, rival: str, index: int) -> DynamoDBSessionStore:
    """A store whose call at ``index`` first lets another instance create session "s" (``rival="create"``)
    or delete it (``"delete"``: an expired session "s" is there before)."""
    store = make_dynamo()
    other = twin(store)
    if rival == "delete":  # a session there before, deleted by another instance mid-create
        store.create_session("s", ttl=timedelta(milliseconds=1), snapshots=[_first("old", "expired")])
        time.sleep(0.01)
        action = lambda: _outcome(lambda: other.delete_session("s"))  # noqa: E731
    else:
        action = lambda: _outcome(lambda: other.create_session("s", snapshots=[_first("theirs", "rival")]))  # noqa: E731
    guard_of(store).faults.append(_at_call(index, action))
    return store


@pytest.mark.parametrize(
    ("size", "index"), [(size, i) for size, _, i in _CALLS], ids=[f"{s}-{n}" for s, n, _ in _CALLS]
)
@pytest.mark.parametrize("rival", ["create", "delete"])
def test_a_create_with_first_snapshots_racing_a_rival_lands_whole_or_not_at_all(
    make_dynamo: StoreFactory, size: str, index: int, rival: str
) -> None:
    store = _with_a_rival(make_dynamo, rival, index)
    root = _first("a", "mine") if size == "small" else SessionSnapshot(snapshot_id="a", state=six_megabytes())
    outcome = _outcome(lambda: store.create_session("s", snapshots=[root, _first("b", "mine too")]))
    guard_of(store).faults.clear()
    reader = cold(store)
    leaf = reader.get_snapshot(session_id="s")
    listed = [s.snapshot_id for s in reader.list_snapshots("s")]
    if isinstance(outcome, GenkitError):  # the rival's create won: ours left nothing
        assert rival == "create" and outcome.status is Status.ALREADY_EXISTS, outcome
        assert listed == ["theirs"] and leaf is not None and leaf.snapshot_id == "theirs"
        assert reader.get_snapshot(snapshot_id="a") is None and reader.get_snapshot(snapshot_id="b") is None
    else:  # ours won, whole; a rival create was refused, and the expired session is gone
        assert sorted(listed) == ["a", "b"] and leaf is not None and leaf.snapshot_id == "b"
        stored = reader.get_snapshot(snapshot_id="a")
        assert stored is not None and stored.state == root.state
        assert outcome.version == reader.get_session_record("s").version
        assert reader.get_snapshot(snapshot_id="old") is None and reader.get_snapshot(snapshot_id="theirs") is None
    live = readable_ids(store, ["s"])
    assert parts_left_forever(store, live) == [], "the create left parts that nothing references and never expire"


# --- a create of more first snapshots than one transaction holds, racing a rival, or its writer dying --------

# Its calls: the head read, the reminder, the bare tombstone naming it, its marker, the parts (5 calls of 25),
# the snapshot items (two transactions: 100, then 20), the commit.
_MANY_CALLS = [
    ("head-read", 0),
    ("reminder", 1),
    ("tombstone", 2),
    ("marker", 3),
    ("parts", 4),
    ("first-items", 9),
    ("last-items", 10),
    ("commit", 11),
]


def _created_by_items(store: DynamoDBSessionStore) -> list[str]:
    """Sort keys of every snapshot item that a create of many snapshots wrote ahead of its commit."""
    return [item["pk"]["S"] for item in scan(store, "pk, sk, cw") if "cw" in item and item["sk"]["S"] == "s"]


@pytest.mark.parametrize("index", [i for _, i in _MANY_CALLS], ids=[n for n, _ in _MANY_CALLS])
@pytest.mark.parametrize("rival", ["create", "delete"])
def test_a_create_of_more_snapshots_than_a_transaction_holds_racing_a_rival_lands_whole_or_not_at_all(
    make_dynamo: StoreFactory, index: int, rival: str
) -> None:
    store = _with_a_rival(make_dynamo, rival, index)
    mine = many_snapshots("s", 120)
    outcome = _outcome(lambda: store.create_session("s", snapshots=mine))
    guard_of(store).faults.clear()
    reader = cold(store)
    leaf = reader.get_snapshot(session_id="s")
    listed = [s.snapshot_id for s in reader.list_snapshots("s")]
    by_id = {s.snapshot_id: reader.get_snapshot(snapshot_id=s.snapshot_id) for s in mine}
    if isinstance(outcome, GenkitError):  # the rival's create won: none of ours is seen, or left
        assert rival == "create" and outcome.status is Status.ALREADY_EXISTS, outcome
        assert listed == ["theirs"] and leaf is not None and leaf.snapshot_id == "theirs"
        assert set(by_id.values()) == {None}
        assert _created_by_items(store) == []
    else:  # ours won, whole; a rival create was refused, and the expired session is gone
        assert sorted(listed) == sorted(s.snapshot_id for s in mine) and leaf is not None and leaf.snapshot_id == "m119"
        assert all(by_id[s.snapshot_id] is not None and by_id[s.snapshot_id].state == s.state for s in mine)  # type: ignore[union-attr]
        assert outcome.version == reader.get_session_record("s").version >= 120  # on from a deleted session's
        assert reader.get_snapshot(snapshot_id="old") is None and reader.get_snapshot(snapshot_id="theirs") is None
    assert parts_left_forever(store, readable_ids(store, ["s"])) == []
    assert hidden_items_unlisted(store) == []


def test_a_create_of_many_snapshots_whose_writer_died_before_its_commit_never_shows_them_and_frees_their_ids(
    make_dynamo: StoreFactory,
) -> None:
    """The writer dies with every snapshot item written and the commit unsent. The items name a create that
    never committed: a session created under the same id afterwards (its head keeps the dead create named)
    lists none of them and none reads by id, and a later write of one of their ids takes the dead create
    back and lands."""
    store = make_dynamo()

    def die(op: str, params: dict[str, Any]) -> None:
        if op == "TransactWriteItems" and any(
            "Put" in a and a["Put"]["Item"]["sk"]["S"] == "h" for a in params["TransactItems"]
        ):
            raise _Killed

    guard_of(store).faults.append(die)
    with pytest.raises(_Killed):
        store.create_session("s", snapshots=many_snapshots("s", 120))
    guard_of(store).faults.clear()
    assert len(_created_by_items(store)) == 120

    later = cold(store)
    later.create_session("s", snapshots=[_first("theirs", "a new session under the id")])
    assert [s.snapshot_id for s in later.list_snapshots("s")] == ["theirs"]
    assert [later.get_snapshot(snapshot_id=f"m{i}") for i in (0, 57, 119)] == [None, None, None]
    assert later.get_snapshot(session_id="s").snapshot_id == "theirs"  # type: ignore[union-attr]

    saved = save_new(later, "m57", state_of("elsewhere", ["the id taken by a new write"]))
    assert later.get_snapshot(snapshot_id="m57") == saved
    assert _created_by_items(store) == []  # the dead create was taken back whole
    assert [s.snapshot_id for s in cold(store).list_snapshots("s")] == ["theirs"]
    assert parts_left_forever(store, readable_ids(store, ["s", "elsewhere"])) == []


class _Killed(BaseException):
    """The writer's process ends at this call: nothing of the store's runs after it."""


# --- a slow deletion, finished by another instance, and a new session under the id before it looks again -----


def test_a_slow_deletion_finished_by_another_instance_leaves_a_new_session_under_the_id_whole(
    make_dynamo: StoreFactory,
) -> None:
    """Two instances delete one session; the second finishes the job (on the first's tombstone token) while
    the first is between its deletes and its last look for parts staged late, and a new session is created
    under the id, its first snapshot's blob stored as parts in the session's partition. The first deletion's
    last look must leave the new session's parts alone: it reads whole, and nothing of the old one is left."""
    store = make_dynamo()
    save_new(store, "old", state_of("s", ["to be deleted"]))
    other = twin(store)
    big = state_of("s", [noise(random.Random(4), 200_000)])  # about 150 KB compressed: stored as parts
    queries = [0]

    def finish_it_and_start_anew(op: str, params: dict[str, Any]) -> None:
        if op == "Query":
            queries[0] += 1
            if queries[0] == 3:  # the deletion's look for parts staged late (its Query before the tombstone is 1)
                assert other.delete_session("s") == 0  # the job finished on this deletion's token
                save_new(other, "new", big)

    guard_of(store).faults.append(finish_it_and_start_anew)
    store.delete_session("s")
    guard_of(store).faults.clear()
    assert queries[0] >= 3, "the deletion made fewer Queries than expected"
    reader = cold(store)
    new = reader.get_snapshot(snapshot_id="new")
    assert new is not None and new.state == big
    assert [s.snapshot_id for s in reader.list_snapshots("s")] == ["new"]
    assert reader.get_snapshot(snapshot_id="old") is None


def test_a_slow_deletion_finished_by_another_instance_leaves_a_snapshot_written_again_under_a_member_id(
    make_dynamo: StoreFactory,
) -> None:
    """As above, but the new session is created between the slow deletion's reading of the members and its
    deleting them, and its first snapshot reuses the id of a member of the deleted session: that snapshot is
    the new session's now, and the slow deletion's pass leaves it."""
    store = make_dynamo()
    save_new(store, "a", state_of("s", ["to be deleted"]))
    save_new(store, "b", state_of("s", ["to be deleted", "this too"]), "a")
    other = twin(store)
    again = state_of("s", ["a new session, its root under an old id"])
    seen: list[str] = []

    def finish_it_and_start_anew(op: str, params: dict[str, Any]) -> None:
        if seen[-1:] == ["BatchGetItem"]:  # the members were read: their deletion comes next
            other.delete_session("s")  # the job finished on this deletion's token
            save_new(other, "a", again)
        seen.append(op)

    guard_of(store).faults.append(finish_it_and_start_anew)
    store.delete_session("s")
    guard_of(store).faults.clear()
    assert "BatchGetItem" in seen[:-1], f"the deletion read no members: {seen}"
    reader = cold(store)
    stored = reader.get_snapshot(snapshot_id="a")
    assert stored is not None and stored.state == again
    assert [s.snapshot_id for s in reader.list_snapshots("s")] == ["a"]
    assert reader.get_snapshot(snapshot_id="b") is None


# --- a restore past one transaction, racing a turn or a deletion, or its writer dying ---------------------


def _imported(count: int = 120) -> list[SessionSnapshot]:
    """An import batch past one transaction: ``m0``-``m<count-1>`` chained after "b" of session "s", and
    "t0" of a new session "t"."""
    chain = [
        attrs.evolve(s, parent_id=s.parent_id or "b", created_at=f"2024-01-02T00:00:00.{i:06d}Z")
        for i, s in enumerate(many_snapshots("s", count))
    ]
    return [
        *chain,
        SessionSnapshot(
            snapshot_id="t0", session_id="t", created_at="2024-01-03T00:00:00.000000Z", state=state_of("t", ["t0"])
        ),
    ]


def _chat_of_two(store: DynamoDBSessionStore) -> None:
    save_new(store, "a", state_of("s", ["one"]))
    save_new(store, "b", state_of("s", ["one", "two"]), "a")


def _restore_calls(make_dynamo: StoreFactory) -> dict[str, int]:
    """Where a large restore's calls of each kind begin, from a clean run: its naming in the first head, its
    first marker, its parts, its first transaction of items, and its commit."""
    store = make_dynamo()
    _chat_of_two(store)
    guard = guard_of(store)
    guard.reset()
    store.restore_snapshots(_imported())
    log = list(guard.log)
    register = log.index("UpdateItem")
    return {
        "naming": register,
        "marker": log.index("PutItem", register),
        "parts": log.index("BatchWriteItem"),
        "items": log.index("TransactWriteItems"),
        "commit": len(log) - 1,
    }


_RESTORE_POINTS = ["naming", "marker", "parts", "items", "commit"]


@pytest.mark.parametrize("point", _RESTORE_POINTS)
@pytest.mark.parametrize("rival", ["turn", "delete"])
def test_a_restore_past_one_transaction_racing_a_turn_or_a_deletion_lands_whole_or_not_at_all(
    make_dynamo: StoreFactory, point: str, rival: str
) -> None:
    index = _restore_calls(make_dynamo)[point]
    store = make_dynamo()
    _chat_of_two(store)
    other = twin(store)
    turns: list[Any] = []
    if rival == "turn":
        action = lambda: turns.append(save_new(other, "x", state_of("s", ["one", "two", "three"]), "b"))  # noqa: E731
    else:
        action = lambda: turns.append(_outcome(lambda: other.delete_session("s")))  # noqa: E731
    guard_of(store).faults.append(_at_call(index, action))
    batch = _imported()
    outcome = _outcome(lambda: store.restore_snapshots(batch))
    guard_of(store).faults.clear()
    assert len(turns) == 1, "the rival did not run"
    reader = cold(store)
    by_id = {s.snapshot_id: reader.get_snapshot(snapshot_id=s.snapshot_id) for s in batch}
    listed = [s.snapshot_id for s in reader.list_snapshots("s")]
    if isinstance(outcome, GenkitError):  # refused whole: none of it shows, and nothing of it is left
        assert rival == "delete" and outcome.status in (Status.FAILED_PRECONDITION, Status.ABORTED), outcome
        assert set(by_id.values()) == {None} and listed == []
    else:  # landed whole, and the rival's turn is kept
        assert outcome == len(batch)
        assert all(by_id[s.snapshot_id] == s for s in batch), "a restored snapshot reads otherwise than given"
        mine = [s.snapshot_id for s in batch if s.session_id == "s"]
        if rival == "turn":
            assert sorted(listed) == sorted(["a", "b", "x", *mine])
            assert reader.get_snapshot(snapshot_id="x") == turns[0]
        else:  # the deletion went first: the restore made the session again from what it brought
            assert sorted(listed) == sorted(mine)
    assert parts_left_forever(store, readable_ids(store, ["s", "t"])) == []
    assert hidden_items_unlisted(store) == []


def test_a_restore_past_one_transaction_whose_writer_died_before_its_commit_shows_nothing_and_a_rerun_lands(
    make_dynamo: StoreFactory,
) -> None:
    """The writer dies with every item written ahead and the commit unsent: no reader sees any of them, the
    sessions read as before, and the same restore run again (by another instance) takes the dead one's
    items back and lands whole."""
    store = make_dynamo()
    _chat_of_two(store)
    before = [s.snapshot_id for s in cold(store).list_snapshots("s")]

    def die(op: str, params: dict[str, Any]) -> None:
        if op == "TransactWriteItems" and any("Delete" in a for a in params["TransactItems"]):
            raise _Killed  # the commit: it releases the markers

    guard_of(store).faults.append(die)
    batch = _imported()
    with pytest.raises(_Killed):
        store.restore_snapshots(batch)
    guard_of(store).faults.clear()
    assert len(_created_by_items(store)) == len(batch)
    reader = cold(store)
    assert [s.snapshot_id for s in reader.list_snapshots("s")] == before
    assert reader.get_snapshot(session_id="s").snapshot_id == "b"  # type: ignore[union-attr]
    assert [reader.get_snapshot(snapshot_id=i) for i in ("m0", "m119", "t0")] == [None, None, None]
    assert reader.get_session_record("t") is None

    assert cold(store).restore_snapshots(batch) == len(batch)
    reader = cold(store)
    assert all(reader.get_snapshot(snapshot_id=s.snapshot_id) == s for s in batch)
    assert sorted(s.snapshot_id for s in reader.list_snapshots("s")) == sorted(
        ["a", "b", *(f"m{i}" for i in range(120))]
    )
    assert parts_left_forever(store, readable_ids(store, ["s", "t"])) == []
    assert hidden_items_unlisted(store) == []


def test_a_restore_whose_commit_would_not_fit_one_transaction_is_refused_before_writing_anything(
    make_dynamo: StoreFactory,
) -> None:
    """150 new sessions of one snapshot each: 150 heads cannot land in one transaction, so the restore is
    refused whole (INVALID_ARGUMENT, reason RESTORE_TOO_LARGE, saying to restore fewer a call), and the
    table is as it was."""
    store = make_dynamo()
    _chat_of_two(store)
    before = scan(store)
    batch = [
        SessionSnapshot(
            snapshot_id=f"r{i}",
            session_id=f"s{i}",
            created_at="2024-01-04T00:00:00.000000Z",
            state=state_of(f"s{i}", [f"session {i}"]),
        )
        for i in range(150)
    ]
    with pytest.raises(GenkitError) as caught:
        store.restore_snapshots(batch)
    assert caught.value.status is Status.INVALID_ARGUMENT and caught.value.reason == "RESTORE_TOO_LARGE"
    assert "fewer" in caught.value.message
    assert scan(store) == before
    assert store.restore_snapshots(batch[:40]) == 40  # fewer a call land
    assert cold(store).get_snapshot(session_id="s39").snapshot_id == "r39"  # type: ignore[union-attr]


def test_an_import_of_more_sessions_than_one_commit_holds_lands_in_smaller_restores(
    make_dynamo: StoreFactory, tmp_path: Any
) -> None:
    """An import batch of 100 one-snapshot sessions is more than one commit holds on DynamoDB: the import
    restores it in halves (then quarters) instead, so every session arrives, and a second run writes
    nothing."""
    from genkit_sessions.model.wire import to_wire
    from genkit_sessions.stores.transfer import import_snapshots

    source = tmp_path / "sessions.jsonl"
    sessions = [
        SessionSnapshot(
            snapshot_id=f"r{i}",
            session_id=f"s{i}",
            created_at="2024-01-04T00:00:00.000000Z",
            updated_at="2024-01-04T00:00:00.000000Z",
            state=state_of(f"s{i}", [f"session {i}"]),
        )
        for i in range(130)
    ]
    source.write_text("".join(json.dumps(to_wire(s)) + "\n" for s in sessions))
    store = make_dynamo()
    counts = import_snapshots(store, source, batch_size=100)
    assert (counts.written, counts.unchanged) == (130, 0)
    reader = cold(store)
    assert all(reader.get_snapshot(session_id=s.session_id) == s for s in sessions)
    again = import_snapshots(cold(store), source, batch_size=100)
    assert (again.written, again.unchanged) == (0, 130)
