"""The message-store facade (contract section 8): three methods over any of our stores, for chat loops
written the LangChain way (load the messages, call the model, store the messages).

A memory id is a session id. ``get_messages`` is the session's complete active
history (M1), ``update_messages`` makes a new leaf that holds exactly the given
messages in one atomic write (M2; when the stored messages are a prefix of the
new ones, only the new ones are written, by the store's own delta encoding),
and ``delete_messages`` deletes the session (M3).

The async counterpart never blocks the event loop (M4): it runs on a store's
non-blocking face (the in-memory store's, DynamoDB's on aiobotocore), or on an
executor the caller hands over explicitly; given a blocking store and no
executor it fails at once with UNIMPLEMENTED, reason ASYNC_NOT_SUPPORTED.
"""

from __future__ import annotations

import concurrent.futures
import inspect
from collections.abc import Sequence
from typing import Any

from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.types import Message
from genkit_sessions.service.service import AsyncSessionService, SessionService
from genkit_sessions.stores.offload import OffloadedAsyncStore
from genkit_sessions.stores.protocol import Context, SupportsSessions

__all__ = ["AsyncChatMemoryStore", "ChatMemoryStore"]


class ChatMemoryStore:
    """M1-M3 over a blocking face: ``InMemorySessionStore()``, ``DynamoDBSessionStore(...)``.

    ``context`` is the request context every call runs under (the tenant), unless a call passes its own.
    """

    def __init__(self, store: SupportsSessions, *, context: Context = None) -> None:
        self._service = SessionService(store)
        self._context = context

    def get_messages(self, memory_id: str, *, context: Context = None) -> list[Message]:
        """M1: the session's complete active messages; an empty list for an unknown id."""
        return list(self._service.get_history(memory_id, context=self._context if context is None else context))

    def update_messages(self, memory_id: str, messages: Sequence[Message], *, context: Context = None) -> None:
        """M2: the session's new leaf holds exactly ``messages`` (one atomic write; a race is retried)."""
        self._service.replace_messages(memory_id, messages, context=self._context if context is None else context)

    def delete_messages(self, memory_id: str, *, context: Context = None) -> None:
        """M3: delete the session (V6)."""
        self._service.delete(memory_id, context=self._context if context is None else context)


class AsyncChatMemoryStore:
    """M4: the async counterpart, on a non-blocking face, or on the caller's ``executor``.

    ``store`` may be an async face (``store.aio``), or a store whose ``aio`` face is non-blocking (both
    of ours: pass ``InMemorySessionStore()`` or ``DynamoDBSessionStore(...)`` with aiobotocore installed).
    A blocking store without one needs ``executor=``; without it this raises UNIMPLEMENTED at once.
    """

    def __init__(
        self, store: Any, *, executor: concurrent.futures.Executor | None = None, context: Context = None
    ) -> None:
        self._service = AsyncSessionService(_async_face(store, executor))
        self._context = context

    async def get_messages(self, memory_id: str, *, context: Context = None) -> list[Message]:
        """See :meth:`ChatMemoryStore.get_messages`."""
        return list(await self._service.get_history(memory_id, context=self._context if context is None else context))

    async def update_messages(self, memory_id: str, messages: Sequence[Message], *, context: Context = None) -> None:
        """See :meth:`ChatMemoryStore.update_messages`."""
        await self._service.replace_messages(memory_id, messages, context=self._context if context is None else context)

    async def delete_messages(self, memory_id: str, *, context: Context = None) -> None:
        """See :meth:`ChatMemoryStore.delete_messages`."""
        await self._service.delete(memory_id, context=self._context if context is None else context)


def _async_face(store: Any, executor: concurrent.futures.Executor | None) -> Any:
    if inspect.iscoroutinefunction(getattr(store, "get_snapshot", None)):
        return store  # already an async face
    if executor is not None:
        return OffloadedAsyncStore(store, executor)
    if hasattr(type(store), "aio"):
        return store.aio  # non-blocking, or it says itself why not (UNIMPLEMENTED, ASYNC_NOT_SUPPORTED)
    raise GenkitError(
        Status.UNIMPLEMENTED,
        f"{type(store).__name__} is a blocking store with no non-blocking face, so its async chat memory would "
        "block the event loop; pass executor=ThreadPoolExecutor(...) to run it there explicitly, or use a store "
        "with a non-blocking face (InMemorySessionStore, DynamoDBSessionStore with 'genkit-sessions[aio]')",
        reason=Reason.ASYNC_NOT_SUPPORTED,
    )
