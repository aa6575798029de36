"""The caller's task cancelled at every DynamoDB call of every write path of the async face.

An agent framework cancels a turn's task when its client goes away or a deadline passes, at whatever
request the store is waiting on. The async face (aiobotocore, through :class:`LocalDynamoDB`'s proxy,
so each request really is in flight) must let the cancellation through as ``CancelledError`` (never
swallowed, never turned into a store error) and leave the table as a failure would: a cold store
reads as before the operation or as after it (as before, whenever the cancellation came before the
write's commit was sent: a cancelled write never goes on to commit), no blob part is left that
nothing references and that never expires, and the operation, run again, finishes and reads as after.

Each write path runs once uncancelled when the module's store is first used, which records the
requests it makes at the proxy. Then, for every request and both outcomes, a test runs the same
operation on a fresh table and cancels the task while that request is at the proxy:

- ``unapplied``: the proxy drops the request (it was sent, but DynamoDB never saw it: a connection that
  broke on the way);
- ``applied``: the proxy applies the request, then closes the connection (the write happened; the task
  never heard).

The cancellation is handed to the task's loop when the proxy has the whole request, before the proxy
answers, so the task is cancelled while it waits on that request (the loop runs a callback handed to it
before it reads the answer that arrives later). The proxy goes on serving meanwhile, so what the store
sends to take a write back, once cancelled, is answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from genkit_sessions.dynamodb.local import LocalDynamoDB
from tests.dynamodb.helpers import cold, parts_left_forever
from tests.dynamodb.write_paths import (
    PATHS,
    Operation,
    Path,
    StoreFactory,
    assert_rerun_reads_as_after,
    differences,
    drop,
    fresh,
    live,
    observe,
    recorded_sequences,
    swept_calls,
)
from tests.dynamodb_backends import make_client, store_factory

pytest.importorskip("aiobotocore", reason="the async face runs on aiobotocore (the `aio` extra)")

OUTCOMES = ("unapplied", "applied")
OPERATIONS = (
    "GetItem",
    "BatchGetItem",
    "Query",
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "BatchWriteItem",
    "TransactWriteItems",
)


@pytest.fixture(scope="module")
def ddb() -> Iterator[LocalDynamoDB]:
    with LocalDynamoDB() as local:
        yield local


@pytest.fixture(scope="module")
def make(ddb: LocalDynamoDB) -> StoreFactory:
    """Fresh stores on new tables, through one guarded client on the proxy (AWS's limits on every
    request of the blocking client: setups and reads)."""
    return store_factory(make_client(ddb.endpoint_url))


class Canceller:
    """Cancels the operation's task when the ``index``-th request from now is at the proxy, which then
    drops it (``unapplied``) or applies it without answering (``applied``)."""

    def __init__(self, ddb: LocalDynamoDB, index: int, outcome: str) -> None:
        self.ddb, self.index, self.outcome = ddb, index, outcome
        self.seen: list[str] = []
        self.task: asyncio.Task[object] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def arm(self) -> None:
        for operation in OPERATIONS:  # one rule per operation, all counting the same requests
            when = self._when_for(operation)
            if self.outcome == "applied":
                self.ddb.lose_answer(operation, times=10_000, when=when)
            else:
                self.ddb.fail(operation, times=10_000, when=when)

    def _when_for(self, operation: str) -> Any:
        def when(_request: dict[str, Any]) -> bool:
            self.seen.append(operation)
            if len(self.seen) - 1 != self.index:
                return False
            assert self.loop is not None and self.task is not None
            self.loop.call_soon_threadsafe(self.task.cancel)
            return True

        return when

    async def run(self, operation: Operation) -> str:
        """Run ``operation`` on the async face under the canceller: ``cancelled``, ``finished`` or the error."""
        self.loop = asyncio.get_running_loop()
        self.task = asyncio.ensure_future(operation.arun())
        try:
            await self.task
        except asyncio.CancelledError:
            return "cancelled"
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        finally:
            self.ddb.clear_faults()
        return "finished"


@attrs.frozen
class _Reference:
    before: dict[str, Any]
    after: dict[str, Any]
    requests: tuple[str, ...]


_REFERENCES: dict[str, _Reference] = {}


def _reference(ddb: LocalDynamoDB, make: StoreFactory, path: Path) -> _Reference:
    if path.name not in _REFERENCES:
        store = fresh(make, path)
        try:
            before = observe(store, path, None)
            operation = path.operation(cold(store, **path.options))
            ddb.reset_log()
            asyncio.run(operation.arun())
            requests = tuple(ddb.operations())
            _REFERENCES[path.name] = _Reference(before, observe(store, path, operation), requests)
        finally:
            drop(store)
    return _REFERENCES[path.name]


@attrs.frozen
class Point:
    path: Path
    index: int
    outcome: str

    @property
    def id(self) -> str:
        return f"{self.path.name}-{self.index:02d}-{self.outcome}"


def _commit_index(requests: tuple[str, ...]) -> int | None:
    """The request that commits a write path: its last transaction (None for a path that has none)."""
    return max((index for index, operation in enumerate(requests) if operation == "TransactWriteItems"), default=None)


SEQUENCES = recorded_sequences()  # the blocking store's calls: the same steps drive the async face
POINTS = [
    Point(path, index, outcome)
    for path in PATHS
    for index in swept_calls(path, SEQUENCES[path.name])
    for outcome in OUTCOMES
]


@pytest.mark.parametrize("point", POINTS, ids=[p.id for p in POINTS])
def test_a_task_cancelled_at_any_request_of_a_write_reads_as_before_or_after_and_a_rerun_finishes(
    ddb: LocalDynamoDB, make: StoreFactory, point: Point
) -> None:
    path = point.path
    reference = _reference(ddb, make, path)
    assert reference.requests == SEQUENCES[path.name], "the async face makes other requests than the blocking store"
    store = fresh(make, path)
    try:
        operation = path.operation(cold(store, **path.options))
        canceller = Canceller(ddb, point.index, point.outcome)
        canceller.arm()
        outcome = asyncio.run(canceller.run(operation))
        assert canceller.seen[: point.index + 1] == list(reference.requests[: point.index + 1]), (
            f"the requests differ from the uncancelled run's: {canceller.seen} against {reference.requests}"
        )
        assert outcome == "cancelled", f"the task cancelled at {reference.requests[point.index]} ended {outcome}"

        observed = observe(store, path, operation)
        if observed != reference.before and observed != reference.after:
            pytest.fail(
                f"reads neither as before nor as after. Against before: {differences(observed, reference.before)}. "
                f"Against after: {differences(observed, reference.after)}"
            )
        if not path.deletes:
            commit = _commit_index(reference.requests)
            if commit is not None and point.index < commit:
                assert observed == reference.before, (
                    f"cancelled at request {point.index}, before its commit (request {commit}) was sent, the "
                    f"write still landed: {differences(observed, reference.before)}"
                )
            assert parts_left_forever(store, live(observed, operation), marked_ok=path.staged_before) == [], (
                "the cancelled write left parts that nothing references forever"
            )

        asyncio.run(operation.arun())
        assert_rerun_reads_as_after(store, path, operation, reference.after)
    finally:
        drop(store)
