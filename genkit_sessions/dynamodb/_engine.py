"""What the store's logic shares, whichever driver runs it: settings, and the caches of one store.

The caches are safe under threads and tasks: a lock guards every access and is
never held across a request.
"""

from __future__ import annotations

import collections
import os
import threading
import weakref
from collections.abc import Iterable
from datetime import timedelta

import attrs

from genkit_sessions.dynamodb._codec import Recipe
from genkit_sessions.dynamodb._items import Head, Loaded
from genkit_sessions.errors import GenkitError, Status
from genkit_sessions.model.clock import Clock, MonotonicStamper
from genkit_sessions.model.types import SessionSnapshot, SessionState
from genkit_sessions.stores.protocol import TenantFn

__all__ = ["Engine", "Settings"]

RECORD_LIMIT = 120 * 1024
"""A snapshot's record (everything but its state) compressed, at most: the record packed with its inline
blob, plus the record an update writes beside it, stay under the 400 KB item limit."""
INLINE_LIMIT = 130 * 1024
"""A blob at most this big (compressed) is packed into its snapshot's item instead of a part item."""


@attrs.frozen
class Settings:
    """The store's options, checked once."""

    table: str
    tenant_of: TenantFn
    clock: Clock
    checkpoint_every: int
    ttl: timedelta | None
    orphan_ttl: timedelta
    max_attempts: int
    chunk_bytes: int
    watch_interval: float
    watch_max_interval: float
    cache_size: int
    head_ids: int
    indexed: frozenset[str] = frozenset({"principal"})


_Live = tuple["weakref.ref[SessionSnapshot]", Recipe, "int | None", int, "tuple[str, ...]", "Head | None", int]
"""What the store knows of a snapshot its caller still holds: the snapshot (weakly), how it is stored
(recipe, expiry, item version, statuses), the head seen with it, and its item's size without an update."""


class Engine:
    """Settings plus one store's memory: recently read or written snapshots, and the last head seen per
    session (which makes a turn-end save need no read).

    Two memories: a bounded LRU of ``cache_size`` snapshots and heads, and, for every snapshot this store
    returned that its caller still holds, what a save of its child needs (its recipe, expiry, version and
    the head seen with it), kept exactly as long as the caller keeps the snapshot object. So a turn that
    resumes a snapshot and saves its child needs no read, however many sessions are in flight."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.table = settings.table
        self.stamp = MonotonicStamper(settings.clock)
        self._cache: collections.OrderedDict[tuple[str, str], Loaded] = collections.OrderedDict()
        self._heads: collections.OrderedDict[tuple[str, str], Head] = collections.OrderedDict()
        self._live: dict[tuple[str, str], _Live] = {}
        self._lock = threading.Lock()

    def now_epoch(self) -> int:
        """The clock, in epoch seconds (TTL attributes)."""
        return int(self.settings.clock().timestamp())

    def now_ms(self) -> int:
        """The clock, in epoch milliseconds (session expiry)."""
        return int(self.settings.clock().timestamp() * 1000)

    @staticmethod
    def token() -> str:
        """A fresh random version token or nonce."""
        return os.urandom(8).hex()

    @staticmethod
    def first_version() -> int:
        """The item version a snapshot item starts at when it is written whole (a new snapshot, a restore
        over no item): random, so a snapshot id written again after a deletion never matches the version
        another store instance remembers of the item before, and that instance's update of its copy is
        refused instead of landing on data it never read."""
        return 2 + int.from_bytes(os.urandom(4), "big") % 999_999_998

    def data_loss(self, snapshot_id: str, problem: str) -> GenkitError:
        """DATA_LOSS for a snapshot whose stored bytes do not decode."""
        return GenkitError(
            Status.DATA_LOSS,
            f"stored data of snapshot {snapshot_id!r} in DynamoDB table {self.table!r} cannot be decoded "
            f"({problem}); restore the session from a backup or delete it",
        )

    # --- snapshots -------------------------------------------------------------------------

    def remember(self, tenant: str, loaded: Loaded, head: Head | None = None) -> None:
        """Keep a snapshot just read or written: its state is immutable per recipe. ``head`` is the
        session's head as read or written with it, kept while the caller holds the snapshot."""
        key = (tenant, loaded.snapshot.snapshot_id)
        live = self._live

        def gone(ref: weakref.ref[SessionSnapshot], key: tuple[str, str] = key) -> None:
            entry = live.get(key)  # no lock: this runs wherever the collector does
            if entry is not None and entry[0] is ref:
                live.pop(key, None)

        try:
            ref = weakref.ref(loaded.snapshot, gone)
        except TypeError:  # pragma: no cover - snapshots are weak-referenceable attrs classes
            ref = None
        with self._lock:
            if ref is not None:
                if head is None:
                    previous = live.get(key)
                    head = previous[5] if previous is not None and previous[0]() is loaded.snapshot else None
                live[key] = (ref, loaded.recipe, loaded.expires, loaded.version, loaded.statuses, head, loaded.size)
            if self.settings.cache_size <= 0:
                return
            self._cache[key] = loaded
            self._cache.move_to_end(key)
            while len(self._cache) > self.settings.cache_size:
                self._cache.popitem(last=False)

    def cached(self, tenant: str, snapshot_id: str) -> Loaded | None:
        """The snapshot as this store last read or wrote it, if it still remembers (or its caller still
        holds it)."""
        key = (tenant, snapshot_id)
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                return found
            entry = self._live.get(key)
        if entry is None:
            return None
        snapshot = entry[0]()
        if snapshot is None:
            return None
        return Loaded(snapshot, entry[1], entry[2], entry[3], entry[4], entry[6])

    def head_with(self, tenant: str, snapshot_id: str) -> Head | None:
        """The head seen with a snapshot its caller still holds (None when not known)."""
        with self._lock:
            entry = self._live.get((tenant, snapshot_id))
        if entry is None or entry[0]() is None:
            return None
        return entry[5]

    def recall(self, tenant: str, snapshot_id: str, recipe: Recipe) -> tuple[bool, SessionState | None]:
        """``(True, state)`` when the cache holds the state this recipe rebuilds."""
        hit = self.cached(tenant, snapshot_id)
        if hit is not None and hit.recipe == recipe:
            return True, hit.snapshot.state
        return False, None

    def forget(self, tenant: str, snapshot_ids: Iterable[str]) -> None:
        """Drop snapshots from the cache."""
        with self._lock:
            for snapshot_id in snapshot_ids:
                self._cache.pop((tenant, snapshot_id), None)
                self._live.pop((tenant, snapshot_id), None)

    # --- heads -----------------------------------------------------------------------------

    def see_head(self, tenant: str, session_id: str, head: Head | None) -> None:
        """Remember (or, with None, forget) a session's head as last read or written."""
        key = (tenant, session_id)
        with self._lock:
            if head is None or self.settings.cache_size <= 0:
                self._heads.pop(key, None)
                return
            self._heads[key] = head
            self._heads.move_to_end(key)
            while len(self._heads) > self.settings.cache_size:
                self._heads.popitem(last=False)

    def known_head(self, tenant: str, session_id: str) -> Head | None:
        """The head as this store last read or wrote it, if it still remembers."""
        with self._lock:
            return self._heads.get((tenant, session_id))
