"""Session stores: the protocol, the shared write rules, and the in-memory store.

The DynamoDB store lives in ``genkit_sessions.dynamodb``.
"""

from genkit_sessions.stores.memory import AsyncInMemorySessionStore, InMemorySessionStore
from genkit_sessions.stores.offload import OffloadedAsyncStore
from genkit_sessions.stores.protocol import (
    AsyncSessionStore,
    Context,
    Mutator,
    SessionRecord,
    SessionStore,
    SupportsAsyncRecords,
    SupportsRecords,
    TenantFn,
)
from genkit_sessions.stores.write_rules import default_tenant, required_tenant

__all__ = [
    "AsyncInMemorySessionStore",
    "AsyncSessionStore",
    "Context",
    "InMemorySessionStore",
    "Mutator",
    "OffloadedAsyncStore",
    "SessionRecord",
    "SessionStore",
    "SupportsAsyncRecords",
    "SupportsRecords",
    "TenantFn",
    "default_tenant",
    "required_tenant",
]
