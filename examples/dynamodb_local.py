"""DynamoDB end to end on a local endpoint: create the table, run turns, fork, read the tree back.

Run it: ``python examples/dynamodb_local.py`` (needs the ``embedded`` extra: an embedded moto server
on a loopback port, no AWS account), or ``python examples/dynamodb_local.py http://localhost:8000``
for a DynamoDB Local you started yourself. Against AWS, build the store with
``DynamoDBSessionStore("sessions", region_name="eu-west-1")`` and create the table once.
"""

from __future__ import annotations

import contextlib
import sys
import uuid

from genkit_sessions import AgentInit, Message, SessionResolver, SessionStoreOptions
from genkit_sessions.dynamodb import DynamoDBSessionStore, create_table
from genkit_sessions.dynamodb.embedded import local_client, moto_server


def turn(store: DynamoDBSessionStore, init: AgentInit, text: str) -> str:
    """Resolve, add a user message and an answer, save; the saved snapshot's id."""
    resolution = SessionResolver.resolve(store, True, init, SessionStoreOptions(context={"tenant": "acme"}))
    if not resolution.ok:
        raise SystemExit(f"{resolution.error.status}: {resolution.error.message}")
    session = resolution.session
    session.add_messages(Message.of_text("user", text), Message.of_text("model", f"echo: {text}"))
    return session.save(finish_reason="stop").snapshot_id


def main(endpoint_url: str | None) -> None:
    with contextlib.ExitStack() as stack:
        if endpoint_url is None:
            endpoint_url = stack.enter_context(moto_server())
        client = local_client(endpoint_url)
        table = f"sessions-{uuid.uuid4().hex[:8]}"
        create_table(client, table)  # on-demand billing, TTL enabled
        store = stack.enter_context(DynamoDBSessionStore(table, client))

        first = turn(store, AgentInit(session_id="chat-1"), "hello")  # R11: a fresh session under chat-1
        second = turn(store, AgentInit(session_id="chat-1"), "how are you?")  # R12: resumed from the leaf
        fork = turn(store, AgentInit(snapshot_id=first), "let me rephrase")  # R10: a second child of `first`
        tree = store.list_snapshots("chat-1", context={"tenant": "acme"})
        print(f"table {table} at {endpoint_url}")
        for snapshot in tree:
            count = len(snapshot.state.message_list) if snapshot.state is not None else 0
            print(f"  {snapshot.snapshot_id}  parent={snapshot.parent_id}  messages={count}")
        leaf = store.get_snapshot(session_id="chat-1", context={"tenant": "acme"})
        assert leaf is not None and leaf.snapshot_id == fork and {s.snapshot_id for s in tree} == {first, second, fork}
        other = store.get_snapshot(session_id="chat-1", context={"tenant": "globex"})
        print("leaf is the fork:", leaf.snapshot_id == fork, "| another tenant sees:", other)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
