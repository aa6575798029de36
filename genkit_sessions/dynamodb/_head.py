"""Every write of a session's head, the session's record, in one place.

The head names the leaf, lists the newest members, and carries the session
record (version ``sv``, ``ca``/``ua``, metadata ``md``, expiry ``exp``). Every
write that depends on what the session holds is conditioned on the head:

- a **new snapshot** replaces the head whole on its exact version token ``hv``
  when this store knows the head (the new item starts from the known one, so
  no attribute is dropped), or updates it in place when it does not; either
  way the version ``sv`` moves up by one and the head must be alive (a child)
  or absent / a finished tombstone (a root);
- a **change** of a snapshot's state or status moves ``sv`` and ``hv`` in the
  same transaction as the snapshot's own update, on a live head;
- a **restore** replaces the head on the version it read;
- a **deletion** first turns the head into a tombstone that still lists what
  is to be deleted (so no write can land meanwhile, and a rerun finishes the
  job), then into a bare tombstone that keeps ``sv``, so a recreated session
  never reuses a version number;
- the **read hint** ``rc`` is refreshed in place while the snapshot is the
  leaf (a hint only: no other attribute changes, so ``hv`` stays);
- a **staged write** names itself in ``stg`` before its first part is written
  (``hv`` moves, so no writer's whole Put drops the name), and its commit takes
  the name out; a name older than ``orphan_ttl`` belongs to a writer that died
  or gave up, and the session's next save takes that write back. Over no head,
  the name goes into a bare tombstone, which readers see as no session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from genkit_sessions.dynamodb import _keys as keys
from genkit_sessions.dynamodb._calls import Cancelled, Steps, get_item, write_one
from genkit_sessions.dynamodb._codec import Recipe, sealed_hint
from genkit_sessions.dynamodb._engine import Engine
from genkit_sessions.dynamodb._expressions import Condition, Update, eq, exists, gt, not_exists, render, size_lt
from genkit_sessions.dynamodb._items import CREATED_BY, Head, id_list, put_action
from genkit_sessions.errors import GenkitError, Status
from genkit_sessions.model.types import SessionSnapshot

__all__ = [
    "Staging",
    "change",
    "final_tombstone",
    "forget_staged",
    "hint",
    "live_check",
    "new_snapshot",
    "register_staged",
    "reminder",
    "restored",
    "stale_staged",
    "tombstone",
]

_RECORD_ATTRIBUTES = ("ca", "md", "exp", "xa", "tl", "sl", "xi", CREATED_BY)
"""What a replaced head carries over from the one it replaces (everything else is recomputed): the
record, and the create whose snapshot items only this head makes visible."""


def _alive() -> Condition:
    return exists("pk") & not_exists("dead")


def record_terms(engine: Engine, known: Head | None) -> tuple[Condition, dict[str, Any]]:
    """What every write that moves the version carries for the record: the condition that the session
    has not expired, and, for a sliding expiry, its move to now plus the ttl (on the ttl this store
    knows; a store that does not know the head loses the race once, and reads it)."""
    now_ms = engine.now_ms()
    condition = not_exists("xa") | gt("xa", {"N": str(now_ms)})
    item = known.item if known is not None and known.alive else None
    if item is not None and "sl" in item and "tl" in item:
        return condition & eq("tl", item["tl"]), {"xa": {"N": str(now_ms + int(item["tl"]["N"]))}}
    return condition & not_exists("sl"), {}


def expected_condition(expected: int | None) -> Condition | None:
    """The precondition of ``CallOptions.expected_version``: the version a reader sees (V8: 0 for no
    session, or one without snapshots) is still ``expected``."""
    if expected is None:
        return None
    if expected == 0:
        return not_exists("leaf") & not_exists("cyc")
    return eq("sv", {"N": str(expected)}) & (exists("leaf") | exists("cyc"))


def _also(condition: Condition, extra: Condition | None) -> Condition:
    return condition if extra is None else condition & extra


def _being_deleted(session_id: str) -> GenkitError:
    return GenkitError(
        Status.FAILED_PRECONDITION,
        f"session {session_id!r} is being deleted, or a deletion stopped part-way; "
        "run delete_session again before adding to it",
    )


def new_snapshot(
    engine: Engine,
    tenant: str,
    snapshot: SessionSnapshot,
    recipe: Recipe,
    expires: int | None,
    known: Head | None,
    head_races_lost: int,
    expected: int | None = None,
    drop: tuple[Staging, ...] = (),
) -> tuple[list[dict[str, Any]], Head]:
    """The actions that make a new snapshot its session's leaf, and the head they leave (taking the
    names of the staged writes in ``drop`` out of the head: this one's own, and any taken back).

    The new snapshot always becomes the leaf: the leaf is the childless snapshot whose creation
    committed last (S8, :func:`~genkit_sessions.stores.write_rules.leaf_of`), and DynamoDB applies
    writes to one item one at a time, so the last write to land on the head names it. No writer's
    clock takes part (``lc`` is kept as the leaf's createdAt, for the record's updatedAt only).

    When this store knows the whole head (it resumed from it, or wrote it last), a Put replaces it on
    its exact version; a full head's ids move to a member page in the same transaction. After a save
    lost the head race, an UpdateItem adds the id and moves the version instead, on a live head (a
    child) or no head (a root), with room for the id: adds commute, so concurrent writers do not make
    each other retry. After three lost races a Put on the exact version decides alone. A store that
    does not know the whole head uses the UpdateItem from the start, on the exact version when it knows
    that (the head it wrote last), so the parent it planned on cannot have been rewritten meanwhile.
    """
    session_id = snapshot.session_id
    assert session_id is not None
    table = engine.table
    snapshot_id = snapshot.snapshot_id
    version = engine.token()
    head_key = keys.head_key(tenant, session_id)
    created = {"S": snapshot.created_at}
    fields: dict[str, Any] = {
        "leaf": {"S": snapshot_id},
        "lc": created,
        "rc": {"B": sealed_hint(recipe, snapshot_id)},
        "hv": {"S": version},
    }  # updatedAt is the leaf's createdAt (``lc``) until a change of a snapshot sets ``ua``
    if expires is not None:
        fields["exp"] = {"N": str(expires)}
    record_condition, record_fields = record_terms(engine, known)
    fields.update(record_fields)
    record_condition = _also(record_condition, expected_condition(expected))
    fully_known = known is not None and known.ids is not None and (known.item is not None or not known.exists)
    if known is not None and fully_known:
        if known.deleting:
            raise _being_deleted(session_id)
        # A whole Put only where an update cannot do the job: the first head, a head over a tombstone, a
        # head written before versions existed, and a full head whose ids move to a member page. Adding an
        # id commutes with other writers' adds, so under contention a save does not retry.
        assert known.ids is not None
        needs_put = (
            not known.alive
            or (known.item is not None and "sv" not in known.item)
            or len(known.ids) >= engine.settings.head_ids
            or head_races_lost == 0  # uncontended, a whole Put on the version known is the cheapest write
            or head_races_lost >= 3
        )
        if needs_put and (known.alive or snapshot.parent_id is None):
            return _replace(engine, tenant, snapshot, fields, known, record_condition, drop)
    update = Update()
    for name, value in fields.items():
        update.set(name, value)
    update.set_default("ca", created).add("ids", id_list([snapshot_id])).add("sv", {"N": "1"}).remove("ua")
    if drop:
        update.delete(STAGED, {"SS": [s.entry for s in drop]})
    room = not_exists("ids") | size_lt("ids", {"N": str(engine.settings.head_ids)})
    if snapshot.parent_id is not None:
        condition = _alive() & exists("sv") & room & record_condition
        if known is not None and known.version is not None and head_races_lost == 0:
            # Uncontended, on the exact version known: the parent this child was planned on is still the
            # one stored (a deletion and recreation, or a restore, would have moved it).
            condition = condition & eq("hv", {"S": known.version})
    else:
        condition = not_exists("pk") | (not_exists("dead") & exists("sv") & room & record_condition)
        if expected is not None and expected > 0:
            condition = exists("pk") & condition
    action = {"Update": {"TableName": table, "Key": head_key, **render(condition=condition, update=update)}}
    return [action], Head(version, None)


def _replace(
    engine: Engine,
    tenant: str,
    snapshot: SessionSnapshot,
    fields: dict[str, Any],
    known: Head,
    record_condition: Condition,
    drop: tuple[Staging, ...],
) -> tuple[list[dict[str, Any]], Head]:
    session_id = snapshot.session_id
    assert session_id is not None and known.ids is not None
    snapshot_id = snapshot.snapshot_id
    base = known.item if known.alive and known.item is not None else {}
    carried = {name: base[name] for name in _RECORD_ATTRIBUTES if name in base}
    others = _carried_staged(known.item, drop)  # a tombstone's too: it may name a dead root writer's parts
    if others:
        carried[STAGED] = others
    actions: list[dict[str, Any]] = []
    ids: tuple[str, ...] = (*known.ids, snapshot_id) if known.alive else (snapshot_id,)
    if known.alive and len(known.ids) >= engine.settings.head_ids:
        page = {**keys.page_key(tenant, session_id, fields["hv"]["S"]), "ids": id_list(known.ids)}
        if "exp" in fields:
            page["exp"] = fields["exp"]
        actions.append(put_action(engine.table, page, render(condition=not_exists("pk"))))
        ids = (snapshot_id,)
    head = {
        **keys.head_key(tenant, session_id),
        "ca": fields["lc"],
        **carried,
        **fields,
        "ids": id_list(ids),
        "sv": {"N": str(known.session_version + 1)},
    }
    exact = not_exists("pk") if known.version is None else eq("hv", {"S": known.version})
    condition = exact & record_condition  # an expected version > 0 cannot hold where there is no head
    return [put_action(engine.table, head, render(condition=condition)), *actions], Head(fields["hv"]["S"], ids, head)


def change(
    engine: Engine,
    tenant: str,
    session_id: str,
    known: Head | None,
    now: str,
    expected: int | None = None,
    drop: tuple[Staging, ...] = (),
) -> dict[str, Any]:
    """The head action of a write that changes a snapshot's state or status: the session version moves
    by one, on a live head. A head written before versions existed is upgraded on its exact token.
    The names of the staged writes in ``drop`` go out of the head."""
    update = Update().set("hv", {"S": engine.token()}).set("ua", {"S": now})
    if drop:
        update.delete(STAGED, {"SS": [s.entry for s in drop]})
    record_condition, record_fields = record_terms(engine, known)
    for name, value in record_fields.items():
        update.set(name, value)
    if known is not None and known.alive and known.item is not None and "sv" not in known.item:
        assert known.version is not None
        update.set("sv", {"N": str(known.session_version + 1)})
        condition = eq("hv", {"S": known.version})
    else:
        update.add("sv", {"N": "1"})
        condition = _alive() & exists("sv")
    condition = _also(condition & record_condition, expected_condition(expected))
    return {
        "Update": {
            "TableName": engine.table,
            "Key": keys.head_key(tenant, session_id),
            **render(condition=condition, update=update),
        }
    }


def live_check(engine: Engine, tenant: str, session_id: str) -> dict[str, Any]:
    """The head action of a write that moves no version (a heartbeat) in a session that may expire: a
    check that the session is alive and has not expired, so the write cannot land in an expired session
    (which reads as absent), as no write can in the in-memory store."""
    condition = _alive() & (not_exists("xa") | gt("xa", {"N": str(engine.now_ms())}))
    return {
        "ConditionCheck": {
            "TableName": engine.table,
            "Key": keys.head_key(tenant, session_id),
            **render(condition=condition),
        }
    }


def hint(engine: Engine, tenant: str, session_id: str, snapshot_id: str, recipe: Recipe) -> dict[str, Any]:
    """Refresh the leaf's read hint while ``snapshot_id`` is still the leaf."""
    update = Update().set("rc", {"B": sealed_hint(recipe, snapshot_id)})
    return {
        "Update": {
            "TableName": engine.table,
            "Key": keys.head_key(tenant, session_id),
            **render(condition=_alive() & eq("leaf", {"S": snapshot_id}), update=update),
        }
    }


def restored(
    engine: Engine,
    tenant: str,
    session_id: str,
    read: Head,
    ids: list[str],
    leaf: SessionSnapshot | None,
    leaf_recipe: Recipe | None,
    expires: int | None,
    created_at: str | None,
    cyclic: int,
    added: int,
    listed: Staging | None = None,
) -> dict[str, Any]:
    """The head after a restore, replacing the one read (on its exact version, so a turn that lands
    in between makes the restore read again instead of dropping it). The staged writes the head read
    names stay named; ``listed``, the restore's own write ahead of this commit (``_listed``), goes from
    ``stg`` to ``cw``, so its items show from this commit on."""
    if read.deleting:
        raise _being_deleted(session_id)
    base = read.item if read.alive and read.item is not None else {}
    head: dict[str, Any] = {
        **keys.head_key(tenant, session_id),
        **{name: base[name] for name in _RECORD_ATTRIBUTES if name in base and name != "exp"},
        "hv": {"S": engine.token()},
        "sv": {"N": str(read.session_version + added)},
    }
    staged = _carried_staged(read.item, () if listed is None else (listed,))
    if staged is not None:
        head[STAGED] = staged
    if listed is not None:  # a set: the head may name a create's items already, and other restores'
        named = head.get(CREATED_BY, {})
        head[CREATED_BY] = {"SS": sorted({*named.get("SS", ()), *([named["S"]] if "S" in named else []), listed.blob})}
    if ids:  # DynamoDB refuses an empty set: a head whose members all moved away lists none, as a new one
        head["ids"] = id_list(ids)
    if created_at is not None and ("ca" not in head or created_at < head["ca"]["S"]):
        head["ca"] = {"S": created_at}  # an import of older history moves the session's creation back
    if not ids:  # every member moved to other sessions: the record stays, as create_session leaves it
        head.update({name: base[name] for name in ("ua", "lc") if name in base})
    elif leaf is None:
        head["cyc"] = {"N": str(cyclic)}
    else:
        assert leaf_recipe is not None
        head.update(
            leaf={"S": leaf.snapshot_id},
            lc={"S": leaf.created_at},
            ua={"S": leaf.updated_at or leaf.created_at},
            rc={"B": sealed_hint(leaf_recipe, leaf.snapshot_id)},
        )
    if expires is not None:
        head["exp"] = {"N": str(expires)}
    condition = not_exists("pk") if read.version is None else eq("hv", {"S": read.version})
    return put_action(engine.table, head, render(condition=condition))


def tombstone(
    engine: Engine, tenant: str, session_id: str, read: Head, reminder: dict[str, Any] | None = None
) -> tuple[dict[str, Any], str]:
    """The first write of a deletion: the head becomes a tombstone (no write can land on it, readers see
    no session) that still lists every member, and names the expiry index entry (``reminder``, its sort
    key) that finds the deletion if it stops part-way. An update in place, so it keeps the ids of a
    write that landed since the head was read, and a deletion never loses the race to a busy writer.
    Returns the action and the tombstone's token."""
    version = engine.token()
    if read.version is None:  # items without a head (a writer's staged parts): a bare tombstone over nothing
        item = {
            **keys.head_key(tenant, session_id),
            "hv": {"S": version},
            "dead": {"BOOL": True},
            "del": {"BOOL": True},
            **({"rmd": reminder} if reminder is not None else {}),
        }
        return put_action(engine.table, item, render(condition=not_exists("pk"))), version
    update = Update().set("hv", {"S": version}).set("dead", {"BOOL": True}).set("del", {"BOOL": True}).remove("exp")
    if reminder is not None:
        update.set("rmd", reminder)
    return {
        "Update": {
            "TableName": engine.table,
            "Key": keys.head_key(tenant, session_id),
            **render(condition=exists("pk"), update=update),
        }
    }, version


def final_tombstone(engine: Engine, tenant: str, session_id: str, version: str, session_version: int) -> dict[str, Any]:
    """The last write of a deletion: a bare tombstone keeping only the session version, on the token
    of the tombstone the deletion started with."""
    item = {
        **keys.head_key(tenant, session_id),
        "hv": {"S": engine.token()},
        "dead": {"BOOL": True},
        "sv": {"N": str(session_version)},
    }
    return put_action(engine.table, item, render(condition=eq("hv", {"S": version})))


# --- staged writes named in the head ------------------------------------------------------------

STAGED = "stg"
"""The head's string set naming its session's staged writes that have not committed (see :class:`Staging`)."""


@attrs.frozen
class Staging:
    """A staged write as its session's head names it: when it started (epoch seconds), how many parts
    it writes, and its blob (whose marker and parts it names). ``entry`` is the name in ``stg``."""

    at: int
    parts: int
    blob: str

    @property
    def entry(self) -> str:
        return f"{self.at}{keys.SEP}{self.parts}{keys.SEP}{self.blob}"

    @classmethod
    def parse(cls, entry: str) -> Staging | None:
        """The staging an entry names; None for one this store did not write."""
        at, _, rest = entry.partition(keys.SEP)
        parts, _, blob = rest.partition(keys.SEP)
        if not (at.isdigit() and parts.isdigit() and blob):
            return None
        return cls(int(at), int(parts), blob)


def _carried_staged(item: dict[str, Any] | None, drop: tuple[Staging, ...]) -> dict[str, Any] | None:
    dropped = {s.entry for s in drop}
    names = [e for e in (item or {}).get(STAGED, {}).get("SS", ()) if e not in dropped]
    return {"SS": names} if names else None


def register_staged(
    engine: Engine, tenant: str, session_id: str, staged: Sequence[Staging], known: Head | None
) -> Steps[Head | None]:
    """Name staged writes (those of one commit) in their session's head before their first part is
    written, so that if their writer dies the session's next save takes them back. Returns the head
    as it now is (its version moved, so a whole Put of it carries the names), or None when the head
    is being deleted (the write's own commit then fails on it).

    With no head yet, the name goes into a bare tombstone (readers see no session; a root's commit
    replaces it on its exact version, as any finished tombstone). A session not known to be alive may
    never see another save (a first turn whose writer died, in a session no one else knows of), so it
    first gets an entry in the tenant's expiry index, due when the write goes stale:
    ``delete_expired_sessions`` then takes the write back."""
    token = engine.token()
    head_key = keys.head_key(tenant, session_id)
    entries = [s.entry for s in staged]
    if known is None or not known.alive:
        since = min(s.at for s in staged)
        yield from write_one(engine.table, put_action(engine.table, reminder(engine, tenant, session_id, since)))
    update = Update().add(STAGED, {"SS": entries}).set("hv", {"S": token})
    action = {
        "Update": {
            "TableName": engine.table,
            "Key": head_key,
            **render(condition=exists("pk") & not_exists("del"), update=update),
        }
    }
    if known is None or known.exists:  # no head known to be absent: name the write in the head there is
        try:
            answer = yield from write_one(engine.table, action, ReturnValues="ALL_NEW")
            return Head.of(answer["Attributes"])
        except Cancelled:
            pass
    stub = {**head_key, "hv": {"S": token}, "dead": {"BOOL": True}, "sv": {"N": "0"}, STAGED: {"SS": entries}}
    try:
        yield from write_one(engine.table, put_action(engine.table, stub, render(condition=not_exists("pk"))))
        return Head.of(stub)
    except Cancelled:  # a head appeared meanwhile, or this very write landed and its answer was lost
        item = yield from get_item(engine.table, head_key)
        if item is not None and item.get("hv", {}).get("S") == token:
            return Head.of(item)
        return None


def stale_staged(engine: Engine, known: Head | None, now: int | None = None) -> list[Staging]:
    """The staged writes a head names that started more than ``orphan_ttl`` before ``now`` (epoch
    seconds; the clock's by default): their writer died or gave up (unlifted parts have expired by
    then). A write this save is staging started now, so it is never one."""
    if known is None or known.item is None or STAGED not in known.item:
        return []
    cutoff = (engine.now_epoch() if now is None else now) - int(engine.settings.orphan_ttl.total_seconds())
    found = [Staging.parse(e) for e in known.item[STAGED].get("SS", ())]
    return [s for s in found if s is not None and s.at <= cutoff]


def reminder(engine: Engine, tenant: str, session_id: str, since: int) -> dict[str, Any]:
    """An entry in the tenant's expiry index, due ``orphan_ttl`` after ``since`` (epoch seconds), for
    ``delete_expired_sessions`` to find a write of the session whose writer may die part-way (a staged
    first write, a deletion)."""
    due = (since + int(engine.settings.orphan_ttl.total_seconds())) * 1000
    return {"pk": keys.expiry_pk(tenant), "sk": {"S": keys.expiry_sk(due, session_id)}, "sid": {"S": session_id}}


def forget_staged(engine: Engine, tenant: str, session_id: str, staged: list[Staging]) -> dict[str, Any]:
    """Take the names of staged writes that were taken back out of the head, outside a save (its version
    stays: a name a whole Put built on an older read carries back is found gone and dropped again)."""
    update = Update().delete(STAGED, {"SS": [s.entry for s in staged]})
    return {
        "Update": {
            "TableName": engine.table,
            "Key": keys.head_key(tenant, session_id),
            **render(condition=exists("pk"), update=update),
        }
    }
