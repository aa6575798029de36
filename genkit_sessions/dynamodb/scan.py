"""Enumerating a tenant's sessions: a paginated Scan limited to the tenant's session heads.

The store has no index of every session (its reads are keyed: a session, a
snapshot, a metadata value), so listing or exporting a whole tenant is the one
place this package scans. It is meant for operator tools (``genkit-sessions
sessions list`` without a filter, ``genkit-sessions export --all``), not for a
request path: a Scan reads, and is billed for, every item of the table, and the
filter (``begins_with(pk, <tenant>␟s␟) AND sk = h``) only trims what comes
back. Each request examines at most ``limit`` items, so a page can hold fewer
sessions than asked for; follow ``next_page_token`` until it is None.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import attrs

from genkit_sessions.dynamodb import _keys as keys
from genkit_sessions.dynamodb._errors import BACKEND_ERRORS, map_error
from genkit_sessions.errors import GenkitError, Reason, Status

__all__ = ["SessionIdPage", "scan_session_ids"]


@attrs.frozen
class SessionIdPage:
    """Session ids of one tenant, in the table's scan order, and the token of the next page (None: done)."""

    session_ids: tuple[str, ...]
    next_page_token: str | None = None


def _encode(key: dict[str, Any]) -> str:
    raw = json.dumps(key, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(token: str) -> dict[str, Any]:
    try:
        key = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if isinstance(key, dict) and set(key) == {"pk", "sk"}:
            return key
    except (TypeError, ValueError, binascii.Error):
        pass
    raise GenkitError(
        Status.INVALID_ARGUMENT,
        f"page token {token!r} is not one a session scan returned; pass the next page token as printed",
        reason=Reason.INVALID_INPUT,
    )


def scan_session_ids(
    client: Any, table: str, tenant: str = "", *, limit: int = 100, page_token: str | None = None
) -> SessionIdPage:
    """One page of the ids of ``tenant``'s sessions (deleted ones included until their head goes; a
    reader drops those whose record reads as None). ``limit`` (1-1000) bounds the items examined."""
    if not 1 <= limit <= 1000:
        raise GenkitError(Status.INVALID_ARGUMENT, f"limit must be between 1 and 1000, got {limit}")
    prefix = f"{tenant}{keys.SEP}s{keys.SEP}"
    request: dict[str, Any] = {
        "TableName": table,
        "FilterExpression": "begins_with(#pk, :prefix) AND #sk = :head",
        "ExpressionAttributeNames": {"#pk": "pk", "#sk": "sk"},
        "ExpressionAttributeValues": {":prefix": {"S": prefix}, ":head": {"S": keys.HEAD_SK}},
        "ProjectionExpression": "#pk",
        "ConsistentRead": True,
        "Limit": limit,
    }
    if page_token is not None:
        request["ExclusiveStartKey"] = _decode(page_token)
    ids: list[str] = []
    while True:
        try:
            answer = client.scan(**request)
        except BACKEND_ERRORS as exc:
            raise map_error(exc, "Scan", table) from exc
        ids += [item["pk"]["S"][len(prefix) :] for item in answer.get("Items", [])]
        last = answer.get("LastEvaluatedKey")
        if last is None:
            return SessionIdPage(tuple(ids))
        if ids:
            return SessionIdPage(tuple(ids), _encode(last))
        request["ExclusiveStartKey"] = last  # nothing matched in this stretch: read on
