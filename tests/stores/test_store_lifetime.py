"""A store dropped after use through its async face frees what it held at once.

Both stores hold their async face weakly (the face holds the store), so a store and its face make no
reference cycle: a store a framework made per request, or per test, frees its sessions (or, on
DynamoDB, what it cached) when its last reference goes, not at the garbage collector's next full
collection. The DynamoDB side is ``tests/dynamodb/test_async_face_lifetime.py``.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator

import pytest

from genkit_sessions import InMemorySessionStore, Message, SessionSnapshot, SessionState
from genkit_sessions.stores.memory import AsyncInMemorySessionStore


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_an_in_memory_store_dropped_after_a_turn_through_its_async_face_frees_its_sessions_at_once(
    collector_off: None,
) -> None:
    store = InMemorySessionStore()

    async def turn(face: AsyncInMemorySessionStore) -> weakref.ref[Message]:
        state = SessionState(session_id="chat", messages=[Message.of_text("user", f"m{i}") for i in range(20)])
        await face.save_snapshot("s-1", lambda _: SessionSnapshot(snapshot_id="s-1", state=state))
        read = await face.get_snapshot(session_id="chat")
        assert read is not None and read.state is not None
        return weakref.ref(read.state.message_list[0])

    held = asyncio.run(turn(store.aio))
    assert held() is not None
    del store
    assert held() is None


def test_an_in_memory_store_hands_out_one_face_while_it_is_held() -> None:
    store = InMemorySessionStore()
    face = store.aio
    assert store.aio is face and face.sync is store
