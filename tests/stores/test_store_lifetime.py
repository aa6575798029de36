"""A store dropped after use through its async face frees what it held at once.

Every store holds its async face weakly (the face holds the store), so a store and its face make no
reference cycle: a store a framework made per request, or per test, frees its sessions (or, on
DynamoDB, the states it cached: a whole history for a long chat) when its last reference goes, not
at the garbage collector's next full collection, which with many histories left to it takes tens of
milliseconds on the event loop. Run on every backend: the in-memory store, DynamoDB's offloaded
face (in-process moto) and its native face (aiobotocore, moto server).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import weakref
from typing import Any

import pytest

from genkit_sessions import Message, SessionSnapshot, SessionState
from tests.conftest import StoreFactory


def test_a_store_dropped_after_a_turn_through_its_async_face_frees_what_it_held_at_once(
    make_store: StoreFactory, collector_off: None, request: pytest.FixtureRequest
) -> None:
    # An offloaded face's call runs on an executor thread, which lets go of the call (the store's
    # method, its result) a moment after the answer: a pool of its own, joined below, makes sure.
    pool = concurrent.futures.ThreadPoolExecutor(1)
    offloaded = request.node.callspec.params["make_store"] == "dynamodb-inprocess"
    store = make_store(executor=pool) if offloaded else make_store()

    async def turn(face: Any) -> weakref.ref[Message]:
        state = SessionState(session_id="chat", messages=[Message.of_text("user", f"m{i}") for i in range(20)])
        await face.save_snapshot("s-1", lambda _: SessionSnapshot(snapshot_id="s-1", state=state))
        read = await face.get_snapshot(session_id="chat")
        assert read is not None and read.state is not None
        return weakref.ref(read.state.message_list[0])

    held = asyncio.run(turn(store.aio))
    pool.shutdown(wait=True)
    assert held() is not None  # the store still holds it
    del store
    assert held() is None


def test_a_store_hands_out_one_face_while_it_is_held(make_store: StoreFactory) -> None:
    store = make_store()
    face = store.aio
    assert store.aio is face and face.sync is store
