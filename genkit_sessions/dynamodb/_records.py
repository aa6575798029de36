"""Sessions as records (contract section 6) on DynamoDB: create, metadata and its index, lookup, expiry.

The record is the session's head item (see ``_head``). Two kinds of index
entry sit beside it, each in its own partition, so neither lookup scans:

- a **metadata entry** per indexed key the session's metadata holds, in the
  partition of that key and value, sorted by (created_at, session id): V4 is
  one strongly consistent Query of that partition (index entries are items of
  the table, not of a GSI, which could only be read eventually consistent),
  then one BatchGetItem of the heads it names;
- an **expiry entry** per session with a ttl, in the tenant's expiry
  partition, sorted by expiry: V7's ``delete_expired`` queries the entries due
  before its cutoff, so its cost grows with the expired sessions, not the
  table. A sliding expiry moves the head's ``xa`` on every write without
  touching the entry; when the entry comes due and the head says later, the
  sweep moves the entry instead of deleting the session.

Every entry is written in the same transaction as the head change that makes
it true, on the head's version token, and removed by the session's deletion.
Reads judge expiry from the head's ``xa``, so an expired session reads as
absent at once, whatever DynamoDB's own TTL does later.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import datetime, timedelta, timezone
from typing import Any

from genkit_sessions.dynamodb import _head
from genkit_sessions.dynamodb import _keys as keys
from genkit_sessions.dynamodb._calls import (
    Abandoned,
    Cancelled,
    Steps,
    batch_get,
    call,
    get_item,
    write_one,
)
from genkit_sessions.dynamodb._commit import (
    commit_staged,
    judge_the_item_in_the_way,
    outcome_unknown,
    take_back_dead,
    transact_surely,
)
from genkit_sessions.dynamodb._engine import Engine
from genkit_sessions.dynamodb._expressions import Update, eq, exists, not_exists, render
from genkit_sessions.dynamodb._items import Head, id_list, item_size, pages_of, put_action
from genkit_sessions.dynamodb._listed import fits, give_back, landed, new_listing, write_ahead
from genkit_sessions.dynamodb._maintenance import delete_session, snapshot_item
from genkit_sessions.dynamodb._reads import read_head, record_of
from genkit_sessions.errors import GenkitError, Status
from genkit_sessions.model.clock import format_timestamp, parse_timestamp
from genkit_sessions.model.frozen_json import FrozenDict
from genkit_sessions.model.types import SessionSnapshot
from genkit_sessions.stores import session_rules as rules
from genkit_sessions.stores.protocol import SessionPage, SessionRecord
from genkit_sessions.stores.write_rules import leaf_of, restore_order

__all__ = ["create_session", "create_with_snapshots", "delete_expired", "find_sessions", "set_metadata"]

_ROUNDS = 5
_log = logging.getLogger(__name__)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


def _head_update(engine: Engine, tenant: str, session_id: str, update: Update, condition: Any) -> dict[str, Any]:
    return {
        "Update": {
            "TableName": engine.table,
            "Key": keys.head_key(tenant, session_id),
            **render(condition=condition, update=update),
        }
    }


def _index_put(engine: Engine, pk: dict[str, Any], sk: str, **attributes: Any) -> dict[str, Any]:
    return put_action(engine.table, {"pk": pk, "sk": {"S": sk}, **attributes})


def _index_delete(engine: Engine, pk: dict[str, Any], sk: str) -> dict[str, Any]:
    return {"Delete": {"TableName": engine.table, "Key": {"pk": pk, "sk": {"S": sk}}}}


def _run(engine: Engine, actions: list[dict[str, Any]]) -> Steps[None]:
    if len(actions) == 1 and "Update" in actions[0]:
        yield from write_one(engine.table, actions[0])
    else:
        yield from transact_surely(engine, actions)


def _record_attributes(
    engine: Engine,
    tenant: str,
    session_id: str,
    metadata: FrozenDict,
    ttl: timedelta | None,
    sliding: bool,
    now: str,
    created: str,
) -> tuple[dict[str, Any], list[dict[str, Any]], int | None]:
    """What a new session's head carries of its record (created at ``created``, its expiry counted from
    ``now``, V7), the index entries written beside it, and its expiry instant (epoch ms)."""
    attributes: dict[str, Any] = {"ca": {"S": created}, "ua": {"S": now}}
    entries: list[dict[str, Any]] = []
    if metadata:
        attributes["md"] = {"M": {k: {"S": v} for k, v in metadata.items()}}
        for name, value in metadata.items():
            if name in engine.settings.indexed:
                pk = keys.index_pk(tenant, name, value)
                entries.append(_index_put(engine, pk, keys.index_sk(created, session_id)))
    expires = None
    if ttl is not None:
        ttl_us = ttl // _MICROSECOND
        created_us = (parse_timestamp(now) - _EPOCH) // _MICROSECOND
        expires = (created_us + ttl_us) // 1000  # V7: created_at + ttl, down to the whole millisecond
        xi = keys.expiry_sk(expires, session_id)
        attributes.update(xa={"N": str(expires)}, tl={"N": str(max(1, -(-ttl_us // 1000)))}, xi={"S": xi})
        if sliding:
            attributes["sl"] = {"BOOL": True}
        entries.append(_index_put(engine, keys.expiry_pk(tenant), xi, sid={"S": session_id}))
    return attributes, entries, expires


def _new_record(
    session_id: str, now: str, expires: int | None, metadata: FrozenDict, ttl: timedelta | None, sliding: bool
) -> SessionRecord:
    """What a create wrote (V8: a session without snapshots reads as version 0), without reading it back."""
    expires_at = None
    if expires is not None:
        expires_at = format_timestamp(datetime.fromtimestamp(expires / 1000, tz=timezone.utc))
    return SessionRecord(
        id=session_id,
        created_at=now,
        updated_at=now,
        version=0,
        expires_at=expires_at,
        metadata=metadata,
        ttl=ttl,
        sliding=sliding and ttl is not None,
    )


def create_session(
    engine: Engine,
    tenant: str,
    session_id: str,
    metadata: FrozenDict,
    ttl: timedelta | None,
    sliding: bool,
) -> Steps[SessionRecord]:
    """V1: one write (a transaction when there are index entries) on there being no live head."""
    for _ in range(_ROUNDS):
        now, token = engine.stamp(), engine.token()
        attributes, entries, expires = _record_attributes(engine, tenant, session_id, metadata, ttl, sliding, now, now)
        update = Update()
        for name, value in attributes.items():
            update.set(name, value)
        update.set("lc", {"S": "0"}).set("hv", {"S": token}).add("sv", {"N": "0"}).remove("dead")
        condition = not_exists("pk") | (exists("dead") & not_exists("del"))
        try:
            yield from _run(engine, [_head_update(engine, tenant, session_id, update, condition), *entries])
        except Cancelled:
            head = yield from read_head(engine, tenant, session_id)
            if head.version == token:
                break  # this very write landed (its answer was lost, and the resend was refused)
            if head.live(engine.now_ms()):
                raise rules.session_exists(session_id) from None
            if head.alive or head.deleting:  # expired, or a deletion stopped part-way: finish it, then create
                yield from delete_session(engine, tenant, session_id)
            continue
        break
    else:
        raise _kept_changing(engine, session_id)
    engine.see_head(tenant, session_id, None)
    return _new_record(session_id, now, expires, metadata, ttl, sliding)


def _kept_changing(engine: Engine, session_id: str) -> GenkitError:
    return GenkitError(
        Status.ABORTED,
        f"session {session_id!r} kept changing while it was being created on DynamoDB table {engine.table!r}; retry",
    )


def create_with_snapshots(
    engine: Engine,
    tenant: str,
    session_id: str,
    metadata: FrozenDict,
    ttl: timedelta | None,
    sliding: bool,
    snapshots: list[SessionSnapshot],
) -> Steps[SessionRecord]:
    """V1 with snapshots: a GetItem of the head, then one TransactWriteItems of the head (its record and
    its members, on the exact tombstone read or on there being none), the index entries, and each
    snapshot's item (on its id being free) and blob parts. Past 3 MB, each snapshot's blob is staged
    as a large save's is (named in the head, marked, written, lifted) and the rest is one commit, so
    the create still lands whole or not at all. Past 100 actions (more snapshots than a transaction
    holds), the snapshot items are written ahead of one commit, which alone makes them visible
    (:func:`_create_listed`)."""
    rules.first_snapshots(session_id, snapshots, engine.stamp())  # refuse a bad batch before any call
    for _ in range(_ROUNDS):
        read = yield from read_head(engine, tenant, session_id)
        if read.live(engine.now_ms()):
            raise rules.session_exists(session_id)
        if read.alive or read.deleting:  # expired, or a deletion stopped part-way: finish it, then create
            yield from delete_session(engine, tenant, session_id)
            continue
        now, now_ms = engine.stamp(), engine.now_ms()
        first = rules.first_snapshots(session_id, snapshots, now)
        created = min(now, *(s.created_at for s in first))
        attributes, entries, expires = _record_attributes(
            engine, tenant, session_id, metadata, ttl, sliding, now, created
        )
        item_expiry = engine.now_epoch() + int(engine.settings.ttl.total_seconds()) if engine.settings.ttl else None
        items: list[dict[str, Any]] = []
        blobs: list[tuple[str, list[dict[str, Any]]]] = []
        recipes: dict[str, Any] = {}
        for snapshot in first:
            parts, item, recipe = yield from snapshot_item(engine, tenant, session_id, snapshot, None, item_expiry)
            recipes[snapshot.snapshot_id] = recipe
            items.append(put_action(engine.table, item, render(condition=not_exists("pk"))))
            blobs.append((recipe.refs[-1][0], parts))
        order = restore_order((), first, None)
        leaf = leaf_of(order)
        ids = [s.snapshot_id for s in order]
        head_ids, paged = ids[-engine.settings.head_ids :], ids[: -engine.settings.head_ids]
        for chunk in pages_of(paged):
            page: dict[str, Any] = {**keys.page_key(tenant, session_id, engine.token()), "ids": id_list(chunk)}
            if item_expiry is not None:
                page["exp"] = {"N": str(item_expiry)}
            items.append(put_action(engine.table, page))

        # The record, with the members, over the tombstone's session version (V8 never reuses a number).
        template = _head.restored(
            engine,
            tenant,
            session_id,
            Head("", (), {**keys.head_key(tenant, session_id), **attributes, "sv": {"N": "0"}}),
            head_ids,
            leaf,
            recipes[leaf.snapshot_id] if leaf is not None else None,
            item_expiry,
            created,
            len(order),
            len(order),
        )["Put"]["Item"]
        head = _record_over(engine, template, read)
        actions = [head, *entries, *items]
        # Too many bytes for one transaction: the largest blobs are staged (named in the head, marked,
        # their parts written under an orphan expiry, then lifted) until the rest fits one commit.
        inline = sorted(blobs, key=lambda blob: sum(map(item_size, blob[1])))
        staged: list[tuple[str, list[dict[str, Any]]]] = []
        while inline and not fits([*actions, *_puts(engine, inline)], len(staged)):
            staged.append(inline.pop())
        if not fits([*actions, *_puts(engine, inline)], len(staged)):  # too many snapshots: written ahead
            listed = yield from _create_listed(engine, tenant, session_id, read, template, entries, items, blobs)
            if listed is None:
                continue
            head = listed
            break
        if staged:
            own = tuple(_head.Staging(engine.now_epoch(), len(parts), name) for name, parts in staged)
            named = yield from _head.register_staged(engine, tenant, session_id, own, read)
            if named is None or named.alive:  # a deletion began, or a session was created, meanwhile: again
                continue
            head = _record_over(engine, template, named, own)
            commit = [head, *entries, *items, *_puts(engine, inline)]
            try:
                yield from commit_staged(engine, tenant, session_id, staged, commit, item_expiry)
            except Cancelled:
                found = yield from read_head(engine, tenant, session_id)
                if found.live(engine.now_ms()):
                    raise rules.session_exists(session_id) from None
                yield from _judge_taken_ids(engine, tenant, [s.snapshot_id for s in first])
                continue  # the head moved since it was named, or an expired session held an id: again
            break
        try:
            yield from transact_surely(engine, [*actions, *_puts(engine, inline)])
        except Cancelled:
            found = yield from read_head(engine, tenant, session_id)
            if found.version == head["Put"]["Item"]["hv"]["S"]:
                break  # this very write landed (its answer was lost, and the resend was refused)
            if found.live(engine.now_ms()):
                raise rules.session_exists(session_id) from None
            yield from _judge_taken_ids(engine, tenant, [s.snapshot_id for s in first])
            continue  # the head moved since it was read, or an expired session held an id: again
        break
    else:
        raise _kept_changing(engine, session_id)
    engine.see_head(tenant, session_id, None)
    engine.forget(tenant, set(ids))
    found_record = yield from record_of(engine, tenant, session_id, Head.of(head["Put"]["Item"]), now_ms)
    if found_record is None:  # its ttl ran out already: what was written, as create_session reports it
        return _new_record(session_id, now, expires, metadata, ttl, sliding)
    return found_record


def _record_over(
    engine: Engine, template: dict[str, Any], base: Head, own: tuple[_head.Staging, ...] = ()
) -> dict[str, Any]:
    """The Put of a new session's head (``template``, its session version counted from 0) on the exact
    head ``base`` (a finished tombstone, or none): its session version goes on from the tombstone's, a
    dead first writer's staged writes stay named, and this create's own (``own``) go with its commit."""
    head = {**template, "sv": {"N": str(base.session_version + int(template["sv"]["N"]))}}
    dropped = {s.entry for s in own}
    staged = [e for e in (base.item or {}).get(_head.STAGED, {}).get("SS", ()) if e not in dropped]
    if staged:
        head[_head.STAGED] = {"SS": staged}
    condition = not_exists("pk") if base.version is None else eq("hv", {"S": base.version})
    return put_action(engine.table, head, render(condition=condition))


def _puts(engine: Engine, blobs: list[tuple[str, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    return [put_action(engine.table, part) for _, parts in blobs for part in parts]


def _judge_taken_ids(engine: Engine, tenant: str, ids: list[str]) -> Steps[None]:
    """After a refused create: ALREADY_EXISTS for an id a live session holds; an expired session that
    holds one (its ids read as absent) is deleted, and an item a create that never committed left in
    the way is taken back, so the create can go on."""
    item_keys = [keys.snapshot_key(tenant, i) for i in ids]
    stored = yield from batch_get(engine.table, item_keys)
    for snapshot_id, key in zip(ids, item_keys, strict=True):
        if (key["pk"]["S"], key["sk"]["S"]) not in stored:
            continue
        in_the_way = yield from judge_the_item_in_the_way(engine, tenant, snapshot_id)
        if in_the_way is None:
            if (yield from get_item(engine.table, key, "pk")) is None:
                continue  # taken back: the id is free again
            raise rules.snapshot_exists(snapshot_id) from None
        yield from delete_session(engine, tenant, in_the_way)  # expired: its ids read as absent


def _create_listed(
    engine: Engine,
    tenant: str,
    session_id: str,
    read: Head,
    template: dict[str, Any],
    entries: list[dict[str, Any]],
    items: list[dict[str, Any]],
    blobs: list[tuple[str, list[dict[str, Any]]]],
) -> Steps[dict[str, Any] | None]:
    """A create with more first snapshots than one transaction holds, still one commit: its snapshot items
    are written ahead of it (``_listed``), then one TransactWriteItems of the head (the record and its
    members, naming the create's listing in ``cw``), the index entries, the member pages and the release
    of every marker makes them visible. Returns the head's Put that landed; None when the head moved
    meanwhile (the caller reads it again). ALREADY_EXISTS when an id another session holds is in the way."""
    snapshot_puts = [a for a in items if _is_snapshot(a)]
    pages = [a for a in items if not _is_snapshot(a)]
    listing = new_listing(engine, tenant, session_id, snapshot_puts, [p for _, parts in blobs for p in parts])
    releases = listing.releases(engine)
    if not fits([put_action(engine.table, {**template, **listing.created_by}), *entries, *pages, *releases]):
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"create_session({session_id!r}) with {len(snapshot_puts)} first snapshots lists more members than "
            f"one commit holds on DynamoDB table {engine.table!r}; create it with fewer and restore the rest",
        )
    own = (listing.staging,)
    named = yield from _head.register_staged(engine, tenant, session_id, own, read)
    if named is None or named.alive:  # a deletion began, or a session was created, meanwhile: again
        return None
    head = _record_over(engine, {**template, **listing.created_by}, named, own)
    try:
        yield from write_ahead(engine, [listing])
    except Cancelled as cancelled:  # an id taken meanwhile (or this very chunk, its answer lost)
        yield from give_back(engine, tenant, [listing])
        if not cancelled.after_lost_answer:  # else taken back whole: again, from the top
            yield from _judge_taken_ids(engine, tenant, [_snapshot_id(a) for a in snapshot_puts])
        return None
    except (GenkitError, Abandoned):
        yield from give_back(engine, tenant, [listing])
        raise
    try:
        yield from transact_surely(engine, [head, *entries, *pages, *releases])
    except Cancelled as cancelled:
        if cancelled.after_lost_answer and (yield from landed(engine, [listing])):
            return head  # the first send landed: the commit deleted the markers
        yield from give_back(engine, tenant, [listing])
        found = yield from read_head(engine, tenant, session_id)
        if found.live(engine.now_ms()):
            raise rules.session_exists(session_id) from None
        return None
    except GenkitError as error:
        if not outcome_unknown(error):  # refused: nothing names what was written
            yield from give_back(engine, tenant, [listing])
        raise  # unknown: named in the head and listed by the markers, taken back once stale
    except Abandoned:  # whichever of the commit and the voiding of its markers comes first wins
        yield from give_back(engine, tenant, [listing])
        raise
    return head


def _is_snapshot(action: dict[str, Any]) -> bool:
    return bool(action["Put"]["Item"]["sk"]["S"] == keys.SNAPSHOT_SK)


def _snapshot_id(action: dict[str, Any]) -> str:
    return str(action["Put"]["Item"]["pk"]["S"]).partition(f"{keys.SEP}n{keys.SEP}")[2]


def set_metadata(engine: Engine, tenant: str, session_id: str, name: str, value: str | None) -> Steps[SessionRecord]:
    """V5: the head's metadata and the key's index entries, in one transaction on the head's version."""
    for _ in range(_ROUNDS):
        head = yield from read_head(engine, tenant, session_id)
        now_ms = engine.now_ms()
        record = yield from record_of(engine, tenant, session_id, head, now_ms)
        if record is None or head.item is None or head.version is None:
            raise rules.session_not_found(session_id)
        old = record.metadata.get(name)
        changed = dict(record.metadata)
        if value is None:
            changed.pop(name, None)
        else:
            changed[name] = value
        token = engine.token()
        update = Update().set("hv", {"S": token})
        if changed:
            update.set("md", {"M": {k: {"S": v} for k, v in changed.items()}})
        else:
            update.remove("md")
        if "ca" not in head.item:
            update.set("ca", {"S": record.created_at})  # a head from before records: its index entries need it
        actions = [_head_update(engine, tenant, session_id, update, eq("hv", {"S": head.version}))]
        if name in engine.settings.indexed and old != value:
            sk = keys.index_sk(record.created_at, session_id)
            if old is not None:
                actions.append(_index_delete(engine, keys.index_pk(tenant, name, old), sk))
            if value is not None:
                actions.append(_index_put(engine, keys.index_pk(tenant, name, value), sk))
        try:
            yield from _run(engine, actions)
        except Cancelled:
            again = yield from read_head(engine, tenant, session_id)
            if again.version != token:
                continue  # another write moved the head: read it and apply the change to that
        engine.see_head(tenant, session_id, None)
        head = yield from read_head(engine, tenant, session_id)
        found = yield from record_of(engine, tenant, session_id, head, now_ms)
        if found is None:
            raise rules.session_not_found(session_id)
        return found
    raise GenkitError(
        Status.ABORTED,
        f"session {session_id!r} kept changing while its metadata was being set on DynamoDB table "
        f"{engine.table!r}; retry",
    )


def find_sessions(
    engine: Engine, tenant: str, name: str, value: str, limit: int, after: tuple[str, str] | None
) -> Steps[SessionPage]:
    """V4: one strongly consistent Query of the key's index partition, one BatchGetItem of the heads."""
    pk = keys.index_pk(tenant, name, value)
    params: dict[str, Any] = {
        "KeyConditionExpression": "pk = :pk",
        "ExpressionAttributeValues": {":pk": pk},
        "ConsistentRead": True,
        "Limit": limit + 1,
    }
    if after is not None:
        params["ExclusiveStartKey"] = {"pk": pk, "sk": {"S": keys.index_sk(*after)}}
    page = yield from call("Query", engine.table, **params)
    rows = page.get("Items", [])
    more = len(rows) > limit
    rows = rows[:limit]
    entries = [keys.index_entry(row["sk"]["S"]) for row in rows]
    heads: dict[tuple[str, str], dict[str, Any]] = {}
    if entries:
        heads = yield from batch_get(engine.table, [keys.head_key(tenant, sid) for _, sid in entries])
    records: list[SessionRecord] = []
    for created, sid in entries:
        item = heads.get((keys.session_pk(tenant, sid)["S"], keys.HEAD_SK))
        if item is None:
            continue
        record = yield from record_of(engine, tenant, sid, Head.of(item))
        if record is not None and record.metadata.get(name) == value and record.created_at == created:
            records.append(record)
    token = rules.encode_page_token(*entries[-1]) if more and entries else None
    return SessionPage(tuple(records), token)


def delete_expired(engine: Engine, tenant: str, before_ms: int) -> Steps[int]:
    """V7: delete the sessions whose expiry entry is due before ``before_ms`` and whose head agrees; move
    the entries of sessions whose sliding expiry moved on; drop entries no session needs. How many went."""
    pk = keys.expiry_pk(tenant)
    params: dict[str, Any] = {
        "KeyConditionExpression": "pk = :pk AND sk < :cut",
        "ExpressionAttributeValues": {":pk": pk, ":cut": {"S": f"{before_ms:015d}"}},
        "ConsistentRead": True,
    }
    deleted = 0
    now = before_ms // 1000
    while True:
        page = yield from call("Query", engine.table, **dict(params))
        rows = page.get("Items", [])
        heads: dict[tuple[str, str], dict[str, Any]] = {}
        if rows:
            heads = yield from batch_get(engine.table, [keys.head_key(tenant, row["sid"]["S"]) for row in rows])
        for row in rows:
            session_id, sk = row["sid"]["S"], row["sk"]["S"]
            head = Head.of(heads.get((keys.session_pk(tenant, session_id)["S"], keys.HEAD_SK)))
            item = head.item or {}
            if head.deleting:  # a deletion that stopped part-way: finish it (it removes the entries it names)
                yield from delete_session(engine, tenant, session_id)
                if sk not in (item.get("xi", {}).get("S"), item.get("rmd", {}).get("S")):
                    yield from _drop_entry(engine, pk, sk)
            elif not head.alive or item.get("xi", {}).get("S") != sk:
                # An entry a staged write left for a session it did not know alive: a write whose writer
                # died is taken back (the head names it, tombstone or not), then the entry goes.
                taken = yield from take_back_dead(engine, tenant, session_id, _head.stale_staged(engine, head, now=now))
                if taken:
                    with contextlib.suppress(Cancelled):  # Cancelled: the head went meanwhile, names and all
                        yield from write_one(engine.table, _head.forget_staged(engine, tenant, session_id, taken))
                yield from _drop_entry(engine, pk, sk)  # its session went, or was made again with its own entry
            elif int(item.get("xa", {"N": "0"})["N"]) < before_ms:
                yield from delete_session(engine, tenant, session_id)
                deleted += 1
            else:
                yield from _move_entry(engine, tenant, session_id, head, sk)
        if "LastEvaluatedKey" not in page:
            return deleted
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _drop_entry(engine: Engine, pk: dict[str, Any], sk: str) -> Steps[None]:
    yield from call("DeleteItem", engine.table, Key={"pk": pk, "sk": {"S": sk}})


def _move_entry(engine: Engine, tenant: str, session_id: str, head: Head, sk: str) -> Steps[None]:
    """Move a slid session's expiry entry to its current expiry, on the head's version (a write landing
    meanwhile leaves the entry where it is, for the next sweep)."""
    assert head.item is not None and head.version is not None
    moved = keys.expiry_sk(int(head.item["xa"]["N"]), session_id)
    update = Update().set("xi", {"S": moved}).set("hv", {"S": engine.token()})
    actions = [
        _head_update(engine, tenant, session_id, update, eq("hv", {"S": head.version})),
        _index_put(engine, keys.expiry_pk(tenant), moved, sid={"S": session_id}),
        _index_delete(engine, keys.expiry_pk(tenant), sk),
    ]
    try:
        yield from transact_surely(engine, actions)
    except Cancelled:
        return
    engine.see_head(tenant, session_id, None)
