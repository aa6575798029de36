"""The session a turn works on: its state, and how the turn's end is recorded.

A resolution hands the framework a :class:`Session`. During the turn the
framework adds messages and artifacts and updates the custom state; at the end
it calls :meth:`Session.save` (or :meth:`Session.asave`) once, which writes
the next snapshot as a child of the one the turn started from, with the
turn's status, finish reason and error. A client-managed session has no store:
:meth:`Session.final_state` is what goes back to the client instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.frozen_json import JsonValue, freeze
from genkit_sessions.model.ids import mint_id, validate_id
from genkit_sessions.model.types import (
    Artifact,
    ErrorInfo,
    FinishReason,
    Message,
    Messages,
    SessionSnapshot,
    SessionState,
    SnapshotStatus,
    replace_checked,
)
from genkit_sessions.stores.protocol import AsyncSessionStore, Context, SessionStore

__all__ = ["Session"]

_TEMPLATE = SessionSnapshot(snapshot_id="template")
_EMPTY_STATE = SessionState()


class Session:
    """A session during one turn: a working copy of its state plus where to save it.

    ``snapshot_id`` is reserved up front so the framework can hand it out before
    the write (for example to a detached client); ``origin`` is the snapshot the
    next save will be a child of.
    """

    def __init__(
        self,
        session_id: str,
        state: SessionState | None,
        origin: SessionSnapshot | None,
        *,
        store: SessionStore | None = None,
        async_store: AsyncSessionStore | None = None,
        context: Context = None,
    ) -> None:
        self.id = validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        if state is not None and not isinstance(state, SessionState):
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"Session state must be a SessionState or None, got {type(state).__name__}; "
                "decode JSON with from_wire(SessionState, data)",
                reason=Reason.INVALID_INPUT,
            )
        if origin is not None and not isinstance(origin, SessionSnapshot):
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"Session origin must be a SessionSnapshot or None, got {type(origin).__name__}",
                reason=Reason.INVALID_INPUT,
            )
        base = state if state is not None else SessionState()
        self._state = base if base.session_id == session_id else attrs.evolve(base, session_id=session_id)
        self.origin = origin
        self._snapshot_id: str | None = None
        self._store = store
        self._async_store = async_store
        self._context = context

    @classmethod
    def _checked(
        cls,
        session_id: str,
        state: SessionState | None,
        origin: SessionSnapshot | None,
        store: SessionStore | None,
        async_store: AsyncSessionStore | None,
        context: Context,
    ) -> Session:
        """A session from what the resolution rules decided (a validated id, a state and an origin the
        store returned and the rules judged): the same object as the constructor makes, without checking
        the parts again."""
        session = cls.__new__(cls)
        session.id = session_id
        base = state if state is not None else _EMPTY_STATE
        session._state = base if base.session_id == session_id else replace_checked(base, session_id=session_id)
        session.origin = origin
        session._snapshot_id = None
        session._store = store
        session._async_store = async_store
        session._context = context
        return session

    @property
    def snapshot_id(self) -> str:
        """The id the turn's snapshot is saved under: reserved on first use, the same until a terminal save."""
        if self._snapshot_id is None:
            self._snapshot_id = mint_id()
        return self._snapshot_id

    @property
    def server_managed(self) -> bool:
        """True when the session is saved to a store, False when the client keeps it."""
        return self._store is not None or self._async_store is not None

    @property
    def state(self) -> SessionState:
        """The current working state (immutable; use the methods below to change it)."""
        return self._state

    @property
    def messages(self) -> Messages:
        """The conversation so far (an immutable sequence)."""
        return self._state.message_list

    @property
    def custom(self) -> JsonValue:
        """The custom JSON state, frozen (objects are ``FrozenDict``, arrays tuples); None when unset."""
        return self._state.custom

    def add_messages(self, *messages: Message) -> None:
        """Append messages to the conversation (each a :class:`Message`; INVALID_ARGUMENT otherwise,
        and nothing is added)."""
        _check_items(messages, Message, "add_messages", "Message.of_text('user', 'hi')")
        # Checked above: the new state is assembled without checking every message again, and its
        # messages share the origin's (``Messages + tuple``), so a turn stores only what it added.
        self._state = replace_checked(self._state, messages=self._state.message_list + messages)

    def add_artifacts(self, *artifacts: Artifact) -> None:
        """Append artifacts; one with the name of an earlier artifact replaces it, so one call holding
        several of a name keeps the last of them, as one call per artifact would."""
        _check_items(artifacts, Artifact, "add_artifacts", "Artifact(parts=[TextPart('...')], name='report')")
        named = {a.name for a in artifacts if a.name is not None}
        if len(named) < sum(a.name is not None for a in artifacts):  # a name repeats: its last one wins
            last = {a.name: index for index, a in enumerate(artifacts) if a.name is not None}
            artifacts = tuple(a for index, a in enumerate(artifacts) if a.name is None or last[a.name] == index)
        kept = tuple(a for a in self._state.artifact_list if a.name is None or a.name not in named)
        self._state = attrs.evolve(self._state, artifacts=kept + artifacts)

    def set_custom(self, value: JsonValue) -> None:
        """Replace the custom state with a JSON value (INVALID_ARGUMENT for anything JSON cannot hold)."""
        self._state = attrs.evolve(self._state, custom=freeze(value, "custom"))

    def update_custom(self, update: Callable[[JsonValue], JsonValue]) -> None:
        """Replace the custom state with ``update(current)``."""
        self.set_custom(update(self._state.custom))

    def final_state(self) -> SessionState:
        """The state to hand back to the client (client-managed) or to show (either mode)."""
        return self._state

    def _mutator(
        self,
        status: SnapshotStatus,
        finish_reason: FinishReason | str | None,
        error: ErrorInfo | GenkitError | None,
    ) -> Callable[[SessionSnapshot | None], SessionSnapshot]:
        if not self.server_managed:
            raise GenkitError(
                Status.FAILED_PRECONDITION,
                "this session is client-managed and has no store to save to; return final_state() to the client",
                reason=Reason.SESSION_STORE_NOT_CONFIGURED,
            )
        if isinstance(error, GenkitError):
            error = ErrorInfo(status=error.status.value, message=error.message, details=error.payload_details())
        elif error is not None and not isinstance(error, ErrorInfo):
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"save(error=...) takes an ErrorInfo, a GenkitError or None, got {type(error).__name__}; "
                "pass ErrorInfo(status='INTERNAL', message='what went wrong') or the GenkitError you caught",
                reason=Reason.INVALID_INPUT,
            )
        fields: dict[str, Any] = {
            "snapshot_id": self.snapshot_id,
            "session_id": self.id,
            "parent_id": self.origin.snapshot_id if self.origin is not None else None,
            "status": status,
            "finish_reason": finish_reason,
            "error": error,
            "state": self._state,
        }
        if finish_reason is None or isinstance(finish_reason, FinishReason):
            # Every field is checked already (a minted id, the session's validated id, a stored parent, a
            # state built by checked steps, a status member): assemble it without checking again.
            snapshot = replace_checked(_TEMPLATE, **fields)
        else:
            snapshot = SessionSnapshot(**fields)  # converts and checks the finish reason

        def write(existing: SessionSnapshot | None) -> SessionSnapshot:
            if existing is None:
                return snapshot
            return attrs.evolve(snapshot, heartbeat_at=existing.heartbeat_at)

        return write

    def _advance(self, saved: SessionSnapshot | None) -> SessionSnapshot:
        assert saved is not None
        if saved.effective_status.is_terminal:
            self.origin = saved
            self._snapshot_id = None
        return saved

    def save(
        self,
        status: SnapshotStatus | str = SnapshotStatus.COMPLETED,
        *,
        finish_reason: FinishReason | str | None = None,
        error: ErrorInfo | GenkitError | None = None,
    ) -> SessionSnapshot:
        """Write the turn's snapshot (a child of :attr:`origin`) and return it as stored.

        A non-terminal status (``pending``) can be saved first and updated by a
        later save; a terminal one makes the saved snapshot the origin of the
        next turn and reserves a new :attr:`snapshot_id`.
        """
        mutator = self._mutator(_status(status), finish_reason, error)
        if self._store is None:
            raise GenkitError(
                Status.FAILED_PRECONDITION,
                "this session was resolved against an async store; call `await session.asave(...)`",
            )
        return self._advance(self._store.save_snapshot(self.snapshot_id, mutator, context=self._context))

    async def asave(
        self,
        status: SnapshotStatus | str = SnapshotStatus.COMPLETED,
        *,
        finish_reason: FinishReason | str | None = None,
        error: ErrorInfo | GenkitError | None = None,
    ) -> SessionSnapshot:
        """The async twin of :meth:`save`, for sessions resolved with ``aresolve``."""
        mutator = self._mutator(_status(status), finish_reason, error)
        if self._async_store is None:
            raise GenkitError(
                Status.FAILED_PRECONDITION,
                "this session was resolved against a sync store; call `session.save(...)`",
            )
        saved = await self._async_store.save_snapshot(self.snapshot_id, mutator, context=self._context)
        return self._advance(saved)

    def __repr__(self) -> str:
        origin = self.origin.snapshot_id if self.origin is not None else None
        return f"Session(id={self.id!r}, origin={origin!r}, messages={len(self.messages)})"


def _check_items(items: tuple[Any, ...], kind: type, method: str, example: str) -> None:
    for index, item in enumerate(items):
        if isinstance(item, kind):
            continue
        hint = (
            f"unpack the list: {method}(*items)"
            if isinstance(item, (list, tuple))
            else f"build one, for example {example}, or decode JSON with from_wire({kind.__name__}, data)"
        )
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"{method} takes {kind.__name__} objects; argument {index} is {type(item).__name__}; {hint}",
            reason=Reason.INVALID_INPUT,
        )


def _status(status: Any) -> SnapshotStatus:
    if isinstance(status, SnapshotStatus):
        return status
    if isinstance(status, str):
        try:
            return SnapshotStatus(status)
        except ValueError:
            pass
    raise GenkitError(
        Status.INVALID_ARGUMENT,
        f"save takes a snapshot status, got {status!r}; pass one of "
        f"{', '.join(repr(s.value) for s in SnapshotStatus if s is not SnapshotStatus.EXPIRED)} "
        "(a failure's message goes in error=ErrorInfo(...))",
        reason=Reason.INVALID_INPUT,
    )
