"""DynamoDB backends for the store tests: in-process moto, and a moto server over HTTP on 127.0.0.1.

Every client the tests build carries a :class:`Guard` on its botocore event
system. The guard rejects what AWS rejects but moto accepts (oversized items,
transactions and batches), counts calls per operation for the call-budget
tests, and injects failures for the failure tests.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import json
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from genkit_sessions.dynamodb import DynamoDBSessionStore, create_table
from genkit_sessions.dynamodb.embedded import free_port
from genkit_sessions.dynamodb.store import item_size
from tests.conftest import STORE_BACKENDS, StoreFactory

ITEM_LIMIT = 400 * 1024
TRANSACTION_ACTIONS = 100
TRANSACTION_BYTES = 4 * 1024 * 1024
BATCH_WRITE_LIMIT = 25
BATCH_GET_LIMIT = 100
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "aws_session_token": "testing"}


class AwsWouldReject(AssertionError):
    """The store sent a request that real DynamoDB refuses (moto would have accepted it)."""


Fault = Callable[[str, dict[str, Any]], None]


class Guard:
    """Checks, counts and (on request) fails every DynamoDB call of one client."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.log: list[str] = []
        self.faults: list[Fault] = []
        self.after_faults: list[Fault] = []
        self.bytes_written = 0
        self._lock = threading.Lock()

    def attach(self, client: Any) -> None:
        client.meta.events.register("provide-client-params.dynamodb", self._on_call)
        client.meta.events.register("after-call.dynamodb", self._after_call)
        client._genkit_test_guard = self

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self.log.clear()
            self.bytes_written = 0

    def _on_call(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        operation = model.name
        _check_limits(operation, params)
        with self._lock:
            self.calls[operation] += 1
            self.log.append(operation)
            self.bytes_written += _written_bytes(operation, params)
            faults = list(self.faults)
        for fault in faults:
            fault(operation, params)

    def _after_call(self, model: Any, **_: Any) -> None:
        for fault in list(self.after_faults):
            fault(model.name, {})


def guard_of(store: DynamoDBSessionStore) -> Guard:
    """The guard on a test store's client."""
    guard: Guard = store.client._genkit_test_guard
    return guard


def client_error(code: str, message: str, operation: str, http_status: int = 400, **extra: Any) -> ClientError:
    """A ClientError as botocore raises it for a backend failure."""
    response: dict[str, Any] = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": http_status},
        **extra,
    }
    return ClientError(response, operation)


def _items_of(operation: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    if operation == "PutItem":
        return [params.get("Item", {})]
    if operation == "TransactWriteItems":
        return [a["Put"]["Item"] for a in params.get("TransactItems", []) if "Put" in a]
    if operation == "BatchWriteItem":
        return [
            r["PutRequest"]["Item"]
            for requests in params.get("RequestItems", {}).values()
            for r in requests
            if "PutRequest" in r
        ]
    return []


def _written_bytes(operation: str, params: dict[str, Any]) -> int:
    total = sum(item_size(item) for item in _items_of(operation, params))
    if operation in ("UpdateItem",):
        total += len(json.dumps(params.get("ExpressionAttributeValues", {}), default=len))
    if operation == "TransactWriteItems":
        for action in params.get("TransactItems", []):
            if "Update" in action:
                total += len(json.dumps(action["Update"].get("ExpressionAttributeValues", {}), default=len))
                total += sum(_value_len(v) for v in action["Update"].get("ExpressionAttributeValues", {}).values())
    return total


def _value_len(value: dict[str, Any]) -> int:
    kind, inner = next(iter(value.items()))
    return len(inner) if kind == "B" else 0


def _empty_set(value: dict[str, Any]) -> bool:
    """Whether an attribute value is, or holds, an empty set (which DynamoDB rejects, wherever it is)."""
    kind, inner = next(iter(value.items()))
    if kind in ("SS", "NS", "BS"):
        return not inner
    if kind == "M":
        return any(_empty_set(v) for v in inner.values())
    if kind == "L":
        return any(_empty_set(v) for v in inner)
    return False


def _written_values(operation: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    values = [v for item in _items_of(operation, params) for v in item.values()]
    updates = [params] if operation == "UpdateItem" else []
    updates += [a["Update"] for a in params.get("TransactItems", []) if "Update" in a]
    return values + [v for update in updates for v in update.get("ExpressionAttributeValues", {}).values()]


def _check_limits(operation: str, params: dict[str, Any]) -> None:
    for item in _items_of(operation, params):
        size = item_size(item)
        if size > ITEM_LIMIT:
            raise AwsWouldReject(f"{operation}: an item of {size} bytes exceeds DynamoDB's 400 KB item limit")
    if any(_empty_set(value) for value in _written_values(operation, params)):
        raise AwsWouldReject(f"{operation}: an empty set, which DynamoDB rejects as an invalid attribute value")
    if operation == "TransactWriteItems":
        actions = params.get("TransactItems", [])
        if len(actions) > TRANSACTION_ACTIONS:
            raise AwsWouldReject(f"TransactWriteItems with {len(actions)} actions exceeds 100")
        total = sum(item_size(item) for item in _items_of(operation, params))
        if total > TRANSACTION_BYTES:
            raise AwsWouldReject(f"TransactWriteItems of {total} bytes exceeds the 4 MB transaction limit")
        seen = set()
        for action in actions:
            body = next(iter(action.values()))
            key = body.get("Key") or {k: body["Item"][k] for k in ("pk", "sk")}
            ident = (key["pk"]["S"], key["sk"]["S"])
            if ident in seen:
                raise AwsWouldReject(f"TransactWriteItems touches {ident} twice")
            seen.add(ident)
    if operation == "BatchWriteItem":
        count = sum(len(r) for r in params.get("RequestItems", {}).values())
        if count > BATCH_WRITE_LIMIT:
            raise AwsWouldReject(f"BatchWriteItem with {count} requests exceeds 25")
    if operation == "BatchGetItem":
        count = sum(len(t.get("Keys", [])) for t in params.get("RequestItems", {}).values())
        if count > BATCH_GET_LIMIT:
            raise AwsWouldReject(f"BatchGetItem with {count} keys exceeds 100")


_MOTO_LOCK = threading.RLock()  # re-entrant: a guard fault may run another writer inside a call


def make_client(endpoint_url: str | None = None) -> Any:
    """A guarded DynamoDB client (in-process moto when ``endpoint_url`` is None).

    moto is not thread-safe, in-process or as a threaded server (a transaction
    deep-copies the table while another request writes to it and fails with a
    500), so one test process sends one request at a time. Racing writers still
    interleave at every call boundary, which is where real DynamoDB arbitrates.
    """
    client = boto3.client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url=endpoint_url,
        config=Config(retries={"mode": "standard", "total_max_attempts": 3}),
        **CREDENTIALS,
    )
    Guard().attach(client)
    make_call = client._make_api_call

    def serialized(operation: str, params: dict[str, Any]) -> Any:
        with _MOTO_LOCK:
            return make_call(operation, params)

    client._make_api_call = serialized
    return client


_OFFLOAD = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="moto-inprocess")
atexit.register(_OFFLOAD.shutdown)


def store_factory(client: Any, *, offload: bool = False) -> StoreFactory:
    """Each call makes a fresh, empty store on a new table.

    In-process moto answers boto3 only (aiobotocore has its own HTTP stack), so its stores are handed
    an executor for their async face (``offload``); stores on the moto server use aiobotocore.
    """

    def make(**options: Any) -> DynamoDBSessionStore:
        table = f"t-{uuid.uuid4().hex[:12]}"
        create_table(client, table)
        options.setdefault("watch_interval", 0.01)
        options.setdefault("watch_max_interval", 0.05)
        if offload:
            options.setdefault("executor", _OFFLOAD)
        return DynamoDBSessionStore(table, client, **options)

    return make


def _inprocess_backend(request: pytest.FixtureRequest) -> Iterator[StoreFactory]:
    from moto import mock_aws

    with mock_aws():
        yield store_factory(make_client(), offload=True)


_server_lock = threading.Lock()
_server_endpoint: list[str] = []


def server_endpoint() -> str:
    """The endpoint of the moto server the test session shares (started on first use, on 127.0.0.1)."""
    with _server_lock:
        if not _server_endpoint:
            import logging

            from moto.server import DomainDispatcherApplication, create_backend_app
            from werkzeug.serving import make_server

            logging.getLogger("werkzeug").setLevel(logging.ERROR)
            port = free_port()
            app = DomainDispatcherApplication(create_backend_app)
            one_at_a_time = threading.Lock()

            def serialized(environ: Any, start_response: Any) -> list[bytes]:
                # moto applies a transaction by copying the table while other requests write to it; one
                # request at a time makes every conditional write atomic, as on DynamoDB.
                with one_at_a_time:
                    return list(app(environ, start_response))

            server = make_server("127.0.0.1", port, serialized, threaded=True)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            atexit.register(server.shutdown)
            _server_endpoint.append(f"http://127.0.0.1:{port}")
        return _server_endpoint[0]


def _server_backend(request: pytest.FixtureRequest) -> Iterator[StoreFactory]:
    yield store_factory(make_client(server_endpoint()))


STORE_BACKENDS["dynamodb-inprocess"] = _inprocess_backend
STORE_BACKENDS["dynamodb-server"] = _server_backend
