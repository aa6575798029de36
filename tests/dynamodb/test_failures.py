"""Failures: every step of a large write and of a read fails in turn; racing writers share a session.

After each injected failure the store reads exactly as before the write or
exactly as after it, nothing committed is lost, and a part that no snapshot
references always carries an expiry.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError

from genkit_sessions import AgentInit, GenkitError, Message, SessionResolver, SessionSnapshot, Status
from genkit_sessions.dynamodb import DynamoDBSessionStore
from tests.dynamodb.helpers import cold, left_behind, noise, save_new, scan, state_of
from tests.dynamodb.layout import BLOB_PREFIX, SEP, SNAPSHOT_SK, Recipe, pack_record, unpack_record
from tests.dynamodb_backends import client_error, guard_of

StoreFactory = Any


def _referenced_blobs(store: DynamoDBSessionStore) -> set[str]:
    names: set[str] = set()
    for item in scan(store):
        if item["sk"]["S"] == SNAPSHOT_SK:
            recipe = Recipe.of(item)
            names.update(name for name, _ in recipe.refs)
    return names


def _assert_no_part_lost_or_left_forever(store: DynamoDBSessionStore) -> None:
    referenced = _referenced_blobs(store)
    for item in scan(store):
        sk = item["sk"]["S"]
        if not sk.startswith(BLOB_PREFIX):
            continue
        name = sk[len(BLOB_PREFIX) :].rpartition(SEP)[0]
        if name not in referenced:
            assert "exp" in item, f"orphaned part {sk!r} has no expiry"
        else:  # even if the writer died right after its commit, and nobody reads the snapshot again
            assert "exp" not in item and "stg" not in item, f"committed part {sk!r} would expire"


def _fail(operation: str, nth: int, error: Callable[[], Exception]) -> Callable[[str, dict[str, Any]], None]:
    seen = [0]

    def fault(op: str, params: dict[str, Any]) -> None:
        if op == operation:
            seen[0] += 1
            if seen[0] == nth:
                raise error()

    return fault


def _throttled() -> Exception:
    return client_error("ThrottlingException", "Rate of requests exceeds the allowed throughput.", "X")


def _timeout() -> Exception:
    return ReadTimeoutError(endpoint_url="http://127.0.0.1:1/")


LARGE_WRITE_STEPS = [
    ("first part batch", "BatchWriteItem", 1, False, _throttled),
    ("after some parts", "BatchWriteItem", 3, False, _throttled),
    ("before the commit", "TransactWriteItems", 1, False, _throttled),
    ("on the commit, response lost", "TransactWriteItems", 1, True, _timeout),
    ("while lifting the expiry", "UpdateItem", 2, False, _throttled),
]


@pytest.mark.parametrize(
    ("step", "operation", "nth", "after", "error"), LARGE_WRITE_STEPS, ids=[s[0] for s in LARGE_WRITE_STEPS]
)
def test_a_large_write_failing_at_any_step_reads_as_before_or_after(
    make_dynamo: StoreFactory, step: str, operation: str, nth: int, after: bool, error: Callable[[], Exception]
) -> None:
    # chunk_bytes=1000 makes a 150 KB state need more parts than one transaction holds, so it is staged.
    store = make_dynamo(chunk_bytes=1000)
    rng = random.Random(11)
    parent = save_new(store, "p", state_of("s", ["small"]))
    big = state_of("s", ["small", noise(rng, 150_000)])
    guard = guard_of(store)
    (guard.after_faults if after else guard.faults).append(_fail(operation, nth, error))
    outcome: SessionSnapshot | GenkitError
    try:
        outcome = save_new(store, "big", big, parent.snapshot_id)
    except GenkitError as exc:
        outcome = exc
    guard.faults.clear()
    guard.after_faults.clear()
    _assert_no_part_lost_or_left_forever(store)  # before any read could repair anything
    reader = cold(store)
    leaf = reader.get_snapshot(session_id="s")
    written = reader.get_snapshot(snapshot_id="big")
    if written is None:  # exactly as before
        assert isinstance(outcome, GenkitError)
        assert outcome.status in (Status.RESOURCE_EXHAUSTED, Status.DEADLINE_EXCEEDED)
        assert "Rate of requests" in outcome.message or "timeout" in outcome.message.lower()
        assert leaf == parent
    else:  # exactly as after
        assert written.state == big
        assert leaf == written
    _assert_no_part_lost_or_left_forever(store)
    # Nothing lost: once the failure is gone the write lands (or has landed), whole.
    final = store.save_snapshot("big", lambda cur: cur or SessionSnapshot(snapshot_id="big", parent_id="p", state=big))
    assert final is not None and final.state == big
    assert cold(store).get_snapshot(session_id="s") == final
    referenced = _referenced_blobs(store)
    for item in scan(store):
        sk = item["sk"]["S"]
        if sk.startswith(BLOB_PREFIX) and sk[len(BLOB_PREFIX) :].rpartition(SEP)[0] in referenced:
            assert "exp" not in item and "stg" not in item, "a committed part still expires after a read"


READ_STEPS = [("GetItem", 1), ("BatchGetItem", 1)]


@pytest.mark.parametrize(("operation", "nth"), READ_STEPS)
@pytest.mark.parametrize(
    ("error", "status"),
    [
        (_throttled, Status.RESOURCE_EXHAUSTED),
        (_timeout, Status.DEADLINE_EXCEEDED),
        (lambda: EndpointConnectionError(endpoint_url="http://127.0.0.1:1"), Status.UNAVAILABLE),
        (
            lambda: client_error("ResourceNotFoundException", "Requested resource not found", "X"),
            Status.FAILED_PRECONDITION,
        ),
    ],
)
def test_a_failing_read_is_a_graceful_resolver_failure_with_the_mapped_status(
    make_dynamo: StoreFactory, operation: str, nth: int, error: Callable[[], Exception], status: Status
) -> None:
    store = make_dynamo()
    save_new(store, "a", state_of("s", ["hello"]))
    reader = cold(store)
    guard_of(store).faults.append(_fail(operation, nth, error))
    resolution = SessionResolver.resolve(reader, True, AgentInit(session_id="s"))
    assert not resolution.ok and resolution.error is not None
    assert resolution.error.status == status
    assert resolution.rule == "R15"
    guard_of(store).faults.clear()
    assert SessionResolver.resolve(reader, True, AgentInit(session_id="s")).ok


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("ConditionalCheckFailedException", Status.ABORTED),
        ("TransactionConflictException", Status.ABORTED),
        ("ProvisionedThroughputExceededException", Status.RESOURCE_EXHAUSTED),
        ("ThrottlingException", Status.RESOURCE_EXHAUSTED),
        ("RequestLimitExceeded", Status.RESOURCE_EXHAUSTED),
        ("ItemCollectionSizeLimitExceededException", Status.RESOURCE_EXHAUSTED),
        ("ResourceNotFoundException", Status.FAILED_PRECONDITION),
        ("ValidationException", Status.INVALID_ARGUMENT),
        ("AccessDeniedException", Status.PERMISSION_DENIED),
        ("UnrecognizedClientException", Status.UNAUTHENTICATED),
        ("InternalServerError", Status.UNAVAILABLE),
        ("SomethingNew", Status.UNKNOWN),
    ],
)
def test_every_backend_error_maps_to_a_status_and_keeps_the_backend_message(
    make_dynamo: StoreFactory, code: str, status: Status
) -> None:
    store = make_dynamo()
    guard_of(store).faults.append(_fail("GetItem", 1, lambda: client_error(code, f"backend says {code}", "GetItem")))
    with pytest.raises(GenkitError) as caught:
        store.get_snapshot(snapshot_id="a")
    assert caught.value.status == status
    assert f"backend says {code}" in caught.value.message
    assert caught.value.details["code"] == code


def test_a_missing_table_is_failed_precondition_naming_the_fix(make_dynamo: StoreFactory) -> None:
    store = make_dynamo()
    missing = DynamoDBSessionStore("no-such-table", store.client)
    with pytest.raises(GenkitError) as caught:
        missing.get_snapshot(session_id="s")
    assert caught.value.status == Status.FAILED_PRECONDITION
    assert "create-table" in caught.value.message


def test_an_unreachable_endpoint_is_unavailable() -> None:
    from genkit_sessions.dynamodb import build_client
    from genkit_sessions.dynamodb.embedded import free_port
    from tests.dynamodb_backends import CREDENTIALS

    client = build_client("us-east-1", f"http://127.0.0.1:{free_port()}", max_retries=0, client_options=CREDENTIALS)
    store = DynamoDBSessionStore("t", client)
    with pytest.raises(GenkitError) as caught:
        store.get_snapshot(snapshot_id="a")
    assert caught.value.status == Status.UNAVAILABLE


def test_a_transaction_cancelled_by_throttling_is_resource_exhausted(make_dynamo: StoreFactory) -> None:
    store = make_dynamo()
    cancelled = client_error(
        "TransactionCanceledException",
        "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ThrottlingError]",
        "TransactWriteItems",
        CancellationReasons=[{"Code": "None"}, {"Code": "ThrottlingError", "Message": "slow down"}],
    )
    guard_of(store).faults.append(_fail("TransactWriteItems", 1, lambda: cancelled))
    with pytest.raises(GenkitError) as caught:
        save_new(store, "a", state_of("s", ["x"]))
    assert caught.value.status == Status.RESOURCE_EXHAUSTED
    assert store.get_snapshot(snapshot_id="a") is None


def test_a_save_that_keeps_losing_races_is_aborted_after_bounded_attempts(make_dynamo: StoreFactory) -> None:
    store = make_dynamo(max_attempts=3)
    save_new(store, "a", state_of("s", ["x"]))
    conflict = client_error(
        "TransactionCanceledException",
        "Transaction cancelled [ConditionalCheckFailed, None]",
        "TransactWriteItems",
        CancellationReasons=[{"Code": "ConditionalCheckFailed"}, {"Code": "None"}],
    )

    refused = client_error("ConditionalCheckFailedException", "The conditional request failed", "UpdateItem")

    def always(op: str, params: dict[str, Any]) -> None:  # a transaction, or a lone conditional write
        if op == "TransactWriteItems":
            raise conflict
        if op == "UpdateItem":
            raise refused

    guard_of(store).faults.append(always)
    guard_of(store).reset()
    runs: list[int] = []

    def finish(current: SessionSnapshot | None) -> SessionSnapshot | None:
        runs.append(1)
        return attrs.evolve(current, finish_reason="stop") if current is not None else None

    with pytest.raises(GenkitError) as caught:
        store.save_snapshot("a", finish)
    assert caught.value.status == Status.ABORTED
    assert len(runs) == 3
    calls = guard_of(store).calls
    # one conditional write per attempt: a transaction that checks the head while this instance does not
    # know whether the session may expire, a lone UpdateItem once it has read the head
    assert calls["UpdateItem"] + calls["TransactWriteItems"] == 3


def test_racing_writers_from_threads_lose_nothing_and_leave_no_orphan_without_expiry(make_dynamo: StoreFactory) -> None:
    # head_ids=3: the head moves its ids to member pages many times while the writers race.
    store = make_dynamo(chunk_bytes=1000, checkpoint_every=3, max_attempts=50, head_ids=3)
    root = save_new(store, "root", state_of("s", ["start"]))
    successes: list[SessionSnapshot] = []
    errors: list[GenkitError] = []
    lock = threading.Lock()

    def writer(worker: int) -> None:
        rng = random.Random(worker)
        mine = DynamoDBSessionStore(
            store.table_name, store.client, chunk_bytes=1000, checkpoint_every=3, max_attempts=50, head_ids=3
        )
        for turn in range(4):
            leaf = mine.get_snapshot(session_id="s") or root
            assert leaf.state is not None
            size = 150_000 if turn == 2 else 50  # one staged (large) write per worker
            state = attrs.evolve(
                leaf.state, messages=(*leaf.state.message_list, Message.of_text("user", noise(rng, size)))
            )
            snapshot_id = f"w{worker}-t{turn}"
            try:
                saved = save_new(mine, snapshot_id, state, leaf.snapshot_id)
            except GenkitError as exc:
                with lock:
                    errors.append(exc)
                continue
            with lock:
                successes.append(saved)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(e.status == Status.ABORTED for e in errors)
    reader = cold(store)
    for saved in successes:
        assert reader.get_snapshot(snapshot_id=saved.snapshot_id) == saved
    leaf = reader.get_snapshot(session_id="s")
    assert leaf is not None and leaf.snapshot_id in {s.snapshot_id for s in successes}
    assert len(reader.list_snapshots("s")) == len(successes) + 1
    _assert_no_part_lost_or_left_forever(store)


def test_corrupt_stored_data_is_data_loss_for_the_resolver(make_dynamo: StoreFactory) -> None:
    store = make_dynamo()
    save_new(store, "a", state_of("s", ["hello"]))
    for item in scan(store):  # every blob, whether a part item or inline in a snapshot item
        if item["sk"]["S"].startswith(BLOB_PREFIX):
            store.client.put_item(TableName=store.table_name, Item={**item, "d": {"B": b"\x01garbage"}})
        if item["sk"]["S"] == SNAPSHOT_SK:
            record, tag, blob = unpack_record(bytes(item["rec"]["B"]))
            assert tag is not None and blob is not None  # a small state: its blob is packed with the record
            garbage = pack_record(record, tag, b"\x01garbage")
            store.client.put_item(TableName=store.table_name, Item={**item, "rec": {"B": garbage}})
    reader = cold(store)
    with pytest.raises(GenkitError) as caught:
        reader.get_snapshot(snapshot_id="a")
    assert caught.value.status == Status.DATA_LOSS
    resolution = SessionResolver.resolve(cold(store), True, AgentInit(snapshot_id="a"))
    assert not resolution.ok and resolution.error is not None and resolution.error.status == Status.DATA_LOSS


# The deletion's calls that fail: its second transaction deletes the snapshot items (its first is the
# tombstone), so the rerun still finds 7 of them; its first BatchWriteItem deletes the pages and parts.
@pytest.mark.parametrize(("operation", "nth", "left"), [("TransactWriteItems", 2, 7), ("BatchWriteItem", 1, 0)])
def test_a_deletion_failing_part_way_keeps_what_is_left_listed_and_a_rerun_finishes(
    make_dynamo: StoreFactory, operation: str, nth: int, left: int
) -> None:
    store = make_dynamo(chunk_bytes=1000, head_ids=3)  # large states have parts; ids fill member pages
    rng = random.Random(5)
    parent = save_new(store, "a", state_of("s", ["one"]))
    for turn in range(6):
        assert parent.state is not None
        texts = [m.text for m in parent.state.message_list] + [noise(rng, 3000 if turn % 2 else 20)]
        parent = save_new(store, f"t{turn}", state_of("s", texts), parent.snapshot_id)
    guard = guard_of(store)
    guard.faults.append(_fail(operation, nth, _throttled))
    with pytest.raises(GenkitError) as caught:
        store.delete_session("s")
    assert caught.value.status == Status.RESOURCE_EXHAUSTED
    guard.faults.clear()
    leaf = cold(store).get_snapshot(session_id="s")
    # The tombstone went first: the session reads as deleted, and the tombstone still lists what is left.
    assert leaf is None
    assert store.delete_session("s") == left
    assert left_behind(store) == []


def test_a_session_listing_a_corrupt_snapshot_lists_as_data_loss_and_still_deletes(make_dynamo: StoreFactory) -> None:
    store = make_dynamo()
    save_new(store, "a", state_of("s", ["hello"]))
    save_new(store, "b", state_of("s", ["hello", "there"]), "a")
    item = next(i for i in scan(store) if i["pk"]["S"].endswith("\x1fb") and i["sk"]["S"] == SNAPSHOT_SK)
    store.client.put_item(TableName=store.table_name, Item={**item, "rec": {"B": b"\x01garbage"}})
    with pytest.raises(GenkitError) as caught:
        cold(store).list_snapshots("s")
    assert caught.value.status == Status.DATA_LOSS and "'b'" in caught.value.message
    assert cold(store).delete_session("s") == 2
    assert left_behind(store) == []
