"""Reads: a snapshot by id, a session's leaf, a session's members, and the status a watcher polls.

Every read is strongly consistent and, for one snapshot, two calls: the item (or
the head), then one BatchGetItem of the blobs its recipe names. Blobs are
immutable, so a state rebuilt from a recipe is cached by that recipe and never
goes stale.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs

from genkit_sessions.dynamodb import _keys as keys
from genkit_sessions.dynamodb._calls import (
    PAUSE,
    Inflate,
    Inflating,
    Steps,
    batch_get,
    get_item,
    query_partition,
    run_pure,
)
from genkit_sessions.dynamodb._codec import (
    CorruptData,
    Recipe,
    decompress_text_steps,
    fold,
    is_update_blob,
    join_parts,
    open_record,
    parse_inflated,
    read_hint,
    stored_messages_steps,
    unpack_record,
    unpack_update,
    zlib_stream,
)
from genkit_sessions.dynamodb._engine import Engine
from genkit_sessions.dynamodb._items import CREATED_BY, Head, Loaded, base_size, hidden, member_ids, status_history
from genkit_sessions.errors import GenkitError, Status
from genkit_sessions.model.clock import format_timestamp
from genkit_sessions.model.frozen_json import FrozenDict
from genkit_sessions.model.types import Message, SessionSnapshot, SessionState, SnapshotStatus
from genkit_sessions.model.wire import from_wire
from genkit_sessions.stores.protocol import SessionRecord
from genkit_sessions.stores.write_rules import listing_order

__all__ = [
    "Member",
    "decode_item",
    "list_snapshots",
    "load",
    "members",
    "read_by_id",
    "read_head",
    "read_leaf",
    "session_record",
    "statuses",
]

Member = tuple[dict[str, Any], "tuple[SessionSnapshot, Recipe] | GenkitError"]
"""A session member's snapshot item, with its envelope and recipe or the error decoding them."""

Found = dict[tuple[str, str], dict[str, Any]]

_REREADS = 3
"""How many times a read starts again after a change of the snapshot it read replaced its update blob."""


class ReplacedMeanwhile(GenkitError):
    """A part of a snapshot's update blob went between reading its item and its blobs: a change of the
    snapshot replaced it, so the read starts again (DATA_LOSS if it keeps happening)."""


def _at(found: Found, key: dict[str, Any]) -> dict[str, Any] | None:
    return found.get((key["pk"]["S"], key["sk"]["S"]))


def decode_item(engine: Engine, item: dict[str, Any], snapshot_id: str) -> tuple[SessionSnapshot, Recipe]:
    """The envelope (snapshot without state) and recipe stored on a snapshot item."""
    try:
        data = bytes(item["u"]["B"]) if "u" in item else unpack_record(bytes(item["rec"]["B"]))[0]
        wire, recipe = open_record(data)
        envelope = from_wire(SessionSnapshot, wire)
    except (CorruptData, KeyError, TypeError) as exc:
        raise engine.data_loss(snapshot_id, str(exc)) from None
    except GenkitError as exc:
        raise engine.data_loss(snapshot_id, exc.message) from None
    return envelope, recipe


def part_keys(tenant: str, session_id: str, recipe: Recipe) -> list[dict[str, Any]]:
    """The items a recipe reads: part items, and the snapshot items that hold inline blobs."""
    return [key for ref in recipe.refs for key in ref_keys(tenant, session_id, ref)]


def inline_blob(engine: Engine, snapshot_id: str, name: str, row: dict[str, Any] | None) -> bytes:
    """A blob packed into its owner's snapshot item: the blob its creation wrote (in ``rec``), or its
    update blob (``ub``); DATA_LOSS when the item does not hold that blob."""
    tag, inline = None, None
    if row is not None:
        try:
            if is_update_blob(name):
                if "ub" in row:
                    tag, inline = unpack_update(bytes(row["ub"]["B"]))
            elif "rec" in row:
                _, tag, inline = unpack_record(bytes(row["rec"]["B"]))
        except CorruptData as exc:
            raise engine.data_loss(snapshot_id, str(exc)) from None
    if inline is None or tag != keys.blob_tag(name):
        raise engine.data_loss(snapshot_id, f"inline blob {name!r} is missing")
    return inline


def payload_of(
    engine: Engine, tenant: str, session_id: str, snapshot_id: str, ref: tuple[str, int], found: Found
) -> Any:
    """One blob's payload, from the items fetched (its parts, or the snapshot item it is packed in)."""
    return decoded_payload(engine, tenant, session_id, snapshot_id, ref, found)[0]


def decoded_payload(
    engine: Engine, tenant: str, session_id: str, snapshot_id: str, ref: tuple[str, int], found: Found
) -> tuple[Any, bool]:
    """One blob's payload, and whether its text holds no surrogate escape (see ``stored_messages``)."""
    return run_pure(decoded_payload_steps(engine, tenant, session_id, snapshot_id, ref, found))


def decoded_payload_steps(
    engine: Engine, tenant: str, session_id: str, snapshot_id: str, ref: tuple[str, int], found: Found
) -> Steps[tuple[Any, bool]]:
    """:func:`decoded_payload`, inflated a slice at a time, with a turn for the event loop between."""
    data = _blob_bytes(engine, tenant, session_id, snapshot_id, ref, found)
    try:
        return (yield from decompress_text_steps(data))
    except CorruptData as exc:
        raise engine.data_loss(snapshot_id, str(exc)) from None


def _blob_bytes(
    engine: Engine, tenant: str, session_id: str, snapshot_id: str, ref: tuple[str, int], found: Found
) -> bytes:
    """One blob as stored, from the items fetched (its parts, or the snapshot item it is packed in)."""
    name, count = ref
    chunks: list[bytes] = []
    if count == 0:
        row = _at(found, keys.snapshot_key(tenant, keys.blob_owner(name)))
        chunks.append(inline_blob(engine, snapshot_id, name, row))
    for part in range(count):
        part_item = _at(found, keys.blob_part_key(tenant, session_id, name, part))
        if part_item is None or "d" not in part_item:
            problem = engine.data_loss(snapshot_id, f"blob part {part} of {count} is missing")
            if is_update_blob(name):
                raise ReplacedMeanwhile(problem.status, problem.message)
            raise problem
        chunks.append(bytes(part_item["d"]["B"]))
    return join_parts(chunks)


def ref_keys(tenant: str, session_id: str, ref: tuple[str, int]) -> list[dict[str, Any]]:
    """The items one blob reference reads."""
    name, count = ref
    if count == 0:
        return [keys.snapshot_key(tenant, keys.blob_owner(name))]
    return [keys.blob_part_key(tenant, session_id, name, part) for part in range(count)]


_LARGE_BLOB = 64 * 1024
"""A blob at least this large (compressed) may inflate beside the parsing, on the blocking face."""
_INFLATE_AHEAD = 256 * 1024
"""...when the recipe names other blobs too, and its large ones hold at least this many bytes (a long
history): see :class:`~._calls.Inflate`."""


def _inflate_ahead(
    engine: Engine, tenant: str, session_id: str, snapshot_id: str, recipe: Recipe, found: Found
) -> Steps[dict[int, tuple[Inflating, int]]]:
    """The recipe's large blobs being inflated beside the steps, by their index in the recipe (with
    their place among the streams inflated); empty when each inflates in its turn: on the async face,
    and for a short history."""
    if len(recipe.refs) < 2:
        return {}
    data = [_blob_bytes(engine, tenant, session_id, snapshot_id, ref, found) for ref in recipe.refs]
    large = [index for index, blob in enumerate(data) if len(blob) >= _LARGE_BLOB]
    if sum(len(data[index]) for index in large) < _INFLATE_AHEAD:
        return {}
    try:
        streams = tuple(zlib_stream(data[index]) for index in large)
    except CorruptData as exc:
        raise engine.data_loss(snapshot_id, str(exc)) from None
    inflating: Inflating | None = yield Inflate(streams)
    return {} if inflating is None else {index: (inflating, place) for place, index in enumerate(large)}


def rebuild(
    engine: Engine,
    tenant: str,
    session_id: str,
    snapshot_id: str,
    recipe: Recipe,
    prefetched: Found,
    memo: dict[str, tuple[Message, ...]] | None = None,
) -> Steps[SessionState | None]:
    """The state a recipe folds to, fetching the blobs ``prefetched`` lacks in one BatchGetItem."""
    wanted = part_keys(tenant, session_id, recipe)
    missing = [k for k in wanted if _at(prefetched, k) is None]
    found = dict(prefetched)
    if missing:
        found.update((yield from batch_get(engine.table, missing)))
    # Each blob is inflated, parsed and its messages built in slices, the event loop getting a turn
    # between them (the async face; the blocking driver goes straight on), so a long history never
    # holds the loop for its whole decoding. On the blocking face, a long history's large blobs inflate
    # on a second core meanwhile: the small ones are decoded first, then the large ones as they come.
    ahead = yield from _inflate_ahead(engine, tenant, session_id, snapshot_id, recipe, found)
    payloads: list[Any] = [None] * len(recipe.refs)
    built: dict[int, tuple[Message, ...]] = {}
    order = sorted(range(len(recipe.refs)), key=lambda index: index in ahead)
    for index in order:
        ref = recipe.refs[index]
        if index in ahead:
            inflating, place = ahead[index]
            try:
                payload, plain = parse_inflated(inflating.result(place))
            except (CorruptData, zlib.error) as exc:
                raise engine.data_loss(snapshot_id, f"blob does not decompress to JSON: {exc}") from None
        else:
            payload, plain = yield from decoded_payload_steps(engine, tenant, session_id, snapshot_id, ref, found)
        payloads[index] = payload
        yield PAUSE
        name = ref[0]
        if memo is not None and name in memo:
            continue
        wire = payload.get("m", payload.get("a")) if isinstance(payload, dict) else None
        if isinstance(wire, list):
            try:
                built[index] = yield from stored_messages_steps(wire, plain)
            except GenkitError as exc:
                raise engine.data_loss(snapshot_id, exc.message) from None
            if memo is not None:
                memo[name] = built[index]
            yield PAUSE

    def decode(index: int, wire: Any) -> tuple[Message, ...]:
        name = recipe.refs[index][0]
        if memo is not None and name in memo:
            return memo[name]
        if index not in built:  # every message list was built above
            raise CorruptData("a message list is not an array")
        return built[index]

    try:
        return fold(payloads, decode)
    except CorruptData as exc:
        raise engine.data_loss(snapshot_id, str(exc)) from None
    except GenkitError as exc:
        raise engine.data_loss(snapshot_id, exc.message) from None


def load(
    engine: Engine,
    tenant: str,
    item: dict[str, Any],
    snapshot_id: str,
    prefetched: Found | None = None,
    head: Head | None = None,
) -> Steps[Loaded]:
    """A snapshot item decoded, its state rebuilt (from the cache when its recipe is cached)."""
    envelope, recipe = decode_item(engine, item, snapshot_id)
    hit, state = engine.recall(tenant, snapshot_id, recipe)
    if not hit:
        state = yield from rebuild(engine, tenant, envelope.session_id or "", snapshot_id, recipe, prefetched or {})
    expires = int(item["exp"]["N"]) if "exp" in item else None
    version = int(item["v"]["N"]) if "v" in item else 1
    loaded = Loaded(
        attrs.evolve(envelope, state=state), recipe, expires, version, status_history(item), base_size(item)
    )
    engine.remember(tenant, loaded, head)
    return loaded


def read_by_id(engine: Engine, tenant: str, snapshot_id: str) -> Steps[Loaded | None]:
    """A snapshot by id: GetItem, then one BatchGetItem of its blobs and its session's head. A snapshot
    whose session has no live head (deleted, or being deleted) reads as absent, so a deletion that stops
    part-way never shows half a session."""
    for attempt in range(_REREADS):
        try:
            return (yield from _read_by_id(engine, tenant, snapshot_id))
        except ReplacedMeanwhile:
            if attempt == _REREADS - 1:
                raise
            engine.forget(tenant, [snapshot_id])
    raise AssertionError("unreachable")  # pragma: no cover


def _read_by_id(engine: Engine, tenant: str, snapshot_id: str) -> Steps[Loaded | None]:
    key = keys.snapshot_key(tenant, snapshot_id)
    item = yield from get_item(engine.table, key)
    if item is None:
        return None
    envelope, recipe = decode_item(engine, item, snapshot_id)
    session_id = envelope.session_id or ""
    head_key = keys.head_key(tenant, session_id)
    wanted = [head_key]
    if not engine.recall(tenant, snapshot_id, recipe)[0]:
        wanted += [k for k in part_keys(tenant, session_id, recipe) if k != key]
    found = yield from batch_get(engine.table, wanted)
    head = _at(found, head_key)
    if head is None or not Head.of(head).live(engine.now_ms()) or hidden(item, head):
        engine.forget(tenant, [snapshot_id])
        return None
    seen = Head.of(head)
    engine.see_head(tenant, session_id, seen)
    found[(key["pk"]["S"], key["sk"]["S"])] = item
    return (yield from load(engine, tenant, item, snapshot_id, found, seen))


def home_of(engine: Engine, tenant: str, snapshot_id: str) -> Steps[tuple[str, Head, dict[str, Any]] | None]:
    """The session a snapshot item names, that session's head, alive or not (a snapshot that reads as
    absent may still have its item, in an expired session or one whose deletion has not finished), and
    the item; None when there is no item."""
    item = yield from get_item(engine.table, keys.snapshot_key(tenant, snapshot_id))
    if item is None:
        return None
    session_id = decode_item(engine, item, snapshot_id)[0].session_id or ""
    return session_id, (yield from read_head(engine, tenant, session_id)), item


def read_head(engine: Engine, tenant: str, session_id: str) -> Steps[Head]:
    """A session's head, remembered for the next write."""
    head = Head.of((yield from get_item(engine.table, keys.head_key(tenant, session_id))))
    engine.see_head(tenant, session_id, head)
    return head


def read_leaf(engine: Engine, tenant: str, session_id: str) -> Steps[SessionSnapshot | None]:
    """A session's leaf: GetItem of the head, then one BatchGetItem of the leaf's item and the blobs of
    the head's read hint."""
    for attempt in range(_REREADS):
        head = yield from read_head(engine, tenant, session_id)
        try:
            return (yield from _leaf_of(engine, tenant, session_id, head))
        except ReplacedMeanwhile:
            if attempt == _REREADS - 1:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def session_and_leaf(
    engine: Engine, tenant: str, session_id: str
) -> Steps[tuple[SessionRecord | None, SessionSnapshot | None]]:
    """A session's record and its leaf in the two calls of a leaf read (the head is the record)."""
    head = yield from read_head(engine, tenant, session_id)
    record = yield from record_of(engine, tenant, session_id, head)
    if record is None or record.leaf_id is None:
        return record, None
    return record, (yield from _leaf_of(engine, tenant, session_id, head))


def _leaf_of(engine: Engine, tenant: str, session_id: str, head: Head) -> Steps[SessionSnapshot | None]:
    item = head.item
    if item is None or not head.live(engine.now_ms()):
        return None
    if "leaf" not in item:
        if "cyc" in item:
            raise GenkitError(
                Status.DATA_LOSS,
                f"session {session_id!r} holds {item['cyc']['N']} snapshot(s) but none is a leaf: its parent "
                "chain is cyclic; resume a snapshot by id, or delete and restore the session",
            )
        return None
    leaf = item["leaf"]["S"]
    hint = read_hint(item)
    wanted = [keys.snapshot_key(tenant, leaf)]
    if hint is not None and not engine.recall(tenant, leaf, hint)[0]:
        wanted += part_keys(tenant, session_id, hint)
    found = yield from batch_get(engine.table, wanted)
    snapshot_item = _at(found, wanted[0])
    if snapshot_item is None:
        return None
    return (yield from load(engine, tenant, snapshot_item, leaf, found, head)).snapshot


def members(engine: Engine, tenant: str, session_id: str, ids: Iterable[str]) -> Steps[dict[str, Member]]:
    """The snapshot items of ids a session's head and member pages name, by id, each decoded once,
    keeping only those that still belong to the session (a restore may have moved one elsewhere).
    An item whose stored data does not decode stays, with its DATA_LOSS error."""
    ids = list(ids)
    found = yield from batch_get(engine.table, [keys.snapshot_key(tenant, i) for i in ids])
    result: dict[str, Member] = {}
    for snapshot_id in ids:
        item = _at(found, keys.snapshot_key(tenant, snapshot_id))
        if item is None:
            continue
        try:
            decoded: tuple[SessionSnapshot, Recipe] | GenkitError = decode_item(engine, item, snapshot_id)
        except GenkitError as exc:
            decoded = exc
        if isinstance(decoded, GenkitError) or decoded[0].session_id == session_id:
            result[snapshot_id] = (item, decoded)
    return result


def list_snapshots(engine: Engine, tenant: str, session_id: str) -> Steps[list[SessionSnapshot]]:
    """Every snapshot of a session, by createdAt and the leaf last (``write_rules.listing_order``): a
    Query of its partition, then BatchGetItems."""
    rows = yield from query_partition(engine.table, keys.session_pk(tenant, session_id))
    head = next((r for r in rows if r["sk"]["S"] == keys.HEAD_SK), None)
    if head is not None and not Head.of(head).live(engine.now_ms()):
        return []
    found = yield from members(engine, tenant, session_id, member_ids(rows))
    by_key = {(i["pk"]["S"], i["sk"]["S"]): i for i in [*rows, *(item for item, _ in found.values())]}
    memo: dict[str, tuple[Message, ...]] = {}
    snapshots: list[SessionSnapshot] = []
    for snapshot_id, (_, decoded) in found.items():
        if isinstance(decoded, GenkitError):
            raise decoded
        envelope, recipe = decoded
        hit, state = engine.recall(tenant, snapshot_id, recipe)
        if not hit:
            state = yield from rebuild(engine, tenant, session_id, snapshot_id, recipe, by_key, memo)
        snapshots.append(attrs.evolve(envelope, state=state))
    leaf = head["leaf"]["S"] if head is not None and "leaf" in head else None
    return listing_order(snapshots, leaf)


def statuses(
    engine: Engine, tenant: str, snapshot_id: str, session_id: str | None = None
) -> Steps[tuple[str, list[SnapshotStatus]] | None]:
    """Every status the snapshot has had, oldest first, with its session's id; None when it does not
    exist or its session is deleted, being deleted or expired (as every read sees it, S2 and V6).

    Without ``session_id`` (the first poll of a watch): a GetItem of the item's envelope, then of the
    head. With it (every later poll): one BatchGetItem of the two, projected to what the answer needs.
    """
    key = keys.snapshot_key(tenant, snapshot_id)
    if session_id is None:
        item = yield from get_item(engine.table, key, f"pk, sk, st, sh, rec, u, {CREATED_BY}")
        if item is None:
            return None
        session_id = decode_item(engine, item, snapshot_id)[0].session_id or ""
        head = yield from get_item(engine.table, keys.head_key(tenant, session_id), f"pk, hv, dead, xa, {CREATED_BY}")
    else:
        head_key = keys.head_key(tenant, session_id)
        found = yield from batch_get(engine.table, [key, head_key], f"pk, sk, st, sh, hv, dead, xa, {CREATED_BY}")
        item, head = _at(found, key), _at(found, head_key)
        if item is None:
            return None
    if not Head.of(head).live(engine.now_ms()) or hidden(item, head):
        return None
    names = status_history(item) or (SnapshotStatus.COMPLETED.value,)
    try:
        return session_id, [SnapshotStatus(name) for name in names]
    except ValueError:
        raise engine.data_loss(snapshot_id, f"unknown status in {list(names)!r}") from None


def session_record(engine: Engine, tenant: str, session_id: str) -> Steps[SessionRecord | None]:
    """A session's record from its head: one GetItem (a head written before records existed also lists
    the session once, for the time its root was created)."""
    head = yield from read_head(engine, tenant, session_id)
    return (yield from record_of(engine, tenant, session_id, head))


def record_of(
    engine: Engine, tenant: str, session_id: str, head: Head, now_ms: int | None = None
) -> Steps[SessionRecord | None]:
    """The record a head holds; None for no live session (at ``now_ms``: a write that just landed passes
    the time it read before its request, so that no clock read follows a write it could fail)."""
    item = head.item
    if now_ms is None:
        now_ms = engine.now_ms()
    if item is None or not head.live(now_ms) or not (head.ids or "leaf" in item or "cyc" in item or "ca" in item):
        return None
    if "ca" in item:
        created = item["ca"]["S"]
    else:
        snapshots = yield from list_snapshots(engine, tenant, session_id)
        if not snapshots:
            return None
        created = min(s.created_at for s in snapshots)
    updated = item.get("ua", item.get("lc", {"S": created}))["S"]
    expires = None
    if "xa" in item:
        expires = format_timestamp(datetime.fromtimestamp(int(item["xa"]["N"]) / 1000, tz=timezone.utc))
    elif "exp" in item:
        expires = format_timestamp(datetime.fromtimestamp(int(item["exp"]["N"]), tz=timezone.utc))
    metadata = FrozenDict({k: v["S"] for k, v in item.get("md", {"M": {}})["M"].items()})
    return SessionRecord(
        id=session_id,
        created_at=created,
        updated_at=updated,
        version=head.visible_version(now_ms),
        leaf_id=item["leaf"]["S"] if "leaf" in item else None,
        expires_at=expires,
        metadata=metadata,
        ttl=timedelta(milliseconds=int(item["tl"]["N"])) if "tl" in item else None,
        sliding="sl" in item,
    )
