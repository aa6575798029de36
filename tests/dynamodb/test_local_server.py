"""LocalDynamoDB: moto behind a proxy that is as atomic as DynamoDB, honours client request tokens,
adds latency and loses or fails requests on demand."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, ConnectionClosedError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genkit_sessions.dynamodb import create_table
from genkit_sessions.dynamodb.local import LocalDynamoDB


@pytest.fixture(scope="module")
def local() -> Iterator[LocalDynamoDB]:
    with LocalDynamoDB() as ddb:
        yield ddb


@pytest.fixture
def ddb(local: LocalDynamoDB) -> Iterator[LocalDynamoDB]:
    """The module's LocalDynamoDB, with no faults, no latency and an empty log."""
    local.clear_faults()
    local.latency = 0.0
    local.idempotency_window = 600.0
    local.reset_log()
    yield local
    local.clear_faults()
    local.latency = 0.0


@pytest.fixture
def client(ddb: LocalDynamoDB) -> Any:
    return ddb.client()


@pytest.fixture
def table(client: Any, ddb: LocalDynamoDB) -> str:
    name = f"t-{uuid.uuid4().hex[:10]}"
    create_table(client, name)
    ddb.reset_log()
    return name


def key(pk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": "s"}}


def get(client: Any, table: str, pk: str) -> dict[str, Any] | None:
    item: dict[str, Any] | None = client.get_item(TableName=table, Key=key(pk), ConsistentRead=True).get("Item")
    return item


def conditional_put(table: str, pk: str, **attributes: Any) -> dict[str, Any]:
    return {
        "Put": {
            "TableName": table,
            "Item": {**key(pk), **attributes},
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }


def count_up(table: str, pk: str) -> dict[str, Any]:
    return {
        "Update": {
            "TableName": table,
            "Key": key(pk),
            "UpdateExpression": "ADD n :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }
    }


def counter(client: Any, table: str, pk: str = "counter") -> int:
    item = get(client, table, pk)
    return int(item["n"]["N"]) if item else 0


def code_of(error: ClientError) -> str:
    code: str = error.response["Error"]["Code"]
    return code


# --- ClientRequestToken ---------------------------------------------------------------------------


def test_a_transaction_resent_with_its_token_succeeds_again_and_applies_once(
    ddb: LocalDynamoDB, client: Any, table: str
) -> None:
    actions = [conditional_put(table, "a"), count_up(table, "counter")]
    client.transact_write_items(TransactItems=actions, ClientRequestToken="token-1")
    client.transact_write_items(TransactItems=actions, ClientRequestToken="token-1")  # would fail its condition

    assert get(client, table, "a") is not None
    assert counter(client, table) == 1
    assert [f.operation for f in ddb.forwards()].count("TransactWriteItems") == 1


def test_without_the_proxy_moto_applies_a_resent_token_again(ddb: LocalDynamoDB, client: Any, table: str) -> None:
    raw = boto3.client(
        "dynamodb",
        endpoint_url=ddb.moto_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    actions = [conditional_put(table, "a"), count_up(table, "counter")]
    raw.transact_write_items(TransactItems=actions, ClientRequestToken="token-raw")
    with pytest.raises(ClientError) as caught:
        raw.transact_write_items(TransactItems=actions, ClientRequestToken="token-raw")
    assert code_of(caught.value) == "TransactionCanceledException"


def test_the_same_token_with_other_parameters_is_an_idempotent_parameter_mismatch(
    ddb: LocalDynamoDB, client: Any, table: str
) -> None:
    client.transact_write_items(TransactItems=[conditional_put(table, "a")], ClientRequestToken="token-2")
    with pytest.raises(ClientError) as caught:
        client.transact_write_items(TransactItems=[conditional_put(table, "b")], ClientRequestToken="token-2")

    assert code_of(caught.value) == "IdempotentParameterMismatchException"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert "same client token" in caught.value.response["Error"]["Message"]
    assert get(client, table, "b") is None


def test_a_failed_transaction_is_not_remembered_under_its_token(ddb: LocalDynamoDB, client: Any, table: str) -> None:
    client.put_item(TableName=table, Item=key("a"))
    actions = [conditional_put(table, "a"), count_up(table, "counter")]
    with pytest.raises(ClientError) as caught:
        client.transact_write_items(TransactItems=actions, ClientRequestToken="token-3")
    assert code_of(caught.value) == "TransactionCanceledException"

    client.delete_item(TableName=table, Key=key("a"))
    client.transact_write_items(TransactItems=actions, ClientRequestToken="token-3")  # applied this time
    assert counter(client, table) == 1


def test_a_token_is_forgotten_after_the_idempotency_window(ddb: LocalDynamoDB, client: Any, table: str) -> None:
    ddb.idempotency_window = 0.2
    actions = [conditional_put(table, "a")]
    client.transact_write_items(TransactItems=actions, ClientRequestToken="token-4")
    time.sleep(0.25)
    with pytest.raises(ClientError) as caught:
        client.transact_write_items(TransactItems=actions, ClientRequestToken="token-4")
    assert code_of(caught.value) == "TransactionCanceledException"


# --- lost answers ---------------------------------------------------------------------------------


def test_a_put_whose_answer_is_lost_is_resent_by_botocore_and_its_condition_then_fails(
    ddb: LocalDynamoDB, client: Any, table: str
) -> None:
    ddb.lose_answer("PutItem")
    with pytest.raises(ClientError) as caught:
        client.put_item(TableName=table, Item=key("a"), ConditionExpression="attribute_not_exists(pk)")

    assert code_of(caught.value) == "ConditionalCheckFailedException"  # though it was this very call that wrote
    assert get(client, table, "a") is not None
    assert ddb.operations()[:2] == ["PutItem", "PutItem"]


def test_a_lost_answer_without_retries_is_a_connection_error_and_the_write_applied(
    ddb: LocalDynamoDB, table: str
) -> None:
    client = ddb.client(retries={"mode": "standard", "total_max_attempts": 1})
    ddb.lose_answer("PutItem")
    with pytest.raises(ConnectionClosedError):
        client.put_item(TableName=table, Item=key("a"), ConditionExpression="attribute_not_exists(pk)")
    assert get(client, table, "a") is not None


def test_an_unconditional_put_whose_answer_is_lost_is_resent_and_succeeds(
    ddb: LocalDynamoDB, client: Any, table: str
) -> None:
    ddb.lose_answer("PutItem")
    client.put_item(TableName=table, Item={**key("a"), "v": {"S": "1"}})
    assert get(client, table, "a") == {**key("a"), "v": {"S": "1"}}
    assert ddb.operations()[:2] == ["PutItem", "PutItem"]


def test_a_transaction_whose_answer_is_lost_is_resent_with_its_token_and_applies_once(
    ddb: LocalDynamoDB, client: Any, table: str
) -> None:
    ddb.lose_answer("DynamoDB_20120810.TransactWriteItems")
    client.transact_write_items(TransactItems=[conditional_put(table, "a"), count_up(table, "counter")])

    assert counter(client, table) == 1
    assert ddb.operations()[:2] == ["TransactWriteItems", "TransactWriteItems"]
    assert [f.operation for f in ddb.forwards()].count("TransactWriteItems") == 1


def test_lose_answer_when_picks_requests_by_their_body(ddb: LocalDynamoDB, client: Any, table: str) -> None:
    ddb.lose_answer("PutItem", times=1, when=lambda request: request["Item"]["pk"]["S"] == "b")
    for pk in ("a", "b", "c"):
        client.put_item(TableName=table, Item=key(pk))
    assert ddb.operations() == ["PutItem", "PutItem", "PutItem", "PutItem"]  # b twice


# --- failures -------------------------------------------------------------------------------------


def test_fail_answers_the_error_without_applying(ddb: LocalDynamoDB, client: Any, table: str) -> None:
    ddb.fail("PutItem", status=400, code="ValidationException", message="refused on purpose")
    with pytest.raises(ClientError) as caught:
        client.put_item(TableName=table, Item=key("a"))

    assert code_of(caught.value) == "ValidationException"
    assert caught.value.response["Error"]["Message"] == "refused on purpose"
    assert get(client, table, "a") is None
    assert "PutItem" not in [f.operation for f in ddb.forwards()]


def test_failed_5xx_answers_are_retried_by_botocore_until_one_goes_through(
    ddb: LocalDynamoDB, client: Any, table: str
) -> None:
    ddb.fail("PutItem", times=2)  # InternalServerError, 500
    client.put_item(TableName=table, Item=key("a"))
    assert ddb.operations()[:3] == ["PutItem", "PutItem", "PutItem"]
    assert [f.operation for f in ddb.forwards()].count("PutItem") == 1


def test_a_fault_on_another_operation_leaves_requests_alone(ddb: LocalDynamoDB, client: Any, table: str) -> None:
    ddb.fail("DeleteItem", status=400, code="ValidationException")
    client.put_item(TableName=table, Item=key("a"))
    assert get(client, table, "a") is not None
    ddb.clear_faults()
    client.delete_item(TableName=table, Key=key("a"))
    assert get(client, table, "a") is None


# --- serialisation and latency --------------------------------------------------------------------


def test_racing_conditional_transactions_from_threads_have_exactly_one_winner(ddb: LocalDynamoDB, table: str) -> None:
    client = ddb.client(max_pool_connections=32)
    for i in range(100):  # a bigger table makes moto's copy per transaction slower, and a race likelier
        client.put_item(TableName=table, Item={**key(f"filler-{i}"), "x": {"S": "x" * 200}})
    ddb.reset_log()
    writers = 16
    barrier = threading.Barrier(writers)
    outcomes: list[str] = []

    def write(i: int) -> None:
        barrier.wait()
        try:
            client.transact_write_items(
                TransactItems=[conditional_put(table, "race", w={"N": str(i)}), count_up(table, "counter")]
            )
            outcomes.append("won")
        except ClientError as exc:
            outcomes.append(code_of(exc))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == ["TransactionCanceledException"] * (writers - 1) + ["won"]
    assert counter(client, table) == 1
    forwards = ddb.forwards()
    for before, after in itertools.pairwise(forwards):
        assert before.started + before.seconds <= after.started  # one request at a time reached moto


def test_latency_delays_every_request(ddb: LocalDynamoDB, client: Any, table: str) -> None:
    ddb.latency = 0.05
    started = time.perf_counter()
    get(client, table, "a")
    assert time.perf_counter() - started >= 0.05


def _raise_open_files_limit(needed: int) -> None:
    try:
        import resource
    except ImportError:  # not POSIX
        pytest.skip("needs the resource module to check the open files limit")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            pytest.skip(f"needs {needed} open files, the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def test_a_thousand_keep_alive_connections_wait_out_their_latency_at_once(ddb: LocalDynamoDB) -> None:
    connections, latency = 1000, 0.1
    _raise_open_files_limit(2 * connections + 256)  # both ends of every connection live in this process
    ddb.latency = latency
    ddb.fail("GetItem", times=2 * connections, status=400, code="ResourceNotFoundException")  # answered by the proxy
    port = int(ddb.endpoint_url.rsplit(":", 1)[1])
    body = json.dumps({"TableName": "none", "Key": key("a")}).encode()
    request = (
        f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Amz-Target: DynamoDB_20120810.GetItem\r\n"
        f"Content-Type: application/x-amz-json-1.0\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body

    async def one_connection() -> list[str]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        codes = []
        for _ in range(2):  # two requests on one connection: keep-alive
            writer.write(request)
            head = (await reader.readuntil(b"\r\n\r\n")).decode()
            length = int(next(h for h in head.split("\r\n") if h.lower().startswith("content-length")).split(":")[1])
            codes.append(json.loads(await reader.readexactly(length))["__type"].rpartition("#")[2])
            assert "Connection: keep-alive" in head
        writer.close()
        return codes

    async def everyone() -> list[list[str]]:
        return await asyncio.gather(*(one_connection() for _ in range(connections)))

    started = time.perf_counter()
    answers = asyncio.run(everyone())
    elapsed = time.perf_counter() - started

    assert answers == [["ResourceNotFoundException"] * 2] * connections
    assert 2 * latency <= elapsed < 100 * latency  # one after the other, the 2,000 delays would take 200 s


# --- moto in a subprocess -------------------------------------------------------------------------


def test_moto_in_a_subprocess_with_keyed_rollback_keeps_failed_transactions_atomic() -> None:
    with LocalDynamoDB(process=True, rollback="keyed") as ddb:
        client = ddb.client()
        table = "t"
        create_table(client, table)
        client.put_item(TableName=table, Item={**key("kept"), "v": {"S": "before"}})
        client.put_item(TableName=table, Item=key("taken"))
        update_kept = {
            "Update": {
                "TableName": table,
                "Key": key("kept"),
                "UpdateExpression": "SET v = :after",
                "ExpressionAttributeValues": {":after": {"S": "after"}},
            }
        }
        actions = [conditional_put(table, "fresh"), update_kept, count_up(table, "counter")]
        with pytest.raises(ClientError) as caught:
            client.transact_write_items(TransactItems=[*actions, conditional_put(table, "taken")])
        assert code_of(caught.value) == "TransactionCanceledException"
        assert get(client, table, "fresh") is None
        assert get(client, table, "kept") == {**key("kept"), "v": {"S": "before"}}
        assert counter(client, table) == 0

        client.transact_write_items(TransactItems=actions)
        assert get(client, table, "kept") == {**key("kept"), "v": {"S": "after"}}
        assert counter(client, table) == 1
        endpoint = ddb.endpoint_url
    ddb.stop()  # idempotent
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", int(endpoint.rsplit(":", 1)[1])), timeout=1).close()


def test_keyed_rollback_needs_moto_in_its_own_process() -> None:
    with pytest.raises(ValueError, match="process=True"):
        LocalDynamoDB(rollback="keyed")


def _queries(table: str) -> list[dict[str, Any]]:
    """Queries of every shape a store sends: whole partitions, sort key conditions, both directions,
    limits with paging, filters and projections, on partitions that exist and one that does not."""
    out: list[dict[str, Any]] = []
    for pk in ("p-0", "p-7", "p-19", "absent"):
        base = {"TableName": table, "ExpressionAttributeValues": {":pk": {"S": pk}}}
        out += [
            {**base, "KeyConditionExpression": "pk = :pk"},
            {**base, "KeyConditionExpression": "pk = :pk", "ScanIndexForward": False, "Limit": 3},
            {
                **base,
                "KeyConditionExpression": "pk = :pk AND begins_with(sk, :s)",
                "ExpressionAttributeValues": {":pk": {"S": pk}, ":s": {"S": "s-1"}},
            },
            {
                **base,
                "KeyConditionExpression": "pk = :pk AND sk BETWEEN :a AND :b",
                "ExpressionAttributeValues": {":pk": {"S": pk}, ":a": {"S": "s-03"}, ":b": {"S": "s-12"}},
                "FilterExpression": "n > :n",
                "ProjectionExpression": "sk, n",
            },
            {
                "TableName": table,
                "KeyConditionExpression": "pk = :pk AND sk > :a",
                "ExpressionAttributeValues": {":pk": {"S": pk}, ":a": {"S": "s-05"}, ":n": {"N": "4"}},
                "FilterExpression": "n > :n",
                "Limit": 4,
            },
        ]
        out[-2]["ExpressionAttributeValues"][":n"] = {"N": "10"}
    return out


def _scans(table: str) -> list[dict[str, Any]]:
    """Scans as an operator tool sends them: the whole table, pages of a few items, a filter and a projection."""
    return [
        {"TableName": table},
        {"TableName": table, "Limit": 7},
        {
            "TableName": table,
            "Limit": 50,
            "FilterExpression": "begins_with(sk, :s) AND n > :n",
            "ExpressionAttributeValues": {":s": {"S": "s-1"}, ":n": {"N": "9"}},
            "ProjectionExpression": "pk, sk",
        },
    ]


def _all_pages(client: Any, request: dict[str, Any], operation: str = "query") -> list[dict[str, Any]]:
    pages, start = [], None
    while True:
        answer = getattr(client, operation)(**request, **({"ExclusiveStartKey": start} if start else {}))
        pages.append({k: answer.get(k) for k in ("Items", "Count", "ScannedCount", "LastEvaluatedKey")})
        start = answer.get("LastEvaluatedKey")
        if not start:
            return pages
        assert len(pages) < 200, f"paging of {request} does not end"


def test_moto_in_a_subprocess_answers_every_query_and_scan_shape_and_a_large_read_exactly_as_stock_moto_does() -> None:
    # The subprocess's moto is patched (a Query reads its partition, a Scan sorts on key values computed
    # once, a JSON body is not searched for an XML request id); moto on this process's threads is not:
    # both must answer alike.
    big = {"pk": {"S": "big"}, "sk": {"S": "one"}, "d": {"B": bytes(range(256)) * 1500}}
    with LocalDynamoDB() as stock, LocalDynamoDB(process=True) as patched:
        answers = []
        for ddb in (stock, patched):
            client = ddb.client()
            create_table(client, "t")
            for p in range(20):
                for s in range(20):
                    item = {"pk": {"S": f"p-{p}"}, "sk": {"S": f"s-{s:02d}"}, "n": {"N": str((p * 7 + s) % 23)}}
                    client.put_item(TableName="t", Item=item)
            client.put_item(TableName="t", Item=big)
            read = client.get_item(TableName="t", Key={"pk": big["pk"], "sk": big["sk"]}, ConsistentRead=True)
            assert read["ResponseMetadata"]["HTTPHeaders"]["x-amzn-requestid"]
            queries = [_all_pages(client, q) for q in _queries("t")]
            scans = [_all_pages(client, q, "scan") for q in _scans("t")]
            answers.append((queries, scans, read["Item"]))
        assert answers[0] == answers[1]
        assert answers[1][2] == big
        assert sum(len(p["Items"]) for pages in answers[1][0] for p in pages) > 100  # the queries found things
        whole, paged, filtered = answers[1][1]
        assert len(whole[0]["Items"]) == 401 and len(paged) == 58  # 401 items, 7 a page
        assert [i["pk"]["S"] for i in whole[0]["Items"][:3]] == ["big", "p-0", "p-0"]  # the table's order
        assert 0 < sum(len(p["Items"]) for p in filtered) < 401


_SCALAR_VALUES = st.one_of(
    st.builds(lambda s: {"S": s}, st.text(max_size=12)),
    st.builds(lambda n: {"N": str(n)}, st.integers(-(10**12), 10**12)),
    st.builds(lambda b: {"B": b}, st.binary(min_size=1, max_size=40)),
    st.builds(lambda s: {"SS": sorted(s)}, st.sets(st.text(min_size=1, max_size=6), min_size=1, max_size=4)),
    st.builds(lambda s: {"NS": sorted(str(n) for n in s)}, st.sets(st.integers(-999, 999), min_size=1, max_size=4)),
    st.builds(lambda s: {"BS": sorted(s)}, st.sets(st.binary(min_size=1, max_size=8), min_size=1, max_size=3)),
    st.builds(lambda b: {"BOOL": b}, st.booleans()),
    st.just({"NULL": True}),
)
_VALUES = st.recursive(
    _SCALAR_VALUES,
    lambda inner: st.one_of(
        st.builds(lambda m: {"M": m}, st.dictionaries(st.text(min_size=1, max_size=6), inner, max_size=4)),
        st.builds(lambda v: {"L": v}, st.lists(inner, max_size=4)),
    ),
    max_leaves=12,
)
_ITEMS = st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e", "f"]), _VALUES, max_size=6)


@pytest.fixture(scope="module")
def stock_and_patched() -> Iterator[tuple[str, list[Any]]]:
    """moto on this process's threads (stock) and moto in a subprocess (patched), a table on each."""
    table = f"values-{uuid.uuid4().hex[:8]}"
    with LocalDynamoDB() as stock, LocalDynamoDB(process=True) as patched:
        clients = [stock.client(), patched.client()]
        for client in clients:
            create_table(client, table)
        yield table, clients


def _reads(client: Any, table: str, key: dict[str, Any]) -> list[Any]:
    """One item read back by every read a store makes or an operator sends, without request metadata."""
    answers = [
        client.get_item(TableName=table, Key=key, ConsistentRead=True),
        client.batch_get_item(RequestItems={table: {"Keys": [key], "ConsistentRead": True}}),
        client.query(
            TableName=table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": key["pk"]},
            ConsistentRead=True,
        ),
        client.transact_get_items(TransactItems=[{"Get": {"TableName": table, "Key": key}}]),
        client.scan(TableName=table, FilterExpression="pk = :pk", ExpressionAttributeValues={":pk": key["pk"]}),
    ]
    for answer in answers:
        answer.pop("ResponseMetadata")
    return answers


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(attributes=_ITEMS)
def test_moto_in_a_subprocess_serializes_every_attribute_value_shape_as_stock_moto_does(
    stock_and_patched: tuple[str, list[Any]], attributes: dict[str, Any]
) -> None:
    # The subprocess writes plain attribute values directly instead of through moto's attribute picker;
    # strings, numbers, blobs, sets, booleans, nulls, and maps and lists of them nested must read back
    # exactly as stock moto answers them.
    key = {"pk": {"S": f"p-{uuid.uuid4().hex}"}, "sk": {"S": "s"}}
    item = {**attributes, **key}
    table, clients = stock_and_patched
    answers = []
    for client in clients:
        client.put_item(TableName=table, Item=item)
        answers.append(_reads(client, table, key))
    assert answers[0] == answers[1]
    assert answers[1][0]["Item"] == item
