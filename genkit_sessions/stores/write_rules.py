"""The write rules every store applies, free of I/O (S3-S7 and the id rules).

A store reads the current snapshot, calls :func:`next_snapshot` with it and the
caller's mutator, checks a new snapshot's parent with :func:`check_parent`,
and writes the result atomically. Keeping the rules here means the in-memory
store, the DynamoDB store and any store built on this package agree exactly.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.ids import validate_id
from genkit_sessions.model.types import SessionSnapshot, SnapshotStatus, replace_checked
from genkit_sessions.stores.protocol import Context, Mutator, TenantFn

__all__ = [
    "abort_mutator",
    "abort_through",
    "check_mutator",
    "check_parent",
    "TENANT_KEY",
    "default_tenant",
    "heartbeat_mutator",
    "heartbeat_through",
    "leaf_of",
    "listing_order",
    "next_snapshot",
    "require_one_selector",
    "required_tenant",
    "restorable",
    "restore_order",
    "tenant_key",
]


TENANT_KEY = "tenant"
"""The context key the default tenant function reads."""


def _tenant_near_misses(context: Mapping[str, Any]) -> list[str]:
    """Context keys that look like a try at naming the tenant (``tenantId``, ``Tenant``, ``tenant_id``)."""
    return [
        key
        for key in context
        if isinstance(key, str)
        and key != TENANT_KEY
        and key.replace("_", "").replace("-", "").lower().startswith("tenant")
    ]


def default_tenant(context: Context) -> str:
    """The tenant named by ``context["tenant"]``; the empty string (the default tenant) when the
    context is None or names none.

    Fails closed rather than guess: a context that is not a mapping, a tenant that is not a
    non-empty string (``1`` and ``"1"`` are not one tenant), or a key such as ``tenantId`` that
    looks meant to name one are INVALID_ARGUMENT.
    """
    if context is None:
        return ""
    if not isinstance(context, Mapping):
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"context must be a mapping or None, got {type(context).__name__}; name the tenant as "
            f"context={{'{TENANT_KEY}': 'acme'}}",
            reason=Reason.INVALID_INPUT,
        )
    tenant = context.get(TENANT_KEY)
    if tenant is None:
        misses = _tenant_near_misses(context)
        if misses:
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"context names no tenant but has {', '.join(repr(k) for k in misses)}; the tenant goes under "
                f"{TENANT_KEY!r}: context={{'{TENANT_KEY}': 'acme'}}",
                reason=Reason.INVALID_INPUT,
            )
        return ""
    if not isinstance(tenant, str) or not tenant:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"context[{TENANT_KEY!r}] must be a non-empty string, got {tenant!r} ({type(tenant).__name__}); "
            "tenants are compared as strings, so pass the tenant's id as a str",
            reason=Reason.INVALID_INPUT,
        )
    return tenant


def required_tenant(tenant_of: TenantFn = default_tenant) -> TenantFn:
    """A tenant function that refuses a context naming no tenant (INVALID_ARGUMENT) instead of using the
    default tenant: what ``require_tenant=True`` configures on a store."""

    def tenant(context: Context) -> str:
        found = tenant_of(context)
        if found == "":
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                "this store requires a tenant and the context names none; pass "
                f"context={{'{TENANT_KEY}': 'acme'}} (the store was made with require_tenant=True)",
                reason=Reason.INVALID_INPUT,
            )
        return found

    return tenant


def tenant_key(tenant_of: Callable[[Context], str], context: Context) -> str:
    """Apply a tenant function and check that what it returned can key a store."""
    tenant = tenant_of(context)
    if not isinstance(tenant, str):
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"the store's tenant function returned {type(tenant).__name__}; it must return a string",
        )
    if tenant:
        validate_id(tenant, "tenant", Reason.INVALID_INPUT)
    return tenant


def check_mutator(mutator: object) -> None:
    """INVALID_ARGUMENT unless ``mutator`` is callable (checked before anything is read)."""
    if not callable(mutator):
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"save_snapshot takes a mutator function, got {type(mutator).__name__}; pass a function of the "
            "current snapshot (or None) that returns the snapshot to write, for example `lambda _: snapshot`",
            reason=Reason.INVALID_INPUT,
        )


def require_one_selector(snapshot_id: str | None, session_id: str | None) -> tuple[str | None, str | None]:
    """S1: exactly one of snapshot id and session id, and that one a valid id."""
    if (snapshot_id is None) == (session_id is None):
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            "get_snapshot takes exactly one of snapshot_id and session_id; "
            f"got {'both' if snapshot_id is not None else 'neither'}",
            reason=Reason.INVALID_INPUT,
        )
    if snapshot_id is not None:
        validate_id(snapshot_id, "snapshot_id", Reason.INVALID_SNAPSHOT_ID)
    else:
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
    return snapshot_id, session_id


def next_snapshot(
    snapshot_id: str,
    existing: SessionSnapshot | None,
    mutator: Mutator,
    now: str,
) -> SessionSnapshot | None:
    """Run the mutator on ``existing`` and return the snapshot to write, stamped (S4),
    or None when the mutator declines. Raises for S5, S6 and invalid ids.

    The caller still owns S7 (:func:`check_parent`) for a new snapshot.
    """
    validate_id(snapshot_id, "snapshot_id", Reason.INVALID_SNAPSHOT_ID)
    check_mutator(mutator)
    result: Any = mutator(existing)
    if type(result) is not SessionSnapshot and inspect.isawaitable(result):
        if inspect.iscoroutine(result):
            result.close()
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            "the save mutator returned an awaitable; pass a plain function (drop 'async' from it)",
        )
    if result is None:
        return None
    if not isinstance(result, SessionSnapshot):
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"the save mutator returned {type(result).__name__}; return a SessionSnapshot, or None to skip the write",
        )
    session_id = _session_of(result, existing)
    if result.parent_id is not None:
        validate_id(result.parent_id, "parentId", Reason.INVALID_SNAPSHOT_ID)
    status = result.effective_status
    if status is SnapshotStatus.EXPIRED:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"snapshot {snapshot_id!r}: 'expired' is computed on read and never stored; "
            "write 'pending' and let its heartbeat lapse, or write 'aborted' or 'failed'",
        )
    if existing is not None:
        _check_update(snapshot_id, existing, result, session_id, status)
    # Every field was checked when ``result`` was made; the stamps are the store's own, the ids were
    # validated above: no check runs twice.
    return replace_checked(
        result,
        snapshot_id=snapshot_id,
        session_id=session_id,
        created_at=existing.created_at if existing is not None else now,
        updated_at=now,
        status=status,
    )


def _session_of(result: SessionSnapshot, existing: SessionSnapshot | None) -> str:
    top = result.session_id
    inner = result.state.session_id if result.state is not None else None
    if top is not None and inner is not None and top != inner:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"snapshot {result.snapshot_id!r} names session {top!r} but its state names {inner!r}; "
            "make sessionId and state.sessionId agree",
            reason=Reason.INVALID_SESSION_ID,
        )
    session_id = top or inner or (existing.session_id if existing is not None else None)
    if session_id is None:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"snapshot {result.snapshot_id!r} has no sessionId (neither on the snapshot nor in its state); "
            "set sessionId so the store knows which session tree it belongs to",
            reason=Reason.SESSION_ID_REQUIRED,
        )
    return validate_id(session_id, "sessionId", Reason.INVALID_SESSION_ID)


def _check_update(
    snapshot_id: str,
    existing: SessionSnapshot,
    result: SessionSnapshot,
    session_id: str,
    status: SnapshotStatus,
) -> None:
    if existing.session_id is not None and session_id != existing.session_id:
        raise GenkitError(
            Status.FAILED_PRECONDITION,
            f"snapshot {snapshot_id!r} belongs to session {existing.session_id!r} and cannot move to "
            f"session {session_id!r}; snapshot ids are unique per tenant, so write under a new id",
        )
    if result.parent_id != existing.parent_id:
        raise GenkitError(
            Status.FAILED_PRECONDITION,
            f"snapshot {snapshot_id!r} has parent {existing.parent_id!r} and cannot be re-parented to "
            f"{result.parent_id!r}; write a new snapshot to branch elsewhere",
        )
    before = existing.effective_status
    if before.is_terminal and status is not before:
        raise GenkitError(
            Status.FAILED_PRECONDITION,
            f"snapshot {snapshot_id!r} is {before.value}, a terminal status, and cannot become {status.value}; "
            "start a new turn from it (or from its parent) instead",
        )


def check_parent(snapshot: SessionSnapshot, parent: SessionSnapshot | None) -> None:
    """S7: a new snapshot's parent exists in the same session (and tenant: the caller
    looks it up in the snapshot's tenant)."""
    if snapshot.parent_id is None:
        return
    if parent is None:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"snapshot {snapshot.snapshot_id!r} names parent {snapshot.parent_id!r}, which does not exist; "
            "save the parent first, or leave parentId unset for a root",
            reason=Reason.SNAPSHOT_NOT_FOUND,
        )
    if parent.session_id != snapshot.session_id:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"snapshot {snapshot.snapshot_id!r} in session {snapshot.session_id!r} names parent "
            f"{snapshot.parent_id!r} of session {parent.session_id!r}; a parent must be in the same session",
            reason=Reason.INVALID_SESSION_ID,
        )


Save = Callable[[str, Mutator], "SessionSnapshot | None"]
"""A store's ``save_snapshot`` bound to one request context."""


def abort_mutator(seen: list[SnapshotStatus | None]) -> Mutator:
    """S11 abort as a mutator: pending or aborting becomes aborted; ``seen`` collects the status each
    run found (None: no snapshot), so its last entry is what the run whose write landed saw. A store may
    run a mutator on a guess first. A terminal snapshot is left as it is."""

    def abort(current: SessionSnapshot | None) -> SessionSnapshot | None:
        if current is None:
            seen.append(None)
            return None
        seen.append(current.effective_status)
        if current.effective_status.is_terminal:
            return None
        return attrs.evolve(current, status=SnapshotStatus.ABORTED)

    return abort


def abort_through(save: Save, snapshot_id: str) -> SnapshotStatus | None:
    """S11 abort, as one atomic save: pending or aborting becomes aborted.

    Returns the status seen before the write (a terminal one is left as it is),
    or None when there is no such snapshot. Every store implements abort with it.
    """
    seen: list[SnapshotStatus | None] = []
    save(snapshot_id, abort_mutator(seen))
    return seen[-1] if seen else None


def heartbeat_mutator(snapshot_id: str, now: str) -> Mutator:
    """S11 heartbeat as a mutator: stamp ``heartbeatAt`` on a running snapshot.

    NOT_FOUND when the snapshot does not exist, FAILED_PRECONDITION when it is terminal."""

    def beat(current: SessionSnapshot | None) -> SessionSnapshot | None:
        if current is None:
            raise GenkitError(
                Status.NOT_FOUND,
                f"snapshot {snapshot_id!r} does not exist; heartbeat the snapshot id the turn was saved under",
                reason=Reason.SNAPSHOT_NOT_FOUND,
            )
        if current.effective_status.is_terminal:
            raise GenkitError(
                Status.FAILED_PRECONDITION,
                f"snapshot {snapshot_id!r} is {current.effective_status.value}; only a running turn "
                "(pending or aborting) takes heartbeats",
            )
        return attrs.evolve(current, heartbeat_at=now)

    return beat


def heartbeat_through(save: Save, snapshot_id: str, now: str) -> SessionSnapshot:
    """S11 heartbeat, as one atomic save (see :func:`heartbeat_mutator`)."""
    saved = save(snapshot_id, heartbeat_mutator(snapshot_id, now))
    assert saved is not None
    return saved


def restorable(snapshot: SessionSnapshot) -> tuple[SessionSnapshot, str]:
    """A snapshot as ``restore_snapshots`` stores it (its sessionId filled from its state), and that id.

    A restore skips stamping and the write rules S5-S7 on purpose (it imports data as it was, broken
    chains included, for the resolver to report), and nothing else: INVALID_ARGUMENT when the item is not
    a snapshot, when it has no createdAt (it was never stored), when an id (snapshot, session, parent)
    breaks section 4, or when the snapshot names no session anywhere (SESSION_ID_REQUIRED), so a
    restored session can always be read, listed and deleted.
    """
    if not isinstance(snapshot, SessionSnapshot):
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"restore_snapshots takes SessionSnapshot objects, got {type(snapshot).__name__}; "
            "decode JSON with from_wire(SessionSnapshot, data)",
            reason=Reason.INVALID_INPUT,
        )
    validate_id(snapshot.snapshot_id, "snapshotId", Reason.INVALID_SNAPSHOT_ID)
    if snapshot.parent_id is not None:
        validate_id(snapshot.parent_id, "parentId", Reason.INVALID_SNAPSHOT_ID)
    if snapshot.effective_status is SnapshotStatus.EXPIRED:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"snapshot {snapshot.snapshot_id!r}: 'expired' is computed on read and never stored; "
            "restore it as 'pending' (it reads as expired once its heartbeat lapses) or as 'aborted'",
            reason=Reason.INVALID_INPUT,
        )
    top = snapshot.session_id
    inner = snapshot.state.session_id if snapshot.state is not None else None
    if top is not None and inner is not None and top != inner:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"snapshot {snapshot.snapshot_id!r} names session {top!r} but its state names {inner!r}; "
            "make sessionId and state.sessionId agree",
            reason=Reason.INVALID_SESSION_ID,
        )
    session_id = top or inner
    if session_id is None:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"snapshot {snapshot.snapshot_id!r} has no sessionId; every stored snapshot needs one",
            reason=Reason.SESSION_ID_REQUIRED,
        )
    validate_id(session_id, "sessionId", Reason.INVALID_SESSION_ID)
    if not snapshot.created_at:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"snapshot {snapshot.snapshot_id!r} has no createdAt; a restore stores snapshots as they were "
            "stored (it stamps nothing): send the createdAt the snapshot was saved with, or save it instead",
            reason=Reason.INVALID_INPUT,
        )
    restored = snapshot if snapshot.session_id == session_id else attrs.evolve(snapshot, session_id=session_id)
    return restored, session_id


def leaf_of(snapshots: Iterable[SessionSnapshot]) -> SessionSnapshot | None:
    """S8, the one leaf rule: of a session's snapshots given in the store's commit order (the order their
    creations landed), the last one without children. None when every snapshot has a child, which only
    a cyclic chain allows.

    The store's commit order decides, never a writer's clock: two writers whose clocks disagree (and so
    stamp createdAt out of order) still see the leaf move to each snapshot as it is saved. A live save
    of a new snapshot therefore always makes it the leaf; a change of an existing snapshot never moves
    the leaf; a restore orders its snapshots with :func:`restore_order`.
    """
    members = list(snapshots)
    parents = {s.parent_id for s in members if s.parent_id is not None}
    for snapshot in reversed(members):
        if snapshot.snapshot_id not in parents:
            return snapshot
    return None


def restore_order(
    stored: Iterable[SessionSnapshot], restored: Iterable[SessionSnapshot], leaf_id: str | None
) -> list[SessionSnapshot]:
    """A session's commit order after a restore, for :func:`leaf_of`: the snapshots it held (a restored
    copy standing for the stored one) by createdAt, then snapshot id, with the current leaf (``leaf_id``)
    last of them; the snapshots new to the session follow in the order given. So a restore of
    snapshots the session already holds never moves its leaf, and an export (which lists each session's
    leaf last of its childless snapshots) imported into an empty store keeps its leaf.

    Of the commit order a store keeps only its end, the leaf: the snapshots held are taken by createdAt,
    as every store lists them. That decides only when a restore moves the stored leaf to another
    session or gives it a child and brings no new childless snapshot; the leaf is then the last
    childless snapshot left in listing order, on every store alike.
    """
    order: dict[str, SessionSnapshot] = {
        s.snapshot_id: s for s in sorted(stored, key=lambda s: (s.created_at, s.snapshot_id))
    }
    if leaf_id is not None and leaf_id in order:
        order[leaf_id] = order.pop(leaf_id)
    for snapshot in restored:
        order[snapshot.snapshot_id] = snapshot
    return list(order.values())


def listing_order(snapshots: Iterable[SessionSnapshot], leaf_id: str | None) -> list[SessionSnapshot]:
    """How every store lists a session (``list_snapshots``, and so an export): oldest first by createdAt
    (then snapshot id), the leaf last. The same data lists the same in every store, and the last
    snapshot listed without children is the leaf, so restoring a listing in its order (an import into
    an empty store) keeps the leaf."""
    return restore_order(snapshots, (), leaf_id)
