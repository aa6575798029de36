"""How a save commits: the optimistic read-modify-write, the commit transaction, and large-write staging.

``save`` runs the caller's mutator on what the store last read or wrote under
the id (a guess; nothing for an id it never saw), applies the shared write
rules, and writes on the condition that the stored data is exactly what the
mutator saw. A wrong guess never lands: it counts as a lost race, and every
rule the guess breaks is judged again on a real read before it is raised.

- A **new snapshot** is one TransactWriteItems: a Put of its item (if absent)
  and the head write of ``_head.new_snapshot``.
- A **change** of an existing snapshot's state or status is one
  TransactWriteItems: an update of its item on its item version (and on it
  still existing, so a write after a deletion never leaves a ghost) and the
  head's version move; a heartbeat, which changes neither, is one UpdateItem.
- Every transaction carries a ClientRequestToken. When its answer is lost the
  store resends it with the same token, so DynamoDB answers a write it already
  applied with that success instead of a refused condition.
- A write too big for one transaction (100 actions, 4 MB) is **staged**: its
  name in the session's head, a marker naming its blob, then its parts under
  an orphan expiry, then the expiry lifted, then the commit, which deletes the
  marker and takes the name out of the head in the same transaction. So a part
  a committed snapshot references never expires; a commit that was refused
  takes its parts back; and a write whose writer died is still named in the
  head: the session's next save past ``orphan_ttl`` takes it back before its
  own commit (``delete_expired_sessions`` does, for a first write in a session
  no one resumes), as ``delete_session`` and ``sweep_staged`` do at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import uuid
from collections.abc import Sequence
from typing import Any

import attrs
from botocore.exceptions import ClientError  # type: ignore[import-untyped]

from genkit_sessions.dynamodb import _head
from genkit_sessions.dynamodb import _keys as keys
from genkit_sessions.dynamodb._calls import (
    Abandoned,
    Cancelled,
    Sleep,
    Steps,
    batch_write,
    call,
    get_item,
    transact,
    write_one,
)
from genkit_sessions.dynamodb._codec import (
    UPDATE_TAG,
    CorruptData,
    Plan,
    Recipe,
    compress_steps,
    decompress,
    pack_record,
    pack_update,
    plan_state_steps,
    sealed_record,
    split_parts,
    strict_equal,
)
from genkit_sessions.dynamodb._engine import INLINE_LIMIT, RECORD_LIMIT, Engine
from genkit_sessions.dynamodb._expressions import Update, eq, exists, not_exists, render
from genkit_sessions.dynamodb._items import (
    CREATED_BY,
    ITEM_LIMIT,
    Head,
    Loaded,
    action_size,
    hidden,
    item_size,
    put_action,
    status_attributes,
    status_history,
)
from genkit_sessions.dynamodb._reads import home_of, read_by_id, read_head
from genkit_sessions.errors import GenkitError, Status
from genkit_sessions.model.types import SessionSnapshot, SessionState
from genkit_sessions.model.wire import to_wire
from genkit_sessions.stores.protocol import Mutator
from genkit_sessions.stores.session_rules import version_conflict
from genkit_sessions.stores.write_rules import check_parent, next_snapshot

__all__ = ["commit_staged", "save"]

_log = logging.getLogger("genkit_sessions.dynamodb")

MAX_TRANSACTION_ACTIONS = 100
MAX_TRANSACTION_BYTES = 4 * 1024 * 1024
_TRANSACTION_MARGIN = 256 * 1024
_ITEM_MARGIN = 2 * 1024
_RESENDS = 2
"""How many times a transaction whose answer was lost is sent again with the same token."""


class Contention(Exception):
    """A conditional write lost to a concurrent writer: read again and retry."""

    def __init__(self, head: Head | None = None) -> None:
        super().__init__()
        self.head = head
        """When the race was for the session's head: the head as read after losing it."""


class Expired(Exception):
    """A session the write must delete before it goes on: expired (it reads as absent), or one whose
    deletion stopped part way."""

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self.session_id = session_id


def save(
    engine: Engine, tenant: str, snapshot_id: str, mutator: Mutator, expected: int | None = None
) -> Steps[SessionSnapshot | None]:
    """S3: atomically apply ``mutator`` to ``snapshot_id``; bounded retries, then ABORTED. With
    ``expected``, only while the session's version is that one (ABORTED, VERSION_CONFLICT, otherwise)."""
    from genkit_sessions.dynamodb._maintenance import delete_session

    seen_head: Head | None = None
    head_races_lost = 0
    lost = 0  # attempts lost to concurrent writers: only they count against max_attempts
    guessing = True  # the first attempt runs on what this store remembers, once
    expired_seen = False
    while lost < engine.settings.max_attempts:
        if lost > 1:
            yield Sleep(random.uniform(0, min(0.5, 0.01 * 2**lost)))
        guessed, guessing = guessing, False
        existing, snapshot = _guess(engine, tenant, snapshot_id, mutator) if guessed else (None, None)
        if snapshot is None:
            guessed = False
            existing = yield from read_by_id(engine, tenant, snapshot_id)
            snapshot = next_snapshot(
                snapshot_id, existing.snapshot if existing is not None else None, mutator, engine.stamp()
            )
        if snapshot is None:
            return None
        try:
            if existing is None:
                yield from _create(engine, tenant, snapshot, seen_head, head_races_lost, expected)
            else:
                yield from _update(engine, tenant, snapshot, existing, expected)
        except Expired as expired:  # deleted first (V7), then the write is judged again
            if existing is None and snapshot.parent_id is not None and expired.session_id == snapshot.session_id:
                check_parent(snapshot, None)  # S7: its parent is in the expired session, so absent; nothing is deleted
            lost += expired_seen  # a session that expires again meanwhile is another writer's doing
            expired_seen = True
            yield from delete_session(engine, tenant, expired.session_id)
            if expired.session_id == snapshot.session_id:
                seen_head = yield from read_head(engine, tenant, expired.session_id)  # the tombstone to write over
            continue
        except Contention as contention:
            lost += 1
            if contention.head is not None:
                seen_head = contention.head
                head_races_lost += 1
            continue
        except GenkitError as error:
            if guessed and error.status is Status.INVALID_ARGUMENT:
                continue  # a rule the guess broke (S7, say) is judged again on what is really stored
            raise
        return snapshot
    raise GenkitError(
        Status.ABORTED,
        f"snapshot {snapshot_id!r}: {engine.settings.max_attempts} attempts in a row lost to concurrent writers "
        f"on DynamoDB table {engine.table!r}; retry the save later",
    )


def judge_the_item_in_the_way(engine: Engine, tenant: str, snapshot_id: str) -> Steps[str | None]:
    """A create refused because the id's item exists: when that item lives in an expired session (it read
    as absent), or in one whose deletion stopped part way (its head lists what is left), that session, to
    be deleted (the deletion finished) before the write goes on, as in the in-memory store; when it
    lives in a session with no head at all, FAILED_PRECONDITION naming it. An item written ahead of a
    create's commit that has not landed (see :func:`take_back_creation`) is taken back, and the caller
    retries (None), as it does when another writer created the id meanwhile."""
    home = yield from home_of(engine, tenant, snapshot_id)
    if home is None:
        return None
    session_id, head, item = home
    if hidden(item, head.item):  # written ahead of a create's commit, which has not landed: it loses the id
        yield from take_back_creation(engine, tenant, session_id, head, item[CREATED_BY]["S"], snapshot_id)
        return None
    if (head.alive and head.expired(engine.now_ms())) or head.deleting:
        return session_id
    if not head.alive:
        raise GenkitError(
            Status.FAILED_PRECONDITION,
            f"snapshot id {snapshot_id!r} is still held by session {session_id!r}, which has no live head: its "
            f"deletion left it behind; run delete_session({session_id!r}) again before reusing the id",
        )
    return None


def _guess(engine: Engine, tenant: str, snapshot_id: str, mutator: Mutator) -> tuple[Loaded | None, Any]:
    """Run the mutator on the cached snapshot (or on nothing for an id not in the cache); no snapshot
    when it declined or raised, so the caller reads the table and runs it on what is really there."""
    guess = engine.cached(tenant, snapshot_id)
    try:
        snapshot = next_snapshot(snapshot_id, guess.snapshot if guess is not None else None, mutator, engine.stamp())
    except Exception:  # judged again on a real read, where it may well raise for good
        return guess, None
    return guess, snapshot


def new_blob(engine: Engine, snapshot_id: str, plan: Plan, update: bool = False) -> Steps[tuple[str, list[bytes]]]:
    """A new blob's name and parts: ``c`` (a page) or ``d`` (a delta), or, for a change of an existing
    snapshot's state, its update blob (``u``), plus a random nonce. A large blob (a page of the top
    level) is written and deflated in slices, the event loop getting a turn between them."""
    kind = UPDATE_TAG if update else ("c" if plan.is_page else "d")
    tag = kind + os.urandom(6).hex()
    data = yield from compress_steps(plan.payload)
    return keys.blob_name(snapshot_id, tag), split_parts(data, engine.settings.chunk_bytes)


def record_bytes(snapshot: SessionSnapshot, recipe: Recipe) -> bytes:
    record = sealed_record(to_wire(attrs.evolve(snapshot, state=None)), recipe)
    if len(record) > RECORD_LIMIT:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"snapshot {snapshot.snapshot_id!r}: everything but its state takes {len(record)} bytes compressed; "
            f"the DynamoDB store keeps that under {RECORD_LIMIT} bytes: move large data into the state",
        )
    return record


def blob_part_items(
    tenant: str, session_id: str, name: str, parts: list[bytes], expires: int | None
) -> list[dict[str, Any]]:
    items = []
    for index, data in enumerate(parts):
        item: dict[str, Any] = {**keys.blob_part_key(tenant, session_id, name, index), "d": {"B": data}}
        if expires is not None:
            item["exp"] = {"N": str(expires)}
        items.append(item)
    return items


def _create(
    engine: Engine,
    tenant: str,
    snapshot: SessionSnapshot,
    seen_head: Head | None,
    head_races_lost: int = 0,
    expected: int | None = None,
) -> Steps[None]:
    """Create a snapshot. ``seen_head`` is the head this save read after losing a race for it."""
    session_id = snapshot.session_id
    assert session_id is not None
    snapshot_id = snapshot.snapshot_id
    parent: Loaded | None = None
    parent_state: SessionState | None = None
    parent_recipe: Recipe | None = None
    pinned: Head | None = None
    if snapshot.parent_id is not None:
        parent, pinned = yield from _parent(engine, tenant, snapshot, seen_head)
        if parent is None and expected is not None:  # the version decides first, as in every store
            head = yield from read_head(engine, tenant, session_id)
            visible = head.visible_version(engine.now_ms())
            if visible != expected:
                raise version_conflict(session_id, expected, visible)
        check_parent(snapshot, parent.snapshot if parent is not None else None)
        assert parent is not None
        parent_state, parent_recipe = parent.snapshot.state, parent.recipe
    expires = parent.expires if parent is not None and parent.expires is not None else None
    if expires is None and engine.settings.ttl is not None:
        expires = engine.now_epoch() + int(engine.settings.ttl.total_seconds())
    plan = yield from plan_state_steps(parent_state, parent_recipe, snapshot.state, engine.settings.checkpoint_every)
    name, parts = yield from new_blob(engine, snapshot_id, plan)
    inline = len(parts) == 1 and len(parts[0]) <= INLINE_LIMIT
    recipe = plan.recipe(name, 0 if inline else len(parts), sum(map(len, parts)))
    record = record_bytes(snapshot, recipe)
    if inline:
        record = pack_record(record, keys.blob_tag(name), parts[0])
    version = engine.first_version()
    item = {
        **keys.snapshot_key(tenant, snapshot_id),
        "rec": {"B": record},
        "v": {"N": str(version)},
        **status_attributes(snapshot),
    }
    if expires is not None:
        item["exp"] = {"N": str(expires)}
    known = (
        pinned
        or seen_head
        or engine.known_head(tenant, session_id)
        or (engine.head_with(tenant, snapshot.parent_id) if snapshot.parent_id is not None else None)
    )
    put_item = put_action(engine.table, item, render(condition=not_exists("pk")))
    head_actions, head_after = _head.new_snapshot(
        engine, tenant, snapshot, recipe, expires, known, head_races_lost, expected
    )
    part_items = [] if inline else blob_part_items(tenant, session_id, name, parts, expires)
    staging = name if will_stage([put_item, *head_actions], part_items) else None
    known, drop = yield from _staging_and_the_dead(engine, tenant, session_id, staging, len(part_items), known)
    if drop:  # the commit takes these names out of the head
        head_actions, head_after = _head.new_snapshot(
            engine, tenant, snapshot, recipe, expires, known, head_races_lost, expected, drop
        )
    actions = [put_item, *head_actions]
    try:
        yield from _commit(engine, tenant, session_id, name, actions, part_items, expires)
    except Cancelled as cancelled:
        lost: Head | None = None
        if not cancelled.failed(0):  # the head moved or filled up, or the session is gone: read its head
            lost = yield from read_head(engine, tenant, session_id)
            now_ms = engine.now_ms()
            if expected is not None and lost.visible_version(now_ms) != expected:
                raise version_conflict(session_id, expected, lost.visible_version(now_ms)) from None
            if lost.alive and lost.expired(now_ms):  # delete it, then judge the write (S7 included) again
                raise Expired(session_id) from None
            if not lost.alive and snapshot.parent_id is not None:  # judge S7 on a fresh read of the parent
                engine.forget(tenant, [snapshot.parent_id])
                fresh = yield from read_by_id(engine, tenant, snapshot.parent_id)
                check_parent(snapshot, fresh.snapshot if fresh is not None else None)
                raise GenkitError(
                    Status.FAILED_PRECONDITION,
                    f"session {session_id!r} has no live head: it was deleted, or a deletion stopped part-way; "
                    "run delete_session again, or restore the session, before adding to it",
                ) from None
        else:  # the id's item is there though it read as absent, or another writer just created it
            home = yield from judge_the_item_in_the_way(engine, tenant, snapshot_id)
            if home is not None:  # an expired session holds the id: deleted once the write is sure to go on
                if expected is not None:  # refused before anything changes, as in every store
                    head = yield from read_head(engine, tenant, session_id)
                    visible = head.visible_version(engine.now_ms())
                    if visible != expected:
                        raise version_conflict(session_id, expected, visible) from None
                raise Expired(home) from None
        raise Contention(lost) from None
    except GenkitError:
        engine.see_head(tenant, session_id, None)  # the outcome may be unknown: read the head next time
        raise
    engine.see_head(tenant, session_id, head_after)
    statuses = (snapshot.effective_status.value,)
    engine.remember(tenant, Loaded(snapshot, recipe, expires, version, statuses, item_size(item)), head_after)


def _parent(
    engine: Engine, tenant: str, snapshot: SessionSnapshot, seen_head: Head | None
) -> Steps[tuple[Loaded | None, Head | None]]:
    """The parent a new snapshot is planned on (None: not stored), and, when it had to be read, the head
    to condition the write on.

    The copy this store remembers serves while the head the write will be conditioned on is the very
    head it was read or written with: every write that can rewrite a snapshot (a change of its state, a
    restore, a deletion and a recreation of its id) moves that head, so the copy is then current. Else
    the head is read first and the parent after it: a write conditioned on that head cannot land over a
    parent rewritten since it was read (its delta would name blobs that are gone)."""
    parent_id, session_id = snapshot.parent_id, snapshot.session_id
    assert parent_id is not None and session_id is not None
    cached = engine.cached(tenant, parent_id)
    seen_with = engine.head_with(tenant, parent_id)
    if cached is not None and seen_with is not None and seen_with.version is not None:
        known = seen_head or engine.known_head(tenant, session_id) or seen_with
        if known.version == seen_with.version and cached.snapshot.session_id == session_id:
            return cached, None
    head = yield from read_head(engine, tenant, session_id)
    return (yield from read_by_id(engine, tenant, parent_id)), head


def _update(
    engine: Engine, tenant: str, snapshot: SessionSnapshot, existing: Loaded, expected: int | None = None
) -> Steps[None]:
    """Rewrite an existing snapshot on its item version (and on it still existing)."""
    session_id = snapshot.session_id
    assert session_id is not None
    snapshot_id = snapshot.snapshot_id
    before = existing.snapshot.state
    state_changed = not (
        before is snapshot.state
        or (
            before is not None and snapshot.state is not None and strict_equal(to_wire(before), to_wire(snapshot.state))
        )
    )
    status_changed = snapshot.effective_status is not existing.snapshot.effective_status
    recipe = existing.recipe
    name = ""
    parts: list[dict[str, Any]] = []
    update = Update()
    if state_changed:
        # The new state's blob replaces the update blob of the change before (if any): packed into the
        # item when it fits, else as parts, the old update blob's parts deleted in the same write. No other
        # snapshot's recipe names an update blob (a child folds it into its own), so the item count of
        # a snapshot stays bounded however often it changes.
        plan = yield from plan_state_steps(before, existing.recipe, snapshot.state, engine.settings.checkpoint_every)
        name, chunks = yield from new_blob(engine, snapshot_id, plan, update=True)
        size = sum(map(len, chunks))
        recipe = plan.recipe(name, 0, size)
        packed = pack_update(keys.blob_tag(name), chunks[0]) if len(chunks) == 1 else b""
        room = ITEM_LIMIT - (existing.size or RECORD_LIMIT + INLINE_LIMIT + _ITEM_MARGIN) - _ITEM_MARGIN
        if packed and len(record_bytes(snapshot, recipe)) + len(packed) <= room:
            update.set("ub", {"B": packed})
        else:
            recipe = plan.recipe(name, len(chunks), size)
            parts = blob_part_items(tenant, session_id, name, chunks, existing.expires)
            update.remove("ub")
    # An update, not a put: the blob this snapshot wrote inline at its creation stays, for its children.
    status = status_attributes(snapshot, existing.statuses)
    update.set("u", {"B": record_bytes(snapshot, recipe)}).set("v", {"N": str(existing.version + 1)})
    for attribute, value in status.items():
        update.set(attribute, value)
    condition = exists("pk") & (eq("v", {"N": str(existing.version)}) if existing.version > 1 else not_exists("v"))
    item_update = {
        "Update": {
            "TableName": engine.table,
            "Key": keys.snapshot_key(tenant, snapshot_id),
            **render(condition=condition, update=update),
        }
    }
    actions = [item_update]
    known = engine.known_head(tenant, session_id) or engine.head_with(tenant, snapshot_id)
    now = snapshot.updated_at or snapshot.created_at
    changes_session = state_changed or status_changed  # the head's version moves: actions[1]
    if changes_session:
        actions.append(_head.change(engine, tenant, session_id, known, now, expected))
    elif known is None or known.item is None or "xa" in known.item:  # a session that may have expired
        actions.append(_head.live_check(engine, tenant, session_id))
    replaced = existing.recipe.refs[-1] if state_changed and existing.recipe.ends_in_update else None
    old_parts: list[dict[str, Any]] = []
    if replaced is not None and replaced[1] > 0 and replaced not in recipe.refs:
        old_parts = [keys.blob_part_key(tenant, session_id, replaced[0], i) for i in range(replaced[1])]
    if len(actions) + len(old_parts) < MAX_TRANSACTION_ACTIONS - 1:  # room for a staged write's release
        actions += [{"Delete": {"TableName": engine.table, "Key": key}} for key in old_parts]
        old_parts = []
    if changes_session:  # staging named, and the dead taken back, as for a new snapshot
        staging = name if will_stage(actions, parts) else None
        known, drop = yield from _staging_and_the_dead(engine, tenant, session_id, staging, len(parts), known)
        if drop:
            actions[1] = _head.change(engine, tenant, session_id, known, now, expected, drop)
    try:
        yield from _commit(engine, tenant, session_id, name, actions, parts, existing.expires)
    except Cancelled as cancelled:
        engine.forget(tenant, [snapshot_id])
        if len(actions) > 1 and cancelled.failed(1):
            head = yield from read_head(engine, tenant, session_id)
            now_ms = engine.now_ms()
            if expected is not None and head.visible_version(now_ms) != expected:
                raise version_conflict(session_id, expected, head.visible_version(now_ms)) from None
            # Judged only while the snapshot is as read: one that changed or is gone (a guess from a stale
            # copy) is read again first, and an expired session it no longer belongs to is left alone.
            if head.alive and head.expired(now_ms) and not cancelled.failed(0):
                raise Expired(session_id) from None
            if head.deleting and not cancelled.failed(0):
                raise GenkitError(
                    Status.FAILED_PRECONDITION,
                    f"session {session_id!r} is being deleted; snapshot {snapshot_id!r} cannot change meanwhile",
                ) from None
        raise Contention() from None
    if changes_session:
        engine.see_head(tenant, session_id, None)  # its version moved
    engine.forget(tenant, [snapshot_id])  # the head seen with it is out of date
    loaded = Loaded(snapshot, recipe, existing.expires, existing.version + 1, status_history(status), existing.size)
    engine.remember(tenant, loaded)
    if old_parts:  # an update blob of more parts than a transaction holds: deleted once nothing names it
        try:
            yield from batch_write(engine.table, [{"DeleteRequest": {"Key": key}} for key in old_parts])
        except GenkitError as exc:
            _log.warning(
                "could not delete %d parts of a replaced update blob (%s); delete_session removes them",
                len(old_parts),
                exc,
            )
    if state_changed:  # keep the head's read hint current when this snapshot is the leaf (best effort)
        try:
            yield from write_one(engine.table, _head.hint(engine, tenant, session_id, snapshot_id, recipe))
        except (Cancelled, GenkitError) as exc:
            if not isinstance(exc, Cancelled):
                _log.info("could not refresh the read hint of session %r: %s", session_id, exc)


def _commit(
    engine: Engine,
    tenant: str,
    session_id: str,
    blob: str,
    actions: list[dict[str, Any]],
    parts: list[dict[str, Any]],
    expires: int | None,
) -> Steps[None]:
    """Write ``parts`` and commit ``actions`` atomically, staging parts when one transaction cannot hold
    them. A lone action with no parts is a single conditional write, atomic on its own."""
    if len(actions) == 1 and not parts:
        yield from write_one(engine.table, actions[0])
        return
    if not will_stage(actions, parts):
        yield from transact_surely(engine, actions + [put_action(engine.table, p) for p in parts])
        return
    yield from commit_staged(engine, tenant, session_id, [(blob, parts)], actions, expires)


def commit_staged(
    engine: Engine,
    tenant: str,
    session_id: str,
    blobs: Sequence[tuple[str, list[dict[str, Any]]]],
    actions: list[dict[str, Any]],
    expires: int | None,
) -> Steps[None]:
    """Stage the parts of ``blobs`` (each blob's name and part items, named in the session's head
    already), then commit ``actions`` with the release of every blob's marker in one transaction: a
    marker per blob, the parts under an orphan expiry, the expiry lifted, the commit."""
    now = {"N": str(engine.now_epoch())}
    markers = [
        {**keys.marker_key(tenant, session_id, blob), "n": {"N": str(len(parts))}, "at": now} for blob, parts in blobs
    ]
    orphan_expiry = {"N": str(engine.now_epoch() + int(engine.settings.orphan_ttl.total_seconds()))}
    staged = [[{**p, "exp": orphan_expiry, "stg": {"BOOL": True}} for p in parts] for _, parts in blobs]
    every_part = [p for parts in staged for p in parts]
    written: list[dict[str, Any]] = []
    try:
        for marker in markers:
            written.append(marker)
            yield from call("PutItem", engine.table, Item=marker)
    except Abandoned:
        yield from _discard(engine, [], written)
        raise
    except GenkitError:  # no part written yet: the markers go again (one that stays names no part)
        yield from _discard(engine, [], written[:-1])
        raise
    try:
        yield from batch_write(engine.table, [{"PutRequest": {"Item": p}} for p in every_part])
        yield from _make_permanent(engine, every_part, expires)
    except (Cancelled, GenkitError, Abandoned):  # the commit was not attempted: nothing references the parts
        yield from _discard(engine, every_part, markers)
        raise
    marker_keys = [{"pk": m["pk"], "sk": m["sk"]} for m in markers]
    releases = [  # a marker that was voided (its write taken back) stops the commit
        {"Delete": {"TableName": engine.table, "Key": key, **render(condition=exists("pk") & not_exists("void"))}}
        for key in marker_keys
    ]
    try:
        yield from transact_surely(engine, [*actions, *releases])
    except Cancelled as cancelled:
        if cancelled.after_lost_answer:
            # A resend refused after a lost answer: the first send may have landed. The commit deletes the
            # markers atomically, so the first of them says which.
            still_staged = yield from get_item(engine.table, marker_keys[0])
            if still_staged is None:
                return
        yield from _discard(engine, every_part, markers)
        raise
    except GenkitError as error:
        if not outcome_unknown(error):  # refused: nothing references the parts
            yield from _discard(engine, every_part, markers)
        raise  # unknown: the parts stay, named by the markers, for sweep_staged and delete_session
    except Abandoned:
        # The caller stopped waiting on a commit that may still land: whichever of the commit and the
        # voiding of its markers comes first wins, so the parts go exactly when the commit never can.
        try:
            for key, parts in zip(marker_keys, staged, strict=True):
                yield from take_back_staged(engine, key, [{"pk": p["pk"], "sk": p["sk"]} for p in parts])
        except GenkitError as exc:
            _log.warning("could not take back an abandoned commit (%s); sweep_staged or delete_session will", exc)
        raise


def _staging_and_the_dead(
    engine: Engine, tenant: str, session_id: str, blob: str | None, parts: int, known: Head | None
) -> Steps[tuple[Head | None, tuple[_head.Staging, ...]]]:
    """What a save does to the head's staged names before its commit: name its own staged ``blob`` (of
    ``parts`` parts; None when the write is not staged), and take back the staged writes of dead
    writers the head names. Returns the head to build on and the names the commit takes out."""
    own: tuple[_head.Staging, ...] = ()
    if blob is not None:  # named in the head first: its writer may die part-way
        own = (_head.Staging(engine.now_epoch(), parts, blob),)
        known = (yield from _head.register_staged(engine, tenant, session_id, own, known)) or known
    stale = _head.stale_staged(engine, known)
    taken = (yield from take_back_dead(engine, tenant, session_id, stale)) if stale else []
    return known, (*taken, *own)


def will_stage(actions: list[dict[str, Any]], parts: list[dict[str, Any]]) -> bool:
    """Whether ``actions`` and ``parts`` need more than one transaction (100 actions, 4 MB): the parts
    are then staged ahead of the commit."""
    if not parts:
        return False
    size = sum(action_size(a) for a in actions) + sum(item_size(p) for p in parts)
    return len(actions) + len(parts) > MAX_TRANSACTION_ACTIONS or size > MAX_TRANSACTION_BYTES - _TRANSACTION_MARGIN


def take_back_dead(
    engine: Engine, tenant: str, session_id: str, stale: list[_head.Staging]
) -> Steps[list[_head.Staging]]:
    """Best effort, before a save's commit: take back the staged writes its session's head names that
    started more than ``orphan_ttl`` ago (their writers died or gave up); returns those that are gone
    (taken back, or found committed after all), whose names the commit then takes out of the head. A
    failure leaves the rest named for the next save, and the save goes on."""
    done: list[_head.Staging] = []
    try:
        for staged in stale:
            yield from take_back_write(engine, tenant, session_id, staged)  # False: it committed; nothing goes
            done.append(staged)
    except GenkitError as exc:
        _log.warning("could not take back %d abandoned staged writes (%s); the next save tries again", len(stale), exc)
    return done


LISTED_TAG = "k"
"""The tag of a create that writes snapshot items ahead of its commit (more first snapshots than one
transaction holds): its markers list what it wrote, where a staged blob's marker counts its parts."""


def listed_write(name: str) -> bool:
    """Whether a staged write's name is a create's that lists what it wrote (see :data:`LISTED_TAG`)."""
    return keys.blob_tag(name).startswith(LISTED_TAG)


def listing_key(tenant: str, session_id: str, name: str, index: int) -> dict[str, Any]:
    """The key of the ``index``-th marker of a create that lists what it wrote."""
    return keys.marker_key(tenant, session_id, f"{name}{keys.SEP}{index:04d}")


def take_back_write(engine: Engine, tenant: str, session_id: str, staged: _head.Staging) -> Steps[bool]:
    """Take back a staged write its session's head names, of either kind; False when it had committed."""
    if not listed_write(staged.blob):
        marker = keys.marker_key(tenant, session_id, staged.blob)
        parts = [keys.blob_part_key(tenant, session_id, staged.blob, i) for i in range(staged.parts)]
        return (yield from take_back_staged(engine, marker, parts))
    taken = False
    for index in range(staged.parts):
        marker = listing_key(tenant, session_id, staged.blob, index)
        taken = (yield from take_back_listed(engine, tenant, marker)) or taken
    return taken


def _void(engine: Engine, marker_key: dict[str, Any]) -> dict[str, Any]:
    """The write that voids a staging marker on its existing: a commit needs every marker it names to
    exist and not be void, so of a commit and a taking back exactly one lands."""
    return {
        "Update": {
            "TableName": engine.table,
            "Key": marker_key,
            **render(condition=exists("pk"), update=Update().set("void", {"BOOL": True})),
        }
    }


def _drop_created(engine: Engine, tenant: str, snapshot_id: str, name: str) -> dict[str, Any]:
    """The delete of a snapshot item a listing create ``name`` wrote ahead of its commit, on the item's
    still naming that create (a restore or a later create may have put another item under the id)."""
    return {
        "Delete": {
            "TableName": engine.table,
            "Key": keys.snapshot_key(tenant, snapshot_id),
            **render(condition=eq(CREATED_BY, {"S": name})),
        }
    }


def take_back_listed(engine: Engine, tenant: str, marker_key: dict[str, Any]) -> Steps[bool]:
    """Take back what one marker of a listing create holds (snapshot items and blob parts), as
    :func:`take_back_staged` does a blob's: the marker voided on its existing (the commit needs every
    marker to exist and not be void, so exactly one of the two lands), then each snapshot item on its
    still naming the create (a restore may have put another item under the id since), the parts, the
    marker. False when the marker was gone. A failure part-way leaves the void marker listing the rest."""
    try:
        answer = yield from write_one(engine.table, _void(engine, marker_key), ReturnValues="ALL_NEW")
    except Cancelled:
        return False
    try:
        listing = decompress(answer["Attributes"]["ks"]["B"])
        name, ids, parts = listing["w"], listing["ids"], listing["parts"]
    except (CorruptData, KeyError, TypeError) as exc:
        raise GenkitError(
            Status.DATA_LOSS,
            f"a staging marker of table {engine.table!r} ({marker_key['sk']['S']!r}) does not list what its "
            f"write left ({exc}); delete it and the items it names by hand",
        ) from None
    for snapshot_id in ids:
        with contextlib.suppress(Cancelled):  # gone already, or another item under the id now
            yield from write_one(engine.table, _drop_created(engine, tenant, snapshot_id, name))
    pk = marker_key["pk"]
    yield from batch_write(engine.table, [{"DeleteRequest": {"Key": {"pk": pk, "sk": {"S": sk}}}} for sk in parts])
    yield from call("DeleteItem", engine.table, Key=marker_key)
    return True


def take_back_creation(
    engine: Engine, tenant: str, session_id: str, head: Head, name: str, snapshot_id: str
) -> Steps[None]:
    """A snapshot item in the way of a write (``snapshot_id``) that a listing create ``name`` wrote ahead of
    a commit that has not landed: that create is taken back (its markers voided, so it can no longer
    commit; a rival create of the same session could only ever have one of them land), its name taken
    out of the head, and the item deleted on its still naming the create (no marker may list it: a
    deletion of the session took the markers)."""
    named = [s for s in (_head.Staging.parse(e) for e in (head.item or {}).get(_head.STAGED, {}).get("SS", ())) if s]
    for staged in named:
        if staged.blob == name:
            yield from take_back_write(engine, tenant, session_id, staged)
            with contextlib.suppress(Cancelled):
                yield from write_one(engine.table, _head.forget_staged(engine, tenant, session_id, [staged]))
    with contextlib.suppress(Cancelled):
        yield from write_one(engine.table, _drop_created(engine, tenant, snapshot_id, name))


def take_back_staged(engine: Engine, marker_key: dict[str, Any], part_keys: list[dict[str, Any]]) -> Steps[bool]:
    """Take back a staged write whose commit has not landed: void its marker on the condition that the
    marker exists (the commit needs it to exist and not be void, so exactly one of the two lands), then
    delete its parts, then the marker. False when the marker was gone: the commit landed (or another
    took it back), and nothing is deleted. A failure part-way leaves the void marker naming the parts,
    so running this again finishes it."""
    try:
        yield from write_one(engine.table, _void(engine, marker_key))
    except Cancelled:
        return False
    yield from batch_write(engine.table, [{"DeleteRequest": {"Key": k}} for k in part_keys])
    yield from call("DeleteItem", engine.table, Key=marker_key)
    return True


def transact_surely(engine: Engine, actions: list[dict[str, Any]]) -> Steps[None]:
    """A transaction with a ClientRequestToken, sent again with the same token when its answer is lost, so
    a write DynamoDB applied is recognised as this writer's own success (for 10 minutes, AWS documents)."""
    token = str(uuid.uuid4())
    for resend in range(_RESENDS + 1):
        try:
            yield from transact(engine.table, actions, token)
            return
        except Cancelled as cancelled:
            cancelled.after_lost_answer = resend > 0
            raise
        except GenkitError as error:
            if resend == _RESENDS or not outcome_unknown(error):
                raise
            yield Sleep(random.uniform(0.01, 0.05 * 2**resend))


def outcome_unknown(error: GenkitError) -> bool:
    """True when the backend's answer was lost (a timeout, a dropped connection, a 5xx), so the write
    may have been applied; False when DynamoDB answered that it refused it."""
    cause = error.__cause__
    if isinstance(cause, ClientError):
        http_status = cause.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400)
        return not (isinstance(http_status, int) and 400 <= http_status < 500)
    return cause is not None


def _make_permanent(engine: Engine, parts: list[dict[str, Any]], expires: int | None) -> Steps[None]:
    """Lift the orphan expiry of staged parts before the commit that references them (the store's own
    TTL, when it has one, replaces it). A part that is gone was taken by a deletion of the session that
    ran meanwhile: the write lost that race (:class:`Cancelled`, code ``PartGone``)."""
    for part in parts:
        update = Update().remove("stg")
        if expires is not None:
            update.set("exp", {"N": str(expires)})
        else:
            update.remove("exp")
        lift = {
            "Update": {
                "TableName": engine.table,
                "Key": {"pk": part["pk"], "sk": part["sk"]},
                **render(condition=exists("pk"), update=update),
            }
        }
        try:
            yield from write_one(engine.table, lift)
        except Cancelled:
            raise Cancelled(["PartGone"]) from None


def _discard(engine: Engine, parts: list[dict[str, Any]], markers: list[dict[str, Any]]) -> Steps[None]:
    """Best effort: delete parts whose commit did not happen, then their markers. What stays is named by
    a marker, so ``delete_session`` and ``sweep_staged`` remove it later."""
    try:
        yield from batch_write(
            engine.table, [{"DeleteRequest": {"Key": {"pk": p["pk"], "sk": p["sk"]}}} for p in parts]
        )
        for marker in markers:
            yield from call("DeleteItem", engine.table, Key={"pk": marker["pk"], "sk": marker["sk"]})
    except GenkitError as exc:
        _log.warning("could not delete %d uncommitted blob parts (%s); delete_session removes them", len(parts), exc)
