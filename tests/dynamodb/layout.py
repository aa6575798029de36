"""The stored layout as docs/dynamodb.md documents it, spelled out for tests that read the table through
boto3 (what AWS would store), independently of the store's own code.

Keys: ``pk`` / ``sk`` strings, the separator U+001F. A snapshot item's sort key is ``s``, a head's ``h``;
blob parts start ``b␟``, member pages ``l␟``. A snapshot's ``rec`` is its record, JSON ``{"e": <wire
snapshot without state>, "r": <recipe>}`` either tagged ``0x01`` and zlib-compressed (as written before
seals existed) or sealed (below), or, packed with the blob it wrote, tagged ``0x02``, a 4-byte record
length, the record, a 1-byte tag length, the tag, the blob. A recipe is ``[[[blob name, parts], ...],
[level, ...], [message count after each blob, ...], [compressed size of each blob, ...], [message bytes
each blob adds, ...]]`` (lists missing from recipes written before they existed). A sealed value (a record,
or a head's read hint ``rc``) is tagged ``0x03``, then a 4-byte length, the recipe's refs as bytes, and the
``0x01`` value, whose recipe holds the count of its refs in their place. Each ref is a flag byte (low two
bits: 0 the snapshot is the record's own, or the hint's leaf; 1 a UUID as 16 bytes; 2 text; bit 2: the tag
is text, else its letter and a 6-byte nonce), text as a LEB128 length then UTF-8, then the part count as a
LEB128 number. A snapshot
whose state changed holds its update blob in ``ub`` (a 1-byte tag length, the tag, the blob) when it fits
its item, else in parts; an update blob's tag starts with ``u``. A blob's message list (``m`` or ``a``)
holds a message of a known role and one text part as one string, the role's letter (``u``, ``m``, ``s``,
``t``) then the text, and any other message as its wire JSON.
"""

from __future__ import annotations

import json
import uuid
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


def _number(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        value |= (data[at] & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if data[at - 1] < 0x80:
            return value, at


def _text(data: bytes, at: int) -> tuple[str, int]:
    length, at = _number(data, at)
    return data[at : at + length].decode("utf-8"), at + length


def _refs(data: bytes, owner: str) -> list[list[Any]]:
    refs, at = [], 0
    while at < len(data):
        flags, at = data[at], at + 1
        if flags & 3 == 0:
            snapshot = owner
        elif flags & 3 == 1:
            snapshot, at = str(uuid.UUID(bytes=data[at : at + 16])), at + 16
        else:
            snapshot, at = _text(data, at)
        if flags & 4:
            tag, at = _text(data, at)
        else:
            tag, at = chr(data[at]) + data[at + 1 : at + 7].hex(), at + 7
        parts, at = _number(data, at)
        refs.append([f"{snapshot}{SEP}{tag}", parts])
    return refs


def open_value(data: bytes, leaf: str = "") -> Any:
    """The JSON of a record or of a read hint (of the head whose leaf is ``leaf``), a sealed one's refs put
    back in its recipe as ``[[name, parts], ...]``."""
    if data[:1] == b"\x01":
        return decompress(data)
    assert data[:1] == b"\x03", "not a record or read hint"
    size = int.from_bytes(data[1:5], "big")
    value = decompress(data[5 + size :])
    recipe = value["r"] if isinstance(value, dict) else value
    owner = value["e"]["snapshotId"] if isinstance(value, dict) else leaf
    refs = _refs(data[5 : 5 + size], owner)
    assert recipe[0] == len(refs)
    recipe[0] = refs
    return value


def unpack_record(data: bytes) -> tuple[bytes, str | None, bytes | None]:
    """``(record, tag, blob)`` of a ``rec`` value (tag and blob None for a record alone)."""
    if data[:1] in (b"\x01", b"\x03"):
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
        refs, levels, ends, *_ = open_value(record)["r"]
        return cls(tuple((str(n), int(p)) for n, p in refs), tuple(levels), tuple(ends))
