"""The store protocol: what the resolver and the conformance suite need from a store.

The minimum is two methods, ``get_snapshot`` and ``save_snapshot`` (rules S1-S10
and S12 of the contract). The extras of S11 are separate protocols so a caller
can test for them with ``isinstance``. Every store comes in a sync form and an
async form; the in-memory and DynamoDB stores offer both, the async one as
``store.aio``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from genkit_sessions.model.frozen_json import FrozenDict
from genkit_sessions.model.types import SessionSnapshot, SnapshotStatus

__all__ = [
    "AsyncSessionStore",
    "SessionRecord",
    "SupportsAsyncRecords",
    "SupportsRecords",
    "Context",
    "Mutator",
    "SessionStore",
    "SupportsAbort",
    "SupportsAsyncAbort",
    "SupportsAsyncDelete",
    "SupportsAsyncHeartbeat",
    "SupportsAsyncList",
    "SupportsAsyncRestore",
    "SupportsDelete",
    "SupportsHeartbeat",
    "SupportsList",
    "SupportsRestore",
    "SupportsWatch",
    "TenantFn",
]

Context = Mapping[str, Any] | None
"""Request side-channel data (auth, tenant); stores derive the tenant from it."""

Mutator = Callable[[SessionSnapshot | None], SessionSnapshot | None]
"""Given the current snapshot (or None), return the one to store (or None to write nothing).

A store may call it more than once under contention; the write that lands is
what its last call returned. It must be a plain function, not a coroutine.
"""

TenantFn = Callable[[Context], str]
"""Maps a request context to the tenant key that isolates its data."""


@runtime_checkable
class SessionStore(Protocol):
    """The minimum a blocking store offers."""

    def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        """A snapshot by id, or a session's leaf by session id: exactly one of the two (S1).

        Absent data, or data of another tenant, reads as None (S2).
        """
        ...

    def save_snapshot(self, snapshot_id: str, mutator: Mutator, *, context: Context = None) -> SessionSnapshot | None:
        """Atomically read, mutate and write the snapshot ``snapshot_id`` (S3-S7).

        Returns the snapshot as stored, or None when the mutator chose not to write.
        """
        ...


@runtime_checkable
class AsyncSessionStore(Protocol):
    """The minimum an async store offers; the same contract as :class:`SessionStore`."""

    async def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        """See :meth:`SessionStore.get_snapshot`."""
        ...

    async def save_snapshot(
        self, snapshot_id: str, mutator: Mutator, *, context: Context = None
    ) -> SessionSnapshot | None:
        """See :meth:`SessionStore.save_snapshot`."""
        ...


@runtime_checkable
class SupportsList(Protocol):
    """Lists a session's tree."""

    def list_snapshots(self, session_id: str, *, context: Context = None) -> Sequence[SessionSnapshot]:
        """Every snapshot of the session, oldest first (empty when there are none)."""
        ...


@runtime_checkable
class SupportsDelete(Protocol):
    """Deletes whole sessions."""

    def delete_session(self, session_id: str, *, context: Context = None) -> int:
        """Delete every snapshot of the session; returns how many were deleted."""
        ...


@runtime_checkable
class SupportsAbort(Protocol):
    """Aborts running turns."""

    def abort_snapshot(self, snapshot_id: str, *, context: Context = None) -> SnapshotStatus | None:
        """Flip a pending or aborting snapshot to aborted in one atomic write.

        Returns the status it had before (a terminal one is left unchanged), or
        None when there is no such snapshot.
        """
        ...


@runtime_checkable
class SupportsHeartbeat(Protocol):
    """Keeps running turns alive."""

    def heartbeat(self, snapshot_id: str, *, context: Context = None) -> SessionSnapshot:
        """Stamp ``heartbeatAt`` on a pending or aborting snapshot.

        NOT_FOUND when it does not exist; FAILED_PRECONDITION when it is terminal.
        """
        ...


@runtime_checkable
class SupportsWatch(Protocol):
    """Streams status changes."""

    def watch_status(self, snapshot_id: str, *, context: Context = None) -> AsyncIterator[SnapshotStatus]:
        """Yield the snapshot's current status, then each change; end after a terminal one.

        NOT_FOUND when the snapshot does not exist when watching starts.
        """
        ...


@runtime_checkable
class SupportsRestore(Protocol):
    """Writes snapshots exactly as given: for imports, backups and test fixtures."""

    def restore_snapshots(self, snapshots: Iterable[SessionSnapshot], *, context: Context = None) -> int:
        """Store the snapshots verbatim (no stamping, no rule checks); returns how many."""
        ...


@runtime_checkable
class SupportsAsyncList(Protocol):
    """Async :class:`SupportsList`."""

    async def list_snapshots(self, session_id: str, *, context: Context = None) -> Sequence[SessionSnapshot]:
        """See :meth:`SupportsList.list_snapshots`."""
        ...


@runtime_checkable
class SupportsAsyncDelete(Protocol):
    """Async :class:`SupportsDelete`."""

    async def delete_session(self, session_id: str, *, context: Context = None) -> int:
        """See :meth:`SupportsDelete.delete_session`."""
        ...


@runtime_checkable
class SupportsAsyncAbort(Protocol):
    """Async :class:`SupportsAbort`."""

    async def abort_snapshot(self, snapshot_id: str, *, context: Context = None) -> SnapshotStatus | None:
        """See :meth:`SupportsAbort.abort_snapshot`."""
        ...


@runtime_checkable
class SupportsAsyncHeartbeat(Protocol):
    """Async :class:`SupportsHeartbeat`."""

    async def heartbeat(self, snapshot_id: str, *, context: Context = None) -> SessionSnapshot:
        """See :meth:`SupportsHeartbeat.heartbeat`."""
        ...


@runtime_checkable
class SupportsAsyncRestore(Protocol):
    """Async :class:`SupportsRestore`."""

    async def restore_snapshots(self, snapshots: Iterable[SessionSnapshot], *, context: Context = None) -> int:
        """See :meth:`SupportsRestore.restore_snapshots`."""
        ...


@attrs.frozen
class SessionRecord:
    """A session as a record, kept in step with its snapshots by every write (SPEC section 6).

    ``version`` (V8) advances by exactly one on every write that creates a snapshot or changes a
    snapshot's state or status (a restore counts each snapshot it writes), never on a heartbeat, and
    never goes back: a session deleted and created again continues from the number it had.
    ``leaf_id`` is the snapshot a session lookup returns (None while the session has none).
    """

    id: str
    created_at: str
    updated_at: str
    version: int
    leaf_id: str | None = None
    expires_at: str | None = None
    metadata: FrozenDict = attrs.field(factory=lambda: FrozenDict({}))


@runtime_checkable
class SupportsRecords(Protocol):
    """Keeps a record per session (both of this package's stores do)."""

    def get_session_record(self, session_id: str, *, context: Context = None) -> SessionRecord | None:
        """The session's record; None when it has no snapshots or was deleted."""
        ...


@runtime_checkable
class SupportsAsyncRecords(Protocol):
    """Async :class:`SupportsRecords`."""

    async def get_session_record(self, session_id: str, *, context: Context = None) -> SessionRecord | None:
        """See :meth:`SupportsRecords.get_session_record`."""
        ...
