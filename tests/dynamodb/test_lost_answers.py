"""A write whose answer is lost, on a local DynamoDB that honours ClientRequestToken as AWS does.

botocore resends a request whose connection dropped. A lone conditional write
resent after it was applied fails its own condition, so a store that relied
on one would report a refusal for a write it made; a transaction resent with
the same token is answered with its first success. These tests lose the
answer of exactly one request and check the store reports what really
happened and reads as after.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from genkit_sessions import AgentInit, Message, SessionResolver, SessionSnapshot, SnapshotStatus
from genkit_sessions.dynamodb import DynamoDBSessionStore, create_table
from genkit_sessions.dynamodb.local import LocalDynamoDB
from genkit_sessions.errors import GenkitError, Status
from tests.dynamodb.helpers import noise, scan, six_megabytes, state_of


@pytest.fixture(scope="module")
def local() -> Iterator[LocalDynamoDB]:
    with LocalDynamoDB() as server:
        yield server


@pytest.fixture
def store(local: LocalDynamoDB, request: pytest.FixtureRequest) -> Iterator[DynamoDBSessionStore]:
    client = local.client()
    table = f"lost-{abs(hash(request.node.name)) % 10**8}"
    create_table(client, table, exist_ok=True)
    local.clear_faults()
    yield DynamoDBSessionStore(table, client)
    local.clear_faults()


def _pending(store: DynamoDBSessionStore, snapshot_id: str) -> None:
    store.save_snapshot(
        snapshot_id,
        lambda _: SessionSnapshot(snapshot_id=snapshot_id, state=state_of("s", ["hi"]), status="pending"),
    )


def test_an_abort_whose_answer_is_lost_reports_the_status_it_replaced(
    local: LocalDynamoDB, store: DynamoDBSessionStore
) -> None:
    _pending(store, "a")
    local.lose_answer("TransactWriteItems")
    assert store.abort_snapshot("a") is SnapshotStatus.PENDING  # not ABORTED ("already terminal")
    done = DynamoDBSessionStore(store.table_name, store.client).get_snapshot(snapshot_id="a")
    assert done is not None and done.status is SnapshotStatus.ABORTED


def test_completing_a_turn_whose_answer_is_lost_succeeds_once(
    local: LocalDynamoDB, store: DynamoDBSessionStore
) -> None:
    _pending(store, "p")
    local.lose_answer("TransactWriteItems")
    saved = store.save_snapshot("p", lambda current: attrs.evolve(current, status="completed"))
    assert saved is not None and saved.status is SnapshotStatus.COMPLETED
    record = store.get_session_record("s")
    assert record is not None and record.version == 2  # applied once, not twice


def test_a_turn_end_save_whose_answer_is_lost_lands_once(local: LocalDynamoDB, store: DynamoDBSessionStore) -> None:
    first = SessionResolver.resolve(store, True, AgentInit(session_id="chat")).session
    assert first is not None
    first.add_messages(Message.of_text("user", "one"))
    first.save()
    resumed = SessionResolver.resolve(store, True, AgentInit(session_id="chat")).session
    assert resumed is not None
    resumed.add_messages(Message.of_text("user", "two"))
    local.lose_answer("TransactWriteItems")
    saved = resumed.save()
    cold = DynamoDBSessionStore(store.table_name, store.client)
    assert [s.snapshot_id for s in cold.list_snapshots("chat")][-1] == saved.snapshot_id
    assert cold.get_session_record("chat").version == 2  # type: ignore[union-attr]


def test_a_staged_write_whose_commit_answer_is_lost_keeps_its_parts_and_reads_back(
    local: LocalDynamoDB, store: DynamoDBSessionStore
) -> None:
    import random

    big = state_of("s", [noise(random.Random(3), 5_000_000)])
    local.lose_answer("TransactWriteItems")
    saved = store.save_snapshot("big", lambda _: SessionSnapshot(snapshot_id="big", state=big))
    assert saved is not None
    back = DynamoDBSessionStore(store.table_name, store.client).get_snapshot(snapshot_id="big")
    assert back is not None and back.state == big
    items = scan(store)
    assert not any(i["sk"]["S"].startswith("g\x1f") for i in items), "the commit deletes its staging marker"
    assert all("exp" not in i for i in items if i["sk"]["S"].startswith("b\x1f")), "committed parts never expire"


def _chat_to_resume(store: DynamoDBSessionStore, session_id: str) -> Any:
    first = SessionResolver.resolve(store, True, AgentInit(session_id=session_id)).session
    assert first is not None
    first.add_messages(Message.of_text("user", "one"))
    first.save()
    resumed = SessionResolver.resolve(store, True, AgentInit(session_id=session_id)).session
    assert resumed is not None
    resumed.add_messages(Message.of_text("user", "two"))
    return resumed


def _transactions(local: LocalDynamoDB) -> int:
    return local.operations().count("TransactWriteItems")


def test_a_commit_whose_answers_botocore_never_gets_is_sent_again_with_its_token_and_lands_once(
    local: LocalDynamoDB, store: DynamoDBSessionStore
) -> None:
    resumed = _chat_to_resume(store, "lost3")
    local.lose_answer("TransactWriteItems", times=3)  # every attempt botocore's standard retries make
    local.reset_log()
    saved = resumed.save()
    assert _transactions(local) == 4, "botocore's three attempts, then the store's own resend with the same token"
    cold = DynamoDBSessionStore(store.table_name, store.client)
    assert [s.snapshot_id for s in cold.list_snapshots("lost3")][-1] == saved.snapshot_id
    assert cold.get_session_record("lost3").version == 2  # type: ignore[union-attr]


def test_a_commit_answered_with_server_errors_is_sent_again_and_lands(
    local: LocalDynamoDB, store: DynamoDBSessionStore
) -> None:
    resumed = _chat_to_resume(store, "fivehundred")
    local.fail("TransactWriteItems", times=3, status=500)  # not applied; botocore retries then gives up
    local.reset_log()
    saved = resumed.save()
    assert _transactions(local) == 4
    cold = DynamoDBSessionStore(store.table_name, store.client)
    assert [s.snapshot_id for s in cold.list_snapshots("fivehundred")][-1] == saved.snapshot_id


def test_a_commit_refused_with_a_client_error_is_not_sent_again(
    local: LocalDynamoDB, store: DynamoDBSessionStore
) -> None:
    resumed = _chat_to_resume(store, "refused")
    before = scan(store)
    local.fail("TransactWriteItems", times=2, status=400, code="ValidationException", message="refused")
    local.reset_log()
    with pytest.raises(GenkitError) as raised:
        resumed.save()
    assert raised.value.status is Status.INVALID_ARGUMENT
    # Refused, so never resent: the save's first attempt, planned on the parent it remembers, is judged
    # again once on a fresh read of it (GetItem), and that attempt's refusal is final.
    assert local.operations() == ["TransactWriteItems", "GetItem", "TransactWriteItems"]
    assert scan(store) == before


def test_a_commit_that_never_gets_an_answer_gives_up_after_three_sends_and_reads_as_after(
    local: LocalDynamoDB, store: DynamoDBSessionStore
) -> None:
    resumed = _chat_to_resume(store, "silent")
    local.lose_answer("TransactWriteItems", times=1_000)
    local.reset_log()
    with pytest.raises(GenkitError) as raised:
        resumed.save()
    local.clear_faults()
    assert raised.value.status is Status.UNAVAILABLE, raised.value
    assert _transactions(local) == 9, "three sends of one token, each with botocore's three attempts"
    cold = DynamoDBSessionStore(store.table_name, store.client)
    assert len(cold.list_snapshots("silent")) == 2  # the first send landed: as after
    assert cold.get_session_record("silent").version == 2  # type: ignore[union-attr]


def test_a_staged_commit_that_landed_is_kept_when_its_resend_is_refused_once_the_token_is_forgotten(
    local: LocalDynamoDB, store: DynamoDBSessionStore
) -> None:
    big = six_megabytes()  # more than one transaction holds: its parts are staged
    local.idempotency_window = 0.0  # as on AWS more than 10 minutes later: the resend is judged afresh
    try:
        local.lose_answer("TransactWriteItems", times=3)  # applied, then botocore's resends refused unseen
        saved = store.save_snapshot("staged", lambda _: SessionSnapshot(snapshot_id="staged", state=big))
    finally:
        local.idempotency_window = 600.0
    assert saved is not None
    back = DynamoDBSessionStore(store.table_name, store.client).get_snapshot(snapshot_id="staged")
    assert back is not None and back.state == big, "the refused resend must not take back the parts that landed"
    items = scan(store)
    assert not any(i["sk"]["S"].startswith("g\x1f") for i in items), "the commit deleted its staging marker"
    assert all("exp" not in i for i in items if i["sk"]["S"].startswith("b\x1f")), "committed parts never expire"
