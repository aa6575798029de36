"""The session service (contract section 6): sessions as records with metadata and expiry, compare-and-set
appends, compaction that keeps the full history, and forks, over any store with the record protocol.

Every rule is written once, as a generator that yields the store calls it needs
(:class:`_Call`); :class:`SessionService` performs them on a blocking store,
:class:`AsyncSessionService` awaits them on an async one.

How history is kept. A snapshot's ``state.messages`` is its **active view**,
what the model sees. A compaction writes a child whose active view is the
summary followed by the kept tail; the summary's first message carries
``metadata.compaction = {"snapshotId": P, "covered": n}``, naming the
snapshot it compacted and how many of its active messages the summary
replaced. The **full history** of a snapshot is therefore the full history
before ``P``'s active view, then ``P``'s first ``n`` active messages, then the
snapshot's own active view: a read per compaction, never a copy. A fork of a
compacted snapshot writes that history once, as an archive snapshot the fork's
first message points at, so deleting the source never changes the fork.
"""

from __future__ import annotations

import collections
import contextlib
import inspect
import os
import threading
from collections.abc import AsyncIterator, Callable, Generator, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

import attrs

from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.clock import Clock, utc_now
from genkit_sessions.model.frozen_json import FrozenDict, thaw
from genkit_sessions.model.ids import mint_id, validate_id
from genkit_sessions.model.types import (
    EMPTY_MESSAGES,
    Message,
    Messages,
    Role,
    SessionSnapshot,
    SessionState,
    SnapshotStatus,
    replace_checked,
)
from genkit_sessions.service.compaction import (
    Compaction,
    CompactionStrategy,
    CompactionTrigger,
    safe_boundary,
)
from genkit_sessions.stores.protocol import (
    CallOptions,
    Context,
    HistoryPlan,
    HistoryWindow,
    SessionPage,
    SessionRecord,
    SupportsAsyncSessions,
    SupportsSessions,
)

__all__ = ["AppendResult", "AsyncSessionService", "CompactionResult", "SessionService"]

T = TypeVar("T")

EVENT_ID = "eventId"
COMPACTION = "compaction"
_APPEND_ATTEMPTS = 10
_CACHE_SIZE = 1024


@attrs.frozen
class AppendResult:
    """V9: whether the append landed, the session's version after it (or the current one when it did
    not), and the snapshot it wrote (the leaf, for a retried append that was a no-op; None when refused)."""

    ok: bool
    version: int
    snapshot: SessionSnapshot | None = None


@attrs.frozen
class CompactionResult:
    """V12: whether a compaction was stored, how many active messages it covered, the summary that
    replaced them, and how many active messages it kept verbatim."""

    changed: bool
    covered: int = 0
    summary: tuple[Message, ...] = ()
    kept: int = 0


# --- the steps ------------------------------------------------------------------------------


@attrs.frozen
class _Call:
    """A store method the rules need called: its name and arguments."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = attrs.Factory(dict)


@attrs.frozen
class _Compute:
    """A caller-supplied function (trigger, strategy) whose answer may be awaitable on the async face."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()


@attrs.frozen
class _Emit:
    """A chunk of a history stream, handed to the caller of ``iter_history``."""

    messages: tuple[Message, ...]


_Step = _Call | _Compute | _Emit
Steps = Generator[_Step, Any, T]


def _store_call(method: str, *args: Any, **kwargs: Any) -> Steps[Any]:
    return (yield _Call(method, args, kwargs))


class _Rules:
    """The service's rules, store-agnostic; the two faces drive them."""

    def __init__(
        self,
        indexed: frozenset[str],
        clock: Clock,
        max_append_attempts: int,
        can_restore: bool,
        can_create_with: bool = False,
    ) -> None:
        self.indexed = indexed
        self.can_restore = can_restore
        self.can_create_with = can_create_with
        self.clock = clock
        self.max_append_attempts = max_append_attempts
        self._leaves: collections.OrderedDict[tuple[str, str], tuple[int, SessionSnapshot]] = collections.OrderedDict()
        self._lock = threading.Lock()

    # --- the leaf cache: what this service last wrote, so an append on a current version reads nothing

    @staticmethod
    def _key(session_id: str, context: Context) -> tuple[str, str] | None:
        if context is None:
            return (session_id, "")
        try:
            return (session_id, repr(sorted(context.items())))
        except TypeError:
            return None

    def _remember(self, session_id: str, context: Context, version: int, leaf: SessionSnapshot) -> None:
        key = self._key(session_id, context)
        if key is None:
            return
        with self._lock:
            self._leaves[key] = (version, leaf)
            self._leaves.move_to_end(key)
            while len(self._leaves) > _CACHE_SIZE:
                self._leaves.popitem(last=False)

    def _recall(self, session_id: str, context: Context) -> tuple[int, SessionSnapshot] | None:
        key = self._key(session_id, context)
        if key is None:
            return None
        with self._lock:
            return self._leaves.get(key)

    def forget(self, session_id: str, context: Context) -> None:
        """Drop what the cache holds for the session (after a delete, say)."""
        key = self._key(session_id, context)
        if key is not None:
            with self._lock:
                self._leaves.pop(key, None)

    # --- records

    def create(
        self,
        session_id: str | None,
        ttl: timedelta | None,
        sliding: bool,
        metadata: Mapping[str, str] | None,
        context: Context,
    ) -> Steps[SessionRecord]:
        session_id = (
            mint_id() if session_id is None else validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        )
        record: SessionRecord = yield from _store_call(
            "create_session", session_id, metadata=metadata, ttl=ttl, sliding=sliding, context=context
        )
        self.forget(session_id, context)
        return record

    def find_or_create(
        self,
        session_id: str,
        ttl: timedelta | None,
        sliding: bool,
        metadata: Mapping[str, str] | None,
        context: Context,
    ) -> Steps[SessionRecord]:
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        for _ in range(3):
            found: SessionRecord | None = yield from _store_call("get_session_record", session_id, context=context)
            if found is not None:
                return found
            try:
                return (yield from self.create(session_id, ttl, sliding, metadata, context))
            except GenkitError as error:
                if error.reason != Reason.SESSION_EXISTS.value:
                    raise  # another caller created it first: read theirs
        raise GenkitError(
            Status.ABORTED,
            f"session {session_id!r} was created and deleted again three times while find_or_create ran; retry",
        )

    def delete(self, session_id: str, context: Context) -> Steps[bool]:
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        record = yield from _store_call("get_session_record", session_id, context=context)
        yield from _store_call("delete_session", session_id, context=context)  # an expired one's data too
        self.forget(session_id, context)
        return record is not None  # V6 and V7: whether there was a session, and an expired one is none

    def version(self, session_id: str, context: Context) -> Steps[int]:
        record = yield from _store_call("get_session_record", session_id, context=context)
        return record.version if record is not None else 0

    # --- appends

    def _current(self, session_id: str, context: Context) -> Steps[tuple[int, SessionSnapshot | None]]:
        """The session's version and its leaf, read together from the store."""
        found: tuple[SessionRecord | None, SessionSnapshot | None] = yield from _store_call(
            "get_session_leaf", session_id, context=context
        )
        record, leaf = found
        return (record.version if record is not None else 0), leaf

    def append(
        self, session_id: str, messages: Sequence[Message], expected: int | None, context: Context
    ) -> Steps[AppendResult]:
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        if expected is not None:
            CallOptions(expected_version=expected)  # checks it
        batch = _with_event_ids(messages)
        given = {_event_id(m) for m, minted in batch if not minted}
        leaf: SessionSnapshot | None
        retry_ids = len(given) == len(batch) and bool(given)  # every message named: possibly a retried call
        for attempt in range(self.max_append_attempts):
            cached = self._recall(session_id, context) if attempt == 0 else None
            from_cache = cached is not None and (expected is None or cached[0] == expected)
            if cached is not None and from_cache:
                version, leaf = cached
            else:
                version, leaf = yield from self._current(session_id, context)
            if expected is not None and version != expected:
                if retry_ids and leaf is not None:  # V10 before V9: a retry of an append that landed is a no-op
                    seen = yield from self._event_ids(leaf, context)
                    if all(_event_id(m) in seen for m, _ in batch):
                        return AppendResult(True, version, leaf)
                return AppendResult(False, version, None)
            if leaf is not None:
                _require_completed(leaf)
            fresh = [m for m, _ in batch]
            if given and leaf is not None:
                seen = yield from self._event_ids(leaf, context)
                fresh = [m for m in fresh if _event_id(m) not in seen]
                if not fresh:
                    return AppendResult(True, version, leaf)
            snapshot = _child(session_id, leaf, _active(leaf) + tuple(fresh))  # shares the leaf's
            try:
                saved, after = yield from self._write(snapshot, version, context)
            except GenkitError as error:
                conflict = error.reason == Reason.VERSION_CONFLICT.value
                stale = from_cache and (  # a refusal that wrote nothing, of a leaf the cache held: read again
                    error.reason == Reason.SNAPSHOT_NOT_FOUND.value or error.status == Status.FAILED_PRECONDITION
                )
                if not conflict and not stale:
                    raise
                self.forget(session_id, context)
                if conflict and expected is not None:
                    return AppendResult(False, _current_version(error), None)
                continue  # someone else's turn landed first (or the cached leaf is gone): read again
            return AppendResult(True, after, saved)
        raise GenkitError(
            Status.ABORTED,
            f"session {session_id!r}: {self.max_append_attempts} appends in a row lost to concurrent writers; "
            "retry later",
        )

    def _write(self, snapshot: SessionSnapshot, version: int, context: Context) -> Steps[tuple[SessionSnapshot, int]]:
        """Save a new snapshot on the session being at ``version``; the snapshot and the version after."""
        saved: SessionSnapshot | None = yield from _store_call(
            "save_snapshot",
            snapshot.snapshot_id,
            lambda existing: snapshot if existing is None else None,
            options=replace_checked(_NO_OPTIONS, context=context, expected_version=version),  # a version read
        )
        if saved is None:  # a snapshot id minted here already exists: never in practice
            raise GenkitError(Status.INTERNAL, f"snapshot id {snapshot.snapshot_id!r} is taken; retry the call")
        session_id = snapshot.session_id
        assert session_id is not None
        after = version + 1
        if version == 0:  # a session's first snapshot continues from any version its id had before (V8)
            now, leaf = yield from self._current(session_id, context)
            if leaf is None or leaf.snapshot_id != saved.snapshot_id:  # another writer's turn already followed
                self.forget(session_id, context)
                return saved, max(now, after)
            after = now
        self._remember(session_id, context, after, saved)
        return saved, after

    def _write_together(self, record: SessionRecord, snapshots: list[SessionSnapshot], context: Context) -> Steps[None]:
        """Write a new session's first snapshots so that a reader sees all of them or none: one restore,
        which every store that has it lands at once (DynamoDB in one transaction up to 3 MB of items;
        past that its items first and the head last, so readers still see all or none). Each is stamped
        with the session's creation instant, in order. A store without ``restore_snapshots`` gets them
        one version-checked save at a time."""
        self.forget(record.id, context)
        if not self.can_restore:
            version = 0
            for snapshot in snapshots:
                _, version = yield from self._write(snapshot, version, context)
            return
        stamped = [replace_checked(s, created_at=record.created_at, updated_at=record.created_at) for s in snapshots]
        yield from _store_call("restore_snapshots", stamped, context=context)

    # --- history

    def history_before(self, snapshot: SessionSnapshot, context: Context) -> Steps[list[Message]]:
        """The full history before ``snapshot``'s active view (empty before any compaction)."""
        segments: list[Sequence[Message]] = []
        current = snapshot
        seen = {snapshot.snapshot_id}
        while True:
            marker = _marker(_active(current))
            if marker is None or marker[0] in seen:
                break
            source_id, covered = marker
            seen.add(source_id)
            source: SessionSnapshot | None = yield from _store_call(
                "get_snapshot", snapshot_id=source_id, context=context
            )
            if source is None or source.session_id != snapshot.session_id:
                break  # a marker copied from another session (a fork's archive) ends the walk
            segments.append(_active(source)[:covered])
            current = source
        return [m for segment in reversed(segments) for m in segment]

    def _event_ids(self, leaf: SessionSnapshot, context: Context) -> Steps[set[str]]:
        active = _active(leaf)
        ids = {e for e in map(_event_id, active) if e is not None}
        if _marker(active) is not None:
            before = yield from self.history_before(leaf, context)
            ids.update(e for e in map(_event_id, before) if e is not None)
        return ids

    def get_messages(self, session_id: str, active_only: bool, context: Context) -> Steps[tuple[Message, ...]]:
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        leaf: SessionSnapshot | None = yield from _store_call("get_snapshot", session_id=session_id, context=context)
        if leaf is None:
            return ()
        if active_only:
            return tuple(_active(leaf))
        before = yield from self.history_before(leaf, context)
        return (*before, *_active(leaf))

    # --- history (contract section 7)

    def add_interaction(
        self,
        session_id: str,
        user_message: Message | None,
        messages: Sequence[Message],
        expected: int | None,
        context: Context,
    ) -> Steps[AppendResult]:
        if user_message is not None and (not isinstance(user_message, Message) or user_message.role is not Role.USER):
            shown = user_message.role if isinstance(user_message, Message) else type(user_message).__name__
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"user_message must be a Message with role 'user', got {shown}; pass the other turns' messages "
                "in messages, or user_message=None for a partial interaction",
                reason=Reason.INVALID_INPUT,
            )
        if isinstance(messages, (str, bytes, Message)) or not isinstance(messages, Iterable):
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"messages must be a list of Message, got {type(messages).__name__}",
                reason=Reason.INVALID_INPUT,
            )
        batch = [*([user_message] if user_message is not None else []), *messages]
        return (yield from self.append(session_id, batch, expected, context))

    def stream(
        self,
        session_id: str | None,
        snapshot_id: str | None,
        chunk: int,
        full: bool,
        context: Context,
        sink: list[Message] | None = None,
    ) -> Steps[None]:
        """H3: emit the active (or full) history of one snapshot, oldest first, ``chunk`` messages at a time,
        holding one stored part at a time; with ``sink``, the chunks go into it instead."""
        if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"chunk_messages must be a positive int, got {chunk!r}",
                reason=Reason.INVALID_INPUT,
            )
        plan: HistoryPlan | None = yield from _store_call(
            "history_plan", snapshot_id=snapshot_id, session_id=session_id, context=context
        )
        if plan is None:
            return
        segments: list[tuple[HistoryPlan, int | None]] = [(plan, None)]
        if full:  # the compactions' markers name what came before each active view, newest first
            current, seen = plan, {plan.snapshot_id}
            while True:
                first = yield from self._first_message(current, context)
                marker = _marker(first)
                if marker is None or marker[0] in seen:
                    break
                seen.add(marker[0])
                source: HistoryPlan | None = yield from _store_call(
                    "history_plan", snapshot_id=marker[0], context=context
                )
                if source is None or source.session_id != plan.session_id:
                    break
                segments.insert(0, (source, marker[1]))
                current = source
        buffer: list[Message] = []  # never more than one chunk
        for segment, limit in segments:
            remaining = segment.total if limit is None else min(limit, segment.total)
            cursor: Any = None
            while remaining > 0:
                found: tuple[tuple[Message, ...], Any] = yield from _store_call(
                    "history_next", segment, cursor, min(chunk - len(buffer), remaining), context=context
                )
                messages, cursor = found
                remaining -= len(messages)
                buffer.extend(messages)
                if len(buffer) >= chunk:
                    if sink is None:
                        yield _Emit(tuple(buffer))
                    else:
                        sink.extend(buffer)
                    buffer = []
                if not messages or cursor is None:
                    break
        if buffer:
            if sink is None:
                yield _Emit(tuple(buffer))
            else:
                sink.extend(buffer)

    def _first_message(self, plan: HistoryPlan, context: Context) -> Steps[tuple[Message, ...]]:
        found: tuple[tuple[Message, ...], Any] = yield from _store_call("history_next", plan, None, 1, context=context)
        return found[0]

    def get_history(
        self, session_id: str, max_messages: int | None, max_bytes: int | None, context: Context
    ) -> Steps[tuple[tuple[Message, ...], bool]]:
        """H4: the complete active history, and whether the bounded read fell back to the stream."""
        window: HistoryWindow = yield from _store_call(
            "read_window", session_id, max_messages=max_messages, max_bytes=max_bytes, context=context
        )
        if not window.truncated:
            return window.messages, False
        collected: list[Message] = []
        yield from self.stream(session_id, None, 500, False, context, sink=collected)
        return tuple(collected), True

    def replace_messages(self, session_id: str, messages: Sequence[Message], context: Context) -> Steps[None]:
        """M2: a new leaf holding exactly ``messages``, in one version-checked write (retried on a race)."""
        validate_id(session_id, "memory_id", Reason.INVALID_SESSION_ID)
        if isinstance(messages, (str, bytes, Message)) or not isinstance(messages, Iterable):
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"messages must be a list of Message, got {type(messages).__name__}",
                reason=Reason.INVALID_INPUT,
            )
        batch = list(messages)
        for message in batch:
            if not isinstance(message, Message):
                raise GenkitError(
                    Status.INVALID_ARGUMENT,
                    f"messages must hold Message objects, got {type(message).__name__}",
                    reason=Reason.INVALID_INPUT,
                )
        for _ in range(self.max_append_attempts):
            version, leaf = yield from self._current(session_id, context)
            try:
                yield from self._write(_child(session_id, leaf, batch), version, context)
            except GenkitError as error:
                if error.reason != Reason.VERSION_CONFLICT.value:
                    raise
                continue
            return
        raise GenkitError(
            Status.ABORTED,
            f"memory {session_id!r}: {self.max_append_attempts} updates in a row lost to concurrent writers; retry",
        )

    # --- compaction

    def compact(
        self,
        session_id: str,
        trigger: CompactionTrigger,
        strategy: CompactionStrategy,
        max_attempts: int,
        context: Context,
    ) -> Steps[CompactionResult]:
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise GenkitError(Status.INVALID_ARGUMENT, f"max_attempts must be a positive int, got {max_attempts!r}")
        plan: Compaction | None = None
        covered_prefix: tuple[Message, ...] = ()
        for _ in range(max_attempts):
            version, leaf = yield from self._current(session_id, context)
            if leaf is None:
                return CompactionResult(False)
            _require_completed(leaf)
            active = _active(leaf)
            if plan is None or active[: len(covered_prefix)] != covered_prefix:
                fired = yield _Compute(trigger, (active,))
                if not fired:
                    return CompactionResult(False, kept=len(active))
                plan = yield _Compute(strategy, (active,))
                if not isinstance(plan, Compaction):
                    raise GenkitError(
                        Status.INVALID_ARGUMENT,
                        f"the compaction strategy returned {type(plan).__name__}; return a Compaction",
                    )
                _check_plan(plan)
                covered = safe_boundary(active, plan.covered)
                if covered == 0:
                    return CompactionResult(False, kept=len(active))
                if covered == len(active) and not plan.summary:
                    raise GenkitError(
                        Status.INVALID_ARGUMENT,
                        f"the compaction strategy covers all {covered} active messages of session {session_id!r} "
                        "and gives no summary, which would leave the history unreachable; keep at least one "
                        "message or return a summary",
                        reason=Reason.INVALID_INPUT,
                    )
                plan = Compaction(covered, plan.summary)
                covered_prefix = active[:covered]
            summary = _summary(plan.summary, leaf.snapshot_id, plan.covered)
            kept = active[plan.covered :]
            try:
                view = _compacted_view(summary, kept, leaf.snapshot_id, plan.covered)
                yield from self._write(_child(session_id, leaf, view), version, context)
            except GenkitError as error:
                if error.reason != Reason.VERSION_CONFLICT.value:
                    raise
                continue  # an append landed meanwhile: it joins the kept tail
            return CompactionResult(True, plan.covered, summary, len(kept))
        return CompactionResult(False)

    # --- forks

    def fork(
        self,
        snapshot_id: str,
        new_session_id: str | None,
        metadata: Mapping[str, str] | None,
        ttl: timedelta | None,
        context: Context,
    ) -> Steps[SessionRecord]:
        validate_id(snapshot_id, "snapshot_id", Reason.INVALID_SNAPSHOT_ID)
        source: SessionSnapshot | None = yield from _store_call(
            "get_snapshot", snapshot_id=snapshot_id, context=context
        )
        if source is None:
            raise GenkitError(
                Status.NOT_FOUND,
                f"snapshot {snapshot_id!r} does not exist; fork a snapshot that was saved",
                reason=Reason.SNAPSHOT_NOT_FOUND,
            )
        _require_completed(source)
        before = yield from self.history_before(source, context)
        if self.can_create_with:
            return (yield from self._fork_at_once(source, before, new_session_id, metadata, ttl, context))
        record = yield from self.create(new_session_id, ttl, False, metadata, context)
        try:
            active = list(_active(source))
            if before:  # the history the source compacted, written once, for the fork's first message to name
                archive = _child(record.id, None, before, state=source.state)
                active = [*_summary(active[:1], archive.snapshot_id, len(before)), *active[1:]]
                first = _child(record.id, archive, active, state=source.state)
                yield from self._write_together(record, [archive, first], context)
            else:
                yield from self._write(_child(record.id, None, active, state=source.state), 0, context)
            found: SessionRecord | None = yield from _store_call("get_session_record", record.id, context=context)
        except GenkitError:
            # A fork is several writes: one that failed part-way takes the new session back, so the store
            # reads as before and the same fork can simply be run again.
            with contextlib.suppress(GenkitError):  # the caller's error says what failed
                yield from _store_call("delete_session", record.id, context=context)
            self.forget(record.id, context)
            raise
        if found is None:
            raise GenkitError(
                Status.ABORTED, f"session {record.id!r} was deleted while it was being forked into; fork again"
            )
        return found

    def _fork_at_once(
        self,
        source: SessionSnapshot,
        before: list[Message],
        new_session_id: str | None,
        metadata: Mapping[str, str] | None,
        ttl: timedelta | None,
        context: Context,
    ) -> Steps[SessionRecord]:
        """V13 on a store whose ``create_session`` takes the first snapshots: the record, the archive of the
        history the source compacted (if any) and the first snapshot land in one atomic write, so a
        failure anywhere leaves no fork at all, and the same fork can simply be run again."""
        session_id = (
            mint_id()
            if new_session_id is None
            else validate_id(new_session_id, "session_id", Reason.INVALID_SESSION_ID)
        )
        active = list(_active(source))
        snapshots: list[SessionSnapshot] = []
        if before:  # the history the source compacted, written once, for the fork's first message to name
            archive = _child(session_id, None, before, state=source.state)
            active = [*_summary(active[:1], archive.snapshot_id, len(before)), *active[1:]]
            snapshots.append(archive)
        snapshots.append(_child(session_id, snapshots[-1] if snapshots else None, active, state=source.state))
        self.forget(session_id, context)
        record: SessionRecord = yield from _store_call(
            "create_session",
            session_id,
            metadata=metadata,
            ttl=ttl,
            sliding=False,
            snapshots=snapshots,
            context=context,
        )
        return record


# --- helpers ------------------------------------------------------------------------------


def _active(snapshot: SessionSnapshot | None) -> Messages:
    if snapshot is None or snapshot.state is None or snapshot.state.messages is None:
        return EMPTY_MESSAGES
    return snapshot.state.messages


_TEMPLATE = SessionSnapshot(snapshot_id="template", status=SnapshotStatus.COMPLETED)
_NO_OPTIONS = CallOptions()


def _child(
    session_id: str,
    parent: SessionSnapshot | None,
    messages: Sequence[Message],
    *,
    state: SessionState | None = None,
) -> SessionSnapshot:
    """A completed snapshot of ``session_id`` holding ``messages``, child of ``parent``. Every part was
    checked already (stored snapshots, checked messages, validated ids), so it is assembled without
    checking again; the store checks the write as it does any other."""
    base = state if state is not None else (parent.state if parent is not None else None)
    held = messages if isinstance(messages, Messages) else Messages(messages)
    if base is None:
        new_state = SessionState(session_id=session_id, messages=held)
    else:
        in_state = base.session_id if base.session_id is None or base.session_id == session_id else session_id
        new_state = replace_checked(base, messages=held, session_id=in_state)
    return replace_checked(
        _TEMPLATE,
        snapshot_id=mint_id(),
        session_id=session_id,
        parent_id=parent.snapshot_id if parent is not None else None,
        state=new_state,
    )


def _require_completed(snapshot: SessionSnapshot) -> None:
    status = snapshot.effective_status
    if status is not SnapshotStatus.COMPLETED:
        raise GenkitError(
            Status.FAILED_PRECONDITION,
            f"session {snapshot.session_id!r} ends in snapshot {snapshot.snapshot_id!r}, which is {status.value}; "
            "wait for its turn to complete (or abort it) before appending, compacting or forking",
            details={"snapshotId": snapshot.snapshot_id, "status": status.value},
            reason=Reason.SNAPSHOT_NOT_RESUMABLE,
        )


_NO_METADATA: Mapping[str, Any] = FrozenDict({})


def _metadata(message: Message) -> Mapping[str, Any]:
    """A message's metadata object, read only (empty when it has none)."""
    metadata = message.metadata
    if isinstance(metadata, dict):  # FrozenDict, the common case: no copy, no ABC check
        return metadata
    return metadata if isinstance(metadata, Mapping) else _NO_METADATA


def _event_id(message: Message) -> str | None:
    value = _metadata(message).get(EVENT_ID)
    return value if isinstance(value, str) else None


def _with_event_ids(messages: Sequence[Message]) -> list[tuple[Message, bool]]:
    """V10: each message with its event id (given, or minted) and whether it was minted here."""
    if not isinstance(messages, (list, tuple)) and (
        isinstance(messages, (str, bytes, Message)) or not isinstance(messages, Iterable)
    ):
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"messages must be a list of Message, got {type(messages).__name__}; wrap one message in a list",
            reason=Reason.INVALID_INPUT,
        )
    batch: list[tuple[Message, bool]] = []
    seen: set[str] = set()
    for message in messages:
        if not isinstance(message, Message):
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"messages must hold Message objects, got {type(message).__name__}; build one with Message.of_text",
                reason=Reason.INVALID_INPUT,
            )
        metadata = _metadata(message)
        if message.metadata is not None and not isinstance(message.metadata, Mapping):
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"a message's metadata must be an object to carry its {EVENT_ID}, got {message.metadata!r}",
                reason=Reason.INVALID_INPUT,
            )
        event_id = metadata.get(EVENT_ID)
        minted = event_id is None
        if minted:
            event_id = os.urandom(16).hex()
            message = _replace_metadata(message, FrozenDict({**metadata, EVENT_ID: event_id}))
        elif not isinstance(event_id, str) or not event_id:
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"metadata.{EVENT_ID} must be a non-empty string, got {event_id!r}",
                reason=Reason.INVALID_INPUT,
            )
        if event_id in seen:
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"event id {event_id!r} appears twice in one append; give each message its own",
                reason=Reason.INVALID_INPUT,
            )
        seen.add(event_id)
        batch.append((message, minted))
    if not batch:
        raise GenkitError(Status.INVALID_ARGUMENT, "append needs at least one message", reason=Reason.INVALID_INPUT)
    return batch


_MESSAGE_FIELDS = tuple(field.name for field in attrs.fields(Message))


def _replace_metadata(message: Message, metadata: FrozenDict) -> Message:
    """``message`` with other metadata, already frozen: a copy without re-running the converters of a
    message that was checked when it was made (this is on every append's path)."""
    copy = object.__new__(Message)
    for name in _MESSAGE_FIELDS:
        object.__setattr__(copy, name, metadata if name == "metadata" else getattr(message, name))
    return copy


def _marker(active: Sequence[Message]) -> tuple[str, int] | None:
    """The compaction marker on an active view's first message: (snapshot compacted, messages covered)."""
    if not active:
        return None
    marker = _metadata(active[0]).get(COMPACTION)
    if not isinstance(marker, Mapping):
        return None
    source, covered = marker.get("snapshotId"), marker.get("covered")
    if not isinstance(source, str) or isinstance(covered, bool) or not isinstance(covered, int) or covered < 0:
        return None
    return source, covered


def _summary(summary: Sequence[Message], source_id: str, covered: int) -> tuple[Message, ...]:
    """The summary messages, with event ids, the first carrying the compaction marker."""
    marked: list[Message] = []
    for index, message in enumerate(summary):
        metadata = dict(thaw(_metadata(message)))
        metadata.setdefault(EVENT_ID, os.urandom(16).hex())
        if index == 0:
            metadata[COMPACTION] = {"snapshotId": source_id, "covered": covered}
        marked.append(attrs.evolve(message, metadata=metadata))
    return tuple(marked)


def _check_plan(plan: Compaction) -> None:
    """INVALID_ARGUMENT unless a strategy's answer covers an int count and its summary holds messages only."""
    if isinstance(plan.covered, bool) or not isinstance(plan.covered, int):
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"the compaction strategy covered {plan.covered!r}; Compaction.covered is the int count of leading "
            "active messages it replaces",
            reason=Reason.INVALID_INPUT,
        )
    wrong = next((m for m in plan.summary if not isinstance(m, Message)), None)
    if wrong is not None:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"the compaction strategy's summary holds a {type(wrong).__name__}; Compaction.summary holds Messages",
            reason=Reason.INVALID_INPUT,
        )


def _compacted_view(
    summary: tuple[Message, ...], kept: Sequence[Message], source_id: str, covered: int
) -> list[Message]:
    """The active view after a compaction: the summary (its first message carries the marker), then the kept
    messages; with no summary the first kept message carries the marker, so the covered history stays
    reachable (V11). A kept message keeps no marker of an earlier compaction anywhere but first."""
    rest = [_unmarked(m) for m in kept]
    if summary:
        return [*summary, *rest]
    metadata = dict(thaw(_metadata(rest[0])))
    metadata[COMPACTION] = {"snapshotId": source_id, "covered": covered}
    return [attrs.evolve(rest[0], metadata=metadata), *rest[1:]]


def _unmarked(message: Message) -> Message:
    metadata = _metadata(message)
    if COMPACTION not in metadata:
        return message
    return attrs.evolve(message, metadata={k: v for k, v in thaw(metadata).items() if k != COMPACTION} or None)


def _current_version(error: GenkitError) -> int:
    details = error.details
    version = details.get("version") if isinstance(details, Mapping) else None
    return version if isinstance(version, int) and not isinstance(version, bool) else 0


def _takes_keyword(function: Callable[..., Any], name: str) -> bool:
    """Whether ``function`` accepts the keyword ``name`` (by name, or through ``**kwargs``)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _check_service_store(store: object, protocol: type, face: str) -> None:
    if not isinstance(store, protocol):
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"{face} needs a store with sessions as records ({protocol.__name__}: create_session, find_sessions, "
            f"...), got {type(store).__name__}; use InMemorySessionStore or DynamoDBSessionStore"
            + (" (their .aio face)" if face == "AsyncSessionService" else ""),
        )


# --- the two faces ------------------------------------------------------------------------


class SessionService:
    """Sessions as records over a blocking store (contract section 6, rules V1-V13).

    ``store`` is any store with the record protocol (:class:`~genkit_sessions.stores.protocol.SupportsSessions`):
    :class:`~genkit_sessions.InMemorySessionStore` or :class:`~genkit_sessions.dynamodb.DynamoDBSessionStore`.
    Every method takes the request ``context`` the store derives the tenant from.
    """

    def __init__(self, store: SupportsSessions, *, clock: Clock = utc_now, max_append_attempts: int = _APPEND_ATTEMPTS):
        _check_service_store(store, SupportsSessions, "SessionService")
        self.store = store
        self._clock = clock
        self._rules = _Rules(
            store.indexed_metadata,
            clock,
            max_append_attempts,
            callable(getattr(store, "restore_snapshots", None)),
            _takes_keyword(store.create_session, "snapshots"),
        )
        self.history_fallbacks = 0
        """How many :meth:`get_history` calls needed the stream because the bounded read was truncated."""

    def _perform(self, step: _Call | _Compute) -> Any:
        if isinstance(step, _Call):
            return getattr(self.store, step.method)(*step.args, **step.kwargs)
        answer = step.fn(*step.args)
        if inspect.isawaitable(answer):
            if inspect.iscoroutine(answer):
                answer.close()
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                "a compaction trigger or strategy returned an awaitable on the blocking SessionService; "
                "use AsyncSessionService, or pass a plain function",
            )
        return answer

    def _run(self, steps: Steps[T]) -> T:
        holder: list[Any] = []
        for _ in self._drive(steps, holder):
            raise AssertionError("only a history stream emits chunks")  # pragma: no cover
        return holder[0]  # type: ignore[no-any-return]

    def _drive(self, steps: Steps[Any], holder: list[Any]) -> Iterator[tuple[Message, ...]]:
        """Perform the store calls the rules ask for and hand out the chunks they emit; the rules' result
        goes into ``holder``."""
        answer: Any = None
        failure: BaseException | None = None
        while True:
            try:
                step = steps.throw(failure) if failure is not None else steps.send(answer)
            except StopIteration as done:
                holder.append(done.value)
                return
            answer, failure = None, None
            if isinstance(step, _Emit):
                yield step.messages
                continue
            try:
                answer = self._perform(step)
            except BaseException as exc:  # handed back to the rules, which re-raise what they do not handle
                failure = exc

    def create(
        self,
        session_id: str | None = None,
        *,
        ttl: timedelta | None = None,
        sliding: bool = False,
        metadata: Mapping[str, str] | None = None,
        context: Context = None,
    ) -> SessionRecord:
        """V1: a new session with no snapshots (a new UUID when ``session_id`` is None)."""
        return self._run(self._rules.create(session_id, ttl, sliding, metadata, context))

    def find_or_create(
        self,
        session_id: str,
        *,
        ttl: timedelta | None = None,
        sliding: bool = False,
        metadata: Mapping[str, str] | None = None,
        context: Context = None,
    ) -> SessionRecord:
        """V2: the stored session, else a new one; concurrent first uses all get the one record."""
        return self._run(self._rules.find_or_create(session_id, ttl, sliding, metadata, context))

    def find_by_id(self, session_id: str, *, context: Context = None) -> SessionRecord | None:
        """V3: the record, or None when absent, deleted or expired."""
        return self.store.get_session_record(session_id, context=context)

    def find_by_metadata(
        self, name: str, value: str, *, limit: int = 100, page_token: str | None = None, context: Context = None
    ) -> SessionPage:
        """V4: live sessions whose metadata holds ``value`` under the indexed key ``name``, oldest first."""
        return self.store.find_sessions(name, value, limit=limit, page_token=page_token, context=context)

    def iter_by_metadata(self, name: str, value: str, *, context: Context = None) -> Iterable[SessionRecord]:
        """Every page of :meth:`find_by_metadata`, one record at a time."""
        token: str | None = None
        while True:
            page = self.find_by_metadata(name, value, page_token=token, context=context)
            yield from page.records
            token = page.next_page_token
            if token is None:
                return

    def set_metadata(self, session_id: str, name: str, value: str | None, *, context: Context = None) -> SessionRecord:
        """V5: set (None: remove) one metadata key, indexes included, in one atomic write."""
        return self.store.set_session_metadata(session_id, name, value, context=context)

    def delete(self, session_id: str, *, context: Context = None) -> bool:
        """V6: remove the record, every snapshot and index entry; whether there was a session."""
        return self._run(self._rules.delete(session_id, context))

    def delete_expired(self, before: datetime | None = None, *, context: Context = None) -> int:
        """V7: delete the tenant's sessions that expired before ``before`` (default: now); how many.
        Nothing calls it on its own: run it from a scheduler."""
        return self.store.delete_expired_sessions(before or self._clock(), context=context)

    def version(self, session_id: str, *, context: Context = None) -> int:
        """V8: the session's version; 0 when there is no session or it has no snapshots."""
        return self._run(self._rules.version(session_id, context))

    def append(
        self,
        session_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int | None = None,
        context: Context = None,
    ) -> AppendResult:
        """V9/V10: one completed snapshot, child of the leaf, holding the leaf's messages plus these."""
        return self._run(self._rules.append(session_id, messages, expected_version, context))

    def get_messages(self, session_id: str, *, context: Context = None) -> tuple[Message, ...]:
        """V11: the full history of the leaf's branch, each compaction's summary at its boundary."""
        return self._run(self._rules.get_messages(session_id, False, context))

    def get_active_messages(self, session_id: str, *, context: Context = None) -> tuple[Message, ...]:
        """V11: what the model sees: the leaf's ``state.messages``."""
        return self._run(self._rules.get_messages(session_id, True, context))

    def compact(
        self,
        session_id: str,
        trigger: CompactionTrigger,
        strategy: CompactionStrategy,
        *,
        max_attempts: int = 3,
        context: Context = None,
    ) -> CompactionResult:
        """V12: replace the leading active messages the strategy covers with its summary, version-checked."""
        return self._run(self._rules.compact(session_id, trigger, strategy, max_attempts, context))

    def fork(
        self,
        snapshot_id: str,
        *,
        new_session_id: str | None = None,
        metadata: Mapping[str, str] | None = None,
        ttl: timedelta | None = None,
        context: Context = None,
    ) -> SessionRecord:
        """V13: a new session starting from that snapshot's state, with the source's full history."""
        return self._run(self._rules.fork(snapshot_id, new_session_id, metadata, ttl, context))

    # --- history (contract section 7)

    def add_interaction(
        self,
        session_id: str,
        user_message: Message | None,
        messages: Sequence[Message] = (),
        *,
        expected_version: int | None = None,
        context: Context = None,
    ) -> AppendResult:
        """H1: the user message (any parts) and then the other messages, as one completed snapshot;
        ``user_message=None`` is a partial interaction (tool responses completing the last model message)."""
        return self._run(self._rules.add_interaction(session_id, user_message, messages, expected_version, context))

    def read_window(
        self,
        session_id: str,
        *,
        max_messages: int | None = None,
        max_bytes: int | None = None,
        context: Context = None,
    ) -> HistoryWindow:
        """H2: the newest active messages within the bounds, oldest first, and whether older ones were left out."""
        return self.store.read_window(session_id, max_messages=max_messages, max_bytes=max_bytes, context=context)  # type: ignore[attr-defined,no-any-return]

    def iter_history(
        self,
        session_id: str | None = None,
        *,
        snapshot_id: str | None = None,
        chunk_messages: int = 100,
        full: bool = False,
        context: Context = None,
    ) -> Iterator[tuple[Message, ...]]:
        """H3: the complete active history (``full=True``: the full one) of a session's leaf or of one
        snapshot, oldest first, in chunks; one stored block in memory at a time, one version throughout."""
        yield from self._drive(self._rules.stream(session_id, snapshot_id, chunk_messages, full, context), [])

    def replace_messages(self, session_id: str, messages: Sequence[Message], *, context: Context = None) -> None:
        """M2: a new leaf that holds exactly ``messages``, in one version-checked write (a race is retried)."""
        self._run(self._rules.replace_messages(session_id, messages, context))

    def get_history(
        self,
        session_id: str,
        *,
        max_messages: int | None = 1000,
        max_bytes: int | None = 4_000_000,
        context: Context = None,
    ) -> tuple[Message, ...]:
        """H4: always the complete active history: one bounded read, and the stream when that was truncated
        (counted in :attr:`history_fallbacks`)."""
        messages, fell_back = self._run(self._rules.get_history(session_id, max_messages, max_bytes, context))
        if fell_back:
            self.history_fallbacks += 1
        return messages


class AsyncSessionService:
    """The async twin of :class:`SessionService`, over an async store with the record protocol
    (``InMemorySessionStore().aio``, ``DynamoDBSessionStore(...).aio``). Triggers, strategies and
    summarizers may be coroutine functions here."""

    def __init__(
        self, store: SupportsAsyncSessions, *, clock: Clock = utc_now, max_append_attempts: int = _APPEND_ATTEMPTS
    ):
        _check_service_store(store, SupportsAsyncSessions, "AsyncSessionService")
        self.store = store
        self._clock = clock
        self._rules = _Rules(
            store.indexed_metadata,
            clock,
            max_append_attempts,
            callable(getattr(store, "restore_snapshots", None)),
            _takes_keyword(store.create_session, "snapshots"),
        )
        self.history_fallbacks = 0
        """How many :meth:`get_history` calls needed the stream because the bounded read was truncated."""

    async def _perform(self, step: _Call | _Compute) -> Any:
        if isinstance(step, _Call):
            return await getattr(self.store, step.method)(*step.args, **step.kwargs)
        answer = step.fn(*step.args)
        return (await answer) if inspect.isawaitable(answer) else answer

    async def _run(self, steps: Steps[T]) -> T:
        holder: list[Any] = []
        async for _ in self._drive(steps, holder):
            raise AssertionError("only a history stream emits chunks")  # pragma: no cover
        return holder[0]  # type: ignore[no-any-return]

    async def _drive(self, steps: Steps[Any], holder: list[Any]) -> AsyncIterator[tuple[Message, ...]]:
        """See :meth:`SessionService._drive`; the result goes into ``holder``."""
        answer: Any = None
        failure: BaseException | None = None
        while True:
            try:
                step = steps.throw(failure) if failure is not None else steps.send(answer)
            except StopIteration as done:
                holder.append(done.value)
                return
            answer, failure = None, None
            if isinstance(step, _Emit):
                yield step.messages
                continue
            try:
                answer = await self._perform(step)
            except BaseException as exc:  # handed back to the rules, which re-raise what they do not handle
                failure = exc

    async def create(
        self,
        session_id: str | None = None,
        *,
        ttl: timedelta | None = None,
        sliding: bool = False,
        metadata: Mapping[str, str] | None = None,
        context: Context = None,
    ) -> SessionRecord:
        """See :meth:`SessionService.create`."""
        return await self._run(self._rules.create(session_id, ttl, sliding, metadata, context))

    async def find_or_create(
        self,
        session_id: str,
        *,
        ttl: timedelta | None = None,
        sliding: bool = False,
        metadata: Mapping[str, str] | None = None,
        context: Context = None,
    ) -> SessionRecord:
        """See :meth:`SessionService.find_or_create`."""
        return await self._run(self._rules.find_or_create(session_id, ttl, sliding, metadata, context))

    async def find_by_id(self, session_id: str, *, context: Context = None) -> SessionRecord | None:
        """See :meth:`SessionService.find_by_id`."""
        return await self.store.get_session_record(session_id, context=context)

    async def find_by_metadata(
        self, name: str, value: str, *, limit: int = 100, page_token: str | None = None, context: Context = None
    ) -> SessionPage:
        """See :meth:`SessionService.find_by_metadata`."""
        return await self.store.find_sessions(name, value, limit=limit, page_token=page_token, context=context)

    async def iter_by_metadata(self, name: str, value: str, *, context: Context = None) -> AsyncIterator[SessionRecord]:
        """See :meth:`SessionService.iter_by_metadata`."""
        token: str | None = None
        while True:
            page = await self.find_by_metadata(name, value, page_token=token, context=context)
            for record in page.records:
                yield record
            token = page.next_page_token
            if token is None:
                return

    async def set_metadata(
        self, session_id: str, name: str, value: str | None, *, context: Context = None
    ) -> SessionRecord:
        """See :meth:`SessionService.set_metadata`."""
        return await self.store.set_session_metadata(session_id, name, value, context=context)

    async def delete(self, session_id: str, *, context: Context = None) -> bool:
        """See :meth:`SessionService.delete`."""
        return await self._run(self._rules.delete(session_id, context))

    async def delete_expired(self, before: datetime | None = None, *, context: Context = None) -> int:
        """See :meth:`SessionService.delete_expired`."""
        return await self.store.delete_expired_sessions(before or self._clock(), context=context)

    async def version(self, session_id: str, *, context: Context = None) -> int:
        """See :meth:`SessionService.version`."""
        return await self._run(self._rules.version(session_id, context))

    async def append(
        self,
        session_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int | None = None,
        context: Context = None,
    ) -> AppendResult:
        """See :meth:`SessionService.append`."""
        return await self._run(self._rules.append(session_id, messages, expected_version, context))

    async def get_messages(self, session_id: str, *, context: Context = None) -> tuple[Message, ...]:
        """See :meth:`SessionService.get_messages`."""
        return await self._run(self._rules.get_messages(session_id, False, context))

    async def get_active_messages(self, session_id: str, *, context: Context = None) -> tuple[Message, ...]:
        """See :meth:`SessionService.get_active_messages`."""
        return await self._run(self._rules.get_messages(session_id, True, context))

    async def compact(
        self,
        session_id: str,
        trigger: CompactionTrigger,
        strategy: CompactionStrategy,
        *,
        max_attempts: int = 3,
        context: Context = None,
    ) -> CompactionResult:
        """See :meth:`SessionService.compact`."""
        return await self._run(self._rules.compact(session_id, trigger, strategy, max_attempts, context))

    async def fork(
        self,
        snapshot_id: str,
        *,
        new_session_id: str | None = None,
        metadata: Mapping[str, str] | None = None,
        ttl: timedelta | None = None,
        context: Context = None,
    ) -> SessionRecord:
        """See :meth:`SessionService.fork`."""
        return await self._run(self._rules.fork(snapshot_id, new_session_id, metadata, ttl, context))

    # --- history (contract section 7)

    async def add_interaction(
        self,
        session_id: str,
        user_message: Message | None,
        messages: Sequence[Message] = (),
        *,
        expected_version: int | None = None,
        context: Context = None,
    ) -> AppendResult:
        """See :meth:`SessionService.add_interaction`."""
        return await self._run(
            self._rules.add_interaction(session_id, user_message, messages, expected_version, context)
        )

    async def read_window(
        self,
        session_id: str,
        *,
        max_messages: int | None = None,
        max_bytes: int | None = None,
        context: Context = None,
    ) -> HistoryWindow:
        """See :meth:`SessionService.read_window`."""
        window: HistoryWindow = await self.store.read_window(  # type: ignore[attr-defined]
            session_id, max_messages=max_messages, max_bytes=max_bytes, context=context
        )
        return window

    async def iter_history(
        self,
        session_id: str | None = None,
        *,
        snapshot_id: str | None = None,
        chunk_messages: int = 100,
        full: bool = False,
        context: Context = None,
    ) -> AsyncIterator[tuple[Message, ...]]:
        """See :meth:`SessionService.iter_history`."""
        async for chunk in self._drive(self._rules.stream(session_id, snapshot_id, chunk_messages, full, context), []):
            yield chunk

    async def replace_messages(self, session_id: str, messages: Sequence[Message], *, context: Context = None) -> None:
        """See :meth:`SessionService.replace_messages`."""
        await self._run(self._rules.replace_messages(session_id, messages, context))

    async def get_history(
        self,
        session_id: str,
        *,
        max_messages: int | None = 1000,
        max_bytes: int | None = 4_000_000,
        context: Context = None,
    ) -> tuple[Message, ...]:
        """See :meth:`SessionService.get_history`."""
        messages, fell_back = await self._run(self._rules.get_history(session_id, max_messages, max_bytes, context))
        if fell_back:
            self.history_fallbacks += 1
        return messages
