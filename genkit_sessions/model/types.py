"""The session model: frozen attrs classes mirroring Genkit's wire types.

Every class is immutable (free-form JSON is frozen, sequences are tuples), so a
store can hand out what it holds without copying. Classes that Genkit may
extend carry an ``extra`` mapping with the wire keys this version does not
know; the wire converter (``genkit_sessions.model.wire``) fills it on decode
and writes it back on encode, so nothing is lost in a round trip.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, Union

import attrs

from genkit_sessions.model.frozen_json import FrozenDict, freeze

__all__ = [
    "TERMINAL_STATUSES",
    "AgentInit",
    "Artifact",
    "CustomPart",
    "DataPart",
    "ErrorInfo",
    "FinishReason",
    "Media",
    "MediaPart",
    "Message",
    "Part",
    "ReasoningPart",
    "Resource",
    "ResourcePart",
    "Role",
    "SessionSnapshot",
    "SessionState",
    "SnapshotStatus",
    "TextPart",
    "ToolRequest",
    "ToolRequestPart",
    "ToolResponse",
    "ToolResponsePart",
    "UnknownPart",
]


class SnapshotStatus(str, enum.Enum):
    """Lifecycle of a snapshot. ``expired`` is computed on read, never stored."""

    PENDING = "pending"
    ABORTING = "aborting"
    COMPLETED = "completed"
    ABORTED = "aborted"
    FAILED = "failed"
    EXPIRED = "expired"

    def __str__(self) -> str:
        return self.value

    @property
    def is_terminal(self) -> bool:
        """True for completed, failed and aborted: statuses a snapshot never leaves."""
        return self in TERMINAL_STATUSES


TERMINAL_STATUSES = frozenset({SnapshotStatus.COMPLETED, SnapshotStatus.FAILED, SnapshotStatus.ABORTED})


class FinishReason(str, enum.Enum):
    """Why a turn ended, as recorded on its snapshot and agent output."""

    STOP = "stop"
    LENGTH = "length"
    BLOCKED = "blocked"
    INTERRUPTED = "interrupted"
    OTHER = "other"
    UNKNOWN = "unknown"
    ABORTED = "aborted"
    DETACHED = "detached"
    FAILED = "failed"

    def __str__(self) -> str:
        return self.value


class Role(str, enum.Enum):
    """Who authored a message."""

    SYSTEM = "system"
    USER = "user"
    MODEL = "model"
    TOOL = "tool"

    def __str__(self) -> str:
        return self.value


_ROLES: dict[str, Role | str] = {role.value: role for role in Role}

_NOTHING = FrozenDict()
"""The empty mapping every object without unknown keys shares (it is immutable)."""


def _frozen_mapping(value: Mapping[str, Any] | None) -> FrozenDict:
    return _NOTHING if not value else freeze(value)


def _extra() -> Any:
    """Wire keys this version does not know, kept verbatim for the round trip."""
    return attrs.field(default=_NOTHING, converter=_frozen_mapping, kw_only=True, repr=False)


def _json(default: Any = None) -> Any:
    return attrs.field(default=default, converter=freeze)


def _tuple(value: Iterable[Any]) -> tuple[Any, ...]:
    return value if isinstance(value, tuple) else tuple(value)


def _optional_tuple(value: Iterable[Any] | None) -> tuple[Any, ...] | None:
    return None if value is None else _tuple(value)


def _role(value: Role | str) -> Role | str:
    """One of the four known roles as the enum member; any other string kept as it is."""
    if isinstance(value, Role):
        return value
    if not isinstance(value, str):
        raise TypeError(f"a message role is a string, got {type(value).__name__}")
    return _ROLES.get(value, value)


def _parent(value: str | None) -> str | None:
    """``""`` is how Genkit Python writes "no parent" for a root: read it as None."""
    return None if value == "" else value


def _optional_status(value: SnapshotStatus | str | None) -> SnapshotStatus | None:
    return None if value is None else SnapshotStatus(value)


def _optional_finish_reason(value: FinishReason | str | None) -> FinishReason | None:
    return None if value is None else FinishReason(value)


# --- parts ---------------------------------------------------------------------------------


@attrs.frozen
class Media:
    """A media reference: a URL (often a data: URL) and its content type."""

    url: str
    content_type: str | None = None
    extra: FrozenDict = _extra()


@attrs.frozen
class ToolRequest:
    """A model's request to call a tool. ``partial`` marks a request still being streamed."""

    name: str
    ref: str | None = None
    input: Any = _json()
    partial: bool | None = None
    extra: FrozenDict = _extra()


@attrs.frozen
class ToolResponse:
    """A tool's answer to a :class:`ToolRequest`: its JSON ``output`` and, for tools that
    answer with rich content (text, media), ``content`` as parts."""

    name: str
    ref: str | None = None
    output: Any = _json()
    content: tuple[Part, ...] | None = attrs.field(default=None, converter=_optional_tuple)
    extra: FrozenDict = _extra()


@attrs.frozen
class Resource:
    """A reference to an external resource by URI."""

    uri: str
    extra: FrozenDict = _extra()


@attrs.frozen
class TextPart:
    """Plain text."""

    text: str
    metadata: Any = _json()
    custom: Any = _json()
    extra: FrozenDict = _extra()


@attrs.frozen
class MediaPart:
    """An image, audio or other media item."""

    media: Media
    metadata: Any = _json()
    custom: Any = _json()
    extra: FrozenDict = _extra()


@attrs.frozen
class ToolRequestPart:
    """A tool call requested by the model."""

    tool_request: ToolRequest
    metadata: Any = _json()
    custom: Any = _json()
    extra: FrozenDict = _extra()


@attrs.frozen
class ToolResponsePart:
    """The result of a tool call."""

    tool_response: ToolResponse
    metadata: Any = _json()
    custom: Any = _json()
    extra: FrozenDict = _extra()


@attrs.frozen
class DataPart:
    """Structured JSON data."""

    data: Any = _json()
    metadata: Any = _json()
    custom: Any = _json()
    extra: FrozenDict = _extra()


@attrs.frozen
class CustomPart:
    """Plugin-defined content."""

    custom: Any = _json()
    metadata: Any = _json()
    extra: FrozenDict = _extra()


@attrs.frozen
class ReasoningPart:
    """A model's reasoning text."""

    reasoning: str
    metadata: Any = _json()
    custom: Any = _json()
    extra: FrozenDict = _extra()


@attrs.frozen
class ResourcePart:
    """A reference to a resource."""

    resource: Resource
    metadata: Any = _json()
    custom: Any = _json()
    extra: FrozenDict = _extra()


@attrs.frozen
class UnknownPart:
    """A part of a kind this version does not know, kept exactly as it came."""

    fields: FrozenDict = attrs.field(converter=_frozen_mapping)


Part = Union[  # noqa: UP007 (cattrs dispatches on this alias)
    TextPart,
    MediaPart,
    ToolRequestPart,
    ToolResponsePart,
    DataPart,
    CustomPart,
    ReasoningPart,
    ResourcePart,
    UnknownPart,
]
"""One piece of message content: exactly one of the part kinds."""


# --- messages, artifacts, state -------------------------------------------------------------


@attrs.frozen
class Message:
    """One message of a conversation.

    ``role`` is a :class:`Role` for the four roles Genkit defines and the plain
    string for any other (Genkit accepts any role string, so we keep it)."""

    role: Role | str = attrs.field(converter=_role)
    content: tuple[Part, ...] = attrs.field(converter=_tuple)
    metadata: Any = _json()
    extra: FrozenDict = _extra()

    @classmethod
    def of_text(cls, role: Role | str, text: str) -> Message:
        """A message holding a single text part."""
        return cls(role=role, content=(TextPart(text),))

    @property
    def text(self) -> str:
        """The concatenated text of the message's text parts."""
        return "".join(p.text for p in self.content if isinstance(p, TextPart))


@attrs.frozen
class Artifact:
    """A named output of the session, such as a generated file."""

    parts: tuple[Part, ...] = attrs.field(converter=_tuple)
    name: str | None = None
    metadata: Any = _json()
    extra: FrozenDict = _extra()


@attrs.frozen
class SessionState:
    """What a session carries from turn to turn: messages, custom JSON state, artifacts.

    ``None`` means the key is absent on the wire (Genkit writers omit empty
    fields); use :attr:`message_list` and :attr:`artifact_list` to read them as
    tuples.
    """

    session_id: str | None = None
    messages: tuple[Message, ...] | None = attrs.field(default=None, converter=_optional_tuple)
    custom: Any = _json()
    artifacts: tuple[Artifact, ...] | None = attrs.field(default=None, converter=_optional_tuple)
    extra: FrozenDict = _extra()

    @property
    def message_list(self) -> tuple[Message, ...]:
        """The messages, or an empty tuple when there are none."""
        return self.messages or ()

    @property
    def artifact_list(self) -> tuple[Artifact, ...]:
        """The artifacts, or an empty tuple when there are none."""
        return self.artifacts or ()


@attrs.frozen
class ErrorInfo:
    """The graceful-failure payload: a status name, a message, optional details.

    This is what an agent output's ``error`` and a snapshot's ``error`` carry.
    ``status`` is optional on the wire (Genkit's schema allows an error with a
    message only); the payloads this package writes always set it.
    """

    status: str | None = None
    message: str = attrs.field(kw_only=True)
    details: Any = _json()
    extra: FrozenDict = _extra()


# --- snapshots and init ----------------------------------------------------------------------


@attrs.frozen
class SessionSnapshot:
    """An immutable capture of a session after a turn: one node of the session tree.

    ``status`` of ``None`` is how old writers say completed; read
    :attr:`effective_status` or :meth:`status_at` instead of the raw field.
    ``created_at`` is filled by the store on the first write. ``parent_id`` is
    None for a root, however the wire said it (absent, or ``""`` as Genkit
    Python writes it; the wire converter keeps the ``""`` for the round trip).
    """

    snapshot_id: str
    session_id: str | None = None
    parent_id: str | None = attrs.field(default=None, converter=_parent)
    created_at: str = ""
    updated_at: str | None = None
    heartbeat_at: str | None = None
    status: SnapshotStatus | None = attrs.field(default=None, converter=_optional_status)
    finish_reason: FinishReason | None = attrs.field(default=None, converter=_optional_finish_reason)
    error: ErrorInfo | None = None
    state: SessionState | None = None
    extra: FrozenDict = _extra()

    @property
    def effective_status(self) -> SnapshotStatus:
        """The stored status, with absent read as completed."""
        return self.status if self.status is not None else SnapshotStatus.COMPLETED

    def status_at(self, now: datetime, heartbeat_timeout: timedelta) -> SnapshotStatus:
        """The status a reader sees at ``now``: a pending snapshot whose last sign of
        life (heartbeat, else last update, else creation) is older than
        ``heartbeat_timeout`` reads as expired."""
        status = self.effective_status
        if status is not SnapshotStatus.PENDING:
            return status
        last_seen = self.heartbeat_at or self.updated_at or self.created_at
        if not last_seen:
            return status
        from genkit_sessions.model.clock import parse_timestamp

        if now - parse_timestamp(last_seen) > heartbeat_timeout:
            return SnapshotStatus.EXPIRED
        return status


@attrs.frozen
class AgentInit:
    """What a client sends to start a turn: a session id, a snapshot id, or its own state."""

    session_id: str | None = None
    snapshot_id: str | None = None
    state: SessionState | None = None
