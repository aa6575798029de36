"""A fault at every DynamoDB call of every write path, one test per fault point.

Each write path runs once, fault-free, on a fresh in-process moto table when this module is collected,
which records the calls it makes (the guard's log). Then, for every call and every kind of fault, a
test builds the same data on a fresh store, makes exactly that call fail, runs the operation and
checks that:

- it succeeds, or raises a ``GenkitError`` with a status (never a raw exception);
- a cold store reads exactly as after the operation when it succeeded, and exactly as before it or as
  after it when it failed (by id, by session and ``list_snapshots``; timestamps are blanked, since two
  runs stamp different ones);
- no blob part is left that nothing references and that never expires (but for a deletion stopped
  part-way, whose rerun removes them);
- the same operation, run again without the fault, succeeds and leaves the store reading as after
  (a deletion leaves no item at all).

The kinds: ``throttled`` (ThrottlingException) and ``internal-error`` (InternalServerError, HTTP 500)
are raised before the call, so DynamoDB applies nothing; ``answer-lost`` lets a write through and then
raises ReadTimeoutError, so it was applied but the caller does not know.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from genkit_sessions import (
    AgentInit,
    FinishReason,
    GenkitError,
    Message,
    Session,
    SessionResolver,
    SessionSnapshot,
    SessionState,
    SnapshotStatus,
    Status,
)
from genkit_sessions.dynamodb import DynamoDBSessionStore
from tests.dynamodb.helpers import cold, inject_fault, left_behind, noise, parts_left_forever, save_new, state_of
from tests.dynamodb_backends import guard_of

StoreFactory = Any
WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
KINDS = ("throttled", "internal-error", "answer-lost")


# --- the write paths ------------------------------------------------------------------------------


class Operation:
    """One run of a write path by a worker instance; ``run`` again to retry it after a failure."""

    def __init__(self, worker: DynamoDBSessionStore) -> None:
        self.worker = worker

    def run(self) -> object:
        raise NotImplementedError

    def ids(self) -> dict[str, str]:
        """Ids this run chose itself, by a stable name (so two runs read alike)."""
        return {}


@attrs.frozen
class Path:
    name: str
    setup: Callable[[DynamoDBSessionStore], None]
    operation: Callable[[DynamoDBSessionStore], Operation]
    ids: tuple[str, ...]
    """Snapshot ids read by id when comparing (besides those the run chose, named by ``dynamic``)."""
    dynamic: tuple[str, ...] = ()
    options: dict[str, Any] = attrs.Factory(dict)
    deletes: bool = False


@functools.lru_cache(maxsize=1)
def _six_megabytes() -> SessionState:
    rng = random.Random(5)
    return state_of("s", [noise(rng, 250_000) for _ in range(24)])  # barely compresses: it must be staged


def _no_setup(store: DynamoDBSessionStore) -> None:
    pass


class _StagedWrite(Operation):
    def run(self) -> object:
        new = SessionSnapshot(snapshot_id="big", state=_six_megabytes())
        return self.worker.save_snapshot("big", lambda current: new if current is None else None)


def _chat(store: DynamoDBSessionStore) -> None:
    save_new(store, "a", state_of("s", ["hello"]))
    save_new(store, "b", state_of("s", ["hello", "hi there"]), "a")
    save_new(store, "c", state_of("s", ["hello", "hi there", "how are you"]), "b")


class _TurnEnd(Operation):
    """A turn of an agent: resolve the session, add the turn's messages, save its end."""

    def __init__(self, worker: DynamoDBSessionStore) -> None:
        super().__init__(worker)
        self.session: Session | None = None
        self.turn_id: str | None = None  # the id the turn reserved for its snapshot
        self.saved: SessionSnapshot | None = None

    def run(self) -> object:
        if self.saved is not None:  # the turn is over (a fault that did not fail it): nothing to retry
            return self.saved
        if self.session is None:
            resolution = SessionResolver.resolve(self.worker, True, AgentInit(session_id="s"))
            if not resolution.ok:  # R15: the resolver's graceful failure, as the framework would raise it
                assert resolution.error is not None and resolution.error.status is not None
                raise GenkitError(Status(resolution.error.status), resolution.error.message)
            session = resolution.session
            assert session is not None
            session.add_messages(Message.of_text("user", "what next"), Message.of_text("model", "a walk"))
            self.session, self.turn_id = session, session.snapshot_id
        self.saved = self.session.save(finish_reason="stop")  # a failed save keeps the id: a rerun retries it
        return self.saved

    def ids(self) -> dict[str, str]:
        return {"turn": self.turn_id} if self.turn_id is not None else {}


def _pending(store: DynamoDBSessionStore) -> None:
    save_new(store, "a", state_of("s", ["hello"]))
    save_new(store, "p", state_of("s", ["hello", "working"]), "a", status=SnapshotStatus.PENDING)


class _Update(Operation):
    """A detached turn finishing: the pending snapshot completed with its final state."""

    def run(self) -> object:
        final = state_of("s", ["hello", "working", "done"])

        def complete(current: SessionSnapshot | None) -> SessionSnapshot | None:
            if current is None:
                return None
            return attrs.evolve(current, status=SnapshotStatus.COMPLETED, finish_reason=FinishReason.STOP, state=final)

        return self.worker.save_snapshot("p", complete)


def _pending_with_progress(store: DynamoDBSessionStore) -> None:
    """A pending snapshot whose progress was saved once: its state has an update blob to replace."""
    _pending(store)
    rng = random.Random(11)
    progress = state_of("s", ["hello", "working", noise(rng, 3_000)])  # parts, with chunk_bytes=1000
    saved = store.save_snapshot("p", lambda current: attrs.evolve(current, state=progress) if current else None)
    assert saved is not None


class _Progress(Operation):
    """A detached turn saving more progress: its update blob (in parts) replaced by a larger one."""

    def run(self) -> object:
        rng = random.Random(12)
        progress = state_of("s", ["hello", "working", noise(rng, 3_000), noise(rng, 2_000)])
        return self.worker.save_snapshot(
            "p", lambda current: attrs.evolve(current, state=progress) if current else None
        )


class _Abort(Operation):
    def run(self) -> object:
        return self.worker.abort_snapshot("p")


def _backup() -> list[SessionSnapshot]:
    """The session as a backup holds it: other states, and c forked from a before b was written."""
    return [
        SessionSnapshot(
            snapshot_id=snapshot_id,
            session_id="s",
            parent_id=parent_id,
            created_at=f"2024-01-01T00:00:0{second}.000000Z",
            updated_at=f"2024-01-01T00:00:0{second}.000000Z",
            state=state_of("s", texts),
        )
        for snapshot_id, parent_id, second, texts in [
            ("a", None, 1, ["restored"]),
            ("c", "a", 2, ["restored", "fork"]),
            ("b", "a", 3, ["restored", "main"]),
        ]
    ]


class _Restore(Operation):
    def run(self) -> object:
        return self.worker.restore_snapshots(_backup())


def _chat_with_parts(store: DynamoDBSessionStore) -> None:
    rng = random.Random(9)
    save_new(store, "a", state_of("s", ["hello"]))
    save_new(store, "b", state_of("s", ["hello", noise(rng, 3_000)]), "a")  # blob parts (chunk_bytes=1000)
    save_new(store, "c", state_of("s", ["hello", "short"]), "b")


class _Delete(Operation):
    def run(self) -> object:
        return self.worker.delete_session("s")


PATHS = [
    Path("staged-write", _no_setup, _StagedWrite, ("big",)),
    Path("turn-end", _chat, _TurnEnd, ("a", "b", "c"), dynamic=("turn",)),
    Path("update", _pending, _Update, ("a", "p")),
    # The pending snapshot's progress replaces its update blob: parts deleted in the write that adds new ones,
    # or (packed in its item) overwritten.
    Path("update-replaces-parts", _pending_with_progress, _Progress, ("a", "p"), options={"chunk_bytes": 1000}),
    Path("update-after-progress", _pending_with_progress, _Update, ("a", "p")),
    Path("abort", _pending, _Abort, ("a", "p")),
    # head_ids=2: the session has a member page, so the restore writes one and deletes the old one.
    Path("restore", _chat, _Restore, ("a", "b", "c"), options={"head_ids": 2}),
    Path(
        "delete", _chat_with_parts, _Delete, ("a", "b", "c"), options={"head_ids": 2, "chunk_bytes": 1000}, deletes=True
    ),
]


# --- reading a store as a comparable value -----------------------------------------------------------


def _blank(snapshot: SessionSnapshot | None, names: dict[str, str]) -> SessionSnapshot | None:
    if snapshot is None:
        return None
    return attrs.evolve(
        snapshot,
        snapshot_id=names.get(snapshot.snapshot_id, snapshot.snapshot_id),
        parent_id=names.get(snapshot.parent_id, snapshot.parent_id) if snapshot.parent_id else None,
        created_at="",
        updated_at=None,
        heartbeat_at=None,
    )


def _read(read: Callable[[], Any]) -> Any:
    try:
        return read()
    except GenkitError as exc:
        return f"{exc.status.value}: {exc.message}"


def _observe(store: DynamoDBSessionStore, path: Path, operation: Operation | None) -> dict[str, Any]:
    """What a cold store reads: every snapshot by id, the session's leaf, and its listing."""
    reader = cold(store, **path.options)
    chosen = operation.ids() if operation is not None else {}
    names = {actual: name for name, actual in chosen.items()}
    ids: dict[str, str | None] = {i: i for i in path.ids} | {name: chosen.get(name) for name in path.dynamic}
    return {
        "by id": {
            name: None if actual is None else _read(lambda a=actual: _blank(reader.get_snapshot(snapshot_id=a), names))
            for name, actual in ids.items()
        },
        "leaf": _read(lambda: _blank(reader.get_snapshot(session_id="s"), names)),
        "list": _read(lambda: [_blank(s, names) for s in reader.list_snapshots("s")]),
    }


def _live(view: dict[str, Any], operation: Operation) -> set[str]:
    """The ids of the snapshots that read, in a view that reads as before or as after (so every snapshot
    of the session read, and the path names them all)."""
    chosen = operation.ids()
    return {chosen.get(name, name) for name, value in view["by id"].items() if isinstance(value, SessionSnapshot)}


def _brief(value: Any) -> str:
    """A short account of a read: snapshots by id, parent, status and last message; errors cut short."""
    if isinstance(value, SessionSnapshot):
        messages = value.state.message_list if value.state is not None else ()
        last = messages[-1].text[:12] if messages else ""
        status = value.effective_status.value
        return f"{value.snapshot_id}(parent={value.parent_id}, {status}, {len(messages)} msgs {last!r})"
    if isinstance(value, list):
        return "[" + ", ".join(_brief(v) for v in value) + "]"
    return repr(value)[:300]


def _differences(seen: dict[str, Any], expected: dict[str, Any]) -> str:
    out = []
    for key in seen:
        pairs = [(f"{key} {i!r}", seen[key][i], expected[key][i]) for i in seen[key]] if key == "by id" else []
        for what, got, want in pairs or [(key, seen[key], expected[key])]:
            if got != want:
                out.append(f"{what} reads {_brief(got)}, not {_brief(want)}")
    return "; ".join(out)


# --- recording the call sequences ----------------------------------------------------------------


def _fresh(make: StoreFactory, path: Path) -> DynamoDBSessionStore:
    store: DynamoDBSessionStore = make(**path.options)
    path.setup(store)
    return store


def _drop(store: DynamoDBSessionStore) -> None:
    """Free the moto server's memory: every test makes a table of its own."""
    store.client.delete_table(TableName=store.table_name)


@attrs.frozen
class _Reference:
    before: dict[str, Any]
    after: dict[str, Any]
    log: tuple[str, ...]


def _clean_run(make: StoreFactory, path: Path) -> _Reference:
    store = _fresh(make, path)
    try:
        before = _observe(store, path, None)
        operation = path.operation(cold(store, **path.options))
        guard = guard_of(store)
        guard.reset()
        operation.run()
        log = tuple(guard.log)
        after = _observe(store, path, operation)
    finally:
        _drop(store)
    return _Reference(before, after, log)


def _record_sequences() -> dict[str, tuple[str, ...]]:
    from moto import mock_aws

    from tests.dynamodb_backends import make_client, store_factory

    with mock_aws():
        make = store_factory(make_client())
        return {path.name: _clean_run(make, path).log for path in PATHS}


SEQUENCES = _record_sequences()


@attrs.frozen
class Point:
    path: Path
    index: int
    operation: str
    kind: str

    @property
    def id(self) -> str:
        return f"{self.path.name}-{self.index:02d}-{self.operation}-{self.kind}"


POINTS = [
    Point(path, index, operation, kind)
    for path in PATHS
    for index, operation in enumerate(SEQUENCES[path.name])
    for kind in KINDS
    if kind != "answer-lost" or operation in WRITES
]

_REFERENCES: dict[tuple[str, str], _Reference] = {}


def _reference(make: StoreFactory, backend: str, path: Path) -> _Reference:
    key = (backend, path.name)
    if key not in _REFERENCES:
        _REFERENCES[key] = _clean_run(make, path)
    return _REFERENCES[key]


# --- the sweep ------------------------------------------------------------------------------------


@pytest.mark.parametrize("point", POINTS, ids=[p.id for p in POINTS])
def test_a_fault_at_any_call_of_a_write_reads_as_before_or_after_and_a_rerun_finishes(
    make_dynamo: StoreFactory, request: pytest.FixtureRequest, point: Point
) -> None:
    path = point.path
    reference = _reference(make_dynamo, request.node.callspec.params["make_dynamo"], path)
    assert reference.log == SEQUENCES[path.name], "this backend makes other calls than the recorded sequence"
    store = _fresh(make_dynamo, path)
    try:
        operation = path.operation(cold(store, **path.options))
        seen = inject_fault(store, point.index, point.kind)
        failed = True
        try:
            operation.run()
            failed = False
        except GenkitError as exc:
            assert isinstance(exc.status, Status) and exc.status is not Status.OK
        except Exception as exc:
            pytest.fail(f"a raw {type(exc).__name__} escaped the store: {exc}")
        finally:
            guard_of(store).faults.clear()
            guard_of(store).after_faults.clear()
        assert len(seen) > point.index and seen[point.index] == point.operation, f"the fault missed: {seen}"

        observed = _observe(store, path, operation)
        if not failed:  # a success that does not read as after lost the write
            assert observed == reference.after, f"succeeded, but {_differences(observed, reference.after)}"
        elif observed != reference.before and observed != reference.after:
            pytest.fail(
                f"reads neither as before nor as after. Against before: {_differences(observed, reference.before)}. "
                f"Against after: {_differences(observed, reference.after)}"
            )
        if not path.deletes:  # a deletion stopped part-way leaves its parts to the rerun, with the head listing
            live = _live(observed, operation)
            assert parts_left_forever(store, live) == [], "the failed write left parts that nothing references forever"

        try:
            operation.run()
        except GenkitError as exc:
            pytest.fail(f"the rerun without a fault failed: {exc}")
        rerun = _observe(store, path, operation)
        assert rerun == reference.after, _differences(rerun, reference.after)
        if path.deletes:
            assert left_behind(store) == [], "the deletion left items behind"
    finally:
        _drop(store)
