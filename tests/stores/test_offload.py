"""OffloadedAsyncStore: built only from what can work, and a shut-down executor is a status, not a raw error."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

import pytest

from genkit_sessions import AgentInit, GenkitError, InMemorySessionStore, OffloadedAsyncStore, SessionResolver
from tests.conftest import StoreFactory


def test_a_shut_down_executor_is_failed_precondition_naming_it(make_store: StoreFactory) -> None:
    store = make_store()
    pool = concurrent.futures.ThreadPoolExecutor(1)
    face = OffloadedAsyncStore(store, pool)

    async def turn() -> Any:
        resolution = await SessionResolver.aresolve(face, True, AgentInit(session_id="chat"))
        assert resolution.session is not None
        pool.shutdown()
        return await resolution.session.asave()

    for action in (turn, lambda: face.list_snapshots("chat"), lambda: face.get_snapshot(session_id="chat")):
        with pytest.raises(GenkitError) as caught:
            asyncio.run(action())
        assert caught.value.status == "FAILED_PRECONDITION"
        assert "ThreadPoolExecutor" in caught.value.message and "shut down" in caught.value.message
    assert store.get_snapshot(session_id="chat") is None


def test_a_resolution_on_a_shut_down_executor_fails_gracefully_with_failed_precondition() -> None:
    pool = concurrent.futures.ThreadPoolExecutor(1)
    pool.shutdown()
    resolution = asyncio.run(
        SessionResolver.aresolve(OffloadedAsyncStore(InMemorySessionStore(), pool), True, AgentInit(session_id="s"))
    )
    assert not resolution.ok and resolution.rule == "R15"
    assert resolution.error.status == "FAILED_PRECONDITION" and "shut down" in resolution.error.message


def test_a_process_pool_is_refused_as_invalid_argument_saying_to_pass_a_thread_pool() -> None:
    with concurrent.futures.ProcessPoolExecutor(1) as pool, pytest.raises(GenkitError) as caught:
        OffloadedAsyncStore(InMemorySessionStore(), pool)
    assert caught.value.status == "INVALID_ARGUMENT" and "ThreadPoolExecutor" in caught.value.message


@pytest.mark.parametrize("wrapped", ["async face", "not a store"])
def test_wrapping_anything_but_a_blocking_store_is_invalid_argument(wrapped: str) -> None:
    store: Any = InMemorySessionStore().aio if wrapped == "async face" else object()
    with concurrent.futures.ThreadPoolExecutor(1) as pool, pytest.raises(GenkitError) as caught:
        OffloadedAsyncStore(store, pool)
    assert caught.value.status == "INVALID_ARGUMENT"
    assert "blocking store" in caught.value.message


def test_an_executor_that_is_not_one_is_invalid_argument() -> None:
    with pytest.raises(GenkitError) as caught:
        OffloadedAsyncStore(InMemorySessionStore(), "threads")  # type: ignore[arg-type]
    assert caught.value.status == "INVALID_ARGUMENT" and "ThreadPoolExecutor" in caught.value.message
