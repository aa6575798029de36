"""A history stream on DynamoDB reads one stored part at a time, whatever the size of the page it reads,
and hands out exactly the messages a full read rebuilds (contract rule H3)."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genkit_sessions import Message, SessionService, SessionSnapshot, SessionState
from tests.dynamodb.helpers import cold, noise
from tests.dynamodb_backends import guard_of

StoreFactory = Any


def _big_session(store: Any, messages: int, size: int, seed: int = 3) -> tuple[Message, ...]:
    rng = random.Random(seed)
    history = tuple(
        Message.of_text("user" if n % 2 == 0 else "model", f"{n}: {noise(rng, size)}") for n in range(messages)
    )
    root = SessionSnapshot(
        snapshot_id="root",
        session_id="s",
        created_at="2026-01-01T00:00:00.000000Z",
        state=SessionState(session_id="s", messages=history),
    )
    store.restore_snapshots([root])  # one blob of many parts: the page a long chat's rewrite leaves
    return history


def test_a_stream_of_a_page_of_many_parts_reads_one_part_per_call_and_equals_a_full_read(
    make_dynamo: StoreFactory,
) -> None:
    store = make_dynamo(chunk_bytes=4_000)
    history = _big_session(store, 400, 300)
    parts = sum(1 for item in store.client.scan(TableName=store.table_name)["Items"] if item["sk"]["S"][0] == "b")
    reader = cold(store, chunk_bytes=4_000)
    guard = guard_of(store)
    guard.reset()
    streamed: list[Message] = []
    calls_per_chunk: list[int] = []
    for chunk in SessionService(reader).iter_history("s", chunk_messages=20):
        calls_per_chunk.append(sum(guard.calls.values()))
        streamed.extend(chunk)
    assert tuple(streamed) == history
    assert parts > 10  # the page really is cut in many parts
    assert set(guard.calls) == {"GetItem"} and guard.calls["GetItem"] == 2 + parts  # the plan, then a part a call
    assert calls_per_chunk[0] <= 2 + 3  # the first chunk came long before the last part was read


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    texts=st.lists(st.text(min_size=0, max_size=60), min_size=1, max_size=40),
    chunk_bytes=st.integers(1_000, 3_000),
    chunk=st.integers(1, 15),
)
def test_any_page_cut_at_any_part_size_streams_back_the_same_messages(
    make_dynamo: StoreFactory, texts: list[str], chunk_bytes: int, chunk: int
) -> None:
    store = make_dynamo(chunk_bytes=chunk_bytes)
    history = tuple(Message.of_text("user", t * 25) for t in texts)  # long enough to span parts
    store.restore_snapshots(
        [
            SessionSnapshot(
                snapshot_id="root",
                session_id="s",
                created_at="2026-01-01T00:00:00.000000Z",
                state=SessionState(session_id="s", messages=history),
            )
        ]
    )
    streamed = [
        m
        for c in SessionService(cold(store, chunk_bytes=chunk_bytes)).iter_history("s", chunk_messages=chunk)
        for m in c
    ]
    assert tuple(streamed) == history
    store.client.delete_table(TableName=store.table_name)
