"""The caller's clock failing at each of its reads during every write path of the DynamoDB store.

A ``clock=`` function can fail (a time service down, a bug); the default one cannot. For each write path
(the paths the fault sweep breaks at every DynamoDB call, and four writes that stamp or judge a session
record), a clean run of the blocking face counts the clock's reads;
then, for every read, a test builds the same data on a fresh store, makes exactly that read raise, and
checks that:

- the call raises UNAVAILABLE (a retry may succeed), never the clock's own exception, or it finishes (a
  read of the first attempt, which runs on what the store last saw, is made again on the retry that reads
  the table);
- a cold store reads exactly as before the call when it failed (the error says nothing was written), and
  as after it when it finished: a read late in a write, after its first request landed, must not leave it
  half done;
- no blob part is left that nothing references and that never expires;
- the same call, run again with a working clock, finishes and reads as after.

The in-memory store's clock faults are in ``tests/stores/test_memory_faults.py``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
import pytest

from genkit_sessions import GenkitError, SessionSnapshot, SnapshotStatus, Status
from genkit_sessions.dynamodb import DynamoDBSessionStore
from genkit_sessions.model.clock import Clock, utc_now
from tests.conftest import STORE_BACKENDS, StoreFactory
from tests.dynamodb.helpers import (
    Answering,
    cold,
    hidden_items_unlisted,
    parts_left_forever,
    save_new,
    state_of,
)
from tests.dynamodb.write_paths import (
    PATHS,
    Operation,
    Path,
    Reference,
    assert_rerun_reads_as_after,
    differences,
    drop,
    fresh,
    live,
    observe,
)


class ClockStopped(RuntimeError):
    """What the failing clock raises."""


class _Clock:
    """The path's clock, counting its reads and raising at read ``fail_at`` (0-based; None: never)."""

    def __init__(self, base: Clock, fail_at: int | None = None) -> None:
        self.base, self.fail_at, self.reads = base, fail_at, 0
        self.armed = False

    def __call__(self) -> datetime:
        if not self.armed:  # the store reads its clock once when built, to check it
            return self.base()
        read, self.reads = self.reads, self.reads + 1
        if read == self.fail_at:
            raise ClockStopped("the time service is down")
        return self.base()


def _worker(store: DynamoDBSessionStore, path: Path, clock: _Clock, face: str = "blocking") -> DynamoDBSessionStore:
    """The store the call runs on; its async face calls in-process moto through an async client of its own."""
    face_options = {"aio_client": Answering(store.client, [])} if face == "async" else {}
    worker = cold(store, **{**path.options, **face_options, "clock": clock})
    clock.armed = True
    return worker


def _clean_run(make: StoreFactory, path: Path) -> tuple[Reference, int]:
    store = fresh(make, path)
    try:
        before = observe(store, path, None)
        clock = _Clock(path.options.get("clock", utc_now))
        operation = path.operation(_worker(store, path, clock))
        operation.run()
        reads = clock.reads
        return Reference(before, observe(store, path, operation), ()), reads
    finally:
        drop(store)


@functools.lru_cache(maxsize=1)
def _recorded_reads() -> dict[str, int]:
    """How many times each path's call reads the clock, counted once on in-process moto."""
    from moto import mock_aws

    from tests.dynamodb_backends import make_client, store_factory

    with mock_aws():
        make = store_factory(make_client())
        return {path.name: _clean_run(make, path)[1] for path in ALL_PATHS}


@attrs.frozen
class Point:
    path: Path
    read: int

    @property
    def id(self) -> str:
        return f"{self.path.name}-read-{self.read:02d}"


def _session_with_a_record(store: DynamoDBSessionStore) -> None:
    store.create_session("s", metadata={"principal": "p"}, ttl=timedelta(hours=1), sliding=True)
    save_new(store, "a", state_of("s", ["hello"]))


class _SetMetadata(Operation):
    def act(self, face: Any) -> Any:
        return face.set_session_metadata("s", "topic", "walks")


class _CreateEmpty(Operation):
    def act(self, face: Any) -> Any:
        return face.create_session("s", metadata={"principal": "p"}, ttl=timedelta(hours=1))


class _Heartbeat(Operation):
    def act(self, face: Any) -> Any:
        return face.heartbeat("p")


class _SlidingTurn(Operation):
    """A turn in a session whose expiry slides: the save moves the expiry, read off the clock."""

    def act(self, face: Any) -> Any:
        child = SessionSnapshot(snapshot_id="b", parent_id="a", state=state_of("s", ["hello", "again"]))
        return face.save_snapshot("b", lambda current: child if current is None else None)


def _no_setup(store: DynamoDBSessionStore) -> None:
    pass


def _pending(store: DynamoDBSessionStore) -> None:
    save_new(store, "a", state_of("s", ["hello"]))
    save_new(store, "p", state_of("s", ["hello", "working"]), "a", status=SnapshotStatus.PENDING)


def _frozen() -> datetime:
    """A clock that stands still, so a record's expiry reads the same in every fresh store."""
    return datetime(2030, 6, 1, tzinfo=timezone.utc)


# Writes the other sweeps leave out: each reads the clock to stamp or judge a session record.
_STILL = {"clock": _frozen}
PATHS_OF_RECORDS = [
    Path("set-metadata", _session_with_a_record, _SetMetadata, ("a",), options=_STILL, record=True),
    Path("create-empty", _no_setup, _CreateEmpty, (), options=_STILL, record=True),
    Path("heartbeat", _pending, _Heartbeat, ("a", "p"), options=_STILL),
    Path("sliding-turn", _session_with_a_record, _SlidingTurn, ("a", "b"), options=_STILL, record=True),
]
ALL_PATHS = [*PATHS, *PATHS_OF_RECORDS]

POINTS = [Point(path, read) for path in ALL_PATHS for read in range(_recorded_reads()[path.name])]
_REFERENCES: dict[str, tuple[Reference, int]] = {}


@pytest.fixture
def make_inprocess(request: pytest.FixtureRequest) -> Iterator[StoreFactory]:
    """Fresh stores on in-process moto (a clock fault is the same on either backend)."""
    yield from STORE_BACKENDS["dynamodb-inprocess"](request)


def test_the_sweep_reaches_every_kind_of_write() -> None:
    assert len(POINTS) >= 50
    assert {point.path.name for point in POINTS} >= {
        "turn-end",
        "update",
        "staged-write",
        "create-many",
        "delete",
        "set-metadata",
        "sliding-turn",
    }


def _run(operation: Operation, face: str) -> None:
    if face == "blocking":
        operation.run()
    else:
        asyncio.run(operation.arun())


@pytest.mark.parametrize("face", ["blocking", "async"])
@pytest.mark.parametrize("point", POINTS, ids=[p.id for p in POINTS])
def test_a_clock_failing_at_any_read_of_a_write_is_unavailable_and_reads_as_before_or_after(
    make_inprocess: StoreFactory, point: Point, face: str
) -> None:
    path = point.path
    if path.name not in _REFERENCES:
        _REFERENCES[path.name] = _clean_run(make_inprocess, path)
    reference, reads = _REFERENCES[path.name]
    assert reads == _recorded_reads()[path.name]
    store = fresh(make_inprocess, path)
    try:
        clock = _Clock(path.options.get("clock", utc_now), fail_at=point.read)
        operation = path.operation(_worker(store, path, clock, face))
        failed = True
        try:
            _run(operation, face)
            failed = False  # the store read the clock again, on a retry of its own, and finished
        except GenkitError as exc:
            assert exc.status is Status.UNAVAILABLE, exc
            assert "clock" in exc.message and "retry" in exc.message
        observed = observe(store, path, operation)
        if not failed:
            assert observed == reference.after, f"succeeded, but {differences(observed, reference.after)}"
        else:  # UNAVAILABLE says nothing was written: the clock is read before the request it stamps
            assert observed == reference.before, f"failed, but {differences(observed, reference.before)}"
        if not path.deletes:
            assert parts_left_forever(store, live(observed, operation), marked_ok=path.staged_before) == [], (
                "the write the clock stopped left parts that nothing references forever"
            )
        assert hidden_items_unlisted(store) == [], "the write the clock stopped left snapshot items nothing lists"

        clock.fail_at = None
        _run(operation, face)
        assert_rerun_reads_as_after(store, path, operation, reference.after)
    finally:
        drop(store)
