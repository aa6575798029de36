"""An in-memory store: every rule of the contract, O(1) lookups, no copying.

Snapshots are immutable, so a read hands out the stored object itself (S9)
and a write replaces it. Each session keeps its leaf pointer up to date on
every write, so a session lookup costs the same at a hundred snapshots or a
million. One lock guards the maps; it is held for dictionary operations and
the caller's mutator only, never across an ``await``, so the store is safe
from threads and from asyncio tasks alike. The lock is reentrant so that a
mutator may read the store; a mutator that writes to it is refused
(FAILED_PRECONDITION), since the save it runs in has read what it will
replace. ``store.aio`` is the async face.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import threading
import weakref
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs

from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.clock import (
    Clock,
    MonotonicStamper,
    check_clock,
    format_timestamp,
    guarded_clock,
    parse_timestamp,
    utc_now,
)
from genkit_sessions.model.frozen_json import FrozenDict, strict_equal
from genkit_sessions.model.ids import id_problem, validate_id
from genkit_sessions.model.types import Message, SessionSnapshot, SnapshotStatus
from genkit_sessions.model.wire import to_wire
from genkit_sessions.stores import session_rules as rules
from genkit_sessions.stores.history_rules import check_bounds, window_of
from genkit_sessions.stores.protocol import (
    CallOptions,
    Context,
    HistoryPlan,
    HistoryWindow,
    Mutator,
    SessionPage,
    SessionRecord,
    TenantFn,
    effective_context,
)
from genkit_sessions.stores.write_rules import (
    abort_through,
    check_mutator,
    check_parent,
    default_tenant,
    heartbeat_through,
    leaf_of,
    listing_order,
    next_snapshot,
    require_one_selector,
    required_tenant,
    restorable,
    restore_order,
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
    metadata: FrozenDict = attrs.Factory(lambda: FrozenDict({}))
    ttl: timedelta | None = None
    sliding: bool = False
    expires_at: datetime | None = None
    record: tuple[Any, SessionRecord] | None = attrs.field(default=None, eq=False, repr=False)
    """The record last built, with what it was built from."""
    leaf: SessionSnapshot | None = attrs.field(default=None, eq=False, repr=False)
    """The session's leaf, held as the stored snapshot itself (the same object as in the tenant's
    ``snapshots``), kept up to date by every write: a session lookup is one probe of ``sessions``."""

    @property
    def visible_version(self) -> int:
        """V8: the version, or 0 while the session has no snapshots."""
        return self.version if self.ids else 0


@attrs.define
class _Tenant:
    """One tenant's data: its snapshots by id and its sessions (each with its leaf) by id."""

    snapshots: dict[str, SessionSnapshot] = attrs.Factory(dict)
    sessions: dict[str, _Session] = attrs.Factory(dict)
    deleted_versions: dict[str, int] = attrs.Factory(dict)
    """The version a deleted session had, so a session created again under its id never reuses one."""
    index: dict[tuple[str, str], dict[str, str]] = attrs.Factory(dict)
    """(metadata key, value) -> {session id: created_at}, for the indexed keys."""
    expiry: list[tuple[datetime, str]] = attrs.Factory(list)
    """A heap of (expires_at, session id); an entry whose session now expires at another time is stale."""
    key: str = ""
    """The tenant key, which keys this tenant's watchers."""

    def session(self, session_id: str) -> _Session:
        """The session's index, made (continuing a deleted session's version) when there is none."""
        session = self.sessions.get(session_id)
        if session is None:
            session = self.sessions[session_id] = _Session(version=self.deleted_versions.pop(session_id, 0))
        return session


_Watcher = tuple[asyncio.AbstractEventLoop, "asyncio.Queue[SnapshotStatus | None]"]
"""A watcher's loop and queue: each status the snapshot takes, or None once it is gone (deleted)."""


class InMemorySessionStore:
    """A thread-safe, asyncio-safe store that lives in this process.

    ``tenant_of`` maps a request context to the tenant whose data a call sees
    (default: ``context["tenant"]``, else one shared default tenant, so a single-tenant app needs no
    context). ``require_tenant=True`` refuses a context naming no tenant (INVALID_ARGUMENT) instead. ``clock`` sets
    the time source for ``createdAt`` / ``updatedAt`` / ``heartbeatAt``.
    """

    def __init__(
        self,
        *,
        tenant_of: TenantFn = default_tenant,
        require_tenant: bool = False,
        clock: Clock = utc_now,
        indexed_metadata: Iterable[str] = (),
    ) -> None:
        rules.check_callable("tenant_of", tenant_of, "tenant_of=lambda context: context['org']")
        check_clock(clock)
        rules.check_option("require_tenant", require_tenant, isinstance(require_tenant, bool), "a bool", "True")
        self._tenant_of = required_tenant(tenant_of) if require_tenant else tenant_of
        self._clock = guarded_clock(clock)
        self._stamp = MonotonicStamper(self._clock)
        self._indexed = rules.indexed_keys(indexed_metadata)
        self._tenants: dict[str, _Tenant] = {}
        self._lock = threading.RLock()
        self._in_mutator = False
        """True while a save's mutator runs (under the lock, so only on the thread holding it)."""
        self._watchers: dict[tuple[str, str], list[_Watcher]] = {}
        # The face holds this store; this store holds its face only weakly (a new one is made when the last
        # is gone), so the two make no reference cycle and a dropped store frees its sessions at once.
        self._aio: weakref.ref[AsyncInMemorySessionStore] | None = None

    @property
    def aio(self) -> AsyncInMemorySessionStore:
        """The async face of this store (same data, coroutine methods)."""
        face = self._aio() if self._aio is not None else None
        if face is None:
            face = AsyncInMemorySessionStore(self)
            self._aio = weakref.ref(face)
        return face

    @property
    def indexed_metadata(self) -> frozenset[str]:
        """The metadata keys :meth:`find_sessions` looks up (``principal`` always)."""
        return self._indexed

    def _tenant(self, context: Context) -> _Tenant:
        if context is None and self._tenant_of is default_tenant:  # no context: the default tenant
            tenant = self._tenants.get("")
            if tenant is not None:
                return tenant
        key = tenant_key(self._tenant_of, context)
        tenant = self._tenants.get(key)
        if tenant is None:
            tenant = self._tenants.setdefault(key, _Tenant(key=key))
        return tenant

    def _live(self, tenant: _Tenant, session_id: str | None, *, writing: bool = False) -> _Session | None:
        """The session, or None when there is none or it has expired (V7: an expired session reads as
        absent everywhere from the moment it expires). A write into an expired session deletes it first,
        as ``delete_expired_sessions`` would have."""
        session = tenant.sessions.get(session_id)  # type: ignore[arg-type]
        if session is not None and session.expires_at is not None and session.expires_at <= self._clock():
            if writing:
                self._drop(tenant, session_id)  # type: ignore[arg-type]
            return None
        return session

    def _drop(self, tenant: _Tenant, session_id: str) -> int:
        """Delete a session's record, snapshots and index entries (caller holds the lock)."""
        session = tenant.sessions.pop(session_id, None)
        if session is None:
            return 0
        tenant.deleted_versions[session_id] = session.version
        for snapshot_id in session.ids:
            del tenant.snapshots[snapshot_id]
            if self._watchers:
                self._notify(tenant, snapshot_id, None)
        for name, value in session.metadata.items():
            self._unindex(tenant, name, value, session_id)
        return len(session.ids)

    def _unindex(self, tenant: _Tenant, name: str, value: str, session_id: str) -> None:
        entries = tenant.index.get((name, value))
        if entries is not None:
            entries.pop(session_id, None)
            if not entries:
                del tenant.index[(name, value)]

    # --- the minimum ---------------------------------------------------------------------

    def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        """A snapshot by id, or a session's leaf (the most recently created snapshot without children)."""
        if snapshot_id is not None or session_id is None or id_problem(session_id) is not None:
            require_one_selector(snapshot_id, session_id)  # checks the snapshot id, or says what is wrong
        with self._lock:
            tenant = self._tenant(context)
            if snapshot_id is not None:
                found = tenant.snapshots.get(snapshot_id)
                if found is not None and self._live(tenant, found.session_id) is None:
                    return None
                return found
            session = tenant.sessions.get(session_id)  # type: ignore[arg-type]
            if session is None or (session.expires_at is not None and self._live(tenant, session_id) is None):
                return None
            leaf = session.leaf
            if leaf is not None:
                return leaf
            if not session.ids:
                return None
            raise GenkitError(
                Status.DATA_LOSS,
                f"session {session_id!r} holds {len(session.ids)} snapshot(s) but none is a leaf: its parent "
                "chain is cyclic; resume a snapshot by id, or delete and restore the session",
            )

    def save_snapshot(
        self, snapshot_id: str, mutator: Mutator, *, context: Context = None, options: CallOptions | None = None
    ) -> SessionSnapshot | None:
        """Atomically apply ``mutator`` to the snapshot ``snapshot_id`` and store the result.

        With ``options.expected_version`` the write lands only while the session's version is still
        that one (ABORTED, reason VERSION_CONFLICT, otherwise).
        """
        validate_id(snapshot_id, "snapshot_id", Reason.INVALID_SNAPSHOT_ID)
        check_mutator(mutator)
        context = effective_context(context, options)
        expected = options.expected_version if options is not None else None
        with self._lock:
            if self._in_mutator:
                raise _write_in_mutator("save_snapshot")
            tenant = self._tenant(context)
            existing = tenant.snapshots.get(snapshot_id)
            expired_home = None  # the expired session ``existing`` lived in: deleted once the write is sure
            if existing is not None and self._live(tenant, existing.session_id) is None:
                expired_home, existing = existing.session_id, None
            self._in_mutator = True
            try:
                snapshot = next_snapshot(snapshot_id, existing, mutator, self._stamp())
            finally:
                self._in_mutator = False
            if snapshot is None:
                return None
            session_id: str = snapshot.session_id  # type: ignore[assignment]
            live = self._live(tenant, session_id)
            # A sliding expiry moves to now: the clock is read before anything changes, so a clock that
            # fails leaves the store as it was.
            now = self._clock() if live is not None and live.sliding else None
            if expected is not None:
                current = live.visible_version if live is not None else 0
                if current != expected:  # refused before anything changes, an expired session included
                    raise rules.version_conflict(session_id, expected, current)
            if existing is None and snapshot.parent_id is not None:  # S7, before anything is deleted
                parent = tenant.snapshots.get(snapshot.parent_id)
                if parent is not None and self._live(tenant, parent.session_id) is None:
                    parent = None  # in an expired session: absent
                check_parent(snapshot, parent)
            if expired_home is not None:
                self._live(tenant, expired_home, writing=True)
            self._live(tenant, session_id, writing=True)
            if existing is None:
                session = tenant.session(session_id)
                session.ids.append(snapshot_id)
                self._advance(session, now)
                session.created_at = session.created_at or snapshot.created_at
                session.updated_at = snapshot.updated_at or snapshot.created_at
                session.leaf = snapshot
            else:
                session = tenant.sessions[session_id]
                if existing.effective_status is not snapshot.effective_status or _state_changed(existing, snapshot):
                    self._advance(session, now)
                    session.updated_at = snapshot.updated_at or session.updated_at
                if session.leaf is existing:
                    session.leaf = snapshot
            tenant.snapshots[snapshot_id] = snapshot
            if self._watchers and (existing is None or existing.effective_status is not snapshot.effective_status):
                self._notify(tenant, snapshot_id, snapshot.effective_status)
            return snapshot

    @staticmethod
    def _advance(session: _Session, now: datetime | None) -> None:
        """V8 and V7: one version up; a sliding expiry moves to ``now`` (read before the write changed
        anything) plus its ttl, never back (a write in the instant the session was created, whose stamp is
        a microsecond on, keeps its expiry)."""
        session.version += 1
        if session.sliding and session.ttl is not None:
            assert now is not None, "a write to a sliding session reads the clock first"
            slid = now + session.ttl
            if session.expires_at is None or slid > session.expires_at:
                session.expires_at = slid  # its heap entry moves when it comes due

    # --- S11 extras ----------------------------------------------------------------------

    def list_snapshots(self, session_id: str, *, context: Context = None) -> Sequence[SessionSnapshot]:
        """Every snapshot of the session, oldest first by createdAt and the leaf last, as every store
        lists them (``write_rules.listing_order``)."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        with self._lock:
            tenant = self._tenant(context)
            session = self._live(tenant, session_id)
            if session is None:
                return []
            leaf = session.leaf
            members = [tenant.snapshots[i] for i in session.ids]
        return listing_order(members, leaf.snapshot_id if leaf is not None else None)

    def delete_session(self, session_id: str, *, context: Context = None) -> int:
        """Delete the session's record, whole tree and index entries; returns how many snapshots went."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        with self._lock:
            if self._in_mutator:
                raise _write_in_mutator("delete_session")
            return self._drop(self._tenant(context), session_id)

    def abort_snapshot(self, snapshot_id: str, *, context: Context = None) -> SnapshotStatus | None:
        """Flip pending or aborting to aborted; return the status seen before (None if absent)."""
        return abort_through(functools.partial(self.save_snapshot, context=context), snapshot_id)

    def heartbeat(self, snapshot_id: str, *, context: Context = None) -> SessionSnapshot:
        """Stamp ``heartbeatAt`` on a running (pending or aborting) snapshot."""
        return heartbeat_through(functools.partial(self.save_snapshot, context=context), snapshot_id, self._stamp())

    async def watch_status(self, snapshot_id: str, *, context: Context = None) -> AsyncIterator[SnapshotStatus]:
        """Yield the current status, then every change any write sets (a save, an abort, a restore), ending
        after a terminal status. NOT_FOUND when the snapshot is absent (or its session expired) when watching
        starts, and raised by the iterator when its session is deleted while watched."""
        validate_id(snapshot_id, "snapshot_id", Reason.INVALID_SNAPSHOT_ID)
        queue: asyncio.Queue[SnapshotStatus | None] = asyncio.Queue()
        key = (tenant_key(self._tenant_of, context), snapshot_id)
        watcher: _Watcher = (asyncio.get_running_loop(), queue)
        with self._lock:
            tenant = self._tenant(context)
            current = tenant.snapshots.get(snapshot_id)
            if current is None or self._live(tenant, current.session_id) is None:
                raise _not_found(snapshot_id, "does not exist; watch a snapshot after it is saved")
            self._watchers.setdefault(key, []).append(watcher)
        try:
            status: SnapshotStatus | None = current.effective_status
            while True:
                if status is None:
                    raise _not_found(snapshot_id, "was deleted (with its session) while being watched")
                yield status
                if status.is_terminal:
                    return
                status = await queue.get()
        finally:
            with self._lock:
                watchers = self._watchers.get(key, [])
                if watcher in watchers:
                    watchers.remove(watcher)
                if not watchers:
                    self._watchers.pop(key, None)

    def _notify(self, tenant: _Tenant, snapshot_id: str, status: SnapshotStatus | None) -> None:
        """Hand ``status`` (None: the snapshot is gone) to the snapshot's watchers (caller holds the lock)."""
        key = (tenant.key, snapshot_id)
        for loop, queue in list(self._watchers.get(key, ())):
            try:
                loop.call_soon_threadsafe(queue.put_nowait, status)
            except RuntimeError:  # the watcher's event loop is closed: nobody is listening any more
                self._watchers[key].remove((loop, queue))
        if not self._watchers.get(key, True):
            del self._watchers[key]

    def restore_snapshots(self, snapshots: Iterable[SessionSnapshot], *, context: Context = None) -> int:
        """Store snapshots verbatim, as an import or a test fixture would.

        No stamping and no rule checks: broken or cyclic parent chains are kept
        as given (the resolver reports them as DATA_LOSS). Each touched session's
        leaf is recomputed by the one leaf rule (``leaf_of`` over ``restore_order``):
        the snapshots it held by createdAt with its leaf last, new ones after them
        in the order given, so restoring what a session holds never moves its leaf.
        All or nothing: one snapshot that names no session refuses the whole batch.
        """
        batch = [restorable(snapshot) for snapshot in snapshots]
        count = 0
        with self._lock:
            if self._in_mutator:
                raise _write_in_mutator("restore_snapshots")
            tenant = self._tenant(context)
            before: dict[str, tuple[list[str], str | None]] = {}

            def touch(session_id: str) -> None:
                if session_id not in before:
                    known = tenant.sessions.get(session_id)
                    leaf = known.leaf if known is not None else None
                    before[session_id] = (list(known.ids) if known else [], leaf.snapshot_id if leaf else None)

            for snapshot, session_id in batch:
                touch(session_id)
                previous = tenant.snapshots.get(snapshot.snapshot_id)
                if previous is None or previous.session_id != session_id:
                    if previous is not None:
                        touch(previous.session_id)  # type: ignore[arg-type]
                        tenant.sessions[previous.session_id].ids.remove(snapshot.snapshot_id)  # type: ignore[index]
                    tenant.session(session_id).ids.append(snapshot.snapshot_id)
                tenant.sessions[session_id].version += 1
                tenant.snapshots[snapshot.snapshot_id] = snapshot
                if self._watchers and (previous is None or previous.effective_status is not snapshot.effective_status):
                    self._notify(tenant, snapshot.snapshot_id, snapshot.effective_status)
                count += 1
            for session_id, (ids, leaf_id) in before.items():
                self._recompute_leaf(tenant, session_id, ids, leaf_id)
        return count

    @staticmethod
    def _recompute_leaf(tenant: _Tenant, session_id: str, ids_before: list[str], leaf_id: str | None) -> None:
        session = tenant.sessions[session_id]
        members = set(session.ids)
        held = set(ids_before)
        order = restore_order(
            [tenant.snapshots[i] for i in ids_before if i in members],
            [tenant.snapshots[i] for i in session.ids if i not in held],
            leaf_id,
        )
        session.leaf = leaf_of(order)
        session.ids = [s.snapshot_id for s in order]
        if order:
            created = min(m.created_at for m in order)
            if not session.created_at or created < session.created_at:  # older history moves the creation back
                session.created_at = created
                for entry in session.metadata.items():  # and the index entries sorted by it (V4)
                    holders = tenant.index.get(entry)
                    if holders is not None and session_id in holders:
                        holders[session_id] = created
            session.updated_at = max(m.updated_at or m.created_at for m in order)

    def get_session_record(self, session_id: str, *, context: Context = None) -> SessionRecord | None:
        """V3: the session's record; None when there is none, or it was deleted or expired."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        with self._lock:
            tenant = self._tenant(context)
            session = self._live(tenant, session_id)
            return None if session is None else self._record(session_id, session)

    def get_session_leaf(
        self, session_id: str, *, context: Context = None
    ) -> tuple[SessionRecord | None, SessionSnapshot | None]:
        """The session's record and its leaf, read together."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        with self._lock:
            tenant = self._tenant(context)
            session = self._live(tenant, session_id)
            if session is None:
                return None, None
            return self._record(session_id, session), session.leaf

    @staticmethod
    def _record(session_id: str, session: _Session) -> SessionRecord:
        leaf = session.leaf
        leaf_id = leaf.snapshot_id if leaf is not None else None
        key = (session.visible_version, session.created_at, session.updated_at, leaf_id, session.expires_at)
        cached = session.record
        if cached is not None and cached[0] == key and cached[1].metadata is session.metadata:
            return cached[1]  # records are immutable: the one built when nothing has changed since
        record = SessionRecord(
            id=session_id,
            created_at=session.created_at,
            updated_at=session.updated_at,
            version=key[0],
            leaf_id=leaf_id,
            expires_at=format_timestamp(session.expires_at) if session.expires_at is not None else None,
            metadata=session.metadata,
            ttl=session.ttl,
            sliding=session.sliding,
        )
        session.record = (key, record)
        return record

    # --- history (contract section 7) ----------------------------------------------------------

    def read_window(
        self,
        session_id: str,
        *,
        max_messages: int | None = None,
        max_bytes: int | None = None,
        context: Context = None,
    ) -> HistoryWindow:
        """H2: the leaf's newest active messages within the bounds (a dictionary probe and a slice)."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        check_bounds(max_messages, max_bytes)
        leaf = self.get_snapshot(session_id=session_id, context=context)
        messages = leaf.state.messages if leaf is not None and leaf.state is not None else None
        return window_of(messages or (), max_messages, max_bytes)

    def history_plan(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> HistoryPlan | None:
        """One block: the snapshot's own immutable message tuple."""
        snapshot = self.get_snapshot(snapshot_id=snapshot_id, session_id=session_id, context=context)
        if snapshot is None:
            return None
        messages = snapshot.state.messages if snapshot.state is not None else None
        return HistoryPlan(snapshot.snapshot_id, snapshot.session_id, (len(messages),) if messages else (), messages)

    def history_next(
        self, plan: HistoryPlan, cursor: Any, limit: int, *, context: Context = None
    ) -> tuple[tuple[Message, ...], Any]:
        """A slice of the plan's own message tuple; the cursor is the offset."""
        messages: tuple[Message, ...] = plan.handle or ()
        start = int(cursor or 0)
        end = start + limit
        return messages[start:end], (end if end < len(messages) else None)

    # --- sessions as records (contract section 6) ---------------------------------------------

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
        """V1: a record, with no snapshots or with ``snapshots`` (stored as ``restore_snapshots`` would, in the
        same write under the store's lock); ALREADY_EXISTS (SESSION_EXISTS) when a live session has the id."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        frozen = rules.check_metadata(metadata)
        rules.check_ttl(ttl)
        given = list(snapshots)
        with self._lock:
            if self._in_mutator:
                raise _write_in_mutator("create_session")
            tenant = self._tenant(context)
            now = self._stamp()
            first = rules.first_snapshots(session_id, given, now)  # refused before an expired session goes
            if self._live(tenant, session_id, writing=True) is not None:
                raise rules.session_exists(session_id)
            held = [tenant.snapshots[s.snapshot_id] for s in first if s.snapshot_id in tenant.snapshots]
            taken = next((h.snapshot_id for h in held if self._live(tenant, h.session_id) is not None), None)
            if taken is not None:
                raise rules.snapshot_exists(taken)
            for holder in {h.session_id for h in held}:  # an expired session's ids read as absent: it goes first
                self._live(tenant, holder, writing=True)
            session = tenant.session(session_id)
            session.created_at = session.updated_at = now
            session.metadata = frozen
            session.ttl, session.sliding = ttl, bool(sliding) and ttl is not None
            if ttl is not None:
                session.expires_at = parse_timestamp(session.created_at) + ttl  # V7: created_at + ttl
                heapq.heappush(tenant.expiry, (session.expires_at, session_id))
            for name, value in frozen.items():
                if name in self._indexed:
                    tenant.index.setdefault((name, value), {})[session_id] = session.created_at
            if first:  # checked above, so the restore cannot refuse them part-way
                self.restore_snapshots(first, context=context)
            return self._record(session_id, session)

    def set_session_metadata(
        self, session_id: str, name: str, value: str | None, *, context: Context = None
    ) -> SessionRecord:
        """V5: set (None: remove) one metadata key, index included; NOT_FOUND for no live session."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        rules.check_metadata_entry(name, value, allow_none=True)
        with self._lock:
            if self._in_mutator:
                raise _write_in_mutator("set_session_metadata")
            tenant = self._tenant(context)
            session = self._live(tenant, session_id)
            if session is None:
                raise rules.session_not_found(session_id)
            old = session.metadata.get(name)
            changed = dict(session.metadata)
            if value is None:
                changed.pop(name, None)
            else:
                changed[name] = value
            session.metadata = FrozenDict(changed)
            if name in self._indexed and old != value:
                if old is not None:
                    self._unindex(tenant, name, old, session_id)
                if value is not None:
                    tenant.index.setdefault((name, value), {})[session_id] = session.created_at
            return self._record(session_id, session)

    def find_sessions(
        self, name: str, value: str, *, limit: int = 100, page_token: str | None = None, context: Context = None
    ) -> SessionPage:
        """V4: live sessions whose metadata holds ``value`` under ``name``, oldest first (created_at, id):
        a dictionary lookup, then a sort of that one key's sessions."""
        rules.check_metadata_entry(name, value)
        if name not in self._indexed:
            raise rules.not_indexed(name, self._indexed)
        rules.check_limit(limit)
        after = rules.decode_page_token(page_token)
        with self._lock:
            tenant = self._tenant(context)
            entries = tenant.index.get((name, value), {})
            ordered = sorted((created, sid) for sid, created in entries.items())
            records: list[SessionRecord] = []
            more = False
            for created, sid in ordered:
                if after is not None and (created, sid) <= after:
                    continue
                session = self._live(tenant, sid)
                if session is None:
                    continue
                if len(records) == limit:
                    more = True
                    break
                records.append(self._record(sid, session))
        token = rules.encode_page_token(records[-1].created_at, records[-1].id) if more else None
        return SessionPage(tuple(records), token)

    def delete_expired_sessions(self, before: datetime, *, context: Context = None) -> int:
        """V7: delete every session of the tenant whose ``expires_at`` is before ``before``; how many."""
        rules.check_before(before)
        deleted = 0
        with self._lock:
            if self._in_mutator:
                raise _write_in_mutator("delete_expired_sessions")
            tenant = self._tenant(context)
            heap = tenant.expiry
            while heap and heap[0][0] < before:
                expires_at, session_id = heapq.heappop(heap)
                session = tenant.sessions.get(session_id)
                if session is None or session.expires_at is None or session.expires_at < expires_at:
                    continue  # deleted since (and maybe created again, with its own entry)
                if session.expires_at > expires_at:  # its expiry slid on: the entry moves with it
                    heapq.heappush(heap, (session.expires_at, session_id))
                    continue
                self._drop(tenant, session_id)
                deleted += 1
        return deleted


def _write_in_mutator(method: str) -> GenkitError:
    return GenkitError(
        Status.FAILED_PRECONDITION,
        f"a save_snapshot mutator called {method} on the in-memory store it is saving to; a mutator may read "
        "the store but not write to it (the save has read what it will replace): return the snapshot to "
        "store from the mutator, and make other writes after save_snapshot returns",
    )


def _not_found(snapshot_id: str, what: str) -> GenkitError:
    return GenkitError(Status.NOT_FOUND, f"snapshot {snapshot_id!r} {what}", reason=Reason.SNAPSHOT_NOT_FOUND)


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
        self, snapshot_id: str, mutator: Mutator, *, context: Context = None, options: CallOptions | None = None
    ) -> SessionSnapshot | None:
        """See :meth:`InMemorySessionStore.save_snapshot`."""
        return self.sync.save_snapshot(snapshot_id, mutator, context=context, options=options)

    @property
    def indexed_metadata(self) -> frozenset[str]:
        """See :attr:`InMemorySessionStore.indexed_metadata`."""
        return self.sync.indexed_metadata

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

    async def get_session_leaf(
        self, session_id: str, *, context: Context = None
    ) -> tuple[SessionRecord | None, SessionSnapshot | None]:
        """See :meth:`InMemorySessionStore.get_session_leaf`."""
        return self.sync.get_session_leaf(session_id, context=context)

    async def read_window(
        self,
        session_id: str,
        *,
        max_messages: int | None = None,
        max_bytes: int | None = None,
        context: Context = None,
    ) -> HistoryWindow:
        """See :meth:`InMemorySessionStore.read_window`."""
        return self.sync.read_window(session_id, max_messages=max_messages, max_bytes=max_bytes, context=context)

    async def history_plan(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> HistoryPlan | None:
        """See :meth:`InMemorySessionStore.history_plan`."""
        return self.sync.history_plan(snapshot_id=snapshot_id, session_id=session_id, context=context)

    async def history_next(
        self, plan: HistoryPlan, cursor: Any, limit: int, *, context: Context = None
    ) -> tuple[tuple[Message, ...], Any]:
        """See :meth:`InMemorySessionStore.history_next`."""
        return self.sync.history_next(plan, cursor, limit, context=context)

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
        """See :meth:`InMemorySessionStore.create_session`."""
        return self.sync.create_session(
            session_id, metadata=metadata, ttl=ttl, sliding=sliding, snapshots=snapshots, context=context
        )

    async def set_session_metadata(
        self, session_id: str, name: str, value: str | None, *, context: Context = None
    ) -> SessionRecord:
        """See :meth:`InMemorySessionStore.set_session_metadata`."""
        return self.sync.set_session_metadata(session_id, name, value, context=context)

    async def find_sessions(
        self, name: str, value: str, *, limit: int = 100, page_token: str | None = None, context: Context = None
    ) -> SessionPage:
        """See :meth:`InMemorySessionStore.find_sessions`."""
        return self.sync.find_sessions(name, value, limit=limit, page_token=page_token, context=context)

    async def delete_expired_sessions(self, before: datetime, *, context: Context = None) -> int:
        """See :meth:`InMemorySessionStore.delete_expired_sessions`."""
        return self.sync.delete_expired_sessions(before, context=context)


def _state_changed(before: SessionSnapshot, after: SessionSnapshot) -> bool:
    """Whether a write changed the snapshot's state as its JSON says (V8): ``1`` to ``true`` or ``1.0``
    is a change that Python's ``==`` does not see."""
    if before.state is after.state:
        return False
    if before.state != after.state:
        return True
    return not strict_equal(to_wire(before.state), to_wire(after.state))
