"""A fault at every DynamoDB call of every session-service write (contract section 6), one test per point.

As ``test_fault_sweep`` does for the store's own write paths: each service operation runs once,
fault-free, to record its calls; then for every call and every kind of fault a test builds the same
sessions on a fresh table, fails exactly that call, runs the operation and checks that it succeeds
or raises a ``GenkitError`` with a status; that a cold service reads the sessions (records, metadata
lookups, full and active histories) exactly as before or as after; and that a rerun without the fault
succeeds and reads as after.

An outage (a call failing and every call after it, as when the network goes or the process dies) is one
more kind: nothing can clean up after it, so every write must land whole or not at all. A fork is one
transaction (its record, its archive and its first snapshot), so a fork that failed leaves no item of
its own behind either.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
import pytest

from genkit_sessions import (
    GenkitError,
    KeepLastStrategy,
    Message,
    MessageCountTrigger,
    Role,
    SessionService,
    SessionSnapshot,
    SessionState,
    Status,
    TextPart,
)
from genkit_sessions.dynamodb import DynamoDBSessionStore
from tests.dynamodb.helpers import cold, inject_fault, left_behind, scan
from tests.dynamodb.write_paths import Reference, drop
from tests.dynamodb_backends import guard_of

StoreFactory = Any
WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
KINDS = ("throttled", "internal-error", "answer-lost")
SESSIONS = ("s", "t", "fork", "new")
PRINCIPALS = ("alice", "bob")


def _turns(service: SessionService, session_id: str, count: int) -> None:
    for n in range(count):
        service.append(session_id, [Message.of_text("user", f"u{n}"), Message.of_text("model", f"m{n}")])


def _two_sessions(service: SessionService) -> None:
    service.create("s", metadata={"principal": "alice"}, ttl=timedelta(days=1))
    _turns(service, "s", 3)
    service.create("t", metadata={"principal": "alice"})
    _turns(service, "t", 1)


def _compacted(service: SessionService) -> None:
    _two_sessions(service)
    service.compact("s", MessageCountTrigger(4), KeepLastStrategy(2, lambda m: "so far"))


def _expiring(service: SessionService) -> None:
    service.create("s", metadata={"principal": "alice"}, ttl=timedelta(seconds=30))
    _turns(service, "s", 2)
    service.create("t", ttl=timedelta(seconds=30), sliding=True)
    service.create("new", ttl=timedelta(days=1))


def _fork(service: SessionService) -> object:
    record = service.find_by_id("s")
    assert record is not None and record.leaf_id is not None
    return service.fork(record.leaf_id, new_session_id="fork", metadata={"principal": "bob"})


def _deleted_elsewhere(service: SessionService) -> None:
    _two_sessions(service)
    SessionService(service.store).delete("s")


def _again() -> Message:
    return Message(role=Role.USER, content=(TextPart("again"),), metadata={"eventId": "e-again"})


def _restore_older_history(service: SessionService) -> object:
    """An import of a root older than session t: its creation, and its place in the index, move back."""
    old = SessionSnapshot(
        snapshot_id="imported-root",
        session_id="t",
        created_at="2020-01-01T00:00:00.000000Z",
        status="completed",
        state=SessionState(session_id="t", messages=(Message.of_text("user", "old"),)),
    )
    return service.store.restore_snapshots([old])


def _so_far(messages: object) -> str:
    return "so far"


@attrs.frozen
class Path:
    name: str
    setup: Callable[[SessionService], None]
    run: Callable[[SessionService], object]
    per_session: bool = False
    """The operation deletes several sessions one by one: each must read as before or after on its own."""


PATHS = [
    Path("create", _two_sessions, lambda s: s.create("new", metadata={"principal": "bob"}, ttl=timedelta(hours=1))),
    Path("set-metadata", _two_sessions, lambda s: s.set_metadata("s", "principal", "bob")),
    Path("append", _two_sessions, lambda s: s.append("s", [Message.of_text("user", "more")], expected_version=3)),
    Path(
        "compact",
        _two_sessions,
        lambda s: s.compact("s", MessageCountTrigger(4), KeepLastStrategy(2, lambda m: "so far")),
    ),
    Path(
        "compact-with-no-summary",
        _two_sessions,
        lambda s: s.compact("s", MessageCountTrigger(4), KeepLastStrategy(2, lambda m: [])),
    ),
    Path("append-after-a-delete", _deleted_elsewhere, lambda s: s.append("s", [_again()])),  # a retry is a no-op
    Path("restore-older-history", _two_sessions, _restore_older_history),
    Path("fork", _compacted, _fork),
    Path("delete", _two_sessions, lambda s: s.delete("s")),
    Path(
        "delete-expired",
        _expiring,
        lambda s: s.delete_expired(datetime.now(timezone.utc) + timedelta(hours=1)),
        per_session=True,
    ),
]


def _read(read: Callable[[], Any]) -> Any:
    try:
        return read()
    except GenkitError as exc:
        return f"{exc.status.value}: {exc.message}"


def _observe(store: DynamoDBSessionStore) -> dict[str, Any]:
    """What a cold service reads, blind to timestamps and to the ids a run minted."""
    reader = SessionService(cold(store))

    def record(session_id: str) -> Any:
        found = reader.find_by_id(session_id)
        if found is None:
            return None
        version: object = found.version
        return (version, found.leaf_id is not None, dict(found.metadata), found.ttl, found.sliding)

    return {
        "records": {sid: _read(lambda sid=sid: record(sid)) for sid in SESSIONS},
        "lookups": {
            p: _read(lambda p=p: [r.id for r in reader.find_by_metadata("principal", p).records]) for p in PRINCIPALS
        },
        "full": {sid: _read(lambda sid=sid: [m.text for m in reader.get_messages(sid)]) for sid in SESSIONS},
        "active": {sid: _read(lambda sid=sid: [m.text for m in reader.get_active_messages(sid)]) for sid in SESSIONS},
    }


def _fresh(make: StoreFactory, path: Path) -> DynamoDBSessionStore:
    store: DynamoDBSessionStore = make()
    path.setup(SessionService(store))
    return store


def _clean_run(make: StoreFactory, path: Path) -> Reference:
    store = _fresh(make, path)
    try:
        before = _observe(store)
        worker = SessionService(cold(store))
        guard = guard_of(store)
        guard.reset()
        path.run(worker)
        log = tuple(guard.log)
        after = _observe(store)
    finally:
        drop(store)
    return Reference(before, after, log)


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
    for kind in (*KINDS, "outage")
    if kind != "answer-lost" or operation in WRITES
]
"""Every fault at every call, and an outage from every call (that call and every one after it failing:
the network gone, the process dead)."""

_REFERENCES: dict[tuple[str, str], Reference] = {}


def _reference(make: StoreFactory, backend: str, path: Path) -> Reference:
    """The path's fault-free run on this backend, made once."""
    key = (backend, path.name)
    if key not in _REFERENCES:
        _REFERENCES[key] = _clean_run(make, path)
    return _REFERENCES[key]


def _differences(seen: dict[str, Any], expected: dict[str, Any]) -> str:
    return "; ".join(
        f"{kind} {key!r} reads {seen[kind][key]!r}, not {expected[kind][key]!r}"
        for kind in seen
        for key in seen[kind]
        if seen[kind][key] != expected[kind][key]
    )


@pytest.mark.parametrize("point", POINTS, ids=[p.id for p in POINTS])
def test_a_fault_at_any_call_of_a_service_write_reads_as_before_or_after_and_a_rerun_finishes(
    make_dynamo: StoreFactory, request: pytest.FixtureRequest, point: Point
) -> None:
    path = point.path
    reference = _reference(make_dynamo, request.node.callspec.params["make_dynamo"], path)
    assert reference.log == SEQUENCES[path.name], "this backend makes other calls than the recorded sequence"
    store = _fresh(make_dynamo, path)
    try:
        items_before = {(i["pk"]["S"], i["sk"]["S"]) for i in scan(store)}
        worker = SessionService(cold(store))
        seen = inject_fault(store, point.index, point.kind)
        failed = True
        try:
            path.run(worker)
            failed = False
        except GenkitError as exc:
            assert isinstance(exc.status, Status) and exc.status is not Status.OK
        except Exception as exc:
            pytest.fail(f"a raw {type(exc).__name__} escaped: {exc}")
        finally:
            guard_of(store).faults.clear()
            guard_of(store).after_faults.clear()
        assert len(seen) > point.index and seen[point.index] == point.operation, f"the fault missed: {seen}"
        observed = _observe(store)
        if not failed:
            assert observed == reference.after, f"succeeded, but {_differences(observed, reference.after)}"
        elif path.per_session:
            for sid in SESSIONS:
                views = [
                    {k: v[sid] for k, v in r.items() if k != "lookups"} for r in (reference.before, reference.after)
                ]
                seen_view = {k: v[sid] for k, v in observed.items() if k != "lookups"}
                assert seen_view in views, f"session {sid!r} reads {seen_view}, neither as before nor as after"
        elif observed not in (reference.before, reference.after):
            pytest.fail(
                f"reads neither as before nor as after. Against before: {_differences(observed, reference.before)}. "
                f"Against after: {_differences(observed, reference.after)}"
            )
        if path.name == "fork" and observed == reference.before:  # no fork: and no item of it either
            assert {(i["pk"]["S"], i["sk"]["S"]) for i in scan(store)} == items_before, "the failed fork left items"
        if failed or observed != reference.after:  # the caller retries what failed (a deletion finishes)
            try:
                path.run(SessionService(cold(store)))
            except GenkitError as exc:
                pytest.fail(f"the rerun without a fault failed: {exc}")
        rerun = _observe(store)
        assert rerun == reference.after, _differences(rerun, reference.after)
        if path.name == "delete":  # nothing of the session is left but its bare tombstone, no index entry
            items = left_behind(store)
            assert not [i for i in items if i["pk"]["S"].endswith("\x1fs\x1fs")], "the deletion left items behind"
            entries = [i["sk"]["S"] for i in items if i["pk"]["S"].endswith("\x1fm\x1fprincipal\x1falice")]
            assert [e.rpartition("\x1f")[2] for e in entries] == ["t"]
    finally:
        drop(store)
