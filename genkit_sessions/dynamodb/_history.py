"""Bounded and streamed reads of a session's messages (contract section 7), straight from the stored blobs.

A snapshot's state is a recipe of immutable blobs (``_codec``): the first holds
the messages up to its end, each later one the messages appended since the
previous. So the active messages come in **blocks**, one per blob, oldest
first, and block ``i`` covers messages ``ends[i - 1]`` to ``ends[i]``:

- a **window** (H2) reads the head (its read hint names the leaf's recipe,
  with each blob's message count and message bytes), then, in one
  BatchGetItem, the leaf's item and just the blobs that cover the newest
  messages asked for: two calls, at most the window plus one page;
- a **stream** (H3) reads the snapshot's recipe once, then one blob at a time,
  decoding each alone; blobs never change, so a save landing meanwhile never
  mixes versions, and memory holds one block at a time. The one blob that
  does go is the snapshot's own update blob, when the snapshot changes in
  place: the stream then goes on with the new recipe only where that hands
  out one version's complete history (``_continue``), else ABORTED; a part
  gone with its deleted session is NOT_FOUND, not DATA_LOSS.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import re
import zlib
from typing import Any

import attrs

from genkit_sessions.dynamodb import _keys as keys
from genkit_sessions.dynamodb._calls import PAUSE, Steps, batch_get, get_item
from genkit_sessions.dynamodb._codec import (
    UNKNOWN,
    CorruptData,
    Recipe,
    is_update_blob,
    read_hint,
    stored_messages_steps,
    wire_message,
)
from genkit_sessions.dynamodb._engine import Engine
from genkit_sessions.dynamodb._items import Head
from genkit_sessions.dynamodb._reads import (
    Found,
    ReplacedMeanwhile,
    decode_item,
    decoded_payload_steps,
    inline_blob,
    payload_of,
    read_head,
    ref_keys,
)
from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.types import Message, Messages
from genkit_sessions.model.wire import messages_from_wire
from genkit_sessions.stores.history_rules import message_bytes, window_of
from genkit_sessions.stores.protocol import HistoryPlan, HistoryWindow

__all__ = ["Cursor", "blocks", "next_messages", "plan", "window"]


@attrs.frozen
class _Handle:
    """What a plan needs to fetch its blocks: where the blobs live, and what is already at hand."""

    tenant: str
    session_id: str
    snapshot_id: str
    recipe: Recipe
    item: dict[str, Any] = attrs.field(eq=False)
    cached: Messages | tuple[Message, ...] | None = attrs.field(default=None, eq=False)


def _counts(recipe: Recipe) -> tuple[int, ...]:
    counts, previous = [], 0
    for index, end in enumerate(recipe.ends):
        counts.append(end - (previous if index else 0))
        previous = end
    return tuple(counts)


def _plan_of(engine: Engine, tenant: str, item: dict[str, Any], snapshot_id: str) -> HistoryPlan:
    envelope, recipe = decode_item(engine, item, snapshot_id)
    session_id = envelope.session_id or ""
    hit, state = engine.recall(tenant, snapshot_id, recipe)
    cached = (state.messages or ()) if hit and state is not None else (() if hit else None)
    handle = _Handle(tenant, session_id, snapshot_id, recipe, item, cached)
    return HistoryPlan(snapshot_id, envelope.session_id, _counts(recipe), handle)


def plan(engine: Engine, tenant: str, snapshot_id: str | None, session_id: str | None) -> Steps[HistoryPlan | None]:
    """The blocks of a snapshot's (or a session leaf's) active messages: two GetItems, no blob read."""
    if session_id is not None:
        head = yield from read_head(engine, tenant, session_id)
        if head.item is None or not head.live(engine.now_ms()) or "leaf" not in head.item:
            return None
        snapshot_id = head.item["leaf"]["S"]
        item = yield from get_item(engine.table, keys.snapshot_key(tenant, snapshot_id))
        return None if item is None else _plan_of(engine, tenant, item, snapshot_id)
    assert snapshot_id is not None
    item = yield from get_item(engine.table, keys.snapshot_key(tenant, snapshot_id))
    if item is None:
        return None
    found = _plan_of(engine, tenant, item, snapshot_id)
    head = yield from read_head(engine, tenant, found.handle.session_id)
    return found if head.live(engine.now_ms()) else None


def _messages(engine: Engine, handle: _Handle, refs: range, found: Found) -> Steps[tuple[Message, ...]]:
    """The messages of the blobs ``refs``, each inflated and built in slices (see ``rebuild``)."""
    out: list[Message] = []
    for index in refs:
        payload, plain = yield from decoded_payload_steps(
            engine, handle.tenant, handle.session_id, handle.snapshot_id, handle.recipe.refs[index], found
        )
        if not isinstance(payload, dict):
            raise engine.data_loss(handle.snapshot_id, "blob payload is not an object")
        if "n" in payload:
            continue
        wire = payload.get("m", payload.get("a"))
        if not isinstance(wire, list):
            raise engine.data_loss(handle.snapshot_id, "a message list is not an array")
        try:
            out.extend((yield from stored_messages_steps(wire, plain)))
        except GenkitError as exc:
            raise engine.data_loss(handle.snapshot_id, exc.message) from None
        yield PAUSE
    return tuple(out)


def _fetch(engine: Engine, handle: _Handle, refs: range) -> Steps[Found]:
    own = (handle.item["pk"]["S"], handle.item["sk"]["S"])
    wanted = [k for i in refs for k in ref_keys(handle.tenant, handle.session_id, handle.recipe.refs[i])]
    missing = [k for k in wanted if (k["pk"]["S"], k["sk"]["S"]) != own]
    found: Found = {own: handle.item}
    if missing:
        found.update((yield from batch_get(engine.table, missing)))
    return found


def blocks(engine: Engine, plan: HistoryPlan, start: int, stop: int) -> Steps[tuple[Message, ...]]:
    """The messages of blocks ``start`` to ``stop`` of a plan: one BatchGetItem of just their blobs."""
    handle: _Handle = plan.handle
    start, stop = max(0, start), min(stop, len(plan.blocks))
    if start >= stop:
        return ()
    if handle.cached is not None:
        first = sum(plan.blocks[:start])
        return handle.cached[first : first + sum(plan.blocks[start:stop])]
    found = yield from _fetch(engine, handle, range(start, stop))
    return (yield from _messages(engine, handle, range(start, stop), found))


def _first_block(recipe: Recipe, max_messages: int | None, max_bytes: int | None) -> tuple[int, bool]:
    """The first block a window needs, and whether that is known for sure: enough blocks from the end
    for ``max_messages`` and for ``max_bytes`` (all of them with no bound). A byte bound over blobs
    whose message sizes the recipe does not record (written before it did) starts at the newest page
    and what follows it, or where the recorded sizes run out, and is not sure: the window then reads
    older blocks one by one until the bound is met."""
    counts, first, sure = _counts(recipe), 0, True
    if max_messages is not None:
        covered, index = 0, len(counts)
        while index > 0 and covered < max_messages:
            index -= 1
            covered += counts[index]
        first = index
    if max_bytes is not None:
        covered, index = 0, len(counts)
        sizes = recipe.message_sizes
        while index > first and covered < max_bytes:
            if sizes[index - 1] == UNKNOWN:
                if max_messages is None:  # older blocks may be needed: read the newest page, then see
                    pages = [i for i, level in enumerate(recipe.levels) if level > 0]
                    index, sure = min(index, pages[-1] if pages else 0), False
                else:  # the blocks of the newest max_messages hold every message the window keeps
                    index = first
                break
            index -= 1
            covered += sizes[index]
        first = max(first, index)
    return first, sure


def window(
    engine: Engine, tenant: str, session_id: str, max_messages: int | None, max_bytes: int | None
) -> Steps[HistoryWindow]:
    """H2: GetItem of the head, then one BatchGetItem of the leaf's item and the blobs of the newest
    messages (a third call only when the head's read hint is stale, and more when a byte bound meets
    blobs written before their message sizes were recorded)."""
    head: Head = yield from read_head(engine, tenant, session_id)
    item = head.item
    if item is None or not head.live(engine.now_ms()) or "leaf" not in item:
        return HistoryWindow((), False)
    leaf = item["leaf"]["S"]
    hint = read_hint(item)
    leaf_key = keys.snapshot_key(tenant, leaf)
    wanted = [leaf_key]
    first, sure = 0, True
    if hint is not None and not engine.recall(tenant, leaf, hint)[0]:
        first, sure = _first_block(hint, max_messages, max_bytes)
        wanted += [k for i in range(first, len(hint.refs)) for k in ref_keys(tenant, session_id, hint.refs[i])]
    found = yield from batch_get(engine.table, wanted)
    leaf_item = found.get((leaf_key["pk"]["S"], leaf_key["sk"]["S"]))
    if leaf_item is None:
        return HistoryWindow((), False)
    history = _plan_of(engine, tenant, leaf_item, leaf)
    handle: _Handle = history.handle
    if handle.cached is not None:
        return window_of(handle.cached, max_messages, max_bytes)
    if hint is None or handle.recipe != hint:  # a stale hint: the leaf's own recipe decides
        first, sure = _first_block(handle.recipe, max_messages, max_bytes)
        found.update((yield from _fetch(engine, handle, range(first, len(history.blocks)))))
    messages = yield from _messages(engine, handle, range(first, len(history.blocks)), found)
    if not sure:
        used = sum(map(message_bytes, messages))
        while first > 0 and max_bytes is not None and used < max_bytes:  # the bound may want older blocks
            first -= 1
            older = yield from blocks(engine, history, first, first + 1)
            used += sum(map(message_bytes, older))
            messages = older + messages
    return window_of(messages, max_messages, max_bytes, older_left_out=sum(history.blocks[:first]) > 0)


# --- a stream that holds one stored part at a time --------------------------------------------------


class Cursor:
    """Where a stream is in a plan: the block, the next part of its blob, and the blob's text decoded so
    far but not yet parsed into messages. A large blob is inflated and parsed part by part, so a stream
    holds one part and the messages it hands out, whatever the blob's size. Use each cursor once.

    In a snapshot's update blob (the one blob a change in place replaces) the cursor also counts and
    digests the messages it hands out, so that a stream going on with the snapshot's new version (see
    ``_continue``) can skip them there and check that they are the same."""

    def __init__(self) -> None:
        self.block = 0
        self.part = 0
        self._inflater: Any = None
        self._utf8: Any = None
        self._text = ""
        self._at = 0
        self._in_list = False
        self.block_done = False
        self.handle: _Handle | None = None  # the snapshot's newer version the stream went on with
        self.taken = 0
        self._seen = hashlib.blake2b(digest_size=16)
        self._skip = self._skip_total = 0
        self._expect = b""

    @property
    def tracking(self) -> bool:
        """Whether messages to skip are pending (the block is being read again in a newer version)."""
        return self._skip > 0

    def account(self, wire: list[Any], snapshot_id: str) -> list[Any]:
        """The messages of ``wire`` to hand out: those not handed out before the block was read again,
        each of those checked (ABORTED when they differ)."""
        kept: list[Any] = []
        for value in wire:
            self._seen.update(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
            self.taken += 1
            if self._skip:
                self._skip -= 1
                if not self._skip and self._seen.digest() != self._expect:
                    raise _changed(snapshot_id)
            else:
                kept.append(value)
        return kept

    def next_block(self, snapshot_id: str) -> None:
        if self._skip:  # the newer version's block is shorter than what was handed out of it
            raise _changed(snapshot_id)
        self.block, self.part, self._inflater, self.taken = self.block + 1, 0, None, 0
        self._seen = hashlib.blake2b(digest_size=16)

    def restart_block(self) -> None:
        """Read the current block again from its start, skipping what was handed out of it."""
        if not self._skip:
            self._expect, self._skip_total = self._seen.digest(), self.taken
        self._skip, self.taken, self.part, self._inflater = self._skip_total, 0, 0, None
        self._seen = hashlib.blake2b(digest_size=16)

    def start_block(self) -> None:
        self.part = 0
        self._inflater = zlib.decompressobj()
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._text, self._at, self._in_list, self.block_done = "", 0, False, False

    def feed(self, data: bytes, first: bool, last: bool) -> None:
        if first:
            if data[:1] != b"\x01":
                raise CorruptData("unknown blob format tag")
            data = data[1:]
        try:
            text = self._utf8.decode(self._inflater.decompress(data), final=False)
            if last:
                text += self._utf8.decode(self._inflater.flush(), final=True)
        except (zlib.error, UnicodeDecodeError) as exc:
            raise CorruptData(f"blob does not inflate: {exc}") from None
        self._text = self._text[self._at :] + text
        self._at = 0

    def parse(self, limit: int, complete: bool) -> list[Any]:
        """Up to ``limit`` whole messages (wire JSON) from what is buffered; ``complete``: the blob is all in."""
        found: list[Any] = []
        text = self._text
        if not self._in_list:
            head = _LIST_START.match(text, self._at)
            if head is None or (head.group(2) is None and head.end() == len(text)):
                if complete or len(text) - self._at > 64:
                    raise _NotAList()
                return found  # the payload's first key is not all in yet
            if head.group(1) not in ("m", "a") or head.group(2) is None:
                raise _NotAList()
            self._at, self._in_list = head.end(), True
        while len(found) < limit:
            at = _skip(text, self._at)
            if at < len(text) and text[at] == ",":  # the comma after the last message handed out
                at = _skip(text, at + 1)
            if at < len(text) and text[at] == "]":
                self.block_done = True
                return found
            try:
                value, end = _DECODER.raw_decode(text, at)
            except json.JSONDecodeError:
                if complete:
                    raise CorruptData("a message list is cut short") from None
                return found  # the message goes on in the next part
            found.append(value)
            self._at = end
        return found


class _NotAList(Exception):
    """A payload whose first key is not its message list: decoded whole instead."""


_LIST_START = re.compile(r'\s*\{\s*"([a-z])"\s*:\s*(\[)?')
_DECODER = json.JSONDecoder()


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def next_messages(
    engine: Engine, plan: HistoryPlan, cursor: Cursor | None, limit: int
) -> Steps[tuple[tuple[Message, ...], Cursor | None]]:
    """Up to ``limit`` more messages of a plan, oldest first, and the cursor to continue from (None at
    the end): one stored part (at most 350 KB) per call to DynamoDB, decoded as it arrives.

    A stored part that is gone means the session was deleted meanwhile (NOT_FOUND), the snapshot changed
    in place and replaced its update blob (see :func:`_continue`), or data really is missing (DATA_LOSS)."""
    cursor = cursor or Cursor()
    plan_handle: _Handle = plan.handle
    if plan_handle.cached is not None:  # the store already holds this state: slice it
        first = sum(plan.blocks[: cursor.block]) + cursor.part
        taken = plan_handle.cached[first : first + limit]
        cursor.part += len(taken)
        done = first + len(taken) >= len(plan_handle.cached)
        return taken, (None if done else cursor)
    try:
        return (yield from _next_messages(engine, plan, cursor, limit))
    except GenkitError as exc:
        if exc.status is Status.DATA_LOSS:  # a part gone from a session deleted meanwhile is no data loss
            yield from _check_live(engine, cursor.handle or plan_handle)
        raise


def _next_messages(
    engine: Engine, plan: HistoryPlan, cursor: Cursor, limit: int
) -> Steps[tuple[tuple[Message, ...], Cursor | None]]:
    handle: _Handle = cursor.handle or plan.handle
    out: list[Message] = []
    while len(out) < limit and cursor.block < len(handle.recipe.refs):
        if cursor.part == 0 and cursor._inflater is None:
            cursor.start_block()
        name, count = handle.recipe.refs[cursor.block]
        parts = max(count, 1)
        try:
            wire = cursor.parse(limit - len(out), complete=cursor.part >= parts)
        except _NotAList:
            try:
                wire = yield from _whole_block(engine, handle, cursor.block)
            except ReplacedMeanwhile:
                handle = yield from _continue(engine, plan, handle, cursor)
                continue
            cursor.block_done = True
        except CorruptData as exc:
            raise engine.data_loss(handle.snapshot_id, str(exc)) from None
        wire = [wire_message(value) for value in wire]
        if cursor.tracking or is_update_blob(name):
            wire = cursor.account(wire, plan.snapshot_id)
        try:
            out.extend(messages_from_wire(wire))
        except GenkitError as exc:
            raise engine.data_loss(handle.snapshot_id, exc.message) from None
        if cursor.block_done:
            cursor.next_block(plan.snapshot_id)
            continue
        if len(out) >= limit:
            break
        if cursor.part >= parts:
            raise engine.data_loss(handle.snapshot_id, f"blob {name!r} ends inside its message list")
        try:
            data = yield from _one_part(engine, handle, (name, count), cursor.part)
        except ReplacedMeanwhile:
            handle = yield from _continue(engine, plan, handle, cursor)
            continue
        try:
            cursor.feed(data, first=cursor.part == 0, last=cursor.part == parts - 1)
        except CorruptData as exc:
            raise engine.data_loss(handle.snapshot_id, str(exc)) from None
        cursor.part += 1
    return tuple(out), (cursor if cursor.block < len(handle.recipe.refs) else None)


def _changed(snapshot_id: str) -> GenkitError:
    return GenkitError(
        Status.ABORTED,
        f"snapshot {snapshot_id!r} changed while its history was being streamed, and what was streamed so far "
        "belongs to no version of it; stream it again",
    )


def _deleted(session_id: str) -> GenkitError:
    return GenkitError(
        Status.NOT_FOUND,
        f"session {session_id!r} was deleted while its history was being streamed; the messages handed out "
        "are all that could be read of it",
        reason=Reason.SESSION_NOT_FOUND,
    )


def _check_live(engine: Engine, handle: _Handle) -> Steps[dict[str, Any]]:
    """The item of the snapshot a stream reads, read again with its session's head in one call; NOT_FOUND
    when either is gone (deleted meanwhile)."""
    key = keys.snapshot_key(handle.tenant, handle.snapshot_id)
    head_key = keys.head_key(handle.tenant, handle.session_id)
    found = yield from batch_get(engine.table, [key, head_key])
    item = found.get((key["pk"]["S"], key["sk"]["S"]))
    head = Head.of(found.get((head_key["pk"]["S"], head_key["sk"]["S"])))
    if item is None or not head.live(engine.now_ms()):
        raise _deleted(handle.session_id)
    return item


def _continue(engine: Engine, plan: HistoryPlan, handle: _Handle, cursor: Cursor) -> Steps[_Handle]:
    """The snapshot a stream reads changed in place and replaced the update blob the stream was in:
    read its item again and go on with its new recipe from the same message, when that hands out one
    version's complete history; else ABORTED (NOT_FOUND when the session was deleted meanwhile).

    Blobs never change, so the new version holds what was handed out when its recipe starts with the
    blobs handed out whole and its next messages are those handed out of the update blob (the cursor
    checks them as it reads them again). The caller takes as many messages as the plan holds: that is
    all of the new version when it holds no more, and exactly the version the stream began on when
    every change since only appended messages (the recipe's ``grown_from`` says so)."""
    item = yield from _check_live(engine, handle)
    _, recipe = decode_item(engine, item, handle.snapshot_id)
    began: _Handle = plan.handle
    done = cursor.block
    if recipe.refs[:done] != handle.recipe.refs[:done] or recipe.ends[:done] != handle.recipe.ends[:done]:
        raise _changed(plan.snapshot_id)
    if recipe.ends and recipe.ends[-1] > plan.total and recipe.update_root != began.recipe.update_root:
        raise _changed(plan.snapshot_id)  # the caller would cut the new version short
    if (cursor.taken or cursor.tracking) and len(recipe.refs) <= done:
        raise _changed(plan.snapshot_id)  # the new version ends before what was handed out
    cursor.restart_block()
    cursor.handle = _Handle(handle.tenant, handle.session_id, handle.snapshot_id, recipe, item)
    return cursor.handle


def _one_part(engine: Engine, handle: _Handle, ref: tuple[str, int], part: int) -> Steps[bytes]:
    name, count = ref
    if count == 0:  # packed into its snapshot's item
        key = keys.snapshot_key(handle.tenant, keys.blob_owner(name))
        own = (handle.item["pk"]["S"], handle.item["sk"]["S"]) == (key["pk"]["S"], key["sk"]["S"])
        item = handle.item if own else (yield from get_item(engine.table, key))
        return inline_blob(engine, handle.snapshot_id, name, item)
    item = yield from get_item(engine.table, keys.blob_part_key(handle.tenant, handle.session_id, name, part))
    if item is None or "d" not in item:
        problem = engine.data_loss(handle.snapshot_id, f"blob part {part} of {count} is missing")
        if is_update_blob(name):  # the snapshot changed since the plan was read: its update blob was replaced
            raise ReplacedMeanwhile(problem.status, problem.message)
        raise problem
    return bytes(item["d"]["B"])


def _whole_block(engine: Engine, handle: _Handle, index: int) -> Steps[list[Any]]:
    found = yield from _fetch(engine, handle, range(index, index + 1))
    ref = handle.recipe.refs[index]
    payload = payload_of(engine, handle.tenant, handle.session_id, handle.snapshot_id, ref, found)
    if not isinstance(payload, dict):
        raise engine.data_loss(handle.snapshot_id, "blob payload is not an object")
    wire = payload.get("m", payload.get("a", []))
    if not isinstance(wire, list):
        raise engine.data_loss(handle.snapshot_id, "a message list is not an array")
    return wire
