"""The DynamoDB store's async face lives apart from the clients it opens.

The store holds its face weakly (``tests/stores/test_store_lifetime.py``: no reference cycle), so a
face can go and a new one come; the aiobotocore client a face opened for an event loop is kept by the
store, so the next face on that loop uses it instead of opening another (opening one reads botocore's
service model, tens of milliseconds on the loop).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from genkit_sessions.dynamodb import DynamoDBSessionStore
from genkit_sessions.dynamodb.table import create_table


def test_a_new_face_of_a_store_goes_on_with_the_client_an_earlier_face_opened_on_its_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("aiobotocore", reason="the native face runs on aiobotocore (the `aio` extra)")
    from aiobotocore.session import AioSession  # type: ignore[import-not-found, import-untyped, unused-ignore]

    from genkit_sessions.dynamodb.local import LocalDynamoDB

    opened: list[str] = []
    create = AioSession.create_client

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(args[0] if args else kwargs.get("service_name", "?"))
        return create(self, *args, **kwargs)

    monkeypatch.setattr(AioSession, "create_client", counted)
    with LocalDynamoDB() as db:
        store = DynamoDBSessionStore("t", db.client())
        create_table(store.client, "t")

        async def main() -> None:
            face = store.aio
            assert store.aio is face  # one face while it is held
            assert await face.get_snapshot(session_id="none") is None
            del face
            again = store.aio
            assert await again.get_snapshot(session_id="none") is None
            await again.aclose()

        asyncio.run(main())
    assert opened == ["dynamodb"]
