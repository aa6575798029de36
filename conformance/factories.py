"""Store factories for ``--store``: fresh, empty stores of this package, one per case."""

from __future__ import annotations

from genkit_sessions.stores.memory import AsyncInMemorySessionStore, InMemorySessionStore

__all__ = ["memory", "memory_async"]


def memory() -> InMemorySessionStore:
    """A blocking in-memory store (the CLI's default)."""
    return InMemorySessionStore()


def memory_async() -> AsyncInMemorySessionStore:
    """The async face of an in-memory store."""
    return InMemorySessionStore().aio
