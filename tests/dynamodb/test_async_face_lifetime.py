"""A store used through its async face and then dropped frees what it cached at once.

A framework may make a store per request (sharing one client, ``aio_client=``, or an executor): the
store caches the states it read and wrote, a whole history for a long chat. The store and its face
make no reference cycle, so dropping the store frees that history when its last reference goes, as
the blocking store always did, not at the garbage collector's next full collection (which, with many
histories left to it, takes tens of milliseconds on the event loop). Measured before: a long chat
played a turn per store through the async face left each turn's whole history as cyclic garbage.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from genkit_sessions import Message, SessionSnapshot, SessionState
from genkit_sessions.dynamodb import DynamoDBSessionStore
from genkit_sessions.dynamodb.table import create_table
from tests.dynamodb.helpers import Answering
from tests.dynamodb_backends import make_client


@pytest.fixture
def boto() -> Iterator[Any]:
    from moto import mock_aws

    with mock_aws():
        client = make_client()
        create_table(client, "t")
        yield client


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _store(boto: Any, face: str, pool: concurrent.futures.Executor) -> DynamoDBSessionStore:
    if face == "native":
        pytest.importorskip("aiobotocore", reason="the native face runs on aiobotocore (the `aio` extra)")
        return DynamoDBSessionStore("t", boto, aio_client=Answering(boto, []))
    return DynamoDBSessionStore("t", boto, executor=pool)


@pytest.mark.parametrize("face", ["native", "offloaded"])
def test_a_store_dropped_after_a_turn_through_its_async_face_frees_the_history_it_cached_at_once(
    boto: Any, face: str, collector_off: None
) -> None:
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        store = _store(boto, face, pool)

        async def turn(face: Any) -> weakref.ref[Message]:
            state = SessionState(session_id="chat", messages=[Message.of_text("user", f"m{i}") for i in range(50)])
            await face.save_snapshot("s-1", lambda _: SessionSnapshot(snapshot_id="s-1", state=state))
            read = await face.get_snapshot(session_id="chat")
            assert read is not None and read.state is not None
            return weakref.ref(read.state.message_list[0])

        first = asyncio.run(turn(store.aio))
        assert first() is not None  # the store still caches it
        del store
        assert first() is None


def test_a_store_hands_out_one_face_while_it_is_held_and_a_new_one_on_the_same_clients_after() -> None:
    pytest.importorskip("aiobotocore", reason="the native face runs on aiobotocore (the `aio` extra)")
    from genkit_sessions.dynamodb.local import LocalDynamoDB

    with LocalDynamoDB() as db:
        store = DynamoDBSessionStore("t", db.client())
        create_table(store.client, "t")

        async def main() -> None:
            face = store.aio
            assert store.aio is face
            await face.get_snapshot(session_id="none")  # opens this loop's client
            opened = await face._client()
            del face
            again = store.aio
            assert await again._client() is opened  # the loop's client outlives the face that opened it
            await again.aclose()

        asyncio.run(main())
