"""Writes with more snapshot items than one transaction holds that still land whole: items written ahead
of one commit, out of sight until it lands.

A create of many first snapshots (``_records``) and a restore past one transaction (``_maintenance``)
write, for each session they add snapshots to, a *listing*:

1. its name in the session's head (``stg``, as a staged blob's), so a writer that dies is found;
2. markers (``g␟<name>␟<nnnn>``) listing, in ``ks`` (compressed JSON, at most 300 KB each), the listing's
   name and every snapshot id and blob part sort key it will write;
3. the blob parts (BatchWriteItem), then the snapshot items, each on its id being free, 100 or 3 MB to a
   TransactWriteItems, each naming its listing in ``cw``.

Then one TransactWriteItems commits: each session's head, naming its listing in ``cw`` and no longer in
``stg``, and the release of every marker (on its existing and not being void). A reader shows an item
that names a listing only while its session's head names the same one (:func:`~._items.hidden`), so
the items appear at the commit, all of them, or never. A take-back (:func:`~._commit.take_back_listed`)
voids a marker first, and the commit needs every marker unvoided, so exactly one of the two lands.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import attrs

from genkit_sessions.dynamodb import _head
from genkit_sessions.dynamodb import _keys as keys
from genkit_sessions.dynamodb._calls import Cancelled, Steps, batch_write, call, get_item, write_one
from genkit_sessions.dynamodb._codec import compress
from genkit_sessions.dynamodb._commit import (
    LISTED_TAG,
    MAX_TRANSACTION_ACTIONS,
    listing_key,
    take_back_write,
    transact_surely,
)
from genkit_sessions.dynamodb._engine import Engine
from genkit_sessions.dynamodb._expressions import exists, not_exists, render
from genkit_sessions.dynamodb._items import CREATED_BY, action_size
from genkit_sessions.errors import GenkitError

__all__ = ["ONE_TRANSACTION", "Listing", "fits", "give_back", "landed", "new_listing", "transactions", "write_ahead"]

_log = logging.getLogger("genkit_sessions.dynamodb")

ONE_TRANSACTION = 3 * 1024 * 1024
"""At most this many bytes of actions go in one transaction of this store's (DynamoDB's limit is 4 MB)."""

_LISTING_BYTES = 300 * 1024
"""A marker lists ids and part keys up to this many bytes of JSON (items take 400 KB)."""


def fits(actions: list[dict[str, Any]], releases: int = 0) -> bool:
    """Whether ``actions``, and the release of ``releases`` markers, fit one transaction."""
    return len(actions) + releases <= MAX_TRANSACTION_ACTIONS and sum(map(action_size, actions)) <= ONE_TRANSACTION


def transactions(puts: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Conditional Puts cut into transactions within DynamoDB's limits (100 actions, 4 MB)."""
    chunks: list[list[dict[str, Any]]] = []
    for put in puts:
        if not chunks or not fits([*chunks[-1], put]):
            chunks.append([])
        chunks[-1].append(put)
    return chunks


@attrs.frozen
class Listing:
    """What one session's part of a write ahead of its commit writes, and how its head names it."""

    session_id: str
    name: str
    items: list[dict[str, Any]]
    """Puts of the snapshot items, each on its id being free and naming the listing in ``cw``."""
    parts: list[dict[str, Any]]
    """The blob parts of the items (of the items written ahead and of any the commit itself puts)."""
    markers: list[tuple[dict[str, Any], bytes]]
    """Each marker's key and its ``ks``."""
    staging: _head.Staging
    """The listing as the session's head names it in ``stg`` until the commit."""

    @property
    def created_by(self) -> dict[str, Any]:
        return {CREATED_BY: {"S": self.name}}

    def releases(self, engine: Engine) -> list[dict[str, Any]]:
        """The commit's deletion of each marker, on its existing and not being void."""
        condition = render(condition=exists("pk") & not_exists("void"))
        return [{"Delete": {"TableName": engine.table, "Key": key, **condition}} for key, _ in self.markers]


def new_listing(
    engine: Engine,
    tenant: str,
    session_id: str,
    items: list[dict[str, Any]],
    parts: list[dict[str, Any]],
) -> Listing:
    """The listing of ``items`` (snapshot item Puts on their ids being free) and ``parts`` in
    ``session_id``, named after its first item (or its session, with none) and a new nonce."""
    first = _snapshot_id(items[0]) if items else session_id
    name = keys.blob_name(first, f"{LISTED_TAG}{engine.token()}")
    named = [{"Put": {**a["Put"], "Item": {**a["Put"]["Item"], CREATED_BY: {"S": name}}}} for a in items]
    texts = _listings(name, [_snapshot_id(a) for a in named], [p["sk"]["S"] for p in parts])
    markers = [(listing_key(tenant, session_id, name, i), text) for i, text in enumerate(texts)]
    return Listing(session_id, name, named, parts, markers, _head.Staging(engine.now_epoch(), len(markers), name))


def write_ahead(engine: Engine, listings: list[Listing]) -> Steps[None]:
    """Every listing's markers, then its parts, then its items (``Cancelled`` when an id was taken)."""
    for listing in listings:
        at = {"N": str(listing.staging.at)}
        for key, text in listing.markers:
            yield from call("PutItem", engine.table, Item={**key, "ks": {"B": text}, "at": at})
    parts = [part for listing in listings for part in listing.parts]
    yield from batch_write(engine.table, [{"PutRequest": {"Item": p}} for p in parts])
    for chunk in transactions([item for listing in listings for item in listing.items]):
        yield from transact_surely(engine, chunk)


def landed(engine: Engine, listings: list[Listing]) -> Steps[bool]:
    """After a commit's answer was lost and its resend refused: whether the first send landed (it
    released every marker; a take-back leaves a void one until it is done)."""
    key = listings[0].markers[0][0]
    return (yield from get_item(engine.table, key, "pk")) is None


def give_back(engine: Engine, tenant: str, listings: list[Listing]) -> Steps[None]:
    """Best effort, after a write ahead failed before its commit or had it refused: take back what each
    listing wrote and its name in its head. What stays (an outage meanwhile) is listed by its markers and
    named in its head: the session's next create, save past ``orphan_ttl``, or deletion takes it back,
    and no reader sees it meanwhile."""
    for listing in listings:
        try:
            yield from take_back_write(engine, tenant, listing.session_id, listing.staging)
            with contextlib.suppress(Cancelled):
                forget = _head.forget_staged(engine, tenant, listing.session_id, [listing.staging])
                yield from write_one(engine.table, forget)
        except GenkitError as exc:
            _log.warning(
                "could not take back the write ahead %s (%s); its session's next write does", listing.name, exc
            )


def _listings(name: str, ids: list[str], parts: list[str]) -> list[bytes]:
    """What a listing's markers hold: its name, and its snapshot ids and part sort keys, cut so that no
    marker passes :data:`_LISTING_BYTES` (compressed JSON, one per marker)."""
    texts: list[bytes] = []
    chunk: dict[str, list[str]] = {"ids": [], "parts": []}
    size = 0
    for kind, value in [*(("ids", i) for i in ids), *(("parts", p) for p in parts)]:
        length = len(value.encode("utf-8", "surrogatepass")) + 8
        if size + length > _LISTING_BYTES and (chunk["ids"] or chunk["parts"]):
            texts.append(compress({"w": name, **chunk}))
            chunk, size = {"ids": [], "parts": []}, 0
        chunk[kind].append(value)
        size += length
    texts.append(compress({"w": name, **chunk}))
    return texts


def _snapshot_id(action: dict[str, Any]) -> str:
    return str(action["Put"]["Item"]["pk"]["S"]).partition(f"{keys.SEP}n{keys.SEP}")[2]
