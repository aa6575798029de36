"""An in-memory store: every rule of the contract, O(1) lookups, no copying.

Snapshots are immutable, so a read hands out the stored object itself (S9)
and a write replaces it. Each session keeps its leaf pointer up to date on
every write, so a session lookup costs the same at a hundred snapshots or a
million. One lock guards the maps; it is held for dictionary operations and
the caller's mutator only, never across an ``await``, so the store is safe
from threads and from asyncio tasks alike. ``store.aio`` is the async face.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import AsyncIterator, Iterable, Sequence

import attrs

from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.clock import Clock, MonotonicStamper, utc_now
from genkit_sessions.model.ids import validate_id
from genkit_sessions.model.types import SessionSnapshot, SnapshotStatus
from genkit_sessions.stores.protocol import Context, Mutator, SessionRecord, TenantFn
from genkit_sessions.stores.write_rules import (
    abort_through,
    check_parent,
    default_tenant,
    heartbeat_through,
    leaf_of,
    next_snapshot,
    require_one_selector,
    restorable,
    tenant_key,
)

__all__ = ["AsyncInMemorySessionStore", "InMemorySessionStore"]


@attrs.define
class _Session:
    """One session tree's index (its snapshot ids in creation order) and its record."""

    ids: list[str] = attrs.Factory(list)
    version: int = 0
    created_at: str = ""
    updated_at: str = ""


@attrs.define
class _Tenant:
    """One tenant's data. ``leaves`` maps a session id to its leaf, held as the stored
    snapshot itself (the same object as in ``snapshots``), so a session lookup is one probe."""

    snapshots: dict[str, SessionSnapshot] = attrs.Factory(dict)
    sessions: dict[str, _Session] = attrs.Factory(dict)
    leaves: dict[str, SessionSnapshot] = attrs.Factory(dict)
    deleted_versions: dict[str, int] = attrs.Factory(dict)
    """The version a deleted session had, so a session created again under its id never reuses one."""

    def session(self, session_id: str) -> _Session:
        """The session's index, made (continuing a deleted session's version) when there is none."""
        session = self.sessions.get(session_id)
        if session is None:
            session = self.sessions[session_id] = _Session(version=self.deleted_versions.pop(session_id, 0))
        return session


_Watcher = tuple[asyncio.AbstractEventLoop, "asyncio.Queue[SnapshotStatus]"]


class InMemorySessionStore:
    """A thread-safe, asyncio-safe store that lives in this process.

    ``tenant_of`` maps a request context to the tenant whose data a call sees
    (default: ``context["tenant"]``, else one shared tenant). ``clock`` sets
    the time source for ``createdAt`` / ``updatedAt`` / ``heartbeatAt``.
    """

    def __init__(self, *, tenant_of: TenantFn = default_tenant, clock: Clock = utc_now) -> None:
        self._tenant_of = tenant_of
        self._stamp = MonotonicStamper(clock)
        self._tenants: dict[str, _Tenant] = {}
        self._lock = threading.Lock()
        self._watchers: dict[tuple[str, str], list[_Watcher]] = {}
        self._aio = AsyncInMemorySessionStore(self)

    @property
    def aio(self) -> AsyncInMemorySessionStore:
        """The async face of this store (same data, coroutine methods)."""
        return self._aio

    def _tenant(self, context: Context) -> _Tenant:
        key = tenant_key(self._tenant_of, context)
        tenant = self._tenants.get(key)
        if tenant is None:
            tenant = self._tenants.setdefault(key, _Tenant())
        return tenant

    # --- the minimum ---------------------------------------------------------------------

    def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        """A snapshot by id, or a session's leaf (the most recently created snapshot without children)."""
        require_one_selector(snapshot_id, session_id)
        with self._lock:
            tenant = self._tenant(context)
            if snapshot_id is not None:
                return tenant.snapshots.get(snapshot_id)
            leaf = tenant.leaves.get(session_id)  # type: ignore[arg-type]
            if leaf is not None:
                return leaf
            session = tenant.sessions.get(session_id)  # type: ignore[arg-type]
            if session is None or not session.ids:
                return None
            raise GenkitError(
                Status.DATA_LOSS,
                f"session {session_id!r} holds {len(session.ids)} snapshot(s) but none is a leaf: its parent "
                "chain is cyclic; resume a snapshot by id, or delete and restore the session",
            )

    def save_snapshot(self, snapshot_id: str, mutator: Mutator, *, context: Context = None) -> SessionSnapshot | None:
        """Atomically apply ``mutator`` to the snapshot ``snapshot_id`` and store the result."""
        with self._lock:
            tenant = self._tenant(context)
            existing = tenant.snapshots.get(snapshot_id)
            snapshot = next_snapshot(snapshot_id, existing, mutator, self._stamp())
            if snapshot is None:
                return None
            if existing is None:
                if snapshot.parent_id is not None:
                    check_parent(snapshot, tenant.snapshots.get(snapshot.parent_id))
                session = tenant.session(snapshot.session_id)  # type: ignore[arg-type]
                session.ids.append(snapshot_id)
                session.version += 1
                session.created_at = session.created_at or snapshot.created_at
                session.updated_at = snapshot.updated_at or snapshot.created_at
                tenant.leaves[snapshot.session_id] = snapshot  # type: ignore[index]
            else:
                if existing.effective_status is not snapshot.effective_status or existing.state != snapshot.state:
                    session = tenant.sessions[snapshot.session_id]  # type: ignore[index]
                    session.version += 1
                    session.updated_at = snapshot.updated_at or session.updated_at
                if tenant.leaves.get(snapshot.session_id) is existing:  # type: ignore[arg-type]
                    tenant.leaves[snapshot.session_id] = snapshot  # type: ignore[index]
            tenant.snapshots[snapshot_id] = snapshot
            self._notify(context, snapshot, existing)
            return snapshot

    # --- S11 extras ----------------------------------------------------------------------

    def list_snapshots(self, session_id: str, *, context: Context = None) -> Sequence[SessionSnapshot]:
        """Every snapshot of the session, in creation order."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        with self._lock:
            tenant = self._tenant(context)
            session = tenant.sessions.get(session_id)
            if session is None:
                return []
            return [tenant.snapshots[i] for i in session.ids]

    def delete_session(self, session_id: str, *, context: Context = None) -> int:
        """Delete the session's whole tree; returns how many snapshots went."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        with self._lock:
            tenant = self._tenant(context)
            session = tenant.sessions.pop(session_id, None)
            tenant.leaves.pop(session_id, None)
            if session is None:
                return 0
            tenant.deleted_versions[session_id] = session.version
            for snapshot_id in session.ids:
                del tenant.snapshots[snapshot_id]
            return len(session.ids)

    def abort_snapshot(self, snapshot_id: str, *, context: Context = None) -> SnapshotStatus | None:
        """Flip pending or aborting to aborted; return the status seen before (None if absent)."""
        return abort_through(functools.partial(self.save_snapshot, context=context), snapshot_id)

    def heartbeat(self, snapshot_id: str, *, context: Context = None) -> SessionSnapshot:
        """Stamp ``heartbeatAt`` on a running (pending or aborting) snapshot."""
        return heartbeat_through(functools.partial(self.save_snapshot, context=context), snapshot_id, self._stamp())

    async def watch_status(self, snapshot_id: str, *, context: Context = None) -> AsyncIterator[SnapshotStatus]:
        """Yield the current status, then every change, ending after a terminal status."""
        validate_id(snapshot_id, "snapshot_id", Reason.INVALID_SNAPSHOT_ID)
        queue: asyncio.Queue[SnapshotStatus] = asyncio.Queue()
        key = (tenant_key(self._tenant_of, context), snapshot_id)
        watcher: _Watcher = (asyncio.get_running_loop(), queue)
        with self._lock:
            current = self._tenant(context).snapshots.get(snapshot_id)
            if current is None:
                raise GenkitError(
                    Status.NOT_FOUND,
                    f"snapshot {snapshot_id!r} does not exist; watch a snapshot after it is saved",
                    reason=Reason.SNAPSHOT_NOT_FOUND,
                )
            self._watchers.setdefault(key, []).append(watcher)
        try:
            status = current.effective_status
            yield status
            while not status.is_terminal:
                status = await queue.get()
                yield status
        finally:
            with self._lock:
                watchers = self._watchers.get(key, [])
                if watcher in watchers:
                    watchers.remove(watcher)
                if not watchers:
                    self._watchers.pop(key, None)

    def _notify(self, context: Context, snapshot: SessionSnapshot, existing: SessionSnapshot | None) -> None:
        if not self._watchers or (existing is not None and existing.status is snapshot.status):
            return
        key = (tenant_key(self._tenant_of, context), snapshot.snapshot_id)
        for loop, queue in list(self._watchers.get(key, ())):
            try:
                loop.call_soon_threadsafe(queue.put_nowait, snapshot.effective_status)
            except RuntimeError:  # the watcher's event loop is closed: nobody is listening any more
                self._watchers[key].remove((loop, queue))
        if not self._watchers.get(key, True):
            del self._watchers[key]

    def restore_snapshots(self, snapshots: Iterable[SessionSnapshot], *, context: Context = None) -> int:
        """Store snapshots verbatim, as an import or a test fixture would.

        No stamping and no rule checks: broken or cyclic parent chains are kept
        as given (the resolver reports them as DATA_LOSS). Each session's leaf
        is recomputed as its most recently created snapshot without children.
        All or nothing: one snapshot that names no session refuses the whole batch.
        """
        batch = [restorable(snapshot) for snapshot in snapshots]
        count = 0
        with self._lock:
            tenant = self._tenant(context)
            touched: set[str] = set()
            for snapshot, session_id in batch:
                previous = tenant.snapshots.get(snapshot.snapshot_id)
                if previous is None or previous.session_id != session_id:
                    if previous is not None:
                        tenant.sessions[previous.session_id].ids.remove(snapshot.snapshot_id)  # type: ignore[index]
                        touched.add(previous.session_id)  # type: ignore[arg-type]
                    tenant.session(session_id).ids.append(snapshot.snapshot_id)
                tenant.sessions[session_id].version += 1
                tenant.snapshots[snapshot.snapshot_id] = snapshot
                touched.add(session_id)
                count += 1
            for session_id in touched:
                self._recompute_leaf(tenant, session_id)
        return count

    @staticmethod
    def _recompute_leaf(tenant: _Tenant, session_id: str) -> None:
        session = tenant.sessions[session_id]
        members = [tenant.snapshots[i] for i in session.ids]
        leaf = leaf_of(members)
        if leaf is not None:
            tenant.leaves[session_id] = leaf
        else:
            tenant.leaves.pop(session_id, None)
        session.ids.sort(key=lambda i: (tenant.snapshots[i].created_at, i))
        if members:
            session.created_at = min(m.created_at for m in members)
            session.updated_at = max(m.updated_at or m.created_at for m in members)

    def get_session_record(self, session_id: str, *, context: Context = None) -> SessionRecord | None:
        """The session's record (id, created, updated, version, leaf); None when it has no snapshots."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        with self._lock:
            tenant = self._tenant(context)
            session = tenant.sessions.get(session_id)
            if session is None or not session.ids:
                return None
            leaf = tenant.leaves.get(session_id)
            return SessionRecord(
                id=session_id,
                created_at=session.created_at,
                updated_at=session.updated_at,
                version=session.version,
                leaf_id=leaf.snapshot_id if leaf is not None else None,
            )


class AsyncInMemorySessionStore:
    """The async face of an :class:`InMemorySessionStore`.

    Every method completes without awaiting I/O (the work is a few dictionary
    operations under a lock held for microseconds), so it never blocks the loop.
    """

    def __init__(self, store: InMemorySessionStore) -> None:
        self.sync = store

    async def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        """See :meth:`InMemorySessionStore.get_snapshot`."""
        return self.sync.get_snapshot(snapshot_id=snapshot_id, session_id=session_id, context=context)

    async def save_snapshot(
        self, snapshot_id: str, mutator: Mutator, *, context: Context = None
    ) -> SessionSnapshot | None:
        """See :meth:`InMemorySessionStore.save_snapshot`."""
        return self.sync.save_snapshot(snapshot_id, mutator, context=context)

    async def list_snapshots(self, session_id: str, *, context: Context = None) -> Sequence[SessionSnapshot]:
        """See :meth:`InMemorySessionStore.list_snapshots`."""
        return self.sync.list_snapshots(session_id, context=context)

    async def delete_session(self, session_id: str, *, context: Context = None) -> int:
        """See :meth:`InMemorySessionStore.delete_session`."""
        return self.sync.delete_session(session_id, context=context)

    async def abort_snapshot(self, snapshot_id: str, *, context: Context = None) -> SnapshotStatus | None:
        """See :meth:`InMemorySessionStore.abort_snapshot`."""
        return self.sync.abort_snapshot(snapshot_id, context=context)

    async def heartbeat(self, snapshot_id: str, *, context: Context = None) -> SessionSnapshot:
        """See :meth:`InMemorySessionStore.heartbeat`."""
        return self.sync.heartbeat(snapshot_id, context=context)

    def watch_status(self, snapshot_id: str, *, context: Context = None) -> AsyncIterator[SnapshotStatus]:
        """See :meth:`InMemorySessionStore.watch_status`."""
        return self.sync.watch_status(snapshot_id, context=context)

    async def restore_snapshots(self, snapshots: Iterable[SessionSnapshot], *, context: Context = None) -> int:
        """See :meth:`InMemorySessionStore.restore_snapshots`."""
        return self.sync.restore_snapshots(snapshots, context=context)

    async def get_session_record(self, session_id: str, *, context: Context = None) -> SessionRecord | None:
        """See :meth:`InMemorySessionStore.get_session_record`."""
        return self.sync.get_session_record(session_id, context=context)
