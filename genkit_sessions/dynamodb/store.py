"""The DynamoDB store: durable snapshot trees with diff storage, no size ceiling and atomic writes.

Key design and the write protocol are described in ``docs/dynamodb.md``; the
short version:

- a snapshot's own item (fetch by id; it also holds the blob it wrote, inline,
  when small), a head item per session (the leaf pointer, the leaf's recipe as
  a read hint, and the ids of the newest members; older ids move to member
  pages), and large blobs cut into parts, in the session's partition;
- each snapshot stores a delta from its parent; every ``checkpoint_every``
  deltas a page folds them, and every ``checkpoint_every`` pages a page of the
  next level folds those, so content is written at most three times and a
  read fetches few blobs;
- a new snapshot is one ``TransactWriteItems`` of two actions (its item, and
  the head compare-and-set); blobs too big for one transaction are written
  first under an orphan TTL, made permanent, and then committed by the
  transaction, so a committed part never expires.

boto3 blocks the calling thread. ``store.aio`` is the async face: it runs each
call on a bounded thread pool the store owns, so an event loop never blocks.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import functools
import logging
import os
import random
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from datetime import timedelta
from typing import Any, TypeVar

import attrs
from botocore.exceptions import ClientError  # type: ignore[import-untyped]

from genkit_sessions.dynamodb import _keys as keys
from genkit_sessions.dynamodb._codec import (
    CorruptData,
    Plan,
    Recipe,
    compress,
    decompress,
    fold,
    join_parts,
    pack_record,
    plan_state,
    split_parts,
    strict_equal,
    unpack_record,
)
from genkit_sessions.dynamodb._errors import BACKEND_ERRORS, cancellation_codes, error_code, map_error
from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.clock import Clock, MonotonicStamper, utc_now
from genkit_sessions.model.ids import validate_id
from genkit_sessions.model.types import Message, SessionSnapshot, SessionState, SnapshotStatus
from genkit_sessions.model.wire import from_wire, messages_from_wire, to_wire
from genkit_sessions.stores.protocol import Context, Mutator, TenantFn
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

__all__ = ["AsyncDynamoDBSessionStore", "DynamoDBSessionStore"]

_log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_TRANSACTION_ACTIONS = 100
MAX_TRANSACTION_BYTES = 4 * 1024 * 1024
MAX_BATCH_WRITE = 25
MAX_BATCH_GET = 100
_TRANSACTION_MARGIN = 256 * 1024
_RECORD_LIMIT = 150 * 1024
_INLINE_LIMIT = 160 * 1024


@attrs.frozen
class _Loaded:
    """A snapshot as stored: the model object, how its state is rebuilt, its TTL and item version."""

    snapshot: SessionSnapshot
    recipe: Recipe
    expires: int | None
    version: int
    statuses: tuple[str, ...] = ()
    """Every status the snapshot has had, oldest first (what ``watch_status`` replays)."""


@attrs.frozen
class _Head:
    """What this store last saw of a session's head: its version token (None: there was no head) and
    the member ids it holds (None: not known, after a write that appended without reading)."""

    version: str | None
    ids: tuple[str, ...] | None


def _head_of(item: dict[str, Any] | None) -> _Head:
    if item is None:
        return _Head(None, ())
    return _Head(item.get("hv", {}).get("S", ""), tuple(item.get("ids", {}).get("SS", ())))


_Member = tuple[dict[str, Any], "tuple[SessionSnapshot, Recipe] | GenkitError"]
"""A session member's snapshot item, with its envelope and recipe or the error decoding them."""


class _Contention(Exception):
    """A conditional write lost to a concurrent writer: read again and retry."""

    def __init__(self, head: _Head | None = None) -> None:
        super().__init__()
        self.head = head
        """When the race was for the session's head: the head as read after losing it."""


def item_size(item: dict[str, Any]) -> int:
    """DynamoDB's size of an item in bytes (attribute names plus values), rounded up slightly."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _value_size(value: dict[str, Any]) -> int:
    kind, inner = next(iter(value.items()))
    if kind == "S":
        return len(inner.encode())
    if kind == "B":
        return len(inner)
    if kind == "N":
        return len(inner) // 2 + 2
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(1 + _value_size(v) for v in inner)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + _value_size(v) for k, v in inner.items())
    return sum(len(str(v)) for v in inner)


class DynamoDBSessionStore:
    """A session store on one DynamoDB table, with every rule of the contract (S1-S12).

    ``client`` is a boto3 DynamoDB client; without one, a client is built from
    ``region_name`` / ``endpoint_url`` with botocore's ``standard`` retry mode
    (``retry_mode``, ``max_retries``), which retries throttling and transient
    errors with backoff before the store sees them.

    Options: ``tenant_of`` maps a request context to a tenant key (a key
    prefix); ``clock`` is the time source; ``checkpoint_every`` (5) is how many
    deltas a page folds, and how many pages a page of the next level folds
    (so pages hold 5 and 25 turns); ``ttl`` gives every item of a session tree one expiry,
    counted from its root snapshot; ``orphan_ttl`` (1 day) is the expiry of
    blob parts written ahead of a commit; ``max_attempts`` (8) bounds retries
    of a contended save before ABORTED; ``executor_workers`` (8) bounds the
    thread pool of the async face; ``watch_interval`` / ``watch_max_interval``
    set the polling of :meth:`watch_status`; ``head_ids`` (50) is how many
    member ids a session's head holds before they move to a member page (the
    head is rewritten by every new snapshot, so it stays a few KB).
    """

    def __init__(
        self,
        table_name: str,
        client: Any = None,
        *,
        region_name: str | None = None,
        endpoint_url: str | None = None,
        retry_mode: str = "standard",
        max_retries: int = 5,
        tenant_of: TenantFn = default_tenant,
        clock: Clock = utc_now,
        checkpoint_every: int = 5,
        ttl: timedelta | None = None,
        orphan_ttl: timedelta = timedelta(days=1),
        max_attempts: int = 8,
        chunk_bytes: int = 350_000,
        executor_workers: int = 8,
        watch_interval: float = 0.05,
        watch_max_interval: float = 2.0,
        cache_size: int = 64,
        head_ids: int = 50,
    ) -> None:
        if not table_name or not isinstance(table_name, str):
            raise GenkitError(Status.INVALID_ARGUMENT, "table_name must be a non-empty string naming the table")
        if checkpoint_every < 2:
            raise GenkitError(Status.INVALID_ARGUMENT, f"checkpoint_every must be at least 2, got {checkpoint_every}")
        if not 1_000 <= chunk_bytes <= 390_000:
            raise GenkitError(
                Status.INVALID_ARGUMENT, "chunk_bytes must be between 1000 and 390000 (items cap at 400 KB)"
            )
        if max_attempts < 1 or executor_workers < 1:
            raise GenkitError(Status.INVALID_ARGUMENT, "max_attempts and executor_workers must be at least 1")
        if not 1 <= head_ids <= 1000:
            raise GenkitError(Status.INVALID_ARGUMENT, f"head_ids must be between 1 and 1000, got {head_ids}")
        self.table_name = table_name
        self._client = (
            client if client is not None else build_client(region_name, endpoint_url, retry_mode, max_retries)
        )
        self._tenant_of = tenant_of
        self._clock = clock
        self._stamp = MonotonicStamper(clock)
        self._checkpoint_every = checkpoint_every
        self._ttl = ttl
        self._orphan_ttl = orphan_ttl
        self._max_attempts = max_attempts
        self._chunk_bytes = chunk_bytes
        self._watch_interval = watch_interval
        self._watch_max_interval = watch_max_interval
        self._cache_size = cache_size
        self._head_ids = head_ids
        self._cache: collections.OrderedDict[tuple[str, str], _Loaded] = collections.OrderedDict()
        self._heads: collections.OrderedDict[tuple[str, str], _Head] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._executor_workers = executor_workers
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._aio = AsyncDynamoDBSessionStore(self)

    # --- plumbing --------------------------------------------------------------------------

    @property
    def client(self) -> Any:
        """The boto3 client the store calls."""
        return self._client

    @property
    def aio(self) -> AsyncDynamoDBSessionStore:
        """The async face of this store (same data; calls run on the store's bounded thread pool)."""
        return self._aio

    def executor(self) -> concurrent.futures.ThreadPoolExecutor:
        """The bounded thread pool the async face runs boto3 calls on (created on first use)."""
        with self._lock:
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self._executor_workers, thread_name_prefix="genkit-sessions-dynamodb"
                )
            return self._executor

    def close(self) -> None:
        """Shut the async face's thread pool down (the boto3 client is the caller's to close)."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

    def __enter__(self) -> DynamoDBSessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, operation: str, **kwargs: Any) -> dict[str, Any]:
        method = getattr(self._client, _snake(operation))
        try:
            result: dict[str, Any] = (
                method(TableName=self.table_name, **kwargs) if _takes_table(operation) else method(**kwargs)
            )
        except BACKEND_ERRORS as exc:
            raise map_error(exc, operation, self.table_name) from exc
        return result

    def _now_epoch(self) -> int:
        return int(self._clock().timestamp())

    def _remember(self, tenant: str, loaded: _Loaded) -> None:
        """Keep a recently read or written snapshot: its state is immutable per recipe, so a later read
        with the same recipe, or a child's diff, can use it without fetching blobs."""
        if self._cache_size <= 0:
            return
        key = (tenant, loaded.snapshot.snapshot_id)
        with self._lock:
            self._cache[key] = loaded
            self._cache.move_to_end(key)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def _cached(self, tenant: str, snapshot_id: str) -> _Loaded | None:
        with self._lock:
            return self._cache.get((tenant, snapshot_id))

    def _recall(self, tenant: str, snapshot_id: str, recipe: Recipe) -> tuple[bool, SessionState | None]:
        hit = self._cached(tenant, snapshot_id)
        if hit is not None and hit.recipe == recipe:
            return True, hit.snapshot.state
        return False, None

    def _forget(self, tenant: str, snapshot_ids: Iterable[str]) -> None:
        with self._lock:
            for snapshot_id in snapshot_ids:
                self._cache.pop((tenant, snapshot_id), None)

    def _see_head(self, tenant: str, session_id: str, head: _Head | None) -> None:
        """Remember (or, with None, forget) what a session's head held when this store last read or wrote
        it: the next new snapshot conditions on exactly that version, with no read of its own."""
        key = (tenant, session_id)
        with self._lock:
            if head is None or self._cache_size <= 0:
                self._heads.pop(key, None)
                return
            self._heads[key] = head
            self._heads.move_to_end(key)
            while len(self._heads) > self._cache_size:
                self._heads.popitem(last=False)

    def _known_head(self, tenant: str, session_id: str) -> _Head | None:
        with self._lock:
            return self._heads.get((tenant, session_id))

    # --- reading ---------------------------------------------------------------------------

    def _get_item(self, key: dict[str, Any], projection: str | None = None) -> dict[str, Any] | None:
        kwargs: dict[str, Any] = {"Key": key, "ConsistentRead": True}
        if projection:
            kwargs["ProjectionExpression"] = projection
        item: dict[str, Any] | None = self._call("GetItem", **kwargs).get("Item")
        return item

    def _batch_get(
        self, key_list: Sequence[dict[str, Any]], projection: str | None = None
    ) -> dict[tuple[str, str], dict[str, Any]]:
        found: dict[tuple[str, str], dict[str, Any]] = {}
        pending = list({(k["pk"]["S"], k["sk"]["S"]): k for k in key_list}.values())
        delay = 0.02
        while pending:
            batch, pending = pending[:MAX_BATCH_GET], pending[MAX_BATCH_GET:]
            request: dict[str, Any] = {"Keys": batch, "ConsistentRead": True}
            if projection:
                request["ProjectionExpression"] = projection
            answer = self._call("BatchGetItem", RequestItems={self.table_name: request})
            for item in answer.get("Responses", {}).get(self.table_name, []):
                found[(item["pk"]["S"], item["sk"]["S"])] = item
            unprocessed = answer.get("UnprocessedKeys", {}).get(self.table_name, {}).get("Keys", [])
            if unprocessed:
                pending = list(unprocessed) + pending
                time.sleep(random.uniform(0, delay))
                delay = min(delay * 2, 1.0)
        return found

    def _decode_item(self, tenant: str, item: dict[str, Any], snapshot_id: str) -> tuple[SessionSnapshot, Recipe]:
        """The envelope (snapshot without state) and recipe stored on a snapshot item."""
        try:
            data = bytes(item["u"]["B"]) if "u" in item else unpack_record(bytes(item["rec"]["B"]))[0]
            record = decompress(data)
            envelope = from_wire(SessionSnapshot, record["e"])
            recipe = Recipe.from_json(record["r"])
        except (CorruptData, KeyError, TypeError) as exc:
            raise self._data_loss(snapshot_id, str(exc)) from None
        except GenkitError as exc:
            raise self._data_loss(snapshot_id, exc.message) from None
        return envelope, recipe

    def _data_loss(self, snapshot_id: str, problem: str) -> GenkitError:
        return GenkitError(
            Status.DATA_LOSS,
            f"stored data of snapshot {snapshot_id!r} in DynamoDB table {self.table_name!r} cannot be decoded "
            f"({problem}); restore the session from a backup or delete it",
        )

    def _load(
        self,
        tenant: str,
        item: dict[str, Any],
        snapshot_id: str,
        prefetched: dict[tuple[str, str], dict[str, Any]] | None = None,
    ) -> _Loaded:
        envelope, recipe = self._decode_item(tenant, item, snapshot_id)
        hit, state = self._recall(tenant, snapshot_id, recipe)
        if not hit:
            session_id = envelope.session_id or ""
            state = self._rebuild(tenant, session_id, snapshot_id, recipe, prefetched or {})
        expires = int(item["exp"]["N"]) if "exp" in item else None
        version = int(item["v"]["N"]) if "v" in item else 1
        loaded = _Loaded(attrs.evolve(envelope, state=state), recipe, expires, version, _status_history(item))
        self._remember(tenant, loaded)
        return loaded

    def _part_keys(self, tenant: str, session_id: str, recipe: Recipe) -> list[dict[str, Any]]:
        """The items a recipe reads: part items, and the snapshot items that hold inline blobs."""
        wanted: list[dict[str, Any]] = []
        for name, count in recipe.refs:
            if count == 0:
                wanted.append(keys.snapshot_key(tenant, keys.blob_owner(name)))
            else:
                wanted += [keys.blob_part_key(tenant, session_id, name, part) for part in range(count)]
        return wanted

    def _rebuild(
        self,
        tenant: str,
        session_id: str,
        snapshot_id: str,
        recipe: Recipe,
        prefetched: dict[tuple[str, str], dict[str, Any]],
        memo: dict[str, tuple[Message, ...]] | None = None,
    ) -> SessionState | None:
        wanted = self._part_keys(tenant, session_id, recipe)
        missing = [k for k in wanted if (k["pk"]["S"], k["sk"]["S"]) not in prefetched]
        found = dict(prefetched)
        if missing:
            found.update(self._batch_get(missing))
        payloads: list[Any] = []
        for name, count in recipe.refs:
            chunks: list[bytes] = []
            if count == 0:
                key = keys.snapshot_key(tenant, keys.blob_owner(name))
                row = found.get((key["pk"]["S"], key["sk"]["S"]))
                tag, inline = None, None
                if row is not None and "rec" in row:
                    try:
                        _, tag, inline = unpack_record(bytes(row["rec"]["B"]))
                    except CorruptData as exc:
                        raise self._data_loss(snapshot_id, str(exc)) from None
                if inline is None or tag != keys.blob_tag(name):
                    raise self._data_loss(snapshot_id, f"inline blob {name!r} is missing")
                chunks.append(inline)
            for part in range(count):
                key = keys.blob_part_key(tenant, session_id, name, part)
                part_item = found.get((key["pk"]["S"], key["sk"]["S"]))
                if part_item is None or "d" not in part_item:
                    raise self._data_loss(snapshot_id, f"blob part {part} of {count} is missing")
                chunks.append(bytes(part_item["d"]["B"]))
            try:
                payloads.append(decompress(join_parts(chunks)))
            except CorruptData as exc:
                raise self._data_loss(snapshot_id, str(exc)) from None
        names = [name for name, _ in recipe.refs]

        def decode(index: int, wire: Any) -> tuple[Message, ...]:
            if memo is not None and names[index] in memo:
                return memo[names[index]]
            if not isinstance(wire, list):
                raise CorruptData("a message list is not an array")
            messages = messages_from_wire(wire)
            if memo is not None:
                memo[names[index]] = messages
            return messages

        try:
            return fold(payloads, decode)
        except CorruptData as exc:
            raise self._data_loss(snapshot_id, str(exc)) from None
        except GenkitError as exc:
            raise self._data_loss(snapshot_id, exc.message) from None

    def _read_by_id(self, tenant: str, snapshot_id: str) -> _Loaded | None:
        key = keys.snapshot_key(tenant, snapshot_id)
        item = self._get_item(key)
        if item is None:
            return None
        return self._load(tenant, item, snapshot_id, {(key["pk"]["S"], key["sk"]["S"]): item})

    def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        """A snapshot by id, or a session's leaf (the most recently created snapshot without children).

        Strongly consistent, and at most two DynamoDB calls (GetItem, then one
        BatchGetItem of the state's blobs) for any history length and state size
        up to 100 blob parts (about 35 MB compressed).
        """
        require_one_selector(snapshot_id, session_id)
        tenant = tenant_key(self._tenant_of, context)
        if snapshot_id is not None:
            loaded = self._read_by_id(tenant, snapshot_id)
            return loaded.snapshot if loaded is not None else None
        assert session_id is not None
        head = self._get_item(keys.head_key(tenant, session_id))
        self._see_head(tenant, session_id, _head_of(head))
        if head is None:
            return None
        if "leaf" not in head:
            if "cyc" in head:
                raise GenkitError(
                    Status.DATA_LOSS,
                    f"session {session_id!r} holds {head['cyc']['N']} snapshot(s) but none is a leaf: its parent "
                    "chain is cyclic; resume a snapshot by id, or delete and restore the session",
                )
            return None
        leaf = head["leaf"]["S"]
        hint: Recipe | None = None
        if "rc" in head:
            try:
                hint = Recipe.from_json(decompress(head["rc"]["B"]))
            except CorruptData:
                hint = None
        wanted = [keys.snapshot_key(tenant, leaf)]
        if hint is not None and not self._recall(tenant, leaf, hint)[0]:
            wanted += self._part_keys(tenant, session_id, hint)
        found = self._batch_get(wanted)
        snapshot_item = found.get((wanted[0]["pk"]["S"], wanted[0]["sk"]["S"]))
        if snapshot_item is None:
            return None  # the session is being deleted
        return self._load(tenant, snapshot_item, leaf, found).snapshot

    # --- writing ---------------------------------------------------------------------------

    def _blob(self, snapshot_id: str, plan: Plan) -> tuple[str, list[bytes]]:
        tag = ("c" if plan.is_page else "d") + os.urandom(6).hex()
        return keys.blob_name(snapshot_id, tag), split_parts(compress(plan.payload), self._chunk_bytes)

    def _record(self, snapshot: SessionSnapshot, recipe: Recipe) -> bytes:
        envelope = to_wire(attrs.evolve(snapshot, state=None))
        record = compress({"e": envelope, "r": recipe.to_json()})
        if len(record) > _RECORD_LIMIT:
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"snapshot {snapshot.snapshot_id!r}: everything but its state takes {len(record)} bytes compressed; "
                f"the DynamoDB store keeps that under {_RECORD_LIMIT} bytes: move large data into the state",
            )
        return record

    @staticmethod
    def _record_attributes(record: bytes, expires: int | None) -> dict[str, Any]:
        """The record a snapshot item carries (envelope and recipe, packed with the blob the snapshot
        wrote when that is small), with the session's expiry. An update writes its record as ``u``,
        which readers take over ``rec``: the blob in ``rec`` stays, for the snapshot's children."""
        item: dict[str, Any] = {"rec": {"B": record}}
        if expires is not None:
            item["exp"] = {"N": str(expires)}
        return item

    @staticmethod
    def _status_attribute(snapshot: SessionSnapshot, before: tuple[str, ...] = ()) -> dict[str, Any]:
        """The status a snapshot item carries in the clear (``st``) and, once it has changed, every status
        it has had (``sh``), for the projection watch_status polls: a watcher that polls between two
        changes still sees both.

        Attributes are sparse: a snapshot that has only ever been ``completed`` (most of a
        session's history) carries neither, as an item never updated carries no version ``v``.
        Every read returns fewer attribute values, and every write sends fewer bytes.
        """
        status = snapshot.effective_status.value
        history = before if before and before[-1] == status else (*before, status)
        if history == (SnapshotStatus.COMPLETED.value,):
            return {}
        attributes: dict[str, Any] = {"st": {"S": status}}
        if len(history) > 1:
            attributes["sh"] = {"L": [{"S": s} for s in history]}
        return attributes

    def _part_items(
        self, tenant: str, session_id: str, name: str, parts: list[bytes], expires: int | None
    ) -> list[dict[str, Any]]:
        items = []
        for index, data in enumerate(parts):
            item: dict[str, Any] = {**keys.blob_part_key(tenant, session_id, name, index), "d": {"B": data}}
            if expires is not None:
                item["exp"] = {"N": str(expires)}
            items.append(item)
        return items

    def save_snapshot(self, snapshot_id: str, mutator: Mutator, *, context: Context = None) -> SessionSnapshot | None:
        """Atomically apply ``mutator`` to the snapshot ``snapshot_id`` and store the result.

        An optimistic read-modify-write on conditional writes. The first attempt
        runs the mutator on what this store last read or wrote under that id
        (nothing, for an id it has never seen, such as a turn's new snapshot) and
        writes on the condition that this is still what is stored; when the
        mutator declines or raises on that guess, it reads instead. So,
        uncontended, a new snapshot whose parent this store read or wrote
        recently costs one TransactWriteItems, and finishing a pending turn this
        store saved costs one UpdateItem. A lost race re-reads and re-runs the
        mutator, up to ``max_attempts`` times with jittered backoff, then raises
        ABORTED.
        """
        validate_id(snapshot_id, "snapshot_id", Reason.INVALID_SNAPSHOT_ID)
        tenant = tenant_key(self._tenant_of, context)
        seen_head: _Head | None = None  # the head this save read after losing a race for it
        for attempt in range(self._max_attempts):
            if attempt > 1:
                time.sleep(random.uniform(0, min(0.5, 0.01 * 2**attempt)))
            existing, snapshot = self._guess(tenant, snapshot_id, mutator) if attempt == 0 else (None, None)
            if snapshot is None:
                existing = self._read_by_id(tenant, snapshot_id)
                snapshot = next_snapshot(
                    snapshot_id, existing.snapshot if existing is not None else None, mutator, self._stamp()
                )
            if snapshot is None:
                return None
            try:
                if existing is None:
                    self._create(tenant, snapshot, seen_head)
                else:
                    self._update(tenant, snapshot, existing)
            except _Contention as contention:
                seen_head = contention.head or seen_head
                continue
            return snapshot
        raise GenkitError(
            Status.ABORTED,
            f"snapshot {snapshot_id!r}: {self._max_attempts} attempts in a row lost to concurrent writers "
            f"on DynamoDB table {self.table_name!r}; retry the save later",
        )

    def _guess(self, tenant: str, snapshot_id: str, mutator: Mutator) -> tuple[_Loaded | None, SessionSnapshot | None]:
        """Run the mutator on the cached snapshot (or on nothing for an id not in the cache).

        Returns what to write, or no snapshot when the mutator declined or raised on the
        guess: the caller then reads the table and runs it again on what is really there.
        The write of a guess is conditioned on it, so a wrong guess never lands.
        """
        guess = self._cached(tenant, snapshot_id)
        try:
            snapshot = next_snapshot(snapshot_id, guess.snapshot if guess is not None else None, mutator, self._stamp())
        except Exception:  # judged again on a real read, where it may well raise for good
            return guess, None
        return guess, snapshot

    def _parent(self, tenant: str, snapshot: SessionSnapshot, *, fresh: bool = False) -> _Loaded | None:
        """The parent of a new snapshot: from the cache when this store read or wrote it recently (the
        transaction re-checks that its session still has a head), else from the table."""
        assert snapshot.parent_id is not None
        cached = None if fresh else self._cached(tenant, snapshot.parent_id)
        return cached if cached is not None else self._read_by_id(tenant, snapshot.parent_id)

    def _head_write(
        self,
        tenant: str,
        snapshot: SessionSnapshot,
        recipe: Recipe,
        expires: int | None,
        known: _Head | None,
        lost_head_race: bool,
    ) -> tuple[list[dict[str, Any]], _Head]:
        """The actions that make a new snapshot its session's leaf, and the head they leave.

        The head is the commit's arbiter. When this store knows the head (it read or
        wrote it last), the write replaces it on the condition that it is still
        exactly that version (or, when there was none, that there still is none)
        and, until this save has lost a race for the head, that it does not move
        back in time (after one, the exact version alone decides, so clock skew
        between writers cannot starve one).
        The new id joins the head's ids; when the head already holds ``head_ids`` of
        them, they move to a new member page in the same transaction. Otherwise
        the write is an update that must not move the head back in time
        (``lc < createdAt``), that, for a child, needs the head to exist
        (``delete_session`` removes it first, so a child cannot land in a session
        being deleted), and that adds the id only while the head has room; a
        refusal reads the head, and the next attempt knows it.
        """
        session_id = snapshot.session_id
        assert session_id is not None
        snapshot_id = snapshot.snapshot_id
        version = os.urandom(8).hex()
        head_key = keys.head_key(tenant, session_id)
        fields: dict[str, Any] = {
            "leaf": {"S": snapshot_id},
            "lc": {"S": snapshot.created_at},
            "rc": {"B": compress(recipe.to_json())},
            "hv": {"S": version},
        }
        if expires is not None:
            fields["exp"] = {"N": str(expires)}
        if known is not None and known.ids is not None and (known.version is not None or snapshot.parent_id is None):
            actions: list[dict[str, Any]] = []
            ids = (*known.ids, snapshot_id)
            if len(known.ids) >= self._head_ids:
                page = {**keys.page_key(tenant, session_id, version), "ids": _id_list(known.ids)}
                if expires is not None:
                    page["exp"] = fields["exp"]
                actions.append(_put(self.table_name, page, "attribute_not_exists(pk)"))
                ids = (snapshot_id,)
            head = {**head_key, **fields, "ids": _id_list(ids)}
            if known.version is None:
                put = _put(self.table_name, head, "attribute_not_exists(pk)")
            else:
                values = {":hv": {"S": known.version}}
                condition = "hv = :hv"
                if not lost_head_race:
                    condition += " AND lc < :lc"
                    values[":lc"] = fields["lc"]
                put = _put(self.table_name, head, condition, values)
            return [put, *actions], _Head(version, ids)
        values = {f":new_{name}": value for name, value in fields.items()}  # ":hv" is the version seen
        values[":ids"] = _id_list([snapshot_id])
        values[":k"] = {"N": str(self._head_ids)}
        room = "(attribute_not_exists(ids) OR size(ids) < :k)"
        if known is not None and known.version is not None:
            condition = "hv = :hv AND " + room + ("" if lost_head_race else " AND lc < :new_lc")
            values[":hv"] = {"S": known.version}
        elif snapshot.parent_id is not None:
            condition = "attribute_exists(pk) AND lc < :new_lc AND " + room
        else:
            condition = "attribute_not_exists(pk) OR (lc < :new_lc AND " + room + ")"
        update = {
            "Update": {
                "TableName": self.table_name,
                "Key": head_key,
                "UpdateExpression": "SET " + ", ".join(f"{name} = :new_{name}" for name in fields) + " ADD ids :ids",
                "ConditionExpression": condition,
                "ExpressionAttributeValues": values,
            }
        }
        return [update], _Head(version, None)

    def _create(self, tenant: str, snapshot: SessionSnapshot, seen_head: _Head | None) -> None:
        """Create a snapshot. ``seen_head`` is the head this save read after losing a race for it: the
        commit is then conditioned on exactly that version (the store's shared memory of the head may
        be newer than this attempt's createdAt stamp, the head this save read is not)."""
        session_id = snapshot.session_id
        assert session_id is not None
        snapshot_id = snapshot.snapshot_id
        parent: _Loaded | None = None
        parent_state: SessionState | None = None
        parent_recipe: Recipe | None = None
        if snapshot.parent_id is not None:
            parent = self._parent(tenant, snapshot)
            check_parent(snapshot, parent.snapshot if parent is not None else None)
            assert parent is not None
            parent_state, parent_recipe = parent.snapshot.state, parent.recipe
        expires = parent.expires if parent is not None and parent.expires is not None else None
        if expires is None and self._ttl is not None:
            expires = self._now_epoch() + int(self._ttl.total_seconds())
        plan = plan_state(parent_state, parent_recipe, snapshot.state, self._checkpoint_every)
        name, parts = self._blob(snapshot_id, plan)
        inline = len(parts) == 1 and len(parts[0]) <= _INLINE_LIMIT
        recipe = plan.recipe(name, 0 if inline else len(parts))
        record = self._record(snapshot, recipe)
        if inline:
            record = pack_record(record, keys.blob_tag(name), parts[0])
        item = {
            **keys.snapshot_key(tenant, snapshot_id),
            **self._record_attributes(record, expires),
            **self._status_attribute(snapshot),
        }
        head_actions, head_after = self._head_write(
            tenant,
            snapshot,
            recipe,
            expires,
            seen_head or self._known_head(tenant, session_id),
            lost_head_race=seen_head is not None,
        )
        actions = [_put(self.table_name, item, "attribute_not_exists(pk)"), *head_actions]
        part_items = [] if inline else self._part_items(tenant, session_id, name, parts, expires)
        try:
            self._commit(actions, part_items, expires)
        except _Cancelled as cancelled:
            lost: _Head | None = None
            if not cancelled.failed(0):  # a newer leaf landed first, or the session is gone: read its head
                current = self._get_item(keys.head_key(tenant, session_id), "hv, ids")
                lost = _head_of(current)
                self._see_head(tenant, session_id, lost)
                if current is None and snapshot.parent_id is not None:  # judge S7 on a fresh read of the parent
                    self._forget(tenant, [snapshot.parent_id])
                    fresh = self._parent(tenant, snapshot, fresh=True)
                    check_parent(snapshot, fresh.snapshot if fresh is not None else None)
                    raise GenkitError(
                        Status.FAILED_PRECONDITION,
                        f"session {session_id!r} has no head: it is being deleted, or a deletion stopped part-way; "
                        "run delete_session again, or restore the session, before adding to it",
                    ) from None
            raise _Contention(lost) from None
        except GenkitError:
            self._see_head(tenant, session_id, None)  # the outcome may be unknown: read the head next time
            raise
        self._see_head(tenant, session_id, head_after)
        self._remember(tenant, _Loaded(snapshot, recipe, expires, 1, (snapshot.effective_status.value,)))

    def _update(self, tenant: str, snapshot: SessionSnapshot, existing: _Loaded) -> None:
        session_id = snapshot.session_id
        assert session_id is not None
        snapshot_id = snapshot.snapshot_id
        before = existing.snapshot.state
        changed = not (
            before is snapshot.state
            or (
                before is not None
                and snapshot.state is not None
                and strict_equal(to_wire(before), to_wire(snapshot.state))
            )
        )
        recipe = existing.recipe
        parts: list[dict[str, Any]] = []
        if changed:
            plan = plan_state(before, existing.recipe, snapshot.state, self._checkpoint_every)
            name, chunks = self._blob(snapshot_id, plan)
            recipe = plan.recipe(name, len(chunks))
            parts = self._part_items(tenant, session_id, name, chunks, existing.expires)
        # An update, not a put: the blob this snapshot wrote inline at its creation stays, for its children.
        status = self._status_attribute(snapshot, existing.statuses)
        values: dict[str, Any] = {
            ":rec": {"B": self._record(snapshot, recipe)},
            ":nv": {"N": str(existing.version + 1)},
            **{f":{name}": value for name, value in status.items()},
        }
        if existing.version > 1:
            values[":v"] = {"N": str(existing.version)}
        update = {
            "Update": {
                "TableName": self.table_name,
                "Key": keys.snapshot_key(tenant, snapshot_id),
                "UpdateExpression": "SET " + ", ".join(["u = :rec", "v = :nv", *(f"{n} = :{n}" for n in status)]),
                "ConditionExpression": "v = :v" if existing.version > 1 else "attribute_not_exists(v)",
                "ExpressionAttributeValues": values,
            }
        }
        try:
            self._commit([update], parts, existing.expires)
        except _Cancelled:
            raise _Contention() from None
        statuses = _status_history(status)
        self._remember(tenant, _Loaded(snapshot, recipe, existing.expires, existing.version + 1, statuses))
        if changed:  # keep the head's read hint current when this snapshot is the leaf (best effort)
            try:
                self._client.update_item(
                    TableName=self.table_name,
                    Key=keys.head_key(tenant, session_id),
                    UpdateExpression="SET rc = :rc",
                    ConditionExpression="leaf = :leaf",
                    ExpressionAttributeValues={":rc": {"B": compress(recipe.to_json())}, ":leaf": {"S": snapshot_id}},
                )
            except BACKEND_ERRORS as exc:
                if error_code(exc) != "ConditionalCheckFailedException":
                    _log.info("could not refresh the read hint of session %r: %s", session_id, exc)

    def _commit(self, actions: list[dict[str, Any]], parts: list[dict[str, Any]], expires: int | None) -> None:
        """Write ``parts`` and commit ``actions`` atomically, staging parts when one transaction cannot hold them.

        A lone action with no parts is a single conditional write, atomic on its own."""
        if len(actions) == 1 and not parts:
            self._write_one(actions[0])
            return
        size = sum(_action_size(a) for a in actions)
        part_bytes = sum(item_size(p) for p in parts)
        if (
            len(actions) + len(parts) <= MAX_TRANSACTION_ACTIONS
            and size + part_bytes <= MAX_TRANSACTION_BYTES - _TRANSACTION_MARGIN
        ):
            self._transact(actions + [{"Put": {"TableName": self.table_name, "Item": p}} for p in parts])
            return
        # Stage. 1: the parts, referenced by nothing and expiring, so a crash leaves orphans that TTL removes.
        # 2: lift their expiry, so no part a commit references can ever expire. 3: the commit.
        orphan_expiry = {"N": str(self._now_epoch() + int(self._orphan_ttl.total_seconds()))}
        staged = [{**p, "exp": orphan_expiry, "stg": {"BOOL": True}} for p in parts]
        self._batch_write([{"PutRequest": {"Item": p}} for p in staged])
        try:
            self._make_permanent(staged, expires)
        except GenkitError:  # the commit was not attempted: nothing references the parts
            self._discard(staged)
            raise
        try:
            self._transact(actions)
        except (_Cancelled, GenkitError) as exc:
            if _definitely_not_applied(exc):  # nothing references the parts: take them back
                self._discard(staged)
            raise

    def _write_one(self, action: dict[str, Any]) -> None:
        """One transaction action as a single conditional write (a refused condition is a lost race)."""
        kind, request = next(iter(action.items()))
        operation = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem"}[kind]
        try:
            getattr(self._client, _snake(operation))(**request)
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                raise _Cancelled(["ConditionalCheckFailed"]) from exc
            raise map_error(exc, operation, self.table_name) from exc
        except BACKEND_ERRORS as exc:
            raise map_error(exc, operation, self.table_name) from exc

    def _make_permanent(self, parts: list[dict[str, Any]], expires: int | None) -> None:
        """Lift the orphan expiry of staged parts before the commit that references them (the store's own
        TTL, when it has one, replaces it)."""
        for part in parts:
            update: dict[str, Any] = {"Key": {"pk": part["pk"], "sk": part["sk"]}}
            if expires is not None:
                update["UpdateExpression"] = "SET exp = :exp REMOVE stg"
                update["ExpressionAttributeValues"] = {":exp": {"N": str(expires)}}
            else:
                update["UpdateExpression"] = "REMOVE exp, stg"
            self._call("UpdateItem", ConditionExpression="attribute_exists(pk)", **update)

    def _discard(self, parts: list[dict[str, Any]]) -> None:
        """Best effort: delete staged parts whose commit did not happen. One that stays is unreferenced
        (no read sees it) and goes with ``delete_session``."""
        try:
            self._batch_write([{"DeleteRequest": {"Key": {"pk": p["pk"], "sk": p["sk"]}}} for p in parts])
        except GenkitError as exc:
            _log.warning(
                "could not delete %d uncommitted blob parts (%s); delete_session removes them", len(parts), exc
            )

    def _transact(self, actions: list[dict[str, Any]]) -> None:
        try:
            self._client.transact_write_items(TransactItems=actions)
        except ClientError as exc:
            code = error_code(exc)
            if code == "TransactionCanceledException":
                codes = cancellation_codes(exc)
                if any(
                    c
                    in (
                        "ThrottlingError",
                        "ProvisionedThroughputExceeded",
                        "ValidationError",
                        "ItemCollectionSizeLimitExceeded",
                    )
                    for c in codes
                ):
                    raise map_error(exc, "TransactWriteItems", self.table_name) from exc
                raise _Cancelled(codes) from exc
            if code in ("TransactionConflictException", "TransactionInProgressException"):
                raise _Cancelled([]) from exc
            raise map_error(exc, "TransactWriteItems", self.table_name) from exc
        except BACKEND_ERRORS as exc:
            raise map_error(exc, "TransactWriteItems", self.table_name) from exc

    def _batch_write(self, requests: list[dict[str, Any]]) -> None:
        delay = 0.02
        pending = list(requests)
        while pending:
            batch, pending = pending[:MAX_BATCH_WRITE], pending[MAX_BATCH_WRITE:]
            answer = self._call("BatchWriteItem", RequestItems={self.table_name: batch})
            unprocessed = answer.get("UnprocessedItems", {}).get(self.table_name, [])
            if unprocessed:
                pending = list(unprocessed) + pending
                time.sleep(random.uniform(0, delay))
                delay = min(delay * 2, 1.0)

    # --- S11 extras ------------------------------------------------------------------------

    def _query_session(self, tenant: str, session_id: str, *, projection: str | None = None) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": keys.session_pk(tenant, session_id)},
            "ConsistentRead": True,
        }
        if projection:
            kwargs["ProjectionExpression"] = projection
        while True:
            page = self._call("Query", **kwargs)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return items
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _members(self, tenant: str, session_id: str, ids: Iterable[str]) -> dict[str, _Member]:
        """The snapshot items of ids a session's head and member pages name, by id, each decoded once,
        keeping only those that still belong to the session (a restore may have moved one elsewhere).
        An item whose stored data does not decode stays, with its DATA_LOSS error: the session lists it."""
        ids = list(ids)
        found = self._batch_get([keys.snapshot_key(tenant, i) for i in ids])
        members: dict[str, _Member] = {}
        for snapshot_id in ids:
            key = keys.snapshot_key(tenant, snapshot_id)
            item = found.get((key["pk"]["S"], key["sk"]["S"]))
            if item is None:
                continue
            try:
                decoded: tuple[SessionSnapshot, Recipe] | GenkitError = self._decode_item(tenant, item, snapshot_id)
            except GenkitError as exc:
                decoded = exc
            if isinstance(decoded, GenkitError) or decoded[0].session_id == session_id:
                members[snapshot_id] = (item, decoded)
        return members

    def list_snapshots(self, session_id: str, *, context: Context = None) -> Sequence[SessionSnapshot]:
        """Every snapshot of the session in creation order.

        One strongly consistent, paginated Query of the session's partition (its
        head, member pages and blob parts), then strongly consistent BatchGetItems
        of the snapshot items it names, 100 per call.
        """
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        tenant = tenant_key(self._tenant_of, context)
        rows = self._query_session(tenant, session_id)
        members = self._members(tenant, session_id, _member_ids(rows))
        by_key = {(i["pk"]["S"], i["sk"]["S"]): i for i in [*rows, *(item for item, _ in members.values())]}
        memo: dict[str, tuple[Message, ...]] = {}
        found: list[SessionSnapshot] = []
        for snapshot_id, (_, decoded) in members.items():
            if isinstance(decoded, GenkitError):
                raise decoded
            envelope, recipe = decoded
            hit, state = self._recall(tenant, snapshot_id, recipe)
            if not hit:
                state = self._rebuild(tenant, session_id, snapshot_id, recipe, by_key, memo)
            found.append(attrs.evolve(envelope, state=state))
        found.sort(key=lambda s: (s.created_at, s.snapshot_id))
        return found

    def delete_session(self, session_id: str, *, context: Context = None) -> int:
        """Delete every item of the session (snapshots, member pages, blobs, head); returns how many
        snapshots went.

        The head, which lists the session, goes last, on the condition that it is
        still the version this round read: a writer that added a snapshot in
        between makes another round delete that one too (up to 3 rounds, then
        ABORTED), and once the head is gone no child can land (a child needs the
        head). Not atomic: a failure part-way leaves the session partly deleted,
        with its head still listing what is left, and running it again finishes
        the job.
        """
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        tenant = tenant_key(self._tenant_of, context)
        deleted: set[str] = set()
        for _ in range(3):
            rows = self._query_session(tenant, session_id)
            if not rows:
                break
            members = list(self._members(tenant, session_id, _member_ids(rows)))
            # Snapshot items first, then the pages and parts, then the head: until the end, what is
            # left is still listed.
            self._batch_write([{"DeleteRequest": {"Key": keys.snapshot_key(tenant, s)}} for s in members])
            deleted.update(members)
            self._forget(tenant, members)
            self._batch_write(
                [
                    {"DeleteRequest": {"Key": {"pk": r["pk"], "sk": r["sk"]}}}
                    for r in rows
                    if r["sk"]["S"] != keys.HEAD_SK
                ]
            )
            head = next((r for r in rows if r["sk"]["S"] == keys.HEAD_SK), None)
            if head is None:
                break
            try:
                self._write_one(
                    {
                        "Delete": {
                            "TableName": self.table_name,
                            "Key": keys.head_key(tenant, session_id),
                            "ConditionExpression": "hv = :hv",
                            "ExpressionAttributeValues": {":hv": head.get("hv", {"S": ""})},
                        }
                    }
                )
            except _Cancelled:
                continue  # a writer moved the head since this round read it: delete what it added
            break
        else:
            raise GenkitError(
                Status.ABORTED,
                f"session {session_id!r} kept changing under concurrent writers through 3 rounds of deletion "
                f"on DynamoDB table {self.table_name!r} ({len(deleted)} snapshot(s) deleted so far); "
                "stop its writers, then delete it again",
            )
        self._see_head(tenant, session_id, None)
        return len(deleted)

    def abort_snapshot(self, snapshot_id: str, *, context: Context = None) -> SnapshotStatus | None:
        """Flip pending or aborting to aborted in one conditional write; return the status seen before."""
        return abort_through(functools.partial(self.save_snapshot, context=context), snapshot_id)

    def heartbeat(self, snapshot_id: str, *, context: Context = None) -> SessionSnapshot:
        """Stamp ``heartbeatAt`` on a running (pending or aborting) snapshot."""
        return heartbeat_through(functools.partial(self.save_snapshot, context=context), snapshot_id, self._stamp())

    def _statuses(self, tenant: str, snapshot_id: str) -> list[SnapshotStatus] | None:
        """Every status the snapshot has had, oldest first; None when it does not exist."""
        item = self._get_item(keys.snapshot_key(tenant, snapshot_id), "pk, st, sh")  # pk: never an empty answer
        if item is None:
            return None
        names = _status_history(item) or (SnapshotStatus.COMPLETED.value,)
        try:
            return [SnapshotStatus(name) for name in names]
        except ValueError:
            raise self._data_loss(snapshot_id, f"unknown status in {list(names)!r}") from None

    async def watch_status(self, snapshot_id: str, *, context: Context = None) -> AsyncIterator[SnapshotStatus]:
        """Yield the current status, then every change, ending after a terminal status.

        Polls a status-only projection of the snapshot's item (strongly
        consistent GetItem on the store's thread pool), backing off from
        ``watch_interval`` to ``watch_max_interval`` while nothing changes.
        """
        validate_id(snapshot_id, "snapshot_id", Reason.INVALID_SNAPSHOT_ID)
        tenant = tenant_key(self._tenant_of, context)
        loop = asyncio.get_running_loop()
        poll = functools.partial(self._statuses, tenant, snapshot_id)
        history = await loop.run_in_executor(self.executor(), poll)
        if history is None:
            raise GenkitError(
                Status.NOT_FOUND,
                f"snapshot {snapshot_id!r} does not exist; watch a snapshot after it is saved",
                reason=Reason.SNAPSHOT_NOT_FOUND,
            )
        status = history[-1]
        yield status
        seen = len(history)
        delay = self._watch_interval
        while not status.is_terminal:
            await asyncio.sleep(delay)
            history = await loop.run_in_executor(self.executor(), poll)
            if history is None:
                raise GenkitError(
                    Status.NOT_FOUND,
                    f"snapshot {snapshot_id!r} was deleted while being watched",
                    reason=Reason.SNAPSHOT_NOT_FOUND,
                )
            if len(history) > seen:  # every change since the last poll, in order
                for status in history[seen:]:
                    yield status
                    if status.is_terminal:
                        return
                seen = len(history)
                delay = self._watch_interval
            else:
                delay = min(delay * 2, self._watch_max_interval)

    def restore_snapshots(self, snapshots: Iterable[SessionSnapshot], *, context: Context = None) -> int:
        """Store snapshots verbatim, as an import or a test fixture would.

        No stamping and no rule checks: broken or cyclic parent chains are kept
        as given (the resolver reports them as DATA_LOSS). Each state is stored
        whole; each touched session's leaf is recomputed as its most recently
        created snapshot without children. Every snapshot is checked before
        anything is written; the writes then go out in batches of 25, so a
        backend failure part-way leaves some written: the restore is idempotent,
        so running it again completes it.
        """
        tenant = tenant_key(self._tenant_of, context)
        expires = self._now_epoch() + int(self._ttl.total_seconds()) if self._ttl is not None else None
        requests: list[dict[str, Any]] = []
        added: dict[str, list[str]] = {}
        touched: set[str] = set()
        count = 0
        for snapshot, session_id in [restorable(snapshot) for snapshot in snapshots]:
            previous = self._get_item(keys.snapshot_key(tenant, snapshot.snapshot_id))
            old_session = self._session_of_item(tenant, previous, snapshot.snapshot_id)
            if old_session is not None and old_session != session_id:
                touched.add(old_session)
            version = int(previous["v"]["N"]) + 1 if previous is not None and "v" in previous else 1
            plan = plan_state(None, None, snapshot.state, self._checkpoint_every)
            name, chunks = self._blob(snapshot.snapshot_id, plan)
            recipe = plan.recipe(name, len(chunks))
            requests += [
                {"PutRequest": {"Item": p}} for p in self._part_items(tenant, session_id, name, chunks, expires)
            ]
            item = {
                **keys.snapshot_key(tenant, snapshot.snapshot_id),
                **self._record_attributes(self._record(snapshot, recipe), expires),
                **self._status_attribute(snapshot),
                **({"v": {"N": str(version)}} if version > 1 else {}),
            }
            if previous is not None and "rec" in previous:  # it may hold the inline blob children read
                item["u"], item["rec"] = item["rec"], previous["rec"]
            requests.append({"PutRequest": {"Item": item}})
            touched.add(session_id)
            added.setdefault(session_id, []).append(snapshot.snapshot_id)
            count += 1
            if len(requests) >= MAX_BATCH_WRITE * 4:
                self._batch_write(_dedupe(requests))
                requests = []
        self._batch_write(_dedupe(requests))
        self._forget(tenant, [i for ids in added.values() for i in ids])
        for session_id in sorted(touched):
            self._recompute_head(tenant, session_id, added.get(session_id, []))
        return count

    def _session_of_item(self, tenant: str, item: dict[str, Any] | None, snapshot_id: str) -> str | None:
        if item is None:
            return None
        try:
            return self._decode_item(tenant, item, snapshot_id)[0].session_id
        except GenkitError:  # restoring over corrupt data replaces it
            return None

    def _recompute_head(self, tenant: str, session_id: str, added: list[str]) -> None:
        """Rewrite a session's head and member pages from its snapshot items (after a restore): the leaf
        is the most recently created snapshot without children. New pages go first and old ones last, so
        a failure part-way leaves every id listed (some twice) and running the restore again mends it."""
        rows = self._query_session(tenant, session_id)
        old_pages = [r for r in rows if r["sk"]["S"].startswith(keys.PAGE_PREFIX)]
        members = self._members(tenant, session_id, dict.fromkeys([*_member_ids(rows), *added]))
        self._see_head(tenant, session_id, None)
        if not members:
            self._call("DeleteItem", Key=keys.head_key(tenant, session_id))
            self._batch_write([{"DeleteRequest": {"Key": {"pk": r["pk"], "sk": r["sk"]}}} for r in old_pages])
            return
        decoded: dict[str, tuple[SessionSnapshot, Recipe]] = {}
        for snapshot_id, (_, envelope_and_recipe) in members.items():
            if isinstance(envelope_and_recipe, GenkitError):
                raise envelope_and_recipe
            decoded[snapshot_id] = envelope_and_recipe
        ids = list(members)
        head_ids, paged = ids[-self._head_ids :], ids[: -self._head_ids]
        head: dict[str, Any] = {
            **keys.head_key(tenant, session_id),
            "hv": {"S": os.urandom(8).hex()},
            "ids": _id_list(head_ids),
        }
        leaf_snapshot = leaf_of(envelope for envelope, _ in decoded.values())
        if leaf_snapshot is None:  # every snapshot has a child: the parent chain is cyclic
            head["cyc"] = {"N": str(len(members))}
            expires = None
        else:
            leaf_id = leaf_snapshot.snapshot_id
            leaf = members[leaf_id][0]
            expires = int(leaf["exp"]["N"]) if "exp" in leaf else None
            head["leaf"] = {"S": leaf_id}
            head["lc"] = {"S": leaf_snapshot.created_at}
            head["rc"] = {"B": compress(decoded[leaf_id][1].to_json())}
        if expires is not None:
            head["exp"] = {"N": str(expires)}
        pages = []
        for start in range(0, len(paged), 1000):
            page = {
                **keys.page_key(tenant, session_id, os.urandom(8).hex()),
                "ids": _id_list(paged[start : start + 1000]),
            }
            if expires is not None:
                page["exp"] = {"N": str(expires)}
            pages.append({"PutRequest": {"Item": page}})
        self._batch_write(pages)
        self._call("PutItem", Item=head)
        self._batch_write([{"DeleteRequest": {"Key": {"pk": r["pk"], "sk": r["sk"]}}} for r in old_pages])


def _put(table: str, item: dict[str, Any], condition: str, values: dict[str, Any] | None = None) -> dict[str, Any]:
    """A conditional Put transaction action."""
    put: dict[str, Any] = {"TableName": table, "Item": item, "ConditionExpression": condition}
    if values:
        put["ExpressionAttributeValues"] = values
    return {"Put": put}


def _id_list(ids: Iterable[str]) -> dict[str, Any]:
    """Member ids as a string set: one attribute value, however many ids."""
    return {"SS": list(ids)}


def _member_ids(rows: Iterable[dict[str, Any]]) -> list[str]:
    """The snapshot ids a session's member pages and head name, each once, oldest page first."""
    ordered = sorted(
        (r for r in rows if "ids" in r),
        key=lambda r: (r["sk"]["S"] == keys.HEAD_SK, r["sk"]["S"]),
    )
    return list(dict.fromkeys(i for r in ordered for i in r["ids"]["SS"]))


def _status_history(item: dict[str, Any]) -> tuple[str, ...]:
    """Every status a snapshot item has had, oldest first: ``sh`` once it changed, else just ``st``."""
    if "sh" in item:
        return tuple(entry["S"] for entry in item["sh"]["L"])
    return (item["st"]["S"],) if "st" in item else ()


def _action_size(action: dict[str, Any]) -> int:
    """What a transaction action counts toward the 4 MB limit, with room for its expressions."""
    kind, request = next(iter(action.items()))
    if kind == "Put":
        return item_size(request["Item"]) + 512
    values = request.get("ExpressionAttributeValues", {})
    return item_size(request["Key"]) + sum(_value_size(v) for v in values.values()) + 512


def _definitely_not_applied(error: BaseException) -> bool:
    """True when DynamoDB answered that a write was refused; False when the answer was lost (a timeout or
    a dropped connection), since the write may have been applied."""
    if isinstance(error, _Cancelled):
        return True
    cause = error.__cause__
    if not isinstance(cause, ClientError):
        return False
    http_status = cause.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400)
    return isinstance(http_status, int) and 400 <= http_status < 500


class _Cancelled(Exception):
    """A cancelled transaction, with the per-action reason codes."""

    def __init__(self, codes: list[str]) -> None:
        super().__init__(", ".join(codes))
        self.codes = codes

    def failed(self, index: int) -> bool:
        return index < len(self.codes) and self.codes[index] == "ConditionalCheckFailed"


def _dedupe(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keep the last request per key (BatchWriteItem rejects two requests on one item)."""
    last: dict[tuple[str, str], dict[str, Any]] = {}
    for request in requests:
        key = request["PutRequest"]["Item"] if "PutRequest" in request else request["DeleteRequest"]["Key"]
        last[(key["pk"]["S"], key["sk"]["S"])] = request
    return list(last.values())


def _snake(operation: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in operation).lstrip("_")


def _takes_table(operation: str) -> bool:
    return operation not in ("BatchGetItem", "BatchWriteItem", "TransactWriteItems")


def build_client(
    region_name: str | None = None,
    endpoint_url: str | None = None,
    retry_mode: str = "standard",
    max_retries: int = 5,
    client_options: dict[str, Any] | None = None,
) -> Any:
    """A boto3 DynamoDB client using botocore's own retry mode for transient errors.

    ``client_options`` go to ``boto3.client`` as they are (credentials, say).
    """
    import boto3  # type: ignore[import-untyped]
    from botocore.config import Config  # type: ignore[import-untyped]

    config = Config(retries={"mode": retry_mode, "total_max_attempts": max_retries + 1})
    try:
        return boto3.client(
            "dynamodb",
            region_name=region_name
            or os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION")
            or "us-east-1",
            endpoint_url=endpoint_url,
            config=config,
            **(client_options or {}),
        )
    except BACKEND_ERRORS as exc:
        raise map_error(exc, "CreateClient", "-") from exc


class AsyncDynamoDBSessionStore:
    """The async face of a :class:`DynamoDBSessionStore`.

    boto3 blocks, so every method runs the blocking call on the store's own
    bounded :class:`~concurrent.futures.ThreadPoolExecutor` (``executor_workers``
    threads) and awaits it: the event loop never blocks, and at most that many
    DynamoDB calls run at once. A mutator passed to :meth:`save_snapshot` runs on
    a pool thread.
    """

    def __init__(self, store: DynamoDBSessionStore) -> None:
        self.sync = store

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.sync.executor(), functools.partial(fn, *args, **kwargs))

    async def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        """See :meth:`DynamoDBSessionStore.get_snapshot`."""
        return await self._run(self.sync.get_snapshot, snapshot_id=snapshot_id, session_id=session_id, context=context)

    async def save_snapshot(
        self, snapshot_id: str, mutator: Mutator, *, context: Context = None
    ) -> SessionSnapshot | None:
        """See :meth:`DynamoDBSessionStore.save_snapshot`."""
        return await self._run(self.sync.save_snapshot, snapshot_id, mutator, context=context)

    async def list_snapshots(self, session_id: str, *, context: Context = None) -> Sequence[SessionSnapshot]:
        """See :meth:`DynamoDBSessionStore.list_snapshots`."""
        return await self._run(self.sync.list_snapshots, session_id, context=context)

    async def delete_session(self, session_id: str, *, context: Context = None) -> int:
        """See :meth:`DynamoDBSessionStore.delete_session`."""
        return await self._run(self.sync.delete_session, session_id, context=context)

    async def abort_snapshot(self, snapshot_id: str, *, context: Context = None) -> SnapshotStatus | None:
        """See :meth:`DynamoDBSessionStore.abort_snapshot`."""
        return await self._run(self.sync.abort_snapshot, snapshot_id, context=context)

    async def heartbeat(self, snapshot_id: str, *, context: Context = None) -> SessionSnapshot:
        """See :meth:`DynamoDBSessionStore.heartbeat`."""
        return await self._run(self.sync.heartbeat, snapshot_id, context=context)

    def watch_status(self, snapshot_id: str, *, context: Context = None) -> AsyncIterator[SnapshotStatus]:
        """See :meth:`DynamoDBSessionStore.watch_status`."""
        return self.sync.watch_status(snapshot_id, context=context)

    async def restore_snapshots(self, snapshots: Iterable[SessionSnapshot], *, context: Context = None) -> int:
        """See :meth:`DynamoDBSessionStore.restore_snapshots`."""
        return await self._run(self.sync.restore_snapshots, list(snapshots), context=context)
