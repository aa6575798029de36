"""Item codecs: what one snapshot item, head, member page or blob part holds, and how big it is.

Attribute names (all short, all sent as placeholders in expressions):

- snapshot item: ``rec`` (record packed with the small blob it wrote), ``u`` (the record after an
  update), ``v`` (item version: random when the item is written whole, one more at each update; an
  item written before versions started at random has none and counts as 1), ``st`` / ``sh`` (status,
  status history), ``exp`` (TTL);
- head (the session record): ``hv`` (random version token, new on every head write), ``leaf``,
  ``lc`` (the leaf's createdAt), ``rc`` (the leaf's recipe, a read hint), ``ids`` (newest member ids),
  ``sv`` (the session version, contract rule V8), ``ca`` / ``ua`` (created, updated), ``md`` (metadata),
  ``dead`` (a deletion tombstone), ``del`` (a deletion in progress), ``cyc`` (a cyclic restore), ``exp``,
  ``xa`` (expiresAt, epoch ms), ``tl`` (ttl, ms), ``sl`` (sliding), ``xi`` (its expiry index sort key);
- metadata index entry: no attributes beyond its key; expiry index entry: ``sid`` (the session id);
- member page: ``ids``; blob part: ``d`` (bytes), ``stg`` (staged: not yet committed), ``exp``;
- staging marker (``g␟<blob>``): ``n`` (how many parts), ``at`` (epoch seconds it was written).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from genkit_sessions.dynamodb import _keys as keys
from genkit_sessions.dynamodb._codec import Recipe
from genkit_sessions.model.types import SessionSnapshot, SnapshotStatus

__all__ = [
    "CREATED_BY",
    "ITEM_LIMIT",
    "Head",
    "Loaded",
    "id_list",
    "item_size",
    "member_ids",
    "pages_of",
    "put_action",
    "hidden",
    "status_attributes",
    "status_history",
]

ITEM_LIMIT = 400 * 1024
CREATED_BY = "cw"
"""On a snapshot item, the write (a create of many first snapshots, or a restore past one transaction) that
wrote it ahead of its commit; on a head, the writes whose items it shows (a string, or a string set once a
restore added its own), named once their commit landed."""
PAGE_BYTES = 300 * 1024
"""A member page holds ids up to this many bytes, so it stays under the 400 KB item limit whatever the ids."""


@attrs.frozen
class Loaded:
    """A snapshot as stored: the model object, how its state is rebuilt, its TTL and item version."""

    snapshot: SessionSnapshot
    recipe: Recipe
    expires: int | None
    version: int
    statuses: tuple[str, ...] = ()
    """Every status the snapshot has had, oldest first (what ``watch_status`` replays)."""
    size: int = 0
    """The size of its item without its update attributes (``u``, ``ub``): what an update blob packed
    into the item must leave room for (0: not known)."""


@attrs.frozen
class Head:
    """What a store last saw of a session's head item.

    ``version`` is its token (None: there was no head); ``ids`` the member ids it holds (None: not
    known, after a write that added one without reading); ``item`` the whole item when it was read
    or written whole (a Put of the head starts from it, so no attribute is ever dropped)."""

    version: str | None
    ids: tuple[str, ...] | None
    item: dict[str, Any] | None = None

    @classmethod
    def of(cls, item: dict[str, Any] | None) -> Head:
        """The head as read (None: no head item)."""
        if item is None:
            return cls(None, ())
        return cls(item.get("hv", {}).get("S", ""), tuple(item.get("ids", {}).get("SS", ())), item)

    @property
    def exists(self) -> bool:
        """There is a head item (alive, or a tombstone)."""
        return self.version is not None

    @property
    def dead(self) -> bool:
        """The session was deleted (or is being deleted)."""
        return self.item is not None and "dead" in self.item

    @property
    def deleting(self) -> bool:
        """A deletion started and has not finished (it lists what is left to delete)."""
        return self.item is not None and "del" in self.item

    @property
    def alive(self) -> bool:
        """A head of a live session."""
        return self.exists and not self.dead

    def expired(self, now_ms: int) -> bool:
        """The session's expiry (V7) has passed: it reads as absent."""
        return self.item is not None and "xa" in self.item and int(self.item["xa"]["N"]) <= now_ms

    def live(self, now_ms: int) -> bool:
        """Alive and not expired."""
        return self.alive and not self.expired(now_ms)

    def visible_version(self, now_ms: int) -> int:
        """V8 as a reader sees it: the version of a live session with snapshots, else 0."""
        item = self.item
        if item is None or not self.live(now_ms) or not ("leaf" in item or "cyc" in item or self.ids):
            return 0
        return self.session_version

    @property
    def session_version(self) -> int:
        """The session version (V8). A head written before versions existed counts its members."""
        if self.item is None:
            return 0
        if "sv" in self.item:
            return int(self.item["sv"]["N"])
        return len(self.ids or ())


UPDATE_ATTRIBUTES = ("u", "ub")
"""What an update of a snapshot item sets: its current record, and the update blob packed with it."""


def base_size(item: dict[str, Any]) -> int:
    """The size of a snapshot item without its update attributes (what an update leaves as it is)."""
    return item_size({k: v for k, v in item.items() if k not in UPDATE_ATTRIBUTES})


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
    return sum(len(str(v).encode()) for v in inner)


def action_size(action: dict[str, Any]) -> int:
    """What a transaction action counts toward the 4 MB limit, with room for its expressions."""
    kind, request = next(iter(action.items()))
    if kind == "Put":
        return item_size(request["Item"]) + 512
    values = request.get("ExpressionAttributeValues", {})
    return item_size(request["Key"]) + sum(_value_size(v) for v in values.values()) + 512


def status_attributes(snapshot: SessionSnapshot, before: tuple[str, ...] = ()) -> dict[str, Any]:
    """The status a snapshot item carries in the clear (``st``) and, once it has changed, every status
    it has had (``sh``), for the projection ``watch_status`` polls. Sparse: a snapshot that has only
    ever been ``completed`` (most of a history) carries neither."""
    status = snapshot.effective_status.value
    history = before if before and before[-1] == status else (*before, status)
    if history == (SnapshotStatus.COMPLETED.value,):
        return {}
    attributes: dict[str, Any] = {"st": {"S": status}}
    if len(history) > 1:
        attributes["sh"] = {"L": [{"S": s} for s in history]}
    return attributes


def status_history(item: dict[str, Any]) -> tuple[str, ...]:
    """Every status a snapshot item has had, oldest first: ``sh`` once it changed, else just ``st``."""
    if "sh" in item:
        return tuple(entry["S"] for entry in item["sh"]["L"])
    return (item["st"]["S"],) if "st" in item else ()


def id_list(ids: Iterable[str]) -> dict[str, Any]:
    """Member ids as a string set: one attribute value, however many ids."""
    return {"SS": list(ids)}


def member_ids(rows: Iterable[dict[str, Any]]) -> list[str]:
    """The snapshot ids a session's member pages and head name, each once, oldest page first."""
    ordered = sorted(
        (r for r in rows if "ids" in r),
        key=lambda r: (r["sk"]["S"] == keys.HEAD_SK, r["sk"]["S"]),
    )
    return list(dict.fromkeys(i for r in ordered for i in r["ids"]["SS"]))


def pages_of(ids: list[str]) -> list[list[str]]:
    """Ids cut into member pages that each stay under :data:`PAGE_BYTES`."""
    pages: list[list[str]] = []
    page: list[str] = []
    size = 0
    for snapshot_id in ids:
        length = len(snapshot_id.encode()) + 1
        if page and size + length > PAGE_BYTES:
            pages.append(page)
            page, size = [], 0
        page.append(snapshot_id)
        size += length
    if page:
        pages.append(page)
    return pages


def put_action(table: str, item: dict[str, Any], condition: dict[str, Any] | None = None) -> dict[str, Any]:
    """A Put transaction action, with rendered condition parameters (see ``_expressions.render``)."""
    return {"Put": {"TableName": table, "Item": item, **(condition or {})}}


def dedupe(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keep the last request per key (BatchWriteItem rejects two requests on one item)."""
    last: dict[tuple[str, str], dict[str, Any]] = {}
    for request in requests:
        key = request["PutRequest"]["Item"] if "PutRequest" in request else request["DeleteRequest"]["Key"]
        last[(key["pk"]["S"], key["sk"]["S"])] = request
    return list(last.values())


def delete_request(row: dict[str, Any]) -> dict[str, Any]:
    """A BatchWriteItem delete of the item ``row`` (any item with its key attributes)."""
    return {"DeleteRequest": {"Key": {"pk": row["pk"], "sk": row["sk"]}}}


def hidden(item: Mapping[str, Any], head: Mapping[str, Any] | None) -> bool:
    """Whether a snapshot item stays out of sight: one written ahead of a commit (a create's or a
    restore's, ``_listed``) reads as absent while its session's head does not name that write in ``cw``
    (a string, or a set of them once a restore added to the session): the commit has not landed, or
    never will."""
    created_by = item.get(CREATED_BY)
    if created_by is None:
        return False
    named = (head or {}).get(CREATED_BY, {})
    return created_by["S"] not in named.get("SS", ()) and created_by != named
