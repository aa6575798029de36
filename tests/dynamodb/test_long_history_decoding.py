"""A long history reads back exactly as written, whichever way its blobs are inflated.

The blocking face inflates a long history's large blobs on a thread of the read's own while it
decodes the small ones (out of order, then folded in order); the async face decodes each blob in
slices on the loop. Generated chats, some of them long enough for the first, read back equal to what
was written on both faces, by session, by id and in a listing.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genkit_sessions import Message, SessionSnapshot, SessionState
from genkit_sessions.dynamodb import DynamoDBSessionStore, create_table
from tests.dynamodb.helpers import noise
from tests.dynamodb_backends import make_client, server_endpoint

EXTRA = ("", "é", "😀 naïve", "\u2028 line separator", "tab\there", '"quoted" \\ backslash')
"""Text beyond plain ASCII (and characters JSON escapes) mixed into the messages."""


@pytest.fixture(scope="module")
def server_client() -> Iterator[Any]:
    yield make_client(server_endpoint())


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.integers(30_000, 80_000), min_size=10, max_size=16),
    extras=st.lists(st.sampled_from(EXTRA), min_size=1, max_size=4),
    checkpoint_every=st.sampled_from([2, 3, 5]),
    seed=st.integers(0, 2**16),
)
def test_a_generated_chat_reads_back_equal_on_both_faces(
    server_client: Any, sizes: list[int], extras: list[str], checkpoint_every: int, seed: int
) -> None:
    table = f"long-{uuid.uuid4().hex[:10]}"
    create_table(server_client, table)
    try:
        store = DynamoDBSessionStore(table, server_client, checkpoint_every=checkpoint_every)
        rng = random.Random(seed)
        parent: SessionSnapshot | None = None
        written: list[SessionSnapshot] = []
        messages: tuple[Message, ...] = ()
        for turn, size in enumerate(sizes):
            text = noise(rng, size) + extras[turn % len(extras)]
            messages = (*messages, Message.of_text("user" if turn % 2 == 0 else "model", text))
            state = SessionState(session_id="s", messages=messages)
            snapshot_id = f"t{turn}"
            saved = store.save_snapshot(
                snapshot_id,
                lambda _, i=snapshot_id, p=parent, s=state: SessionSnapshot(
                    snapshot_id=i, parent_id=p.snapshot_id if p else None, state=s
                ),
            )
            assert saved is not None
            written.append(saved)
            parent = saved
        assert parent is not None

        blocking = DynamoDBSessionStore(table, server_client, checkpoint_every=checkpoint_every)
        seen = (
            blocking.get_snapshot(session_id="s"),
            blocking.get_snapshot(snapshot_id=written[len(written) // 2].snapshot_id),
            list(blocking.list_snapshots("s")),
        )

        async def on_the_async_face() -> tuple[Any, Any, Any]:
            reader = DynamoDBSessionStore(table, server_client, checkpoint_every=checkpoint_every).aio
            return (
                await reader.get_snapshot(session_id="s"),
                await reader.get_snapshot(snapshot_id=written[len(written) // 2].snapshot_id),
                list(await reader.list_snapshots("s")),
            )

        expected = (parent, written[len(written) // 2], sorted(written, key=lambda s: (s.created_at, s.snapshot_id)))
        assert seen == expected
        assert asyncio.run(on_the_async_face()) == expected
    finally:
        server_client.delete_table(TableName=table)
