"""Rules every store applies the same way to sessions as records (contract section 6): argument checks,
page tokens, and the errors the service and the stores raise.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.frozen_json import FrozenDict
from genkit_sessions.model.types import SessionSnapshot, replace_checked
from genkit_sessions.stores.write_rules import restorable

__all__ = [
    "PRINCIPAL",
    "check_before",
    "check_limit",
    "check_metadata",
    "check_metadata_entry",
    "check_ttl",
    "decode_page_token",
    "encode_page_token",
    "first_snapshots",
    "indexed_keys",
    "not_indexed",
    "session_exists",
    "session_not_found",
    "snapshot_exists",
    "version_conflict",
]

PRINCIPAL = "principal"
"""The metadata key every store indexes: the user (or other principal) a session belongs to."""

MAX_PAGE = 100


def indexed_keys(names: Iterable[str]) -> frozenset[str]:
    """The metadata keys a store indexes: those given, and ``principal`` always."""
    if isinstance(names, (str, bytes, Mapping)) or not isinstance(names, Iterable):
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"indexed_metadata is a list of metadata keys, got {type(names).__name__}; "
            "pass for example indexed_metadata=['team']",
            reason=Reason.INVALID_INPUT,
        )
    keys = set()
    for name in names:
        if not isinstance(name, str) or not name:
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"indexed_metadata names metadata keys, each a non-empty string; got {name!r}",
            )
        keys.add(name)
    return frozenset(keys | {PRINCIPAL})


def check_metadata_entry(name: object, value: object, *, allow_none: bool = False) -> None:
    """INVALID_ARGUMENT unless ``name`` and ``value`` are non-empty strings (``value`` may be None when
    ``allow_none``)."""
    if not isinstance(name, str) or not name:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"a metadata key must be a non-empty string, got {name!r}",
            reason=Reason.INVALID_INPUT,
        )
    if value is None and allow_none:
        return
    if not isinstance(value, str) or not value:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"metadata[{name!r}] must be a non-empty string, got {value!r}; store structured data in the "
            "session's state instead",
            reason=Reason.INVALID_INPUT,
        )


def check_metadata(metadata: Mapping[str, str] | None) -> FrozenDict:
    """V1: the metadata as a frozen mapping of non-empty strings."""
    if metadata is None:
        return FrozenDict({})
    if not isinstance(metadata, Mapping):
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"metadata must be a mapping of strings to strings, got {type(metadata).__name__}",
            reason=Reason.INVALID_INPUT,
        )
    for name, value in metadata.items():
        check_metadata_entry(name, value)
    return FrozenDict(dict(metadata))


def check_ttl(ttl: timedelta | None) -> None:
    """INVALID_ARGUMENT unless ``ttl`` is a positive timedelta or None."""
    if ttl is None:
        return
    if not isinstance(ttl, timedelta) or ttl <= timedelta(0):
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"ttl must be a positive datetime.timedelta or None, got {ttl!r}; for an hour pass timedelta(hours=1)",
            reason=Reason.INVALID_INPUT,
        )
    if ttl > MAX_TTL:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"ttl {ttl!r} is longer than the longest this SDK keeps, {MAX_TTL.days} days (100 years); "
            "for a session that never expires pass ttl=None",
            reason=Reason.INVALID_INPUT,
        )


MAX_TTL = timedelta(days=36525)
"""The longest ttl a session takes (100 years): any expiry it gives is a date every store can write."""


def check_option(name: str, value: Any, valid: bool, expected: str, example: str) -> None:
    """INVALID_ARGUMENT naming a store option when ``valid`` is false: what it must be, and an example."""
    if not valid:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"{name} must be {expected}, got {value!r} ({type(value).__name__}); pass for example {example}",
            reason=Reason.INVALID_INPUT,
        )


def check_int_option(name: str, value: Any, low: int, high: int | None = None) -> None:
    """INVALID_ARGUMENT unless ``value`` is an int (not a bool) in ``[low, high]``."""
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= low and (high is None or value <= high)
    bounds = f"at least {low}" if high is None else f"between {low} and {high}"
    check_option(name, value, ok, f"an int {bounds}", f"{name}={low}")


def check_number_option(name: str, value: Any) -> None:
    """INVALID_ARGUMENT unless ``value`` is a positive number of seconds."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    check_option(name, value, ok, "a positive number of seconds", f"{name}=0.5")


def check_callable(name: str, value: Any, example: str) -> None:
    """INVALID_ARGUMENT unless ``value`` is callable."""
    check_option(name, value, callable(value), "a function", example)


def check_before(before: datetime) -> datetime:
    """INVALID_ARGUMENT unless ``before`` is a timezone-aware datetime."""
    if not isinstance(before, datetime) or before.tzinfo is None:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"before must be a timezone-aware datetime, got {before!r}; pass datetime.now(timezone.utc)",
            reason=Reason.INVALID_INPUT,
        )
    return before


def check_limit(limit: int) -> int:
    """INVALID_ARGUMENT unless ``limit`` is an int from 1 to 100."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"limit must be an int from 1 to {MAX_PAGE}, got {limit!r}; page through more with page_token",
            reason=Reason.INVALID_INPUT,
        )
    return limit


def not_indexed(name: str, indexed: frozenset[str]) -> GenkitError:
    """INVALID_ARGUMENT for a lookup by a metadata key the store does not index."""
    return GenkitError(
        Status.INVALID_ARGUMENT,
        f"metadata key {name!r} is not indexed by this store (indexed: {sorted(indexed)}); "
        "create the store with indexed_metadata=[...] naming it",
        reason=Reason.INVALID_INPUT,
    )


def encode_page_token(created_at: str, session_id: str) -> str:
    """An opaque token for the page after the session ``(created_at, session_id)``."""
    raw = json.dumps([created_at, session_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_token(token: str | None) -> tuple[str, str] | None:
    """The position a page token names; INVALID_ARGUMENT for a token this package did not hand out."""
    if token is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        created_at, session_id = json.loads(raw)
        if isinstance(created_at, str) and isinstance(session_id, str):
            return created_at, session_id
    except (TypeError, ValueError, binascii.Error):
        pass
    raise GenkitError(
        Status.INVALID_ARGUMENT,
        f"page_token {token!r} is not a token a page of find_by_metadata returned; pass next_page_token as given",
        reason=Reason.INVALID_INPUT,
    )


def session_exists(session_id: str) -> GenkitError:
    """V1: ALREADY_EXISTS for a live session of that id."""
    return GenkitError(
        Status.ALREADY_EXISTS,
        f"session {session_id!r} already exists; use find_or_create to reuse it, or pick another id",
        reason=Reason.SESSION_EXISTS,
    )


def first_snapshots(session_id: str, snapshots: Iterable[Any], created_at: str) -> list[SessionSnapshot]:
    """V1 with snapshots: the snapshots a new session starts with, as ``create_session`` stores them.

    Each is stored verbatim, as ``restore_snapshots`` would store it (see ``restorable``), except that
    one without ``createdAt`` gets the record's (and ``updatedAt`` with it) and one naming no session
    gets this one. INVALID_ARGUMENT for a snapshot of another session or an id given twice; all are
    checked before anything is written."""
    checked: list[SessionSnapshot] = []
    for snapshot in snapshots:
        if isinstance(snapshot, SessionSnapshot):
            changes: dict[str, Any] = {}
            if not snapshot.created_at:
                changes.update(created_at=created_at, updated_at=snapshot.updated_at or created_at)
            if snapshot.session_id is None and (snapshot.state is None or snapshot.state.session_id is None):
                changes["session_id"] = session_id
            if changes:
                snapshot = replace_checked(snapshot, **changes)
        stored, owner = restorable(snapshot)
        if owner != session_id:
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"snapshot {stored.snapshot_id!r} names session {owner!r}, not {session_id!r}; a new session's "
                "first snapshots must be its own",
                reason=Reason.INVALID_SESSION_ID,
            )
        checked.append(stored)
    ids = [s.snapshot_id for s in checked]
    if len(set(ids)) != len(ids):
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"session {session_id!r}: a snapshot id is given twice among its first snapshots {ids}; give each its own",
            reason=Reason.INVALID_SNAPSHOT_ID,
        )
    return checked


def snapshot_exists(snapshot_id: str) -> GenkitError:
    """V1 with snapshots: ALREADY_EXISTS for a first snapshot whose id the store already holds."""
    return GenkitError(
        Status.ALREADY_EXISTS,
        f"snapshot {snapshot_id!r} already exists; a new session's first snapshots need new ids "
        "(restore_snapshots moves existing ones)",
        reason=Reason.INVALID_SNAPSHOT_ID,
    )


def session_not_found(session_id: str) -> GenkitError:
    """V5: NOT_FOUND for no live session of that id."""
    return GenkitError(
        Status.NOT_FOUND,
        f"session {session_id!r} does not exist (or was deleted, or expired); create it first",
        reason=Reason.SESSION_NOT_FOUND,
    )


def version_conflict(session_id: str, expected: int, current: int) -> GenkitError:
    """ABORTED for a write whose expected version moved; the current version is in the details."""
    return GenkitError(
        Status.ABORTED,
        f"session {session_id!r} is at version {current}, not the expected {expected}: another writer got there "
        "first; read the session again and retry",
        details={"version": current},
        reason=Reason.VERSION_CONFLICT,
    )
