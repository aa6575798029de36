"""A session store kept in a dict, written from ``conformance/IMPLEMENTING.md`` alone.

It is what a store author starts from: the two required methods, ``get_snapshot`` and
``save_snapshot``, and the optional ones the suite detects by name (list, delete, abort, heartbeat,
restore), each delegating the rules to ``genkit_sessions.stores.write_rules`` so that it agrees
with this package's own stores. A real backend replaces the dicts and the lock with its own
storage and its own conditional write. ``examples/test_dict_store.py`` runs the conformance suite
on it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable, Sequence

from genkit_sessions import GenkitError, Reason, SessionSnapshot, SnapshotStatus, Status
from genkit_sessions.model.clock import MonotonicStamper
from genkit_sessions.model.ids import validate_id
from genkit_sessions.stores.protocol import Context, Mutator
from genkit_sessions.stores.write_rules import (
    abort_through,
    check_parent,
    default_tenant,
    heartbeat_through,
    leaf_of,
    listing_order,
    next_snapshot,
    require_one_selector,
    restorable,
    restore_order,
    tenant_key,
)

__all__ = ["DictSessionStore"]


class DictSessionStore:
    """A blocking store: every snapshot in one dict, keyed by (tenant, snapshot id)."""

    def __init__(self) -> None:
        self._snapshots: dict[tuple[str, str], SessionSnapshot] = {}
        self._sessions: dict[tuple[str, str], list[str]] = {}  # (tenant, session id) -> ids, oldest first
        self._lock = threading.RLock()
        self._now = MonotonicStamper()  # strictly increasing createdAt: the newest leaf never ties (S8)

    def _tenant(self, context: Context) -> str:
        """S10: the tenant from the context (``{"tenant": name}``; none names the default tenant)."""
        return tenant_key(default_tenant, context)

    def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        """S1, S2, S8: a snapshot by id, or a session's leaf; None when there is none."""
        require_one_selector(snapshot_id, session_id)
        tenant = self._tenant(context)
        with self._lock:
            if snapshot_id is not None:
                return self._snapshots.get((tenant, snapshot_id))
            assert session_id is not None
            ids = self._sessions.get((tenant, session_id), [])
            leaf = leaf_of(self._snapshots[(tenant, i)] for i in ids)
            if leaf is None and ids:  # every snapshot has a child: only a cyclic chain does that
                raise GenkitError(
                    Status.DATA_LOSS,
                    f"session {session_id!r} has {len(ids)} snapshot(s) and no leaf (a cyclic parent chain); "
                    "resume a snapshot by id, or delete the session and restore it",
                )
            return leaf

    def save_snapshot(self, snapshot_id: str, mutator: Mutator, *, context: Context = None) -> SessionSnapshot | None:
        """S3-S7: one atomic read-modify-write (the lock is held while the mutator runs)."""
        tenant = self._tenant(context)
        with self._lock:
            existing = self._snapshots.get((tenant, snapshot_id))
            new = next_snapshot(snapshot_id, existing, mutator, self._now())  # S4 stamps, S5 and S6 checks
            if new is None:
                return None
            assert new.session_id is not None  # next_snapshot fills it or raises SESSION_ID_REQUIRED
            if existing is None:
                parent = None if new.parent_id is None else self._snapshots.get((tenant, new.parent_id))
                check_parent(new, parent)  # S7
                self._sessions.setdefault((tenant, new.session_id), []).append(snapshot_id)
            self._snapshots[(tenant, snapshot_id)] = new  # snapshots are frozen: storing it is S9-safe
            return new

    def list_snapshots(self, session_id: str, *, context: Context = None) -> Sequence[SessionSnapshot]:
        """S11: the session's snapshots, oldest first (by createdAt, then snapshot id), the leaf last."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        tenant = self._tenant(context)
        with self._lock:
            found = [self._snapshots[(tenant, i)] for i in self._sessions.get((tenant, session_id), [])]
        leaf = leaf_of(found)  # found is in commit order: the leaf is the last childless snapshot committed
        return listing_order(found, None if leaf is None else leaf.snapshot_id)

    def delete_session(self, session_id: str, *, context: Context = None) -> int:
        """S11: delete every snapshot of the session; how many there were."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        tenant = self._tenant(context)
        with self._lock:
            ids = self._sessions.pop((tenant, session_id), [])
            for snapshot_id in ids:
                del self._snapshots[(tenant, snapshot_id)]
            return len(ids)

    def abort_snapshot(self, snapshot_id: str, *, context: Context = None) -> SnapshotStatus | None:
        """S11: pending or aborting becomes aborted; the status it had (None: no such snapshot)."""
        return abort_through(functools.partial(self.save_snapshot, context=context), snapshot_id)

    def heartbeat(self, snapshot_id: str, *, context: Context = None) -> SessionSnapshot:
        """S11: stamp heartbeatAt on a running snapshot (NOT_FOUND, or FAILED_PRECONDITION when terminal)."""
        return heartbeat_through(functools.partial(self.save_snapshot, context=context), snapshot_id, self._now())

    def restore_snapshots(self, snapshots: Iterable[SessionSnapshot], *, context: Context = None) -> int:
        """Verbatim writes for imports and fixtures: no stamping, no S5-S7 checks; how many were written.

        Every snapshot is checked before any is written, so a refused one leaves the store as it was.
        """
        tenant = self._tenant(context)
        batch = [restorable(snapshot) for snapshot in snapshots]
        with self._lock:
            before: dict[str, tuple[list[str], str | None]] = {}  # touched session -> (its ids, its leaf)

            def touch(session_id: str) -> None:
                if session_id not in before:
                    ids = list(self._sessions.get((tenant, session_id), []))
                    leaf = leaf_of(self._snapshots[(tenant, i)] for i in ids)
                    before[session_id] = (ids, None if leaf is None else leaf.snapshot_id)

            for restored, session_id in batch:
                touch(session_id)
                key = (tenant, restored.snapshot_id)
                previous = self._snapshots.get(key)
                if previous is None or previous.session_id != session_id:
                    if previous is not None:  # the snapshot moves to another session
                        assert previous.session_id is not None
                        touch(previous.session_id)
                        self._sessions[(tenant, previous.session_id)].remove(restored.snapshot_id)
                    self._sessions.setdefault((tenant, session_id), []).append(restored.snapshot_id)
                self._snapshots[key] = restored
            for session_id, (ids, leaf_id) in before.items():  # S8: the one leaf rule picks each leaf again
                members = self._sessions.pop((tenant, session_id), [])
                if members:
                    kept, was = set(members), set(ids)
                    held = [self._snapshots[(tenant, i)] for i in ids if i in kept]
                    new = [self._snapshots[(tenant, i)] for i in members if i not in was]
                    order = restore_order(held, new, leaf_id)
                    self._sessions[(tenant, session_id)] = [s.snapshot_id for s in order]
        return len(batch)
