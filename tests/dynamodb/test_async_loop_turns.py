"""The async face gives the event loop a turn while it decodes or encodes a long history.

A resume of a long chat inflates, parses and builds thousands of messages, and a save that folds pages
into a page of the top level deflates hundreds of kilobytes: done in one step, either holds the event
loop for tens of milliseconds (measured on a 1,000-turn chat of 1 KB messages: 18 ms a resume, 45 ms a
top-page save). The face gives the loop a turn at least every 256 messages built, every 64 KB
inflated and every 32 KB deflated (docs/dynamodb.md, "Watching, async").

The store here runs on ``aio_client``, a client of the test's that answers at once from in-process
moto, so the only turns the loop gets between the last answer and the end of a read (or between the
start of a save and its first write) are the ones the store gives: each one lets the ticker below log
one tick, and nothing else does.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from genkit_sessions import Message, SessionSnapshot, SessionState
from genkit_sessions.dynamodb import DynamoDBSessionStore
from genkit_sessions.dynamodb.table import create_table
from tests.dynamodb.helpers import Answering
from tests.dynamodb_backends import make_client

pytest.importorskip("aiobotocore", reason="the async face runs on aiobotocore (the `aio` extra)")

MESSAGES = 1536
TEXT = 600


@pytest.fixture
def boto() -> Iterator[Any]:
    from moto import mock_aws

    with mock_aws():
        yield make_client()


def _chat(seed: int) -> tuple[Message, ...]:
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz     "
    return tuple(
        Message.of_text("user" if i % 2 == 0 else "model", "".join(rng.choice(letters) for _ in range(TEXT)))
        for i in range(MESSAGES)
    )


async def _ticking(log: list[str], work: Callable[[], Any]) -> Any:
    """Run ``work`` while a ticker logs a tick at every turn of the loop it gets."""
    stop = asyncio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            log.append("tick")
            await asyncio.sleep(0)

    ticking = asyncio.ensure_future(ticker())
    await asyncio.sleep(0)
    log.append("start")
    try:
        return await work()
    finally:
        log.append("end")
        stop.set()
        await ticking


def _ticks(log: list[str], after: str, before: str) -> int:
    """Ticks logged after the last ``after`` entry and before the ``before`` entry that follows it."""
    first = len(log) - 1 - log[::-1].index(after) if after in log else 0
    last = log.index(before, first)
    return log[first:last].count("tick")


def test_a_resume_of_a_long_history_gives_the_loop_a_turn_every_slice_of_its_decoding(boto: Any) -> None:
    create_table(boto, "t")
    messages = _chat(1)
    DynamoDBSessionStore("t", boto).save_snapshot(
        "s-1", lambda _: SessionSnapshot(snapshot_id="s-1", state=SessionState(session_id="chat", messages=messages))
    )
    log: list[str] = []

    async def main() -> SessionSnapshot | None:
        store = DynamoDBSessionStore("t", boto, aio_client=Answering(boto, log)).aio  # cold: nothing cached
        return await _ticking(log, lambda: store.get_snapshot(session_id="chat"))

    snapshot = asyncio.run(main())
    assert snapshot is not None and snapshot.state is not None
    assert snapshot.state.messages == messages
    assert log[log.index("start") :].count("call batch_get_item") == 1
    # The blob holds ~920 KB of JSON, ~500 KB deflated: 8 slices inflated, 6 of 256 messages built.
    assert _ticks(log, "call batch_get_item", "end") >= MESSAGES // 256 + 8


def test_a_save_of_a_large_state_gives_the_loop_a_turn_every_slice_of_its_encoding(boto: Any) -> None:
    create_table(boto, "t")
    messages = _chat(2)
    log: list[str] = []

    async def main() -> None:
        store = DynamoDBSessionStore("t", boto, aio_client=Answering(boto, log)).aio
        snapshot = SessionSnapshot(snapshot_id="s-1", state=SessionState(session_id="chat", messages=messages))
        await _ticking(log, lambda: store.save_snapshot("s-1", lambda _: snapshot))

    asyncio.run(main())
    writes = [entry for entry in log if entry.startswith("call") and "get" not in entry and "query" not in entry]
    assert writes, log
    # ~920 KB of JSON written 256 messages at a time and deflated 32 KB at a time: about 30 turns.
    assert _ticks(log, "start", writes[0]) >= MESSAGES // 256 + 920_000 // 32_768 - 2
    stored = DynamoDBSessionStore("t", boto).get_snapshot(session_id="chat")
    assert stored is not None and stored.state is not None and stored.state.messages == messages


def test_the_store_refuses_an_aio_client_that_is_not_one_or_sits_beside_an_executor(boto: Any) -> None:
    import concurrent.futures

    from genkit_sessions.errors import GenkitError, Status

    with pytest.raises(GenkitError) as refused:
        DynamoDBSessionStore("t", boto, aio_client="http://localhost:8000")
    assert refused.value.status is Status.INVALID_ARGUMENT and "aio_client" in refused.value.message
    with concurrent.futures.ThreadPoolExecutor(1) as executor, pytest.raises(GenkitError) as beside:
        DynamoDBSessionStore("t", boto, executor=executor, aio_client=Answering(boto, []))
    assert beside.value.status is Status.INVALID_ARGUMENT and "executor" in beside.value.message


def test_no_more_requests_are_in_the_client_at_once_than_the_store_has_connections(boto: Any) -> None:
    """With more turns in flight than ``aio_connections``, the others wait before building a request
    (a built, signed request queued for a connection holds the client's objects for nothing)."""
    create_table(boto, "t")
    seeding = DynamoDBSessionStore("t", boto)
    for i in range(8):
        seeding.save_snapshot(
            f"s-{i}", lambda _, i=i: SessionSnapshot(snapshot_id=f"s-{i}", state=SessionState(session_id=f"c-{i}"))
        )
    inside: list[int] = [0]
    most: list[int] = [0]

    class Slow(Answering):
        """Answers after giving the loop a few turns, counting the requests it holds at once."""

        def __getattr__(self, name: str) -> Callable[..., Any]:
            answer = super().__getattr__(name)

            async def call(**params: Any) -> Any:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                for _ in range(5):
                    await asyncio.sleep(0)
                try:
                    return await answer(**params)
                finally:
                    inside[0] -= 1

            return call

    async def main() -> list[SessionSnapshot | None]:
        face = DynamoDBSessionStore("t", boto, aio_client=Slow(boto, []), aio_connections=2).aio
        return await asyncio.gather(*(face.get_snapshot(session_id=f"c-{i}") for i in range(8)))

    found = asyncio.run(main())
    assert [s.snapshot_id if s else None for s in found] == [f"s-{i}" for i in range(8)]
    assert most[0] == 2
