"""The stored layout as docs/dynamodb.md documents it, spelled out for tests that read the table through
boto3 (what AWS would store), independently of the store's own code.

Keys: ``pk`` / ``sk`` strings, the separator U+001F. A snapshot item's sort key is ``s``, a head's ``h``;
blob parts start ``b␟``, member pages ``l␟``. A snapshot's ``rec`` is its record, tagged ``0x01`` and
zlib-compressed JSON ``{"e": <wire snapshot without state>, "r": <recipe>}``, or, packed with the blob
it wrote, tagged ``0x02``, a 4-byte record length, the record, a 1-byte tag length, the tag, the blob.
A recipe is ``[[[blob name, parts], ...], [level, ...], [message count after each blob, ...], [compressed
size of each blob, ...]]`` (the sizes list is missing from recipes written before it existed). A snapshot
whose state changed holds its update blob in ``ub`` (a 1-byte tag length, the tag, the blob) when it fits
its item, else in parts; an update blob's tag starts with ``u``. A blob's message list (``m`` or ``a``)
holds a message of a known role and one text part as one string, the role's letter (``u``, ``m``, ``s``,
``t``) then the text, and any other message as its wire JSON.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

import attrs

SEP = "\x1f"
SNAPSHOT_SK = "s"
HEAD_SK = "h"
BLOB_PREFIX = "b" + SEP
PAGE_PREFIX = "l" + SEP


def head_key(tenant: str, session_id: str) -> dict[str, Any]:
    """The key of a session's head item."""
    return {"pk": {"S": f"{tenant}{SEP}s{SEP}{session_id}"}, "sk": {"S": HEAD_SK}}


def decompress(data: bytes) -> Any:
    """A ``0x01``-tagged zlib JSON value."""
    assert data[:1] == b"\x01", "not a compressed JSON value"
    return json.loads(zlib.decompress(data[1:]).decode("utf-8"))


def compress(value: Any) -> bytes:
    """The inverse of :func:`decompress`."""
    return b"\x01" + zlib.compress(json.dumps(value, separators=(",", ":")).encode("utf-8"))


def unpack_record(data: bytes) -> tuple[bytes, str | None, bytes | None]:
    """``(record, tag, blob)`` of a ``rec`` value (tag and blob None for a record alone)."""
    if data[:1] == b"\x01":
        return data, None, None
    assert data[:1] == b"\x02", "unknown record tag"
    size = int.from_bytes(data[1:5], "big")
    at = 5 + size
    name_length = data[at]
    return data[5:at], data[at + 1 : at + 1 + name_length].decode("ascii"), data[at + 1 + name_length :]


def pack_record(record: bytes, tag: str, blob: bytes) -> bytes:
    """The inverse of :func:`unpack_record` for a packed value."""
    name = tag.encode("ascii")
    return b"\x02" + len(record).to_bytes(4, "big") + record + bytes([len(name)]) + name + blob


@attrs.frozen
class Recipe:
    """A recipe as stored."""

    refs: tuple[tuple[str, int], ...]
    levels: tuple[int, ...]
    ends: tuple[int, ...]

    @classmethod
    def of(cls, item: dict[str, Any]) -> Recipe:
        """The recipe of a snapshot item (its current record: ``u`` once updated, else ``rec``)."""
        record = bytes(item["u"]["B"]) if "u" in item else unpack_record(bytes(item["rec"]["B"]))[0]
        refs, levels, ends, *_ = decompress(record)["r"]
        return cls(tuple((str(n), int(p)) for n, p in refs), tuple(levels), tuple(ends))
