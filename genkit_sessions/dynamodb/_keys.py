"""The table's key design (see docs/dynamodb.md for the picture).

One table, string partition key ``pk`` and string sort key ``sk``. Ids reach
DynamoDB only inside these attribute values, never inside an expression. The
separator is U+001F, a control character that no valid id or tenant can hold
(contract section 4), so no two (tenant, id) pairs ever make the same key.

- snapshot item (fetch by id; the blob it wrote packed with its record when
  small): pk ``<tenant>␟n␟<snapshotId>``, sk ``s``
- session head (leaf pointer, and the ids of the newest members):
  pk ``<tenant>␟s␟<sessionId>``, sk ``h``
- member page (ids of older members): pk ``<tenant>␟s␟<sessionId>``, sk ``l␟<token>``
- blob part: pk ``<tenant>␟s␟<sessionId>``, sk ``b␟<snapshotId>␟<tag>␟<part>``
- staging marker (a large write's parts, until its commit deletes it):
  pk ``<tenant>␟s␟<sessionId>``, sk ``g␟<snapshotId>␟<tag>``

- metadata index entry (V4; one per indexed key a session's metadata holds):
  pk ``<tenant>␟m␟<name>␟<value>``, sk ``<createdAt>␟<sessionId>``
- expiry index entry (V7; one per session with a ttl): pk ``<tenant>␟x``,
  sk ``<expiresAt, epoch ms, 15 digits>␟<sessionId>``

(``␟`` is U+001F; ``<tag>`` is ``c`` for a page or ``d`` for a delta, plus a random nonce.)
"""

from __future__ import annotations

import hashlib
from typing import Any

SEP = "\x1f"
SNAPSHOT_SK = "s"
HEAD_SK = "h"
PAGE_PREFIX = "l" + SEP
BLOB_PREFIX = "b" + SEP
MARKER_PREFIX = "g" + SEP
TTL_ATTRIBUTE = "exp"


def snapshot_key(tenant: str, snapshot_id: str) -> dict[str, Any]:
    """The key of a snapshot's own item."""
    return {"pk": {"S": f"{tenant}{SEP}n{SEP}{snapshot_id}"}, "sk": {"S": SNAPSHOT_SK}}


def index_pk(tenant: str, name: str, value: str) -> dict[str, Any]:
    """The partition of one metadata key and value: the sessions holding it, oldest first.

    A key and value too long for a partition key (DynamoDB takes 2,048 bytes) are named by their SHA-256
    instead; a query checks each session's own metadata, so sharing a partition could only cost a read."""
    pk = f"{tenant}{SEP}m{SEP}{name}{SEP}{value}"
    if len(pk.encode("utf-8", "surrogatepass")) > INDEX_PK_LIMIT:
        digest = hashlib.sha256(f"{name}{SEP}{value}".encode("utf-8", "surrogatepass")).hexdigest()
        pk = f"{tenant}{SEP}M{SEP}{digest}"
    return {"S": pk}


INDEX_PK_LIMIT = 1024
"""The longest metadata index partition key written as it reads (in UTF-8 bytes); longer ones are hashed."""


def index_sk(created_at: str, session_id: str) -> str:
    """A session's sort key in a metadata index partition: created_at, then id."""
    return f"{created_at}{SEP}{session_id}"


def index_entry(sk: str) -> tuple[str, str]:
    """``(created_at, session_id)`` of a metadata index sort key."""
    created_at, _, session_id = sk.partition(SEP)
    return created_at, session_id


def expiry_pk(tenant: str) -> dict[str, Any]:
    """The partition of a tenant's expiry index."""
    return {"S": f"{tenant}{SEP}x"}


def expiry_sk(expires_ms: int, session_id: str) -> str:
    """A session's sort key in the expiry index: its expiry (epoch ms, fixed width), then id."""
    return f"{expires_ms:015d}{SEP}{session_id}"


def session_pk(tenant: str, session_id: str) -> dict[str, Any]:
    """The partition key value of a session's partition."""
    return {"S": f"{tenant}{SEP}s{SEP}{session_id}"}


def head_key(tenant: str, session_id: str) -> dict[str, Any]:
    """The key of a session's head item."""
    return {"pk": session_pk(tenant, session_id), "sk": {"S": HEAD_SK}}


def page_key(tenant: str, session_id: str, token: str) -> dict[str, Any]:
    """The key of a member page: ids of a session's snapshots moved out of its head."""
    return {"pk": session_pk(tenant, session_id), "sk": {"S": PAGE_PREFIX + token}}


def blob_name(snapshot_id: str, tag: str) -> str:
    """A blob's name: the snapshot that wrote it and a unique tag (``c`` or ``d`` plus a nonce)."""
    return f"{snapshot_id}{SEP}{tag}"


def blob_owner(name: str) -> str:
    """The snapshot id a blob name belongs to."""
    return name.rpartition(SEP)[0]


def blob_tag(name: str) -> str:
    """The tag part of a blob name (what a snapshot item's packed record names its inline blob by)."""
    return name.rpartition(SEP)[2]


def blob_part_key(tenant: str, session_id: str, name: str, part: int) -> dict[str, Any]:
    """The key of one part of a blob."""
    return {"pk": session_pk(tenant, session_id), "sk": {"S": f"{BLOB_PREFIX}{name}{SEP}{part:04d}"}}


def blob_of_sk(sk: str) -> tuple[str, int] | None:
    """``(blob name, part index)`` for a blob part's sort key, None for other items."""
    if not sk.startswith(BLOB_PREFIX):
        return None
    name, _, part = sk[len(BLOB_PREFIX) :].rpartition(SEP)
    try:
        return name, int(part)
    except ValueError:
        return None


def marker_key(tenant: str, session_id: str, name: str) -> dict[str, Any]:
    """The key of the staging marker of a blob written ahead of its commit."""
    return {"pk": session_pk(tenant, session_id), "sk": {"S": MARKER_PREFIX + name}}


def marker_blob(sk: str) -> str | None:
    """The blob name a staging marker's sort key names, None for other items."""
    return sk[len(MARKER_PREFIX) :] if sk.startswith(MARKER_PREFIX) else None
