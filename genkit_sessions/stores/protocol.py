"""The store protocol: what the resolver and the conformance suite need from a store.

The minimum is two methods, ``get_snapshot`` and ``save_snapshot`` (rules S1-S10
and S12 of the contract). The extras of S11 are separate protocols so a caller
can test for them with ``isinstance``. Every store comes in a sync form and an
async form; the in-memory and DynamoDB stores offer both, the async one as
``store.aio``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol, runtime_checkable

import attrs

from genkit_sessions.model.frozen_json import FrozenDict
from genkit_sessions.model.types import Message, SessionSnapshot, SnapshotStatus

__all__ = [
    "HistoryPlan",
    "HistoryWindow",
    "SupportsAsyncHistory",
    "SupportsHistory",
    "AsyncSessionStore",
    "CallOptions",
    "SessionPage",
    "SupportsAsyncSessions",
    "SupportsSessions",
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

        Absent data, or data of another tenant, reads as None (S2). The leaf (S8) is the snapshot
        without children whose creation the store committed last: the store's commit order decides,
        never the createdAt a writer's clock stamped (see ``write_rules.leaf_of``).
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
        """Every snapshot of the session, oldest first by createdAt, the leaf last (empty when there are
        none): the same data lists the same in every store (``write_rules.listing_order``)."""
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
        """Yield the snapshot's current status, then each status a write sets; end after a terminal one.

        Every write counts: a save, an abort, and a restore that rewrites the snapshot (a restore that
        makes it terminal ends the watch). The iterator raises
        :class:`~genkit_sessions.errors.GenkitError` NOT_FOUND (reason SNAPSHOT_NOT_FOUND) at its first
        step when the snapshot does not exist (or its session is deleted or expired) when watching
        starts, and NOT_FOUND at the step after its session is deleted while watched, so no watch
        outlives its snapshot. A polling store may miss an intermediate status between two polls, never
        the terminal one.
        """
        ...


@runtime_checkable
class SupportsRestore(Protocol):
    """Writes snapshots exactly as given: for imports, backups and test fixtures."""

    def restore_snapshots(self, snapshots: Iterable[SessionSnapshot], *, context: Context = None) -> int:
        """Store the snapshots verbatim (no stamping, no rule checks); returns how many.

        Snapshots the session already holds keep its leaf; new ones commit after them in the order
        given, and the leaf follows (``write_rules.restore_order``). When the restore moves the leaf
        away or gives it a child and brings no new childless snapshot, the last childless snapshot
        left by createdAt (then snapshot id) is the leaf.

        A restore lands whole or not at all. A store that cannot land a batch this large at once
        refuses it before writing anything: INVALID_ARGUMENT, reason ``RESTORE_TOO_LARGE``; restore
        fewer snapshots a call.
        """
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
    """A session as a record, kept in step with its snapshots by every write (contract section 6).

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
    ttl: timedelta | None = None
    """The time to live the session was created with (None: it never expires)."""
    sliding: bool = False
    """Whether every write that moves the version also moves ``expires_at`` to now plus ``ttl``."""


@runtime_checkable
class SupportsRecords(Protocol):
    """Keeps a record per session (both of this package's stores do)."""

    def get_session_record(self, session_id: str, *, context: Context = None) -> SessionRecord | None:
        """The session's record; None when there is none, or it was deleted or expired."""
        ...


@runtime_checkable
class SupportsAsyncRecords(Protocol):
    """Async :class:`SupportsRecords`."""

    async def get_session_record(self, session_id: str, *, context: Context = None) -> SessionRecord | None:
        """See :meth:`SupportsRecords.get_session_record`."""
        ...


@attrs.frozen
class CallOptions:
    """Per-call options of a store write: the request context and the write's preconditions.

    ``expected_version`` makes a write that creates or changes a snapshot land only while the
    session's version (V8: 0 for no session, or one without snapshots) still equals it; otherwise
    the store raises ABORTED, reason ``VERSION_CONFLICT``, with the current version in the error's
    details (``{"version": n}``) and writes nothing.
    """

    context: Context = None
    expected_version: int | None = None

    def __attrs_post_init__(self) -> None:
        version = self.expected_version
        if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 0):
            from genkit_sessions.errors import GenkitError, Status

            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"expected_version must be a non-negative int or None, got {version!r}; "
                "pass the version read from the session's record",
            )


@attrs.frozen
class SessionPage:
    """One page of :meth:`SupportsSessions.find_sessions`: records oldest first, and the token of the next
    page (None on the last)."""

    records: tuple[SessionRecord, ...]
    next_page_token: str | None = None


@runtime_checkable
class SupportsSessions(SupportsRecords, Protocol):
    """Sessions as records (contract section 6): what :class:`~genkit_sessions.SessionService` needs of a store.

    ``save_snapshot`` of such a store also takes ``options=CallOptions(...)``.
    """

    @property
    def indexed_metadata(self) -> frozenset[str]:
        """The metadata keys ``find_sessions`` can look up (``principal`` always)."""
        ...

    def save_snapshot(
        self, snapshot_id: str, mutator: Mutator, *, context: Context = None, options: CallOptions | None = None
    ) -> SessionSnapshot | None:
        """See :meth:`SessionStore.save_snapshot`; ``options`` adds preconditions."""
        ...

    def get_session_leaf(
        self, session_id: str, *, context: Context = None
    ) -> tuple[SessionRecord | None, SessionSnapshot | None]:
        """The session's record and its leaf, read together (the leaf is None without snapshots)."""
        ...

    def create_session(
        self,
        session_id: str,
        *,
        metadata: Mapping[str, str] | None = None,
        ttl: timedelta | None = None,
        sliding: bool = False,
        snapshots: Iterable[SessionSnapshot] = (),
        context: Context = None,
    ) -> SessionRecord:
        """V1: a record with no snapshots. ALREADY_EXISTS (reason ``SESSION_EXISTS``) for a live session;
        an expired one is deleted first.

        With ``snapshots`` (a fork's first history), the record and those snapshots land in one atomic
        write: each stored verbatim as ``restore_snapshots`` stores it, one without ``createdAt`` stamped
        with the record's, the version counting them (V8). Every snapshot is checked first: INVALID_ARGUMENT
        for one of another session or an id given twice, ALREADY_EXISTS for an id a live session holds (an
        expired one that holds an id is deleted first, as for a save).
        A store may leave this keyword out; the service then writes them after the record."""
        ...

    def set_session_metadata(
        self, session_id: str, name: str, value: str | None, *, context: Context = None
    ) -> SessionRecord:
        """V5: set (or with None remove) one metadata key and every index in the same atomic write."""
        ...

    def find_sessions(
        self, name: str, value: str, *, limit: int = 100, page_token: str | None = None, context: Context = None
    ) -> SessionPage:
        """V4: live sessions whose metadata holds ``value`` under the indexed key ``name``, oldest first."""
        ...

    def delete_session(self, session_id: str, *, context: Context = None) -> int:
        """V6: the record, every snapshot and every index entry; returns how many snapshots went."""
        ...

    def delete_expired_sessions(self, before: datetime, *, context: Context = None) -> int:
        """V7: delete every session of the tenant whose ``expires_at`` is before ``before``; how many."""
        ...


@runtime_checkable
class SupportsAsyncSessions(SupportsAsyncRecords, Protocol):
    """Async :class:`SupportsSessions`."""

    @property
    def indexed_metadata(self) -> frozenset[str]:
        """See :attr:`SupportsSessions.indexed_metadata`."""
        ...

    async def save_snapshot(
        self, snapshot_id: str, mutator: Mutator, *, context: Context = None, options: CallOptions | None = None
    ) -> SessionSnapshot | None:
        """See :meth:`SupportsSessions.save_snapshot`."""
        ...

    async def get_session_leaf(
        self, session_id: str, *, context: Context = None
    ) -> tuple[SessionRecord | None, SessionSnapshot | None]:
        """The session's record and its leaf, read together (the leaf is None without snapshots)."""
        ...

    async def create_session(
        self,
        session_id: str,
        *,
        metadata: Mapping[str, str] | None = None,
        ttl: timedelta | None = None,
        sliding: bool = False,
        snapshots: Iterable[SessionSnapshot] = (),
        context: Context = None,
    ) -> SessionRecord:
        """See :meth:`SupportsSessions.create_session`."""
        ...

    async def set_session_metadata(
        self, session_id: str, name: str, value: str | None, *, context: Context = None
    ) -> SessionRecord:
        """See :meth:`SupportsSessions.set_session_metadata`."""
        ...

    async def find_sessions(
        self, name: str, value: str, *, limit: int = 100, page_token: str | None = None, context: Context = None
    ) -> SessionPage:
        """See :meth:`SupportsSessions.find_sessions`."""
        ...

    async def delete_session(self, session_id: str, *, context: Context = None) -> int:
        """See :meth:`SupportsSessions.delete_session`."""
        ...

    async def delete_expired_sessions(self, before: datetime, *, context: Context = None) -> int:
        """See :meth:`SupportsSessions.delete_expired_sessions`."""
        ...


def effective_context(context: Context, options: CallOptions | None) -> Context:
    """The context a call runs under: the options' when they carry one, else the keyword's."""
    if options is not None and options.context is not None:
        return options.context
    return context


@attrs.frozen
class HistoryWindow:
    """H2: the newest active messages that fit a bound, oldest first, and whether older ones were left out."""

    messages: tuple[Message, ...]
    truncated: bool


@attrs.frozen
class HistoryPlan:
    """How a store hands out one snapshot's active messages in stored blocks, oldest first (H3).

    ``blocks`` holds each block's message count. ``handle`` is the store's own (an immutable
    reference to what it stores), so every block comes from the one snapshot the plan was made for:
    a save landing while a stream reads never mixes versions.
    """

    snapshot_id: str
    session_id: str | None
    blocks: tuple[int, ...]
    handle: Any = attrs.field(eq=False, repr=False, default=None)

    @property
    def total(self) -> int:
        """How many active messages the snapshot holds."""
        return sum(self.blocks)


@runtime_checkable
class SupportsHistory(Protocol):
    """Bounded and streamed reads of a session's messages (contract section 7); both our stores offer them."""

    def read_window(
        self,
        session_id: str,
        *,
        max_messages: int | None = None,
        max_bytes: int | None = None,
        context: Context = None,
    ) -> HistoryWindow:
        """H2: the leaf's newest active messages within the bounds, in one bounded read."""
        ...

    def history_plan(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> HistoryPlan | None:
        """The blocks of a snapshot's (or a session leaf's) active messages; None when it is absent."""
        ...

    def history_next(
        self, plan: HistoryPlan, cursor: Any, limit: int, *, context: Context = None
    ) -> tuple[tuple[Message, ...], Any]:
        """Up to ``limit`` more of ``plan``'s messages, oldest first, from ``cursor`` (None: the start), and
        the cursor to continue from (None: the end). Each call holds at most one stored part."""
        ...


@runtime_checkable
class SupportsAsyncHistory(Protocol):
    """Async :class:`SupportsHistory`."""

    async def read_window(
        self,
        session_id: str,
        *,
        max_messages: int | None = None,
        max_bytes: int | None = None,
        context: Context = None,
    ) -> HistoryWindow:
        """See :meth:`SupportsHistory.read_window`."""
        ...

    async def history_plan(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> HistoryPlan | None:
        """See :meth:`SupportsHistory.history_plan`."""
        ...

    async def history_next(
        self, plan: HistoryPlan, cursor: Any, limit: int, *, context: Context = None
    ) -> tuple[tuple[Message, ...], Any]:
        """See :meth:`SupportsHistory.history_next`."""
        ...
