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
are raised before the call, so DynamoDB applies nothing; ``outage`` fails that call and every call after it
(the network gone, or the writer dead: nothing it tries afterwards, taking a staged write back included,
reaches the table); ``answer-lost`` lets a write through and then
raises ReadTimeoutError, and ``applied-500`` lets it through and then answers InternalServerError (HTTP
500: AWS documents a 5xx as an outcome the caller cannot know), so it was applied but the caller does
not know.
"""

from __future__ import annotations

import attrs
import pytest

from genkit_sessions import GenkitError, Status
from tests.dynamodb.helpers import cold, hidden_items_unlisted, inject_fault, parts_left_forever
from tests.dynamodb.write_paths import (
    PATHS,
    Path,
    Reference,
    StoreFactory,
    assert_rerun_reads_as_after,
    clean_run,
    differences,
    drop,
    fresh,
    live,
    observe,
    recorded_sequences,
    swept_calls,
)
from tests.dynamodb_backends import guard_of

WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
APPLIED = ("answer-lost", "applied-500")  # the write lands; only its answer fails
OUTAGE = "outage"  # that call and every one after it fails: the network gone, or the writer dead
KINDS = ("throttled", "internal-error", *APPLIED, OUTAGE)


SEQUENCES = recorded_sequences()


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
    for index, operation in ((i, SEQUENCES[path.name][i]) for i in swept_calls(path, SEQUENCES[path.name]))
    for kind in KINDS
    if kind not in APPLIED or operation in WRITES
]

_REFERENCES: dict[tuple[str, str], Reference] = {}


def _reference(make: StoreFactory, backend: str, path: Path) -> Reference:
    key = (backend, path.name)
    if key not in _REFERENCES:
        _REFERENCES[key] = clean_run(make, path)
    return _REFERENCES[key]


# --- the sweep ------------------------------------------------------------------------------------


@pytest.mark.parametrize("point", POINTS, ids=[p.id for p in POINTS])
def test_a_fault_at_any_call_of_a_write_reads_as_before_or_after_and_a_rerun_finishes(
    make_dynamo: StoreFactory, request: pytest.FixtureRequest, point: Point
) -> None:
    path = point.path
    reference = _reference(make_dynamo, request.node.callspec.params["make_dynamo"], path)
    assert reference.log == SEQUENCES[path.name], "this backend makes other calls than the recorded sequence"
    store = fresh(make_dynamo, path)
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

        observed = observe(store, path, operation)
        if not failed:  # a success that does not read as after lost the write
            assert observed == reference.after, f"succeeded, but {differences(observed, reference.after)}"
        elif observed != reference.before and observed != reference.after:
            pytest.fail(
                f"reads neither as before nor as after. Against before: {differences(observed, reference.before)}. "
                f"Against after: {differences(observed, reference.after)}"
            )
        if not path.deletes:  # a deletion stopped part-way leaves its parts to the rerun, with the head listing
            # After an outage nothing could take a staged write back: its marker must still name its parts
            # (the session's next turn past orphan_ttl removes them, as after a dead writer).
            marked_ok = path.staged_before or point.kind == OUTAGE
            assert parts_left_forever(store, live(observed, operation), marked_ok=marked_ok) == [], (
                "the failed write left parts that nothing references forever"
            )
        assert hidden_items_unlisted(store) == [], "the failed write left snapshot items that nothing lists"

        try:
            operation.run()
        except GenkitError as exc:
            pytest.fail(f"the rerun without a fault failed: {exc}")
        assert_rerun_reads_as_after(store, path, operation, reference.after)
    finally:
        drop(store)
