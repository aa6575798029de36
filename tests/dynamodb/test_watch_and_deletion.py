"""DynamoDB watches follow the session's head: a deletion that stopped part-way ends them too."""

from __future__ import annotations

import asyncio

import pytest

from genkit_sessions import GenkitError, Message, SessionSnapshot, SessionState, SnapshotStatus
from tests.conftest import StoreFactory
from tests.dynamodb.layout import head_key


def test_a_watch_ends_with_not_found_when_a_deletion_stopped_part_way(make_dynamo: StoreFactory) -> None:
    store = make_dynamo()
    state = SessionState(session_id="s", messages=(Message.of_text("user", "hi"),))
    pending = SessionSnapshot(snapshot_id="a", session_id="s", status="pending", state=state)
    store.save_snapshot("a", lambda _: pending)

    async def scenario() -> list[SnapshotStatus]:
        seen: list[SnapshotStatus] = []
        with pytest.raises(GenkitError) as caught:
            async for status in store.watch_status("a"):
                seen.append(status)
                # The first write of a deletion, then a crash: a tombstone on the head, every item left.
                await asyncio.to_thread(
                    store.client.update_item,
                    TableName=store.table_name,
                    Key=head_key("", "s"),
                    UpdateExpression="SET dead = :t, del = :t",
                    ExpressionAttributeValues={":t": {"BOOL": True}},
                )
        assert caught.value.status == "NOT_FOUND"
        return seen

    assert asyncio.run(scenario()) == [SnapshotStatus.PENDING]
    assert store.status_history("a") is None  # its item is still there; its session is not
