"""Store factories for ``--store``: a fresh, empty store of this package per call.

The DynamoDB factories need the ``moto`` extra (``moto[dynamodb,server]``); no AWS account is used.
Each call makes a new table, so every case starts from an empty store.

A factory may carry two attributes the concurrency cases read: ``linearizable`` (True when the
backend under its stores is known to apply every write atomically in one order, as DynamoDB does per
item; absent means unknown, and the report says so beside a failed concurrency case), and
``share(store)``, a picklable function that opens the same store in another process (the
``processes`` capability).
"""

from __future__ import annotations

import atexit
import functools
import threading
import uuid
from typing import Any

from genkit_sessions.stores.memory import AsyncInMemorySessionStore, InMemorySessionStore

__all__ = ["dynamodb_moto", "dynamodb_moto_async", "dynamodb_moto_server", "memory", "memory_async"]

_FAKE_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "aws_session_token": "testing"}
_clients: dict[str, Any] = {}
_lock = threading.Lock()


def memory() -> InMemorySessionStore:
    """A blocking in-memory store (the CLI's default)."""
    return InMemorySessionStore()


def memory_async() -> AsyncInMemorySessionStore:
    """The async face of an in-memory store."""
    return InMemorySessionStore().aio


def _inprocess_client() -> Any:
    """A client of in-process moto, started on first use for the life of the process.

    In-process moto is not thread-safe, so the client's calls are serialized (a server would
    serialize them per item too).
    """
    import boto3  # type: ignore[import-untyped]
    from moto import mock_aws

    mock = mock_aws()
    mock.start()
    atexit.register(mock.stop)
    client = boto3.client("dynamodb", region_name="us-east-1", **_FAKE_CREDENTIALS)
    make_call = client._make_api_call
    calls = threading.Lock()

    def serialized(operation: str, params: dict[str, Any]) -> Any:
        with calls:
            return make_call(operation, params)

    client._make_api_call = serialized
    return client


def _server_client() -> Any:
    """A client of a local DynamoDB over HTTP (moto behind a proxy that makes every conditional write
    atomic and honours ClientRequestToken, as DynamoDB does), started on first use, stopped at exit."""
    from genkit_sessions.dynamodb.local import LocalDynamoDB

    server = LocalDynamoDB().start()
    return server.client()


_offload: list[Any] = []


def _executor() -> Any:
    """In-process moto answers boto3 only (aiobotocore has its own HTTP stack): its stores run their
    async face on this executor, handed over explicitly."""
    import concurrent.futures

    with _lock:
        if not _offload:
            _offload.append(concurrent.futures.ThreadPoolExecutor(max_workers=8))
            atexit.register(_offload[0].shutdown)
        return _offload[0]


def _dynamodb(kind: str) -> Any:
    from genkit_sessions.dynamodb import DynamoDBSessionStore, create_table

    with _lock:
        if kind not in _clients:
            _clients[kind] = _inprocess_client() if kind == "inprocess" else _server_client()
        client = _clients[kind]
    table = f"conformance-{uuid.uuid4().hex[:12]}"
    create_table(client, table)
    executor = _executor() if kind == "inprocess" else None
    return DynamoDBSessionStore(table, client, watch_interval=0.01, watch_max_interval=0.05, executor=executor)


def dynamodb_moto() -> Any:
    """A DynamoDB store on a new table of in-process moto."""
    return _dynamodb("inprocess")


def dynamodb_moto_async() -> Any:
    """The async face of :func:`dynamodb_moto`."""
    return _dynamodb("inprocess").aio


def dynamodb_moto_server() -> Any:
    """A DynamoDB store on a new table of a moto server reached over HTTP."""
    return _dynamodb("server")


def _open_shared(endpoint_url: str, table: str) -> Any:
    """In another process: a store on ``table`` of the local DynamoDB at ``endpoint_url``."""
    import boto3

    from genkit_sessions.dynamodb import DynamoDBSessionStore

    client = boto3.client("dynamodb", region_name="us-east-1", endpoint_url=endpoint_url, **_FAKE_CREDENTIALS)
    return DynamoDBSessionStore(table, client, watch_interval=0.01, watch_max_interval=0.05)


def _share_server_store(store: Any) -> Any:
    return functools.partial(_open_shared, store.client.meta.endpoint_url, store.table_name)


# In memory: one lock orders every write. In-process moto: the client sends one request at a time. The
# moto server: behind LocalDynamoDB's proxy, which serialises requests and honours ClientRequestToken.
for _factory in (memory, memory_async, dynamodb_moto, dynamodb_moto_async, dynamodb_moto_server):
    setattr(_factory, "linearizable", True)  # noqa: B010 - an attribute mypy cannot see on a function
dynamodb_moto_server.share = _share_server_store  # type: ignore[attr-defined]
