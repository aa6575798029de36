"""Whole-session writes: deletion, verbatim restore, and the sweep of a dead writer's staged parts.

Deletion starts by turning the head into a tombstone on the version it read:
from then on no write can land in the session (children need a live head,
roots need no head or a finished tombstone), readers see no session, and the
tombstone still lists every member, so a deletion that stops part-way is
finished by running it again. The snapshot items, member pages, blob parts and
staging markers go next, and a bare tombstone that keeps the session version
last. The tombstone lands with an expiry index entry that the bare tombstone's
transaction removes, so ``delete_expired_sessions`` finishes a deletion whose
process died part-way.

A restore replaces each touched head on the exact version it read, in one
transaction with its snapshot items, or, past one transaction, with the items
over stored ones after its new items were written ahead out of sight
(``_listed``); a turn that lands in between makes it read and recompute
instead of dropping that turn.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from genkit_sessions.dynamodb import _head
from genkit_sessions.dynamodb import _keys as keys
from genkit_sessions.dynamodb._calls import (
    Abandoned,
    Cancelled,
    Steps,
    batch_get,
    batch_write,
    call,
    query_partition,
    write_one,
)
from genkit_sessions.dynamodb._codec import Recipe, plan_state_steps
from genkit_sessions.dynamodb._commit import (
    MAX_TRANSACTION_ACTIONS,
    blob_part_items,
    new_blob,
    outcome_unknown,
    record_bytes,
    take_back_creation,
    take_back_listed,
    take_back_staged,
    transact_surely,
)
from genkit_sessions.dynamodb._engine import Engine
from genkit_sessions.dynamodb._expressions import eq, not_exists, render
from genkit_sessions.dynamodb._items import (
    CREATED_BY,
    Head,
    delete_request,
    hidden,
    id_list,
    item_size,
    member_ids,
    pages_of,
    put_action,
    status_attributes,
)
from genkit_sessions.dynamodb._listed import Listing, fits, give_back, new_listing, write_ahead
from genkit_sessions.dynamodb._reads import Member, decode_item, list_snapshots, members
from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.frozen_json import strict_equal
from genkit_sessions.model.types import SessionSnapshot
from genkit_sessions.model.wire import to_wire
from genkit_sessions.stores.write_rules import leaf_of, restorable, restore_order

__all__ = ["delete_session", "index_keys", "restore", "snapshot_item", "sweep_staged"]

_log = logging.getLogger("genkit_sessions.dynamodb")

_ROUNDS = 3


def delete_session(engine: Engine, tenant: str, session_id: str) -> Steps[int]:
    """V6 / S11: delete every item of the session; returns how many snapshots went.

    The tombstone that starts a deletion lands with an entry in the tenant's expiry index, due after
    ``orphan_ttl``, which the tombstone names (``rmd``) and the deletion removes last: a deletion
    whose process died part-way is then finished by ``delete_expired_sessions`` (which deletes every
    session whose tombstone says it is being deleted), so a deleted session's data never stays for
    want of someone running the deletion again."""
    for _ in range(_ROUNDS):
        rows = yield from query_partition(engine.table, keys.session_pk(tenant, session_id))
        head = Head.of(next((r for r in rows if r["sk"]["S"] == keys.HEAD_SK), None))
        if not rows or (head.dead and not head.deleting and len(rows) == 1):
            engine.see_head(tenant, session_id, None)
            return 0
        found_reminder = (head.item or {}).get("rmd") if head.deleting else None  # a rerun keeps its entry
        entry = _head.reminder(engine, tenant, session_id, engine.now_epoch())
        if found_reminder is not None:
            entry["sk"] = found_reminder
        action, token = _head.tombstone(engine, tenant, session_id, head, entry["sk"])
        try:
            if found_reminder is not None:
                yield from write_one(engine.table, action)
            else:
                yield from transact_surely(engine, [action, put_action(engine.table, entry)])
        except Cancelled:
            continue  # a writer moved the head since this round read it: read again
        engine.see_head(tenant, session_id, None)
        # No write lands on the tombstone: what the partition holds now is everything there is to delete.
        rows = yield from query_partition(engine.table, keys.session_pk(tenant, session_id))
        head = Head.of(next((r for r in rows if r["sk"]["S"] == keys.HEAD_SK), None))
        if not head.deleting:
            yield from _forget_reminder(engine, entry)
            return 0  # another deletion of it finished meanwhile (and a new session may have started since)
        token = head.version or token  # another deletion may have re-marked it: finish the job on its token
        entry["sk"] = (head.item or {}).get("rmd", entry["sk"])  # and the entry it names
        found = yield from members(engine, tenant, session_id, member_ids(rows))
        yield from _delete_members(engine, tenant, found)
        yield from _take_back_listings(engine, tenant, rows)  # a create's items, written ahead of its commit
        engine.forget(tenant, found)
        yield from batch_write(engine.table, [delete_request(r) for r in rows if r["sk"]["S"] != keys.HEAD_SK])
        yield from batch_write(
            engine.table,
            [{"DeleteRequest": {"Key": k}} for k in index_keys(engine, tenant, session_id, head.item or {})],
        )
        # Parts a writer staged after the first Query: its commit cannot land on the tombstone. Only while
        # the head is still this deletion's: another deletion may have finished the job meanwhile and a new
        # session started under the id, whose parts and markers this must not touch. The partition's rows
        # come in key order, so those before the head (parts, markers) were read while it still said so.
        late = yield from query_partition(
            engine.table,
            keys.session_pk(tenant, session_id),
            "#pk, #sk, #ks, #hv, #del",
            {"#pk": "pk", "#sk": "sk", "#ks": "ks", "#hv": "hv", "#del": "del"},
        )
        still = Head.of(next((r for r in late if r["sk"]["S"] == keys.HEAD_SK), None))
        if still.deleting and still.version == token:
            before_head = [r for r in late if r["sk"]["S"] < keys.HEAD_SK]
            yield from _take_back_listings(engine, tenant, before_head)
            yield from batch_write(engine.table, [delete_request(r) for r in before_head])
        # The bare tombstone and the entry's removal in one transaction, so the entry goes exactly when the
        # deletion is done. Cancelled: another deletion of the same session took over and finishes the job.
        last = _head.final_tombstone(engine, tenant, session_id, token, head.session_version)
        drop_entry = {"Delete": {"TableName": engine.table, "Key": {"pk": entry["pk"], "sk": entry["sk"]}}}
        with contextlib.suppress(Cancelled):
            yield from transact_surely(engine, [last, drop_entry])
        return len(found)
    raise GenkitError(
        Status.ABORTED,
        f"session {session_id!r} kept changing under concurrent writers through {_ROUNDS} attempts to delete it "
        f"on DynamoDB table {engine.table!r}; stop its writers, then delete it again",
    )


def _delete_members(engine: Engine, tenant: str, found: Mapping[str, Member]) -> Steps[None]:
    """Delete the snapshot items of a session being deleted, each on its item version as read (100 to a
    transaction; one by one when a transaction is refused): another instance may finish this deletion
    and a new session write an item under one of the ids before this pass gets there, and that item
    stays. An item gone already (the other instance's pass) is simply skipped."""
    actions = []
    for snapshot_id, (item, _) in found.items():
        condition = eq("v", item["v"]) if "v" in item else not_exists("v")  # a new item always has one
        key = keys.snapshot_key(tenant, snapshot_id)
        actions.append({"Delete": {"TableName": engine.table, "Key": key, **render(condition=condition)}})
    for start in range(0, len(actions), MAX_TRANSACTION_ACTIONS):
        chunk = actions[start : start + MAX_TRANSACTION_ACTIONS]
        try:
            yield from transact_surely(engine, chunk)
        except Cancelled:
            for action in chunk:
                with contextlib.suppress(Cancelled):
                    yield from write_one(engine.table, action)


def _take_back_listings(engine: Engine, tenant: str, rows: list[dict[str, Any]]) -> Steps[None]:
    """Take back what the markers among ``rows`` list of a create that wrote snapshot items ahead of its
    commit (those items live outside the session's partition); the commit can no longer land on the
    tombstone. Each marker goes with them, so the rows' deletion that follows skips it."""
    for row in rows:
        if "ks" in row:
            yield from take_back_listed(engine, tenant, {"pk": row["pk"], "sk": row["sk"]})


def _forget_reminder(engine: Engine, entry: dict[str, Any]) -> Steps[None]:
    """Best effort: an entry left behind is dropped by ``delete_expired_sessions``, which finds the
    session deleted."""
    try:
        yield from call("DeleteItem", engine.table, Key={"pk": entry["pk"], "sk": entry["sk"]})
    except GenkitError as exc:
        _log.info("could not remove a finished deletion's expiry index entry (%s)", exc)


def index_keys(engine: Engine, tenant: str, session_id: str, item: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The keys of every index entry a head names (metadata entries of the indexed keys, the expiry entry)."""
    found: list[dict[str, Any]] = []
    created = item.get("ca", {}).get("S")
    if created is not None:
        for name, value in item.get("md", {}).get("M", {}).items():
            if name in engine.settings.indexed:
                sk = keys.index_sk(created, session_id)
                found.append({"pk": keys.index_pk(tenant, name, value["S"]), "sk": {"S": sk}})
    if "xi" in item:
        found.append({"pk": keys.expiry_pk(tenant), "sk": item["xi"]})
    return found


def sweep_staged(engine: Engine, tenant: str, session_id: str, older_than: int) -> Steps[int]:
    """Delete the parts named by staging markers written before ``older_than`` (epoch seconds) whose commit
    never landed (a commit deletes its marker), and those markers; returns how many markers went."""
    rows = yield from query_partition(
        engine.table,
        keys.session_pk(tenant, session_id),
        "#pk, #sk, #n, #at, #ks",
        {"#pk": "pk", "#sk": "sk", "#n": "n", "#at": "at", "#ks": "ks"},
    )
    swept = 0
    for row in rows:
        blob = keys.marker_blob(row["sk"]["S"])
        if blob is None or int(row.get("at", {"N": "0"})["N"]) > older_than:
            continue
        if "ks" in row:  # a marker of a create that wrote snapshot items ahead of its commit
            swept += yield from take_back_listed(engine, tenant, {"pk": row["pk"], "sk": row["sk"]})
            continue
        count = int(row.get("n", {"N": "0"})["N"])
        parts = [keys.blob_part_key(tenant, session_id, blob, i) for i in range(count)]
        if not (yield from take_back_staged(engine, {"pk": row["pk"], "sk": row["sk"]}, parts)):
            continue  # its commit (or another sweep) took it first
        swept += 1
    return swept


@attrs.frozen
class _Restoring:
    """What a restore writes, as planned on one read of the heads and items it meets."""

    entries: dict[str, tuple[str, list[dict[str, Any]], dict[str, Any], bool]]
    """By snapshot id (the last of a batch that repeats one): its session, blob parts, item, and whether
    an item was stored under the id."""
    restored: dict[str, dict[str, tuple[SessionSnapshot, Recipe, dict[str, Any]]]]
    touched: list[str]
    """The sessions whose heads change: those restored into, and those a snapshot moves out of."""
    heads: dict[str, Head]


def restore(engine: Engine, tenant: str, snapshots: Iterable[SessionSnapshot]) -> Steps[int]:
    """S11: store snapshots verbatim (no stamping, no rule checks) and recompute each touched head.

    A restore that fits one transaction (100 actions, 4 MB: a few small sessions) is one: its items
    and every touched head land together, on the head versions read, or not at all. A larger one writes
    its new items and all blob parts ahead of one commit, out of sight until it lands (``_listed``): the
    touched heads, member pages, the items it writes over stored ones and the release of its markers.
    One whose commit would not fit a transaction is refused, before anything is written, with
    INVALID_ARGUMENT, reason RESTORE_TOO_LARGE."""
    checked = [restorable(snapshot) for snapshot in snapshots]
    for _ in range(_ROUNDS):
        plan = yield from _plan_restore(engine, tenant, checked)
        moved = {i for ids in plan.restored.values() for i in ids}
        writes = [w for _, parts, item, _ in plan.entries.values() for w in (*parts, item)]
        done = False
        if len(writes) + 3 * len(plan.touched) <= MAX_TRANSACTION_ACTIONS and sum(map(item_size, writes)) <= _ONE_GO:
            done = yield from _restore_at_once(engine, tenant, plan, writes, moved)
        if not done:
            done = yield from _restore_listed(engine, tenant, plan, moved)
        if done:
            engine.forget(tenant, moved)
            for session_id in plan.touched:
                engine.see_head(tenant, session_id, None)
            return len(checked)
    raise GenkitError(
        Status.ABORTED,
        f"the sessions of a restore kept changing under concurrent writers on DynamoDB table {engine.table!r}; "
        "run the restore again",
    )


def _plan_restore(engine: Engine, tenant: str, checked: list[tuple[SessionSnapshot, str]]) -> Steps[_Restoring]:
    """What the batch meets, read in BatchGetItems of 100 keys (each session's head, and each snapshot as
    stored: its item version, and the session it may move from), and what the restore writes over it."""
    expires = engine.now_epoch() + int(engine.settings.ttl.total_seconds()) if engine.settings.ttl else None
    sessions = list(dict.fromkeys(session_id for _, session_id in checked))
    head_keys = [keys.head_key(tenant, session_id) for session_id in sessions]
    item_keys = [keys.snapshot_key(tenant, snapshot.snapshot_id) for snapshot, _ in checked]
    stored = yield from batch_get(engine.table, [*head_keys, *item_keys])
    found = {
        s.snapshot_id: stored.get((k["pk"]["S"], k["sk"]["S"])) for (s, _), k in zip(checked, item_keys, strict=True)
    }
    if (yield from _take_back_hidden(engine, tenant, {i: item for i, item in found.items() if item is not None})):
        stored = yield from batch_get(engine.table, [*head_keys, *item_keys])  # those ids are free again
    heads = {s: Head.of(stored.get((k["pk"]["S"], k["sk"]["S"]))) for s, k in zip(sessions, head_keys, strict=True)}
    for session_id, head in heads.items():
        if head.deleting:
            raise GenkitError(
                Status.FAILED_PRECONDITION,
                f"session {session_id!r} is being deleted, or a deletion stopped part-way; "
                "run delete_session again, then restore",
            )
    entries: dict[str, tuple[str, list[dict[str, Any]], dict[str, Any], bool]] = {}
    restored: dict[str, dict[str, tuple[SessionSnapshot, Recipe, dict[str, Any]]]] = {}
    touched: dict[str, None] = {}
    for (snapshot, session_id), item_key in zip(checked, item_keys, strict=True):
        previous = stored.get((item_key["pk"]["S"], item_key["sk"]["S"]))
        old_session = _session_of_item(engine, previous, snapshot.snapshot_id)
        if old_session is not None and old_session != session_id:
            touched[old_session] = None
        parts, item, recipe = yield from snapshot_item(engine, tenant, session_id, snapshot, previous, expires)
        entries.pop(snapshot.snapshot_id, None)
        entries[snapshot.snapshot_id] = (session_id, parts, item, previous is not None)
        touched[session_id] = None
        for other in restored.values():
            other.pop(snapshot.snapshot_id, None)
        restored.setdefault(session_id, {})[snapshot.snapshot_id] = (snapshot, recipe, item)
    return _Restoring(entries, restored, sorted(touched), heads)


def _take_back_hidden(engine: Engine, tenant: str, found: dict[str, dict[str, Any]]) -> Steps[bool]:
    """Items in a restore's way that a write ahead of a commit left out of sight (a create's or restore's
    that never landed: a rerun after an outage meets its own) are taken back, as a write of one of their
    ids takes them back, so the restore writes those ids as new. True when any was."""
    named = {i: (item, _session_of_item(engine, item, i)) for i, item in found.items() if CREATED_BY in item}
    homes = {session_id for _, session_id in named.values() if session_id is not None}
    read = yield from batch_get(engine.table, [keys.head_key(tenant, session_id) for session_id in homes])
    taken: set[str] = set()
    for snapshot_id, (item, session_id) in named.items():
        if session_id is None:
            continue
        key = keys.head_key(tenant, session_id)
        head = Head.of(read.get((key["pk"]["S"], key["sk"]["S"])))
        name = item[CREATED_BY]["S"]
        if not hidden(item, head.item):
            continue
        if name in taken:  # its write was taken back whole with the first of its items: this one went too
            drop = {"Delete": {"TableName": engine.table, "Key": keys.snapshot_key(tenant, snapshot_id)}}
            with contextlib.suppress(Cancelled):
                yield from write_one(
                    engine.table, {"Delete": {**drop["Delete"], **render(condition=eq(CREATED_BY, item[CREATED_BY]))}}
                )
            continue
        yield from take_back_creation(engine, tenant, session_id, head, name, snapshot_id)
        taken.add(name)
    return bool(taken)


def _restore_at_once(
    engine: Engine, tenant: str, plan: _Restoring, writes: list[dict[str, Any]], moved: set[str]
) -> Steps[bool]:
    """A restore in one TransactWriteItems; False when the sessions' member pages do not fit beside its
    items, or the touched heads kept moving."""
    for _ in range(engine.settings.max_attempts):
        actions = [put_action(engine.table, w) for w in writes]
        for session_id in plan.touched:
            actions += yield from _head_actions(engine, tenant, session_id, plan.restored.get(session_id, {}), moved)
        if len(actions) > MAX_TRANSACTION_ACTIONS:
            return False  # the sessions' member pages do not fit beside the items: written ahead
        try:
            yield from transact_surely(engine, actions)
        except Cancelled as cancelled:
            landed = cancelled.after_lost_answer and (yield from _heads_written(engine, actions))
            if not landed:
                continue  # a turn landed in a touched session since it was read: read again
        return True
    return False


def _restore_listed(engine: Engine, tenant: str, plan: _Restoring, moved: set[str]) -> Steps[bool]:
    """A restore past one transaction, still one commit: the items under new ids and every blob part are
    written ahead of it, a listing per session (``_listed``); the commit puts the touched heads (each on
    the version read, naming its listing in ``cw``), the member pages, the items over stored ones, and
    releases the markers. False when it was taken back or the heads kept moving (the caller plans again)."""
    estimate = yield from _commit_actions(engine, tenant, plan, moved, {})
    entries = plan.entries
    if not fits([*estimate, *(put_action(engine.table, e[2]) for e in entries.values() if e[3])]):
        # A rerun after an unknown outcome (or an import again) meets what it wrote: those held as given
        # stay as they are (item, version and expiry), and only the rest goes in the commit.
        held = yield from _held_as_given(engine, tenant, plan)
        entries = {i: e for i, e in entries.items() if i not in held}
    listings: dict[str, Listing] = {}
    free = render(condition=not_exists("pk"))
    for session_id in plan.touched:
        mine = [e for e in entries.values() if e[0] == session_id]
        new_items = [put_action(engine.table, item, free) for _, _, item, stored in mine if not stored]
        parts = [part for _, entry_parts, _, _ in mine for part in entry_parts]
        if new_items or parts:
            listings[session_id] = new_listing(engine, tenant, session_id, new_items, parts)
    over = [put_action(engine.table, item) for _, _, item, stored in entries.values() if stored]
    releases = [release for listing in listings.values() for release in listing.releases(engine)]
    if not fits([*estimate, *over], len(releases)):
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"a restore of {len(plan.entries)} snapshots into {len(plan.touched)} sessions needs "
            f"{len(estimate) + len(over) + len(releases)} writes in its commit (its heads, member pages, the "
            f"snapshots over stored ones), more than one DynamoDB transaction holds; restore fewer snapshots, "
            "or fewer sessions, a call",
            reason=Reason.RESTORE_TOO_LARGE,
        )
    registered: list[Listing] = []
    try:
        for listing in listings.values():
            read = plan.heads.get(listing.session_id)
            named = yield from _head.register_staged(engine, tenant, listing.session_id, (listing.staging,), read)
            registered.append(listing)
            if named is None:  # a deletion began meanwhile: the next plan refuses it
                yield from give_back(engine, tenant, registered)
                return False
        yield from write_ahead(engine, registered)
    except Cancelled:  # an id taken meanwhile: the next plan restores over it
        yield from give_back(engine, tenant, registered)
        return False
    except (GenkitError, Abandoned):
        yield from give_back(engine, tenant, registered)
        raise
    for _ in range(engine.settings.max_attempts):
        try:
            actions = yield from _commit_actions(engine, tenant, plan, moved, listings)
        except (GenkitError, Abandoned):  # before the commit was sent: nothing names what was written
            yield from give_back(engine, tenant, registered)
            raise
        actions += [*over, *releases]
        if not fits(actions):  # the sessions grew meanwhile
            yield from give_back(engine, tenant, registered)
            return False
        try:
            yield from transact_surely(engine, actions)
            return True
        except Cancelled as cancelled:
            if cancelled.after_lost_answer and (yield from _heads_written(engine, actions)):
                return True
            if not (yield from _markers_intact(engine, registered)):  # taken back meanwhile: again
                yield from give_back(engine, tenant, registered)
                return False
            continue  # a turn landed in a touched session since it was read: read again
        except GenkitError as error:
            if not outcome_unknown(error):  # refused: nothing names what was written
                yield from give_back(engine, tenant, registered)
            raise  # unknown: named in the heads and listed by the markers, taken back once stale
        except Abandoned:  # whichever of the commit and the voiding of its markers comes first wins
            yield from give_back(engine, tenant, registered)
            raise
    yield from give_back(engine, tenant, registered)
    return False


def _held_as_given(engine: Engine, tenant: str, plan: _Restoring) -> Steps[set[str]]:
    """The ids of the snapshots a restore writes over that their session already holds exactly as given
    (the same wire JSON): one listing of each session a snapshot is restored over in."""
    wanted: dict[str, SessionSnapshot] = {}
    for restored in plan.restored.values():
        for snapshot_id, (snapshot, _, _) in restored.items():
            if plan.entries[snapshot_id][3]:
                wanted[snapshot_id] = snapshot
    held: set[str] = set()
    for session_id in dict.fromkeys(plan.entries[i][0] for i in wanted):
        for stored in (yield from list_snapshots(engine, tenant, session_id)):
            given = wanted.get(stored.snapshot_id)
            if given is not None and strict_equal(to_wire(stored), to_wire(given)):
                held.add(stored.snapshot_id)
    return held


def _commit_actions(
    engine: Engine, tenant: str, plan: _Restoring, moved: set[str], listings: dict[str, Listing]
) -> Steps[list[dict[str, Any]]]:
    actions: list[dict[str, Any]] = []
    for session_id in plan.touched:
        listing = listings.get(session_id)
        restored = plan.restored.get(session_id, {})
        staged = None if listing is None else listing.staging
        actions += yield from _head_actions(engine, tenant, session_id, restored, moved, staged)
    return actions


def _markers_intact(engine: Engine, listings: list[Listing]) -> Steps[bool]:
    """Whether every marker of ``listings`` is still there and not void (nothing took the write back)."""
    marker_keys = [key for listing in listings for key, _ in listing.markers]
    found = yield from batch_get(engine.table, marker_keys)  # ("void" is a reserved word: no projection)
    return all(
        (key["pk"]["S"], key["sk"]["S"]) in found and "void" not in found[(key["pk"]["S"], key["sk"]["S"])]
        for key in marker_keys
    )


def snapshot_item(
    engine: Engine,
    tenant: str,
    session_id: str,
    snapshot: SessionSnapshot,
    previous: dict[str, Any] | None,
    expires: int | None,
) -> Steps[tuple[list[dict[str, Any]], dict[str, Any], Recipe]]:
    """A snapshot stored verbatim: its blob parts, its item (over ``previous``, the item stored under its
    id, if any) and its recipe."""
    # Over a stored item the version moves on (an instance holding the item as it was cannot update
    # it); over none it starts afresh, at random, as a new snapshot's does.
    version = engine.first_version() if previous is None else (int(previous["v"]["N"]) if "v" in previous else 1) + 1
    plan = yield from plan_state_steps(None, None, snapshot.state, engine.settings.checkpoint_every)
    name, chunks = yield from new_blob(engine, snapshot.snapshot_id, plan)
    recipe = plan.recipe(name, len(chunks))
    item: dict[str, Any] = {
        **keys.snapshot_key(tenant, snapshot.snapshot_id),
        "rec": {"B": record_bytes(snapshot, recipe)},
        **status_attributes(snapshot),
        "v": {"N": str(version)},
    }
    if expires is not None:
        item["exp"] = {"N": str(expires)}
    if previous is not None and "rec" in previous:  # it may hold the inline blob children read
        item["u"], item["rec"] = item["rec"], previous["rec"]
    return blob_part_items(tenant, session_id, name, chunks, expires), item, recipe


def _heads_written(engine: Engine, actions: list[dict[str, Any]]) -> Steps[bool]:
    """Whether every session head the transaction ``actions`` writes holds the version token it wrote: a
    resend refused after a lost answer finds the first send landed (each head write moves ``hv``)."""
    written = {
        (put["Item"]["pk"]["S"], put["Item"]["sk"]["S"]): put["Item"]["hv"]["S"]
        for put in (a["Put"] for a in actions if "Put" in a)
        if put["Item"]["sk"]["S"] == keys.HEAD_SK and "hv" in put["Item"]
    }
    if not written:
        return False
    heads = yield from batch_get(engine.table, [{"pk": {"S": pk}, "sk": {"S": sk}} for pk, sk in written])
    return all(heads.get(key, {}).get("hv", {}).get("S") == token for key, token in written.items())


_ONE_GO = 3 * 1024 * 1024
"""At most this many bytes of items go in the one transaction of a small restore (the limit is 4 MB)."""


def _session_of_item(engine: Engine, item: dict[str, Any] | None, snapshot_id: str) -> str | None:
    if item is None:
        return None
    try:
        return decode_item(engine, item, snapshot_id)[0].session_id
    except GenkitError:  # restoring over corrupt data replaces it
        return None


def _head_actions(
    engine: Engine,
    tenant: str,
    session_id: str,
    restored: dict[str, tuple[SessionSnapshot, Recipe, dict[str, Any]]],
    moved: set[str],
    listed: _head.Staging | None = None,
) -> Steps[list[dict[str, Any]]]:
    """The writes that make a session's head and member pages list its members after a restore: the
    stored members (less those restored elsewhere) with the restored ones over them. The head is put on
    the exact version read (naming ``listed``, the restore's items written ahead, in ``cw``); new pages
    are put and old ones deleted beside it."""
    rows = yield from query_partition(engine.table, keys.session_pk(tenant, session_id))
    read = Head.of(next((r for r in rows if r["sk"]["S"] == keys.HEAD_SK), None))
    old_pages = [r for r in rows if r["sk"]["S"].startswith(keys.PAGE_PREFIX)]
    was_listed = member_ids(rows) if read.alive or read.deleting else []
    kept = [i for i in was_listed if i not in moved]
    stored = yield from members(engine, tenant, session_id, kept)
    held: dict[str, tuple[SessionSnapshot, Recipe, dict[str, Any]]] = {}
    for snapshot_id, (item, decoded) in stored.items():
        if isinstance(decoded, GenkitError):
            raise decoded
        held[snapshot_id] = (decoded[0], decoded[1], item)
    # The one leaf rule over the commit order a restore leaves (write_rules.restore_order): the head's
    # leaf last of the snapshots held, the others in createdAt order.
    fresh = {i: (attrs.evolve(s, state=None), r, item) for i, (s, r, item) in restored.items()}
    union = {**held, **fresh}
    before = set(was_listed)
    order = restore_order(
        (union[i][0] for i in was_listed if i in union),
        (envelope for i, (envelope, _, _) in fresh.items() if i not in before),
        read.item["leaf"]["S"] if read.alive and read.item is not None and "leaf" in read.item else None,
    )
    union = {s.snapshot_id: union[s.snapshot_id] for s in order}
    deletions = [{"Delete": {"TableName": engine.table, "Key": {"pk": r["pk"], "sk": r["sk"]}}} for r in old_pages]
    if not union:
        if read.alive:  # every member moved to other sessions: the session stays, empty, as a created one
            empty = _head.restored(engine, tenant, session_id, read, [], None, None, None, None, 0, 0, listed)
            return [empty, *deletions]
        return deletions
    ids = list(union)
    head_ids, paged = ids[-engine.settings.head_ids :], ids[: -engine.settings.head_ids]
    leaf = leaf_of(order)
    expires = None
    if leaf is not None:
        leaf_item = union[leaf.snapshot_id][2]
        expires = int(leaf_item["exp"]["N"]) if "exp" in leaf_item else None
    pages = []
    for chunk in pages_of(paged):
        page: dict[str, Any] = {**keys.page_key(tenant, session_id, engine.token()), "ids": id_list(chunk)}
        if expires is not None:
            page["exp"] = {"N": str(expires)}
        pages.append(put_action(engine.table, page))
    created_at = min(envelope.created_at for envelope, _, _ in union.values())
    head = _head.restored(
        engine,
        tenant,
        session_id,
        read,
        head_ids,
        leaf,
        union[leaf.snapshot_id][1] if leaf is not None else None,
        expires,
        created_at,
        len(union),
        len(restored),
        listed,
    )
    return [head, *pages, *deletions, *_index_moves(engine, tenant, session_id, read, created_at)]


def _index_moves(engine: Engine, tenant: str, session_id: str, read: Head, created_at: str) -> list[dict[str, Any]]:
    """A restore of older history moves the session's creation back (V3); its metadata index entries, sorted
    by creation (V4), move with it in the same transaction."""
    item = read.item if read.alive else None
    if item is None or "ca" not in item or created_at >= item["ca"]["S"]:
        return []
    old_sk, new_sk = keys.index_sk(item["ca"]["S"], session_id), keys.index_sk(created_at, session_id)
    moves: list[dict[str, Any]] = []
    for name, value in item.get("md", {}).get("M", {}).items():
        if name in engine.settings.indexed:
            pk = keys.index_pk(tenant, name, value["S"])
            moves.append({"Delete": {"TableName": engine.table, "Key": {"pk": pk, "sk": {"S": old_sk}}}})
            moves.append(put_action(engine.table, {"pk": pk, "sk": {"S": new_sk}}))
    return moves
