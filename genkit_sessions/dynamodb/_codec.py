"""Pure helpers of the DynamoDB store: compression, chunking, JSON diffs and the state blob plan.

Nothing here talks to DynamoDB, so every function can be tested (and
property-tested) on its own.

A session state is stored as a *recipe*: an ordered list of immutable blobs
whose payloads, folded from the first to the last, rebuild the state. A
payload is a JSON object with

- ``"n"``: the state is None (resets everything);
- ``"m"``: the full message list (replaces), or ``"a"``: messages to append;
- ``"r"``: the full rest of the state (everything but ``messages``), or
  ``"p"``: a patch (:func:`diff`) to the previous rest;
- ``"h"``: whether the state has a ``messages`` key at all.

In ``"m"`` and ``"a"``, a message of a known role and one text part, nothing
else (most of a chat), is stored as one string: its role's letter, then its
text (:func:`stored_list`); any other message as its wire JSON.

A snapshot normally adds one small *delta* blob to its parent's recipe. Every
``checkpoint_every`` deltas, the trailing deltas are folded into one *page* of
level 1 holding just the messages appended since the previous page plus the
full rest; every two pages of level 1 are folded the same way into a page of
level 2, and pages of level 2 into top pages of about 256 KB. So no message is
written more than four times, every run of ``2 * checkpoint_every`` turns
writes the same fold work, and a recipe stays short: a read of a long chat
fetches its top pages, at most 15 pages of level 2, one of level 1 and
``checkpoint_every - 1`` deltas.
"""

from __future__ import annotations

import codecs
import json
import re
import zlib
from collections.abc import Sequence
from typing import Any

import attrs

from genkit_sessions.dynamodb._calls import PAUSE, Steps, run_pure
from genkit_sessions.dynamodb._keys import SEP
from genkit_sessions.model.frozen_json import strict_equal
from genkit_sessions.model.types import Message, Messages, Role, SessionState, TextPart, slot_setter
from genkit_sessions.model.wire import messages_from_wire, to_wire

__all__ = [
    "seal",
    "unpack_refs",
    "sealed_record",
    "sealed_hint",
    "pack_refs",
    "open_record",
    "open_hint",
    "read_hint",
    "PAGES_EVERY",
    "CorruptData",
    "Plan",
    "Recipe",
    "apply_patch",
    "compress",
    "compress_steps",
    "decompress",
    "decompress_text",
    "decompress_text_steps",
    "parse_inflated",
    "diff",
    "fold",
    "join_parts",
    "is_update_blob",
    "pack_record",
    "pack_update",
    "plan_state",
    "plan_state_steps",
    "split_parts",
    "stored_list",
    "stored_messages",
    "stored_messages_steps",
    "wire_message",
    "zlib_stream",
    "strict_equal",
    "unpack_record",
    "unpack_update",
]

_FORMAT = b"\x01"
_PACKED = b"\x02"
_SEALED = b"\x03"


class CorruptData(ValueError):
    """Stored bytes that cannot be decoded (the store reports them as DATA_LOSS)."""


# --- compression and chunking ---------------------------------------------------------------


def compress(value: Any) -> bytes:
    """Compact JSON, zlib-compressed, behind a one-byte format tag (:func:`compress_steps` at once)."""
    return run_pure(compress_steps(value))


# How much work one step of a blob's encoding or decoding does before it gives the event loop a turn
# (``PAUSE``; the blocking driver goes straight on), so that no step of the async face holds the loop
# for more than about a millisecond or two, however long the history: zlib inflates and deflates in
# slices of these sizes, JSON is written a slice of list items at a time, and messages are built a
# slice at a time. One JSON document is still parsed in one step (json.loads cannot stop part way):
# a page of the top level is about 750 KB of JSON, a millisecond or two.
INFLATE_SLICE = 64 * 1024
"""Compressed bytes inflated per step (about 200 KB of JSON text)."""
DEFLATE_SLICE = 32 * 1024
"""Bytes of JSON text deflated per step (deflating is about ten times slower than inflating)."""
ITEMS_SLICE = 256
"""List items (messages) written as JSON, or messages built, per step."""


def compress_steps(value: Any) -> Steps[bytes]:
    """Compact JSON, zlib-compressed (level 6), behind a one-byte format tag, in steps that give the
    event loop a turn between slices."""
    text = yield from _dumps_steps(value)
    data = text.encode("utf-8")
    deflate = zlib.compressobj(6)
    out = [_FORMAT]
    for start in range(0, len(data), DEFLATE_SLICE):
        if start:
            yield PAUSE
        out.append(deflate.compress(data[start : start + DEFLATE_SLICE]))
    out.append(deflate.flush())
    return b"".join(out)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _dumps_steps(value: Any) -> Steps[str]:
    """``json.dumps`` as :func:`compress` calls it, the same text, with a long list (the value, or one of
    its values when it is an object, as a blob's message list is) written a slice of items at a time."""
    if not isinstance(value, dict) or any(type(key) is not str for key in value):
        return (yield from _list_steps(value))
    pieces = []
    for key, item in value.items():
        text = yield from _list_steps(item)
        pieces.append(f"{_dumps(key)}:{text}")
    return "{" + ",".join(pieces) + "}"


def _list_steps(value: Any) -> Steps[str]:
    if not isinstance(value, list) or len(value) <= ITEMS_SLICE:
        return _dumps(value)
    pieces = []
    for start in range(0, len(value), ITEMS_SLICE):
        if start:
            yield PAUSE
        pieces.append(_dumps(value[start : start + ITEMS_SLICE])[1:-1])
    return "[" + ",".join(pieces) + "]"


def decompress(data: bytes) -> Any:
    """Invert :func:`compress`; raise :class:`CorruptData` for anything else."""
    if not data or data[:1] != _FORMAT:
        raise CorruptData("unknown blob format tag")
    try:
        return json.loads(zlib.decompress(data[1:]).decode("utf-8"))
    except (zlib.error, UnicodeDecodeError, ValueError) as exc:
        raise CorruptData(f"blob does not decompress to JSON: {exc}") from None


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
"""The only way a string decoded from UTF-8 JSON can hold a surrogate: an escape (strict UTF-8 has none)."""


def _no_surrogate_escape(text: str) -> bool:
    """Whether JSON text holds no surrogate escape. Most histories hold no backslash at all (no quote, no
    control character in their text), which one scan for the character tells, 30 times faster than the
    pattern's scan."""
    return "\\" not in text or _SURROGATE_ESCAPE.search(text) is None


def decompress_text(data: bytes) -> tuple[Any, bool]:
    """:func:`decompress`, and whether the JSON text holds no surrogate escape, so that no string in the
    value can hold a lone surrogate (the one thing a text check refuses): :func:`decompress_text_steps`
    at once."""
    return run_pure(decompress_text_steps(data))


def decompress_text_steps(data: bytes) -> Steps[tuple[Any, bool]]:
    """:func:`decompress_text` in steps (raising :class:`CorruptData` for anything :func:`compress` did
    not write): each inflates and decodes a slice (text with a character
    beyond ASCII decodes at a few hundred MB/s, so decoding a whole page at once takes milliseconds),
    then the JSON is parsed in a step of its own."""
    if not data or data[:1] != _FORMAT:
        raise CorruptData("unknown blob format tag")
    inflate = zlib.decompressobj()
    utf8 = _UTF8()
    view = memoryview(data)
    pieces: list[str] = []
    try:
        for start in range(1, len(data), INFLATE_SLICE):
            if start > 1:
                yield PAUSE
            pieces.append(utf8.decode(inflate.decompress(view[start : start + INFLATE_SLICE])))
            if inflate.eof:
                break
        if not inflate.eof:
            raise zlib.error("incomplete or truncated stream")
        pieces.append(utf8.decode(b"", final=True))
        text = "".join(pieces)
        yield PAUSE
        return json.loads(text), _no_surrogate_escape(text)
    except (zlib.error, UnicodeDecodeError, ValueError) as exc:
        raise CorruptData(f"blob does not decompress to JSON: {exc}") from None


def parse_inflated(raw: bytes) -> tuple[Any, bool]:
    """A blob's payload from its inflated bytes (see :class:`~._calls.Inflating`), and whether its text
    holds no surrogate escape, as :func:`decompress_text` returns them; :class:`CorruptData` otherwise."""
    try:
        text = raw.decode("utf-8")
        return json.loads(text), _no_surrogate_escape(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise CorruptData(f"blob does not decompress to JSON: {exc}") from None


def zlib_stream(data: bytes) -> bytes:
    """A blob's zlib stream, after its format tag; :class:`CorruptData` for a tag :func:`compress` never wrote."""
    if not data or data[:1] != _FORMAT:
        raise CorruptData("unknown blob format tag")
    return data[1:]


_UTF8 = codecs.getincrementaldecoder("utf-8")


def _maker(prototype: Any, field: str) -> Any:
    """Copies of a checked prototype with one field changed, made without running the checks again
    (as ``replace_checked`` does), each slot set through its own descriptor (a C call, no lookup by
    name: less than half the cost of ``object.__setattr__``)."""
    cls = type(prototype)
    setters = {name: slot_setter(cls, name) for name in (f.name for f in attrs.fields(cls))}
    fixed = tuple((set_slot, getattr(prototype, name)) for name, set_slot in setters.items() if name != field)
    new, put = object.__new__, setters[field]
    if len(fixed) == 3:  # a part's and a message's shape: the loop unrolled (an eighth less per message)
        (set1, value1), (set2, value2), (set3, value3) = fixed

        def make_of_four(value: Any) -> Any:
            copy = new(cls)
            put(copy, value)
            set1(copy, value1)
            set2(copy, value2)
            set3(copy, value3)
            return copy

        return make_of_four

    def make(value: Any) -> Any:
        copy = new(cls)
        put(copy, value)
        for set_slot, default in fixed:
            set_slot(copy, default)
        return copy

    return make


_TEXT = _maker(TextPart(""), "text")
_MESSAGES = {role.value: _maker(Message(role, ()), "content") for role in Role}

_LETTERS = {Role.USER.value: "u", Role.MODEL.value: "m", Role.SYSTEM.value: "s", Role.TOOL.value: "t"}
"""The letter that stands for a role in a message stored as a string (see :func:`stored_list`)."""
_ROLE_OF = {letter: role for role, letter in _LETTERS.items()}
_BY_LETTER = {letter: _MESSAGES[role] for letter, role in _ROLE_OF.items()}


def stored_list(wire: list[Any]) -> list[Any]:
    """A message list (wire JSON) as a blob stores it: a message of a known role and one text part,
    nothing else (most of a chat), as one string, its role's letter and then its text; any other message
    as its wire JSON. A string is one object where the wire JSON of a message is three containers, so
    ``json.loads`` of a long history builds a third of the objects and takes half the time (the
    collector has nothing of it to trace), and the message is built from the string and its letter
    alone. :func:`wire_message` turns an entry back into wire JSON."""
    out: list[Any] = []
    append, letters = out.append, _LETTERS
    for data in wire:
        if type(data) is dict and len(data) == 2:
            role, content = data.get("role"), data.get("content")
            letter = letters.get(role) if type(role) is str else None
            if letter is not None and type(content) is list and len(content) == 1:
                part = content[0]
                if type(part) is dict and len(part) == 1 and type(part.get("text")) is str:
                    append(letter + part["text"])
                    continue
        append(data)
    return out


def wire_message(value: Any) -> Any:
    """One entry of a stored message list (see :func:`stored_list`) as wire JSON: a string of a known
    role's letter and a text as that message; anything else as it is, for the wire decoder to judge."""
    if type(value) is str and value[:1] in _ROLE_OF:
        return {"role": _ROLE_OF[value[:1]], "content": [{"text": value[1:]}]}
    return value


def stored_messages(wire: list[Any], plain_text: bool) -> tuple[Message, ...]:
    """Messages a store rebuilds from one of its own blobs' message lists (:func:`stored_list`): as
    ``messages_from_wire`` does with each entry's :func:`wire_message`, but a message
    of a known role and text parts only (most of a chat) is made from checked prototypes without running
    every field check again, when ``plain_text`` says no string in the blob can be ill-formed (see
    :func:`decompress_text`): a text part's only check is that its text is a string of valid Unicode.
    Anything else goes through the wire decoder, with its errors."""
    if not plain_text:
        return messages_from_wire([wire_message(value) for value in wire])
    out: list[Message] = []
    append, text, messages, by_letter = out.append, _TEXT, _MESSAGES, _BY_LETTER
    for data in wire:
        if type(data) is str:  # a message of one text part, stored as its role's letter and its text
            make = by_letter.get(data[:1])
            if make is not None:
                append(make((text(data[1:]),)))
                continue
        elif type(data) is dict and len(data) == 2:
            role, content = data.get("role"), data.get("content")
            make = messages.get(role) if type(role) is str else None
            if make is not None and type(content) is list:
                if len(content) == 1:  # most messages: one text part
                    part = content[0]
                    if type(part) is dict and len(part) == 1 and type(part.get("text")) is str:
                        append(make((text(part["text"]),)))
                        continue
                parts = []
                for part in content:
                    if type(part) is not dict or len(part) != 1 or type(part.get("text")) is not str:
                        break
                    parts.append(text(part["text"]))
                else:
                    append(make(tuple(parts)))
                    continue
        append(messages_from_wire([data])[0])
    return tuple(out)


def stored_messages_steps(wire: list[Any], plain_text: bool) -> Steps[tuple[Message, ...]]:
    """:func:`stored_messages`, a slice of messages at a time with a turn for the event loop between."""
    if len(wire) <= ITEMS_SLICE:
        return stored_messages(wire, plain_text)
    out: list[Message] = []
    for start in range(0, len(wire), ITEMS_SLICE):
        if start:
            yield PAUSE
        out.extend(stored_messages(wire[start : start + ITEMS_SLICE], plain_text))
    return tuple(out)


def pack_record(record: bytes, tag: str, blob: bytes) -> bytes:
    """A snapshot's record and the small blob it wrote, as one attribute value.

    ``record`` and ``blob`` are :func:`compress` output; ``tag`` names the blob
    (ASCII, under 256 bytes). A record alone is stored as it is.
    """
    name = tag.encode("ascii")
    return _PACKED + len(record).to_bytes(4, "big") + record + bytes([len(name)]) + name + blob


def unpack_record(data: bytes) -> tuple[bytes, str | None, bytes | None]:
    """Invert :func:`pack_record`: ``(record, tag, blob)``, or ``(record, None, None)`` for a record alone."""
    if data[:1] in (_FORMAT, _SEALED):
        return data, None, None
    if data[:1] != _PACKED or len(data) < 6:
        raise CorruptData("unknown record format tag")
    size = int.from_bytes(data[1:5], "big")
    at = 5 + size
    if len(data) < at + 1 or len(data) < at + 1 + data[at]:
        raise CorruptData("a packed record is cut short")
    record, name = data[5:at], data[at + 1 : at + 1 + data[at]]
    try:
        tag = name.decode("ascii")
    except UnicodeDecodeError:
        raise CorruptData("a packed record's blob tag is not ASCII") from None
    return record, tag, data[at + 1 + len(name) :]


def pack_update(tag: str, blob: bytes) -> bytes:
    """A snapshot's update blob as its item stores it (``ub``): the tag (ASCII, under 256 bytes), then the blob."""
    name = tag.encode("ascii")
    return bytes([len(name)]) + name + blob


def unpack_update(data: bytes) -> tuple[str, bytes]:
    """Invert :func:`pack_update`: ``(tag, blob)``."""
    if not data or len(data) < 1 + data[0]:
        raise CorruptData("an update blob is cut short")
    try:
        tag = data[1 : 1 + data[0]].decode("ascii")
    except UnicodeDecodeError:
        raise CorruptData("an update blob's tag is not ASCII") from None
    return tag, data[1 + data[0] :]


def split_parts(data: bytes, size: int) -> list[bytes]:
    """Cut ``data`` into parts of at most ``size`` bytes (one empty part for empty data)."""
    if size <= 0:
        raise ValueError("part size must be positive")
    return [data[i : i + size] for i in range(0, len(data), size)] or [b""]


def join_parts(parts: Sequence[bytes]) -> bytes:
    """Invert :func:`split_parts`."""
    return b"".join(parts)


# --- JSON equality and diffs ----------------------------------------------------------------


def diff(old: Any, new: Any) -> list[list[Any]]:
    """A patch turning ``old`` into ``new``: ops ``["s", path, value]`` (set), ``["d", path]``
    (delete key) and ``["+", path, items]`` (append to a list that grew)."""
    ops: list[list[Any]] = []
    _diff(old, new, [], ops)
    return ops


def _diff(old: Any, new: Any, path: list[Any], ops: list[list[Any]]) -> None:
    if strict_equal(old, new):
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key not in new:
                ops.append(["d", [*path, key]])
        for key, value in new.items():
            if key in old:
                _diff(old[key], value, [*path, key], ops)
            else:
                ops.append(["s", [*path, key], value])
        return
    if isinstance(old, list) and isinstance(new, list) and len(new) > len(old) and strict_equal(old, new[: len(old)]):
        ops.append(["+", path, new[len(old) :]])
        return
    ops.append(["s", path, new])


def apply_patch(doc: Any, ops: Sequence[Any]) -> Any:
    """Apply a :func:`diff` patch, copying only what it changes (``doc`` is never modified)."""
    for op in ops:
        if not isinstance(op, list) or len(op) < 2 or not isinstance(op[1], list):
            raise CorruptData(f"malformed patch op {op!r}")
        doc = _apply(doc, op[0], op[1], op[2] if len(op) > 2 else None, 0)
    return doc


def _apply(doc: Any, kind: Any, path: list[Any], value: Any, depth: int) -> Any:
    if depth == len(path):
        if kind == "s":
            return value
        if kind == "+" and isinstance(doc, list) and isinstance(value, list):
            return doc + value
        raise CorruptData(f"patch op {kind!r} does not apply at {path!r}")
    key = path[depth]
    if not isinstance(doc, dict) or not isinstance(key, str):
        raise CorruptData(f"patch path {path!r} does not match the document")
    copy = dict(doc)
    if kind == "d" and depth == len(path) - 1:
        if key not in copy:
            raise CorruptData(f"patch deletes missing key at {path!r}")
        del copy[key]
        return copy
    if key not in copy and not (kind == "s" and depth == len(path) - 1):
        raise CorruptData(f"patch path {path!r} does not match the document")
    copy[key] = _apply(copy.get(key), kind, path, value, depth + 1)
    return copy


# --- state plans ----------------------------------------------------------------------------


UNKNOWN = -1
"""A blob's message size in a recipe written before message sizes were recorded."""


@attrs.frozen
class Recipe:
    """How to rebuild a state: blob references in fold order, with each blob's level, message count and sizes.

    ``refs`` are ``(name, parts)`` pairs. ``levels`` gives each blob's level:
    0 for a delta, 1 or more for a page (a page of level ``k`` folds the blobs
    of level ``k - 1`` before it). Levels never increase along the recipe.
    ``ends`` gives the message count once each blob is applied, ``sizes`` each
    blob's compressed size in bytes (0 when a recipe written before sizes
    were recorded does not say), and ``message_sizes`` the bytes of the
    messages each blob adds, as a window counts them (``history_rules.message_bytes``;
    :data:`UNKNOWN` for a blob written before they were recorded). Blob names
    carry a random nonce and blobs never change, so a blob's sizes follow from
    its name: two recipes are equal when their refs, levels and ends are,
    whatever sizes each one knows.

    As JSON (:meth:`to_json`): ``[refs, levels, ends, sizes, message_sizes]``, and ``grown_from`` after
    them when set;
    :meth:`from_json` also reads the older ``[refs, levels, ends]`` and
    ``[refs, levels, ends, sizes]``, and an empty ``sizes`` list (a read hint).
    """

    refs: tuple[tuple[str, int], ...] = ()
    levels: tuple[int, ...] = ()
    ends: tuple[int, ...] = ()
    sizes: tuple[int, ...] = attrs.field(default=(), eq=False)
    message_sizes: tuple[int, ...] = attrs.field(default=(), eq=False)
    grown_from: str = attrs.field(default="", eq=False)
    """For a recipe ending in an update blob: the update blob the snapshot's state held before its changes
    in place since then, each of which kept every message it had and appended (empty: none did)."""

    def to_json(self, sealed: bool = False) -> list[Any]:
        """The recipe as JSON; ``sealed``: with the count of its refs in place of the refs, which
        :func:`seal` stores as bytes beside it."""
        data = [
            len(self.refs) if sealed else [list(ref) for ref in self.refs],
            list(self.levels),
            list(self.ends),
            list(self.sizes),
            list(self.message_sizes),
        ]
        return [*data, self.grown_from] if self.grown_from else data

    def hint_json(self, sealed: bool = False) -> list[Any]:
        """What a read needs of the recipe (a session head's read hint): the refs, levels, ends and message
        sizes; only a write plans with the compressed sizes, and it plans from the snapshot's own record."""
        refs: Any = len(self.refs) if sealed else [list(ref) for ref in self.refs]
        return [refs, list(self.levels), list(self.ends), [], list(self.message_sizes)]

    @classmethod
    def from_json(cls, data: Any, refs_of_seal: Sequence[tuple[str, int]] | None = None) -> Recipe:
        """Read :meth:`to_json`'s output (or :meth:`hint_json`'s); ``refs_of_seal``: the refs a seal held,
        for a recipe written ``sealed``."""
        try:
            if not isinstance(data, list) or not 3 <= len(data) <= 6:
                raise ValueError(f"a recipe is a list of 3 to 6 entries, got {type(data).__name__}")
            grown_from = data[5] if len(data) > 5 else ""
            if not isinstance(grown_from, str):
                raise ValueError("the update blob a recipe grew from is not a name")
            refs, levels, ends = data[:3]
            if refs_of_seal is not None:
                if type(refs) is not int or refs != len(refs_of_seal):
                    raise ValueError("a sealed recipe does not count the refs its seal holds")
                refs = refs_of_seal
            elif not isinstance(refs, list):
                raise ValueError("a recipe's refs are not a list")
            sizes: Any = data[3] if len(data) > 3 and data[3] else [0] * len(refs)
            message_sizes: Any = data[4] if len(data) > 4 else [UNKNOWN] * len(refs)
            recipe = cls(
                tuple((str(n), int(p)) for n, p in refs),
                tuple(int(v) for v in levels),
                tuple(int(e) for e in ends),
                tuple(int(z) for z in sizes),
                tuple(int(b) for b in message_sizes),
                grown_from,
            )
        except (TypeError, ValueError) as exc:
            raise CorruptData(f"malformed recipe: {exc}") from None
        if not (
            len(recipe.refs) == len(recipe.levels) == len(recipe.ends) == len(recipe.sizes) == len(recipe.message_sizes)
        ):
            raise CorruptData("malformed recipe: refs, levels, ends and sizes differ in length")
        return recipe

    def prefix(self, count: int) -> Recipe:
        """The first ``count`` blobs of this recipe."""
        return Recipe(
            self.refs[:count],
            self.levels[:count],
            self.ends[:count],
            self.sizes[:count],
            self.message_sizes[:count],
        )

    @property
    def update_root(self) -> str:
        """The update blob this recipe's state grew from by appends only (see ``grown_from``): the last
        blob itself when no change in place since kept its messages; empty when it ends in no update blob."""
        return (self.grown_from or self.refs[-1][0]) if self.ends_in_update else ""

    @property
    def ends_in_update(self) -> bool:
        """The last blob is its snapshot's update blob, rewritten in place by the snapshot's next change,
        so a child must not keep it (see :func:`plan_state`)."""
        return bool(self.refs) and is_update_blob(self.refs[-1][0])


UPDATE_TAG = "u"
"""How the tag of a snapshot's update blob starts: the one blob a store replaces (removing the one before)
on each change of the snapshot's state; every other blob is immutable."""


def is_update_blob(name: str) -> bool:
    """Whether a blob name is a snapshot's update blob (its tag is :data:`UPDATE_TAG`)."""
    return name.rpartition("\x1f")[2].startswith(UPDATE_TAG)


# --- sealed values: a recipe's blob references as bytes ---------------------------------------

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_NONCE_TAG = re.compile(r"[a-z][0-9a-f]{12}")
_OWNER, _UUID_FORM, _TEXT_FORM = 0, 1, 2  # how a reference names its snapshot (the flag byte's low bits)
_TEXT_TAG = 4  # the flag bit of a tag spelled out (else: its letter and its 6-byte nonce)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def pack_refs(refs: Sequence[tuple[str, int]], owner: str) -> bytes:
    """Blob references as bytes, about 25 a reference where their JSON takes about 33 compressed (random
    ids do not compress): a flag byte; the snapshot, as nothing when it is ``owner`` (the snapshot whose
    record, or the leaf whose read hint, holds the recipe), a UUID's 16 bytes, or its UTF-8 text; the
    tag, as its letter and 6-byte nonce, or its text; then the part count. Text is length-prefixed."""
    out = bytearray()
    for name, parts in refs:
        snapshot, _, tag = name.rpartition(SEP)
        if snapshot == owner:
            flags, body = _OWNER, b""
        elif _UUID.fullmatch(snapshot):
            flags, body = _UUID_FORM, bytes.fromhex(snapshot.replace("-", ""))
        else:
            text = snapshot.encode("utf-8")
            flags, body = _TEXT_FORM, _varint(len(text)) + text
        if _NONCE_TAG.fullmatch(tag):
            body += tag[:1].encode("ascii") + bytes.fromhex(tag[1:])
        else:
            text = tag.encode("utf-8")
            flags, body = flags | _TEXT_TAG, body + _varint(len(text)) + text
        out += bytes([flags]) + body + _varint(parts)
    return bytes(out)


def unpack_refs(data: bytes, owner: str) -> tuple[tuple[str, int], ...]:
    """Invert :func:`pack_refs`; raise :class:`CorruptData` for bytes it cannot have written."""
    refs: list[tuple[str, int]] = []
    at = 0

    def take(count: int) -> bytes:
        nonlocal at
        if at + count > len(data):
            raise CorruptData("sealed blob references are cut short")
        at += count
        return data[at - count : at]

    def varint() -> int:
        value = shift = 0
        while True:
            byte = take(1)[0]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
            if shift > 63:
                raise CorruptData("a sealed blob reference holds an overlong number")

    def text() -> str:
        try:
            return take(varint()).decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptData("a sealed blob reference holds text that is not UTF-8") from None

    while at < len(data):
        flags = take(1)[0]
        form = flags & 3
        if flags & ~(3 | _TEXT_TAG) or form > _TEXT_FORM:
            raise CorruptData(f"a sealed blob reference has unknown flags {flags:#x}")
        if form == _OWNER:
            snapshot = owner
        elif form == _UUID_FORM:
            hexed = take(16).hex()
            snapshot = f"{hexed[:8]}-{hexed[8:12]}-{hexed[12:16]}-{hexed[16:20]}-{hexed[20:]}"
        else:
            snapshot = text()
        if flags & _TEXT_TAG:
            tag = text()
        else:
            letter = take(1)
            if not b"a" <= letter <= b"z":
                raise CorruptData("a sealed blob reference's tag does not start with a letter")
            tag = letter.decode("ascii") + take(6).hex()
        refs.append((f"{snapshot}{SEP}{tag}", varint()))
    return tuple(refs)


def seal(value: Any, recipe: Recipe, owner: str) -> bytes:
    """``value`` (JSON holding ``recipe.to_json(sealed=True)`` or ``recipe.hint_json(sealed=True)``) with
    the recipe's refs as bytes beside it (:func:`pack_refs`): a format tag, a 4-byte length, the refs,
    then :func:`compress` output. A snapshot's record and a head's read hint are stored this way."""
    refs = pack_refs(recipe.refs, owner)
    return _SEALED + len(refs).to_bytes(4, "big") + refs + compress(value)


def _opened(data: bytes) -> tuple[Any, bytes | None]:
    """The JSON value of :func:`seal` or :func:`compress` output, and the packed refs (None: not sealed)."""
    if data[:1] != _SEALED:
        return decompress(data), None
    size = int.from_bytes(data[1:5], "big") if len(data) >= 5 else -1
    if size < 0 or len(data) < 5 + size:
        raise CorruptData("a sealed value is cut short")
    return decompress(data[5 + size :]), data[5 : 5 + size]


def open_record(data: bytes) -> tuple[Any, Recipe]:
    """A snapshot's record (``rec`` unpacked, or ``u``): its envelope's wire JSON and its recipe. Sealed,
    its refs name the snapshot itself by the envelope's ``snapshotId``; written before seals existed, its
    recipe holds its refs as JSON."""
    record, packed = _opened(data)
    try:
        envelope = record["e"]
        owner = envelope["snapshotId"] if packed is not None else ""
        if not isinstance(owner, str):
            raise TypeError("snapshotId is not a string")
        return envelope, Recipe.from_json(record["r"], None if packed is None else unpack_refs(packed, owner))
    except (KeyError, TypeError) as exc:
        raise CorruptData(f"malformed record: {exc!r}") from None


def open_hint(data: bytes, leaf: str) -> Recipe:
    """A session head's read hint (``rc``) of its leaf ``leaf``."""
    hint, packed = _opened(data)
    return Recipe.from_json(hint, None if packed is None else unpack_refs(packed, leaf))


def read_hint(head: dict[str, Any]) -> Recipe | None:
    """The read hint of a head item that names a leaf; None when it has none, or one that does not decode
    (the read then fetches the leaf's own record first)."""
    if "rc" not in head:
        return None
    try:
        return open_hint(bytes(head["rc"]["B"]), head["leaf"]["S"])
    except CorruptData:
        return None


def sealed_record(envelope: Any, recipe: Recipe) -> bytes:
    """A snapshot's record as :func:`open_record` reads it; ``envelope``: the wire JSON of the snapshot
    without its state, whose ``snapshotId`` its own blob references leave out."""
    return seal({"e": envelope, "r": recipe.to_json(sealed=True)}, recipe, envelope["snapshotId"])


def sealed_hint(recipe: Recipe, leaf: str) -> bytes:
    """The read hint of ``leaf``'s recipe, as :func:`open_hint` reads it."""
    return seal(recipe.hint_json(sealed=True), recipe, leaf)


@attrs.frozen
class Plan:
    """What one write stores: a payload at ``level`` (0: a delta; more: a page) and the refs it keeps."""

    payload: dict[str, Any]
    level: int
    keep: Recipe
    end: int
    message_size: int = 0
    """The bytes of the messages the payload adds (``history_rules.message_bytes`` summed)."""
    grown_from: str = ""
    """For a change in place that kept every message and appended: the recipe's ``grown_from``."""

    @property
    def is_page(self) -> bool:
        return self.level > 0

    def recipe(self, name: str, parts: int, size: int = 0) -> Recipe:
        """The recipe once the payload is stored under ``name`` in ``parts`` parts, ``size`` bytes compressed."""
        keep = self.keep
        return Recipe(
            (*keep.refs, (name, parts)),
            (*keep.levels, self.level),
            (*keep.ends, self.end),
            (*keep.sizes, size),
            (*keep.message_sizes, self.message_size),
            self.grown_from,
        )


def _rest(state: SessionState) -> Any:
    return to_wire(attrs.evolve(state, messages=None))


def _same_message(a: Message, b: Message) -> bool:
    return a is b or strict_equal(to_wire(a), to_wire(b))


def _appended(old: Sequence[Message], new: Sequence[Message]) -> Sequence[Message] | None:
    """The messages ``new`` adds after ``old``, or None when ``old`` is not a prefix of ``new``."""
    if len(new) < len(old):
        return None
    if isinstance(old, Messages) and isinstance(new, Messages) and new.extends(old):
        return new[len(old) :]  # a turn that extended its parent's messages (the common case): nothing to compare
    # Walk backwards: a changed message is likeliest near the end.
    for i in range(len(old) - 1, -1, -1):
        if not _same_message(old[i], new[i]):
            return None
    return new[len(old) :]


def _carry(
    levels: tuple[int, ...], sizes: tuple[int, ...], every: int, top: int, top_bytes: int, top_count: int
) -> tuple[int, int]:
    """Where a new blob goes: ``(level, kept)``, keeping the first ``kept`` refs.

    Like adding one in a mixed radix: a new delta that would make ``every`` in
    a row becomes a page of level 1 replacing them; a page of level 1 that
    would make :data:`PAGES_EVERY` in a row becomes a page of level 2, and so on.
    The last step, into the top level, is taken by size instead: when the
    pages of level ``top - 1`` in a row hold at least ``top_bytes`` compressed
    (or would be ``top_count``), so top pages are few and large (about
    ``top_bytes`` each) whatever the size of a turn.
    """
    kept, level = len(levels), 0
    while level < top:
        run = 0
        while run < kept and levels[kept - 1 - run] == level:
            run += 1
        if level < top - 1:
            if run + 1 < (every if level == 0 else PAGES_EVERY):
                break
        elif sum(sizes[kept - run : kept]) < top_bytes and run + 1 < top_count:
            break
        kept -= run
        level += 1
    return level, kept


PAGES_EVERY = 2
"""How many pages of level 1 (or more, below the top) a page of the next level folds. Two, so that a page of
level 2 holds ``2 * checkpoint_every`` turns and every run of that many turns, wherever it starts, writes the
same fold work: no turn writes a page of 25 turns at once."""
TOP_BYTES = 256 * 1024
"""The compressed size from which pages are folded into one page of the top level."""
TOP_COUNT = 16
"""At most this many pages of the level below the top in a row (when they are small)."""


def plan_state(*args: Any, **kwargs: Any) -> Plan:
    """:func:`plan_state_steps` (the same arguments) run to its end at once."""
    return run_pure(plan_state_steps(*args, **kwargs))


def plan_state_steps(
    previous: SessionState | None,
    previous_recipe: Recipe | None,
    state: SessionState | None,
    checkpoint_every: int,
    max_pages: int = 48,
    levels: int = 3,
    top_bytes: int = TOP_BYTES,
    top_count: int = TOP_COUNT,
) -> Steps[Plan]:
    """Plan the blob that stores ``state`` on top of ``previous`` (its parent's, or its own older
    state), whose recipe is ``previous_recipe`` (None: start from scratch).

    Pages have up to ``levels`` levels, so a message is written at most
    ``levels + 1`` times; a recipe holds at most ``checkpoint_every - 1`` blobs
    per level below ``levels - 1``, fewer than ``top_count`` at ``levels - 1``,
    and top pages of about ``top_bytes`` each. When the top level already holds
    ``max_pages`` pages, the page rewrites the whole state, so a read never
    needs more than a bounded number of items. Messages are turned into wire
    JSON a slice at a time, with a turn for the event loop between (a page of
    the top level folds hundreds of them).

    A recipe that ends in an update blob (rewritten by the snapshot's next
    change) is not kept whole: the new blob replaces that blob, holding what it
    held plus what changed since, with the full rest of the state, so no
    other snapshot's recipe ever names an update blob.
    """
    if state is None:
        return Plan({"n": 1}, 0, Recipe(), 0)
    messages = state.message_list
    has = state.messages is not None
    rest = _rest(state)
    if previous is None or previous_recipe is None or not previous_recipe.refs:
        return (yield from _full(messages, rest, has, 0))
    folded = previous_recipe.ends_in_update
    base = previous_recipe.prefix(len(previous_recipe.refs) - 1) if folded else previous_recipe
    previous_messages: Sequence[Message] = previous.message_list
    if folded:
        cut = base.ends[-1] if base.refs else 0
        if cut > len(previous_messages):
            return (yield from _full(messages, rest, has, 0))
        previous_messages = previous_messages[:cut]
    added = _appended(previous_messages, messages)
    if added is None or not base.refs:
        return (yield from _full(messages, rest, has, 0))
    level, kept = _carry(base.levels, base.sizes, max(checkpoint_every, 2), levels, top_bytes, top_count)
    wire = yield from _wire_steps(added)
    size = _list_bytes(wire)
    if level == 0:
        if folded:  # a change in place: did it keep every message the update blob held?
            kept_all = _appended(previous.message_list[cut:], messages[cut:]) is not None
            grown = previous_recipe.update_root if kept_all else ""
            return Plan({"a": stored_list(wire), "r": rest, "h": has}, 0, base, len(messages), size, grown)
        payload = {"a": stored_list(wire), "p": diff(_rest(previous), rest), "h": has}
        return Plan(payload, 0, base, len(messages), size)
    keep = base.prefix(kept)
    if not kept or keep.levels.count(levels) >= max_pages:
        return (yield from _full(messages, rest, has, level))
    folded_sizes = base.message_sizes[kept:]
    since = (yield from _wire_steps(messages[keep.ends[-1] : len(messages) - len(added)])) + wire
    if UNKNOWN in folded_sizes or len(folded_sizes) != len(base.refs) - kept:
        yield PAUSE
        size = yield from _list_bytes_steps(since)
    else:  # the blobs this page folds already know their messages' sizes
        size += sum(folded_sizes)
    stored = yield from _stored_steps(since)
    return Plan({"a": stored, "r": rest, "h": has}, level, keep, len(messages), size)


def _full(messages: Sequence[Message], rest: Any, has: bool, level: int) -> Steps[Plan]:
    wire = yield from _wire_steps(messages)
    yield PAUSE
    size = yield from _list_bytes_steps(wire)
    stored = yield from _stored_steps(wire)
    return Plan({"m": stored, "r": rest, "h": has}, level, Recipe(), len(messages), size)


def _wire_steps(messages: Sequence[Message]) -> Steps[list[Any]]:
    """The messages' wire JSON, a slice at a time."""
    wire: list[Any] = []
    for start in range(0, len(messages), ITEMS_SLICE):
        if start:
            yield PAUSE
        wire.extend(to_wire(m) for m in messages[start : start + ITEMS_SLICE])
    return wire


def _stored_steps(wire: list[Any]) -> Steps[list[Any]]:
    """:func:`stored_list`, a slice of the list at a time."""
    stored: list[Any] = []
    for start in range(0, len(wire), ITEMS_SLICE):
        if start:
            yield PAUSE
        stored.extend(stored_list(wire[start : start + ITEMS_SLICE]))
    return stored


def _list_bytes_steps(wire: list[Any]) -> Steps[int]:
    """:func:`_list_bytes`, a slice of the list at a time (the sum is the same: it adds message by message)."""
    total = 0
    for start in range(0, len(wire), ITEMS_SLICE):
        if start:
            yield PAUSE
        total += _list_bytes(wire[start : start + ITEMS_SLICE])
    return total


def _list_bytes(wire: list[Any]) -> int:
    """The sum of each message's compact wire JSON in UTF-8 (``history_rules.message_bytes``), from one
    dump of the list: the list's text less its brackets and commas."""
    if not wire:
        return 0
    return len(json.dumps(wire, separators=(",", ":"), ensure_ascii=False).encode("utf-8")) - len(wire) - 1


def fold(payloads: Sequence[Any], decode_messages: Any) -> SessionState | None:
    """Rebuild a state from its recipe's payloads, in order.

    ``decode_messages(index, wire_list)`` turns payload ``index``'s message list
    into model messages (the store memoizes it per blob).
    """
    from genkit_sessions.model.wire import from_wire

    if not payloads:
        raise CorruptData("empty recipe")
    messages: list[Message] = []
    rest: Any = None
    has = False
    none = False
    for index, payload in enumerate(payloads):
        if not isinstance(payload, dict):
            raise CorruptData("blob payload is not an object")
        if "n" in payload:
            messages, rest, has, none = [], None, False, True
            continue
        none = False
        if "m" in payload:
            messages = list(decode_messages(index, payload["m"]))
        elif "a" in payload:
            messages.extend(decode_messages(index, payload["a"]))
        else:
            raise CorruptData("blob payload holds no messages entry")
        if "r" in payload:
            rest = payload["r"]
        elif "p" in payload:
            if rest is None:
                raise CorruptData("a patch blob has nothing to patch")
            rest = apply_patch(rest, payload["p"])
        else:
            raise CorruptData("blob payload holds no rest entry")
        has = bool(payload.get("h"))
    if none:
        return None
    if not isinstance(rest, dict):
        raise CorruptData("the rebuilt state is not an object")
    state = from_wire(SessionState, rest)
    return attrs.evolve(state, messages=tuple(messages) if has else None)
