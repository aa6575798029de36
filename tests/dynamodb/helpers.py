"""Helpers for the DynamoDB tests: prose-like states, saving, table scans, cold stores."""

from __future__ import annotations

import random
from typing import Any

from genkit_sessions import Message, SessionSnapshot, SessionState
from genkit_sessions.dynamodb import DynamoDBSessionStore

_VOCABULARY = (
    "the a session turn agent model user reply tool state snapshot branch leaf store table item write read "
    "context tenant message answer question weather city forecast rain sun travel plan budget hotel flight "
    "because which while after before into over under about would could should might their there where "
    "summary detail number value result error retry timeout network region partition key sort index"
)
_WORDS = _VOCABULARY.split()


def prose(rng: random.Random, size: int) -> str:
    """About ``size`` characters of text that compresses like prose (not a repeated phrase)."""
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(_WORDS) if rng.random() < 0.8 else "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=6))
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


def noise(rng: random.Random, size: int) -> str:
    """Text that barely compresses (random letters and digits)."""
    return "".join(rng.choices("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", k=size))


def state_of(session_id: str, texts: list[str], custom: Any = None) -> SessionState:
    """A state whose messages alternate user / model with the given texts."""
    messages = tuple(Message.of_text("user" if i % 2 == 0 else "model", t) for i, t in enumerate(texts))
    return SessionState(session_id=session_id, messages=messages, custom=custom)


def save_new(
    store: DynamoDBSessionStore,
    snapshot_id: str,
    state: SessionState,
    parent_id: str | None = None,
    **fields: Any,
) -> SessionSnapshot:
    """Save a new snapshot and return it as stored."""
    saved = store.save_snapshot(
        snapshot_id,
        lambda _: SessionSnapshot(snapshot_id=snapshot_id, parent_id=parent_id, state=state, **fields),
    )
    assert saved is not None
    return saved


def scan(store: DynamoDBSessionStore) -> list[dict[str, Any]]:
    """Every item of the store's table."""
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": store.table_name, "ConsistentRead": True}
    while True:
        page = store.client.scan(**kwargs)
        items.extend(page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def cold(store: DynamoDBSessionStore, **options: Any) -> DynamoDBSessionStore:
    """Another store on the same table and client, with nothing cached."""
    return DynamoDBSessionStore(store.table_name, store.client, **options)


def left_behind(store: DynamoDBSessionStore) -> list[dict[str, Any]]:
    """Every item of the table but the bare tombstones deleted sessions leave (a head that only keeps the
    session's version, so a recreated session never reuses a version number)."""
    return [i for i in scan(store) if not (i["sk"]["S"] == "h" and "dead" in i and "del" not in i and "ids" not in i)]
