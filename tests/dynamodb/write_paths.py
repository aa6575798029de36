"""The store's write paths as runnable operations, and a store read as a comparable value.

Shared by the sweeps that break a write part-way (a fault at one DynamoDB call, or the caller's task
cancelled at one call of the async face) and then check that a cold store reads as before or as
after, and that running the operation again finishes it. Every operation runs on the blocking store
(:meth:`Operation.run`) and on its async face (:meth:`Operation.arun`) with the same arguments.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs

from genkit_sessions import (
    AgentInit,
    FinishReason,
    GenkitError,
    Message,
    Reason,
    Session,
    SessionResolver,
    SessionSnapshot,
    SnapshotStatus,
    Status,
)
from genkit_sessions.dynamodb import DynamoDBSessionStore
from genkit_sessions.stores.protocol import CallOptions, SessionRecord
from tests.dynamodb.helpers import cold, left_behind, noise, save_new, six_megabytes, state_of
from tests.dynamodb_backends import client_error, guard_of

StoreFactory = Any


class Operation:
    """One run of a write path by a worker instance; run it again to retry it after a failure.

    A subclass names the store call in :meth:`act`, which takes the blocking store or its async face
    (whose methods return awaitables); :meth:`run` and :meth:`arun` drive it on either."""

    def __init__(self, worker: DynamoDBSessionStore) -> None:
        self.worker = worker

    def act(self, face: Any) -> Any:
        raise NotImplementedError

    def run(self) -> object:
        return self.act(self.worker)

    async def arun(self) -> object:
        result: Awaitable[object] = self.act(self.worker.aio)
        return await result

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
    staged_before: bool = False
    """The store holds, before the run, parts of a write that never committed, named by their marker."""
    every_call: bool = True
    """Sweep every call; False: of a run of three or more calls of one operation in a row (the lift of
    each staged part's expiry, one loop of the store's), just the first and the last."""
    record: bool = False
    """Read session "s"'s record too (the path creates it)."""


def _no_setup(store: DynamoDBSessionStore) -> None:
    pass


class _StagedWrite(Operation):
    def act(self, face: Any) -> Any:
        new = SessionSnapshot(snapshot_id="big", state=six_megabytes())
        return face.save_snapshot("big", lambda current: new if current is None else None)


def _one_turn(store: DynamoDBSessionStore) -> None:
    save_new(store, "a", state_of("s", ["hello"]))


class _StagedChild(Operation):
    """A large state saved as the child of a turn: staged into a live session (its head names it)."""

    def act(self, face: Any) -> Any:
        new = SessionSnapshot(snapshot_id="big", parent_id="a", state=six_megabytes())
        return face.save_snapshot("big", lambda current: new if current is None else None)


class _StagedUpdate(Operation):
    """A detached turn's progress grown past one transaction: a change of an existing snapshot, staged."""

    def act(self, face: Any) -> Any:
        return face.save_snapshot(
            "p", lambda current: attrs.evolve(current, state=six_megabytes()) if current else None
        )


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
            self._begin(SessionResolver.resolve(self.worker, True, AgentInit(session_id="s")))
        assert self.session is not None
        self.saved = self.session.save(finish_reason="stop")  # a failed save keeps the id: a rerun retries it
        return self.saved

    async def arun(self) -> object:
        if self.saved is not None:
            return self.saved
        if self.session is None:
            self._begin(await SessionResolver.aresolve(self.worker.aio, True, AgentInit(session_id="s")))
        assert self.session is not None
        self.saved = await self.session.asave(finish_reason="stop")
        return self.saved

    def _begin(self, resolution: Any) -> None:
        if not resolution.ok:  # R15: the resolver's graceful failure, as the framework would raise it
            assert resolution.error is not None and resolution.error.status is not None
            raise GenkitError(Status(resolution.error.status), resolution.error.message)
        session = resolution.session
        assert session is not None
        session.add_messages(Message.of_text("user", "what next"), Message.of_text("model", "a walk"))
        self.session, self.turn_id = session, session.snapshot_id

    def ids(self) -> dict[str, str]:
        return {"turn": self.turn_id} if self.turn_id is not None else {}


def _pending(store: DynamoDBSessionStore) -> None:
    save_new(store, "a", state_of("s", ["hello"]))
    save_new(store, "p", state_of("s", ["hello", "working"]), "a", status=SnapshotStatus.PENDING)


class _Update(Operation):
    """A detached turn finishing: the pending snapshot completed with its final state."""

    def act(self, face: Any) -> Any:
        final = state_of("s", ["hello", "working", "done"])

        def complete(current: SessionSnapshot | None) -> SessionSnapshot | None:
            if current is None:
                return None
            return attrs.evolve(current, status=SnapshotStatus.COMPLETED, finish_reason=FinishReason.STOP, state=final)

        return face.save_snapshot("p", complete)


def _pending_with_progress(store: DynamoDBSessionStore) -> None:
    """A pending snapshot whose progress was saved once: its state has an update blob to replace."""
    _pending(store)
    rng = random.Random(11)
    progress = state_of("s", ["hello", "working", noise(rng, 3_000)])  # parts, with chunk_bytes=1000
    saved = store.save_snapshot("p", lambda current: attrs.evolve(current, state=progress) if current else None)
    assert saved is not None


class _Progress(Operation):
    """A detached turn saving more progress: its update blob (in parts) replaced by a larger one."""

    def act(self, face: Any) -> Any:
        rng = random.Random(12)
        progress = state_of("s", ["hello", "working", noise(rng, 3_000), noise(rng, 2_000)])
        return face.save_snapshot("p", lambda current: attrs.evolve(current, state=progress) if current else None)


class _Abort(Operation):
    def act(self, face: Any) -> Any:
        return face.abort_snapshot("p")


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
    def act(self, face: Any) -> Any:
        return face.restore_snapshots(_backup())


class _RestoreMany(Operation):
    """An import batch past one transaction: the backup of session "s" (over its three snapshots), 120
    new snapshots after it, and two snapshots of a new session "t"."""

    def act(self, face: Any) -> Any:
        return face.restore_snapshots(many_restored())


def many_restored() -> list[SessionSnapshot]:
    """:func:`_backup`, then ``m0``-``m119`` chained after ``b``, then ``t0`` and its child ``t1`` in "t"."""
    chain = [
        attrs.evolve(s, parent_id=s.parent_id or "b", created_at=f"2024-01-02T00:00:{i // 100:02d}.{i % 100:06d}Z")
        for i, s in enumerate(many_snapshots("s", 120))
    ]
    other = [
        SessionSnapshot(
            snapshot_id=snapshot_id,
            session_id="t",
            parent_id=parent_id,
            created_at=f"2024-01-03T00:00:0{second}.000000Z",
            state=state_of("t", [snapshot_id]),
        )
        for snapshot_id, parent_id, second in [("t0", None, 1), ("t1", "t0", 2)]
    ]
    return [*_backup(), *chain, *other]


def _chat_with_parts(store: DynamoDBSessionStore) -> None:
    rng = random.Random(9)
    save_new(store, "a", state_of("s", ["hello"]))
    save_new(store, "b", state_of("s", ["hello", noise(rng, 3_000)]), "a")  # blob parts (chunk_bytes=1000)
    save_new(store, "c", state_of("s", ["hello", "short"]), "b")


class _Delete(Operation):
    def act(self, face: Any) -> Any:
        return face.delete_session("s")


def _fails_at_commit(
    store: DynamoDBSessionStore,
    error: Callable[[], BaseException],
    expected: type[BaseException],
    write: Callable[[], object],
) -> None:
    """Run ``write`` with every commit (TransactWriteItems) on the store's client raising a new
    ``error()``, and check that ``expected`` came out of it."""

    def fail(operation: str, params: dict[str, Any]) -> None:
        if operation == "TransactWriteItems":
            raise error()

    guard = guard_of(store)
    guard.faults.append(fail)
    try:
        write()
    except expected:
        pass
    else:
        raise AssertionError(f"the write was meant to stop at its commit with {expected.__name__}")
    finally:
        guard.faults.remove(fail)


def _staged_but_never_committed(store: DynamoDBSessionStore) -> None:
    """A large write whose commit failed with an unknown outcome every time: its parts stay, permanent,
    named by its staging marker (what a writer that died before its commit leaves too)."""

    def error() -> BaseException:
        return client_error("InternalServerError", "Internal server error", "TransactWriteItems", http_status=500)

    _fails_at_commit(store, error, GenkitError, _StagedWrite(store).run)


class Killed(BaseException):
    """The writer's process ends here: nothing of the store runs after it (not even an ``except``)."""


def _turn_after_a_dead_writer(store: DynamoDBSessionStore) -> None:
    """A chat whose large write died at its commit more than ``orphan_ttl`` (1 day) ago: its parts are
    permanent, named by its marker and in the session's head, for the session's next save to take back."""
    _chat(store)
    past = datetime.now(timezone.utc) - timedelta(days=1, minutes=5)
    dead = cold(store, clock=lambda: past)
    _fails_at_commit(store, Killed, Killed, lambda: save_new(dead, "big", six_megabytes(), "c"))


class _Sweep(Operation):
    def act(self, face: Any) -> Any:
        return face.sweep_staged("s", older_than=timedelta(0))


class _StillClock:
    """A clock the setup moves: the sessions a path's setup wrote may expire before its operation."""

    start = datetime(2030, 1, 1, tzinfo=timezone.utc)

    def __init__(self) -> None:
        self.now = self.start

    def __call__(self) -> datetime:
        return self.now


_CLOCK = _StillClock()


def _ids_of_an_expired_session(store: DynamoDBSessionStore) -> None:
    """Snapshots "e" and its child "f" in session "old", which then expires: both read as absent."""
    _CLOCK.now = _StillClock.start
    store.create_session("old", ttl=timedelta(seconds=30))
    save_new(store, "e", state_of("old", ["before"]))
    save_new(store, "f", state_of("old", ["before", "again"]), "e")
    _CLOCK.now = _StillClock.start + timedelta(minutes=5)


class _ReuseAnExpiredId(Operation):
    """A new session's first turn under an id last used in the expired session: that session is deleted
    and the id written anew."""

    def act(self, face: Any) -> Any:
        new = SessionSnapshot(snapshot_id="e", session_id="s", state=state_of("s", ["fresh"]))
        return face.save_snapshot("e", lambda current: new if current is None else None)


class _ReuseAnExpiredIdOnAVersion(Operation):
    """The same first turn as a compare-and-set on version 0 ("no snapshot yet"): the new session's version
    is read and judged before the expired session is deleted."""

    def act(self, face: Any) -> Any:
        new = SessionSnapshot(snapshot_id="e", session_id="s", state=state_of("s", ["fresh"]))
        options = CallOptions(expected_version=0)
        return face.save_snapshot("e", lambda current: new if current is None else None, options=options)


class _CreateWithALargeFirstSnapshot(Operation):
    """A session created with its first snapshots (as a fork does), one of them past what one transaction
    holds: its blob is staged, and the record, both snapshots and the small blob land in one commit."""

    def act(self, face: Any) -> Any:
        root = SessionSnapshot(snapshot_id="big", session_id="s", state=six_megabytes())
        child = SessionSnapshot(snapshot_id="c", parent_id="big", session_id="s", state=state_of("s", ["small"]))
        return face.create_session("s", metadata={"principal": "p"}, snapshots=[root, child])

    # Run again, it is a caller's retry of a create that may have landed: the session it finds is its own
    # when it reads as the create left it (the sweep checks that it does).
    def run(self) -> object:
        try:
            return super().run()
        except GenkitError as exc:
            if exc.reason != Reason.SESSION_EXISTS:
                raise
            return self.worker.get_session_record("s")

    async def arun(self) -> object:
        try:
            return await super().arun()
        except GenkitError as exc:
            if exc.reason != Reason.SESSION_EXISTS:
                raise
            return await self.worker.aio.get_session_record("s")


class _CreateWithManySnapshots(_CreateWithALargeFirstSnapshot):
    """A session created with more first snapshots than one transaction holds (an import): their items are
    written ahead of the commit, 100 to a transaction, and only the commit makes them visible."""

    def act(self, face: Any) -> Any:
        return face.create_session("s", metadata={"principal": "p"}, snapshots=many_snapshots("s", 120))


def many_snapshots(session_id: str, count: int) -> list[SessionSnapshot]:
    """A chain of ``count`` small snapshots ``m0`` to ``m<count-1>`` of one session."""
    return [
        SessionSnapshot(
            snapshot_id=f"m{i}",
            parent_id=f"m{i - 1}" if i else None,
            session_id=session_id,
            state=state_of(session_id, [f"turn {i}"]),
        )
        for i in range(count)
    ]


PATHS = [
    Path("staged-write", _no_setup, _StagedWrite, ("big",)),
    Path("create-staged", _no_setup, _CreateWithALargeFirstSnapshot, ("big", "c"), every_call=False, record=True),
    # m99 and m100 sit on either side of the first transaction of items.
    Path(
        "create-many",
        _no_setup,
        _CreateWithManySnapshots,
        ("m0", "m99", "m100", "m119"),
        every_call=False,
        record=True,
    ),
    Path("staged-child", _one_turn, _StagedChild, ("a", "big"), every_call=False),
    Path("staged-update", _pending, _StagedUpdate, ("a", "p"), every_call=False),
    Path("turn-end", _chat, _TurnEnd, ("a", "b", "c"), dynamic=("turn",)),
    Path(
        "turn-takes-back-dead",
        _turn_after_a_dead_writer,
        _TurnEnd,
        ("a", "b", "c", "big"),
        dynamic=("turn",),
        staged_before=True,
    ),
    Path("update", _pending, _Update, ("a", "p")),
    # The pending snapshot's progress replaces its update blob: parts deleted in the write that adds new ones,
    # or (packed in its item) overwritten.
    Path("update-replaces-parts", _pending_with_progress, _Progress, ("a", "p"), options={"chunk_bytes": 1000}),
    Path("update-after-progress", _pending_with_progress, _Update, ("a", "p")),
    Path("abort", _pending, _Abort, ("a", "p")),
    Path("reuse-expired-id", _ids_of_an_expired_session, _ReuseAnExpiredId, ("e", "f"), options={"clock": _CLOCK}),
    Path(
        "reuse-expired-id-on-version",
        _ids_of_an_expired_session,
        _ReuseAnExpiredIdOnAVersion,
        ("e", "f"),
        options={"clock": _CLOCK},
    ),
    # head_ids=2: the session has a member page, so the restore writes one and deletes the old one.
    Path("restore", _chat, _Restore, ("a", "b", "c"), options={"head_ids": 2}),
    # A restore past one transaction: new items written ahead of one commit, over stored ones in it.
    Path(
        "restore-many",
        _chat,
        _RestoreMany,
        ("a", "b", "c", "m0", "m99", "m100", "m119", "t0", "t1"),
        every_call=False,
    ),
    Path("sweep-staged", _staged_but_never_committed, _Sweep, ("big",), staged_before=True),
    Path(
        "delete", _chat_with_parts, _Delete, ("a", "b", "c"), options={"head_ids": 2, "chunk_bytes": 1000}, deletes=True
    ),
]


# --- reading a store as a comparable value -----------------------------------------------------------


def blank(snapshot: SessionSnapshot | None, names: dict[str, str]) -> SessionSnapshot | None:
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


def read_or_error(read: Callable[[], Any]) -> Any:
    try:
        return read()
    except GenkitError as exc:
        return f"{exc.status.value}: {exc.message}"


def observe(store: DynamoDBSessionStore, path: Path, operation: Operation | None) -> dict[str, Any]:
    """What a cold store reads: every snapshot by id, the session's leaf, and its listing."""
    reader = cold(store, **path.options)
    chosen = operation.ids() if operation is not None else {}
    names = {actual: name for name, actual in chosen.items()}
    ids: dict[str, str | None] = {i: i for i in path.ids} | {name: chosen.get(name) for name in path.dynamic}
    return {
        "by id": {
            name: None
            if actual is None
            else read_or_error(lambda a=actual: blank(reader.get_snapshot(snapshot_id=a), names))
            for name, actual in ids.items()
        },
        "leaf": read_or_error(lambda: blank(reader.get_snapshot(session_id="s"), names)),
        "list": read_or_error(lambda: [blank(s, names) for s in reader.list_snapshots("s")]),
        **({"record": read_or_error(lambda: _blank_record(reader.get_session_record("s")))} if path.record else {}),
    }


def _blank_record(record: SessionRecord | None) -> SessionRecord | None:
    """A record with its timestamps blanked (two runs stamp different ones)."""
    return None if record is None else attrs.evolve(record, created_at="", updated_at="")


def assert_rerun_reads_as_after(
    store: DynamoDBSessionStore, path: Path, operation: Operation, after: dict[str, Any]
) -> None:
    """After a rerun that finished: the store reads as after the operation, and a deletion left nothing."""
    rerun = observe(store, path, operation)
    assert rerun == after, differences(rerun, after)
    if path.deletes:
        assert left_behind(store) == [], "the deletion left items behind"


def live(view: dict[str, Any], operation: Operation) -> set[str]:
    """The ids of the snapshots that read, in a view that reads as before or as after (so every snapshot
    of the session read, and the path names them all)."""
    chosen = operation.ids()
    read = {chosen.get(name, name) for name, value in view["by id"].items() if isinstance(value, SessionSnapshot)}
    listed = view["list"] if isinstance(view["list"], list) else []
    return read | {chosen.get(s.snapshot_id, s.snapshot_id) for s in listed if isinstance(s, SessionSnapshot)}


def brief(value: Any) -> str:
    """A short account of a read: snapshots by id, parent, status and last message; errors cut short."""
    if isinstance(value, SessionSnapshot):
        messages = value.state.message_list if value.state is not None else ()
        last = messages[-1].text[:12] if messages else ""
        status = value.effective_status.value
        return f"{value.snapshot_id}(parent={value.parent_id}, {status}, {len(messages)} msgs {last!r})"
    if isinstance(value, list):
        return "[" + ", ".join(brief(v) for v in value) + "]"
    return repr(value)[:300]


def differences(seen: dict[str, Any], expected: dict[str, Any]) -> str:
    out = []
    for key in seen:
        pairs = [(f"{key} {i!r}", seen[key][i], expected[key][i]) for i in seen[key]] if key == "by id" else []
        for what, got, want in pairs or [(key, seen[key], expected[key])]:
            if got != want:
                out.append(f"{what} reads {brief(got)}, not {brief(want)}")
    return "; ".join(out)


# --- fresh stores ----------------------------------------------------------------------------------


def fresh(make: StoreFactory, path: Path) -> DynamoDBSessionStore:
    store: DynamoDBSessionStore = make(**path.options)
    path.setup(store)
    return store


def drop(store: DynamoDBSessionStore) -> None:
    """Free the moto server's memory: every test makes a table of its own."""
    store.client.delete_table(TableName=store.table_name)


# --- clean runs and the calls they make ------------------------------------------------------------


@attrs.frozen
class Reference:
    """A path's uncancelled, fault-free run: the store read before and after, and the calls it made."""

    before: dict[str, Any]
    after: dict[str, Any]
    log: tuple[str, ...]


def clean_run(make: StoreFactory, path: Path) -> Reference:
    """Run ``path`` once on a fresh store of ``make`` (a guarded client's), logging its calls."""
    store = fresh(make, path)
    try:
        before = observe(store, path, None)
        operation = path.operation(cold(store, **path.options))
        guard = guard_of(store)
        guard.reset()
        operation.run()
        log = tuple(guard.log)
        after = observe(store, path, operation)
    finally:
        drop(store)
    return Reference(before, after, log)


def swept_calls(path: Path, sequence: tuple[str, ...], *, every_call: bool | None = None) -> list[int]:
    """The indexes of ``sequence`` (the calls ``path`` makes) a sweep breaks the path at: every one, or,
    unless the path (or ``every_call``) asks for every call, the first and last of each run of three or
    more calls of one operation in a row."""
    if path.every_call if every_call is None else every_call:
        return list(range(len(sequence)))
    kept = []
    for index, operation in enumerate(sequence):
        inside = 0 < index < len(sequence) - 1 and sequence[index - 1] == operation == sequence[index + 1]
        if not inside:
            kept.append(index)
    return kept


@functools.lru_cache(maxsize=1)
def recorded_sequences() -> dict[str, tuple[str, ...]]:
    """The DynamoDB calls each path makes, by path name, recorded once on in-process moto."""
    from moto import mock_aws

    from tests.dynamodb_backends import make_client, store_factory

    with mock_aws():
        make = store_factory(make_client())
        return {path.name: clean_run(make, path).log for path in PATHS}
