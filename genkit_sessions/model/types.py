"""The session model: frozen attrs classes mirroring Genkit's wire types.

Every class is immutable (free-form JSON is frozen, sequences are tuples), so a
store can hand out what it holds without copying. Classes that Genkit may
extend carry an ``extra`` mapping with the wire keys this version does not
know; the wire converter (``genkit_sessions.model.wire``) fills it on decode
and writes it back on encode, so nothing is lost in a round trip.
"""

from __future__ import annotations

import enum
import functools
import itertools
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar, Union, get_args, overload

import attrs

from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.frozen_json import MAX_WIRE_DEPTH, FrozenDict, JsonValue, freeze, text_problem

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
    "Messages",
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


def _invalid(where: str, problem: str, advice: str) -> GenkitError:
    """INVALID_ARGUMENT for a field; ``details`` say which (the wire decoder turns it into a JSON path)."""
    field = where.split(".", 1)[1] if "." in where else None
    return GenkitError(
        Status.INVALID_ARGUMENT,
        f"{where}: {problem}; {advice}",
        details={"field": field, "problem": problem},
        reason=Reason.INVALID_INPUT,
    )


def _where(instance: Any, attribute: attrs.Attribute[Any]) -> str:
    return f"{type(instance).__name__}.{attribute.name}"


def _kind(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def _frozen_mapping(value: Mapping[str, Any] | None, what: str = "extra") -> FrozenDict:
    if value is None or (isinstance(value, Mapping) and not value):
        return _NOTHING
    if not isinstance(value, Mapping):
        raise _invalid(what, f"must be a mapping of wire keys to JSON values, got {_kind(value)}", "pass a dict")
    frozen: FrozenDict = freeze(value, what)
    return frozen


def _extra(owner: str) -> Any:
    """Wire keys this version does not know, kept verbatim for the round trip. ``owner`` names the class
    (checked in the converter, so the common empty ``extra`` costs no validator call)."""

    def convert(value: Mapping[str, Any] | None) -> FrozenDict:
        if value is _NOTHING or value is None:  # the common case, first
            return _NOTHING
        frozen = _frozen_mapping(value)
        if frozen:
            _only_unknown_keys(globals()[owner], frozen)
        return frozen

    return attrs.field(default=_NOTHING, converter=convert, kw_only=True, repr=False)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def _folded(key: str) -> str:
    """A key with case and separators folded away, as the wire decoder compares near misses."""
    return key.replace("_", "").replace("-", "").replace(" ", "").casefold()


@functools.lru_cache(maxsize=64)
def _wire_keys(cls: Any) -> dict[str, str]:
    """The wire keys of ``cls``'s fields (``extra`` aside), each mapped to its field name."""
    return {_camel(f.name): f.name for f in attrs.fields(cls) if f.name != "extra"}


_KEPT_IN_EXTRA: dict[tuple[str, str], object] = {("SessionSnapshot", "parentId"): ""}
"""Known keys ``extra`` may hold, in the one form the wire decoder puts there (``parentId: ""``, a root as
Genkit Python writes it; the model's ``parent_id`` is None either way)."""


def _only_unknown_keys(cls: Any, value: FrozenDict) -> None:
    """``extra`` holds keys this version does not know: a known key there would make the object's JSON say
    something the object does not (a parent, messages), and the stores would disagree on what they keep.
    A part's ``extra`` holds no other part kind either (null aside, which reads as absent)."""
    known = _wire_keys(cls)
    where = f"{cls.__name__}.extra"
    for key, item in value.items():
        if key in known:
            kept = _KEPT_IN_EXTRA.get((cls.__name__, key), _NOTHING)
            if type(item) is type(kept) and item == kept:
                continue
            raise _invalid(
                where,
                f"holds {key!r}, a key {cls.__name__} knows",
                f"set the field {known[key]!r} instead; extra is for wire keys this version does not know",
            )
        meant = next((k for k in known if _folded(k) == _folded(key)), None)
        if meant is not None:
            raise _invalid(
                where,
                f"holds {key!r}, which looks like the key {meant!r} (JSON holding it is refused)",
                f"set the field {known[meant]!r} instead, or give the key another name",
            )
        kind = _PART_KINDS.get(key) if cls in _PART_KINDS.values() else None
        if kind is not None and kind is not cls and item is not None:
            raise _invalid(
                where,
                f"holds the part kind {key!r}; a part holds exactly one kind",
                f"make it a {kind.__name__} of its own",
            )


def _json(name: str) -> Any:
    """A free-form JSON field, frozen and checked (see :func:`~genkit_sessions.model.frozen_json.json_problem`)."""
    return attrs.field(default=None, converter=lambda value: freeze(value, name))


def _text(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A string of valid Unicode (strings are the only scalars both stores keep byte for byte)."""
    if not isinstance(value, str):
        raise _invalid(_where(instance, attribute), f"must be a string, got {_kind(value)}", "pass a str")
    problem = text_problem(value)
    if problem is not None:
        raise _invalid(_where(instance, attribute), problem, "pass well-formed text")


def _optional_text(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None:
        _text(instance, attribute, value)


def _optional_string(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An id field: a string or None here; the id rules (section 4) are the store's and the resolver's,
    so each reports its own reason (INVALID_SNAPSHOT_ID, INVALID_SESSION_ID)."""
    if value is not None and not isinstance(value, str):
        raise _invalid(_where(instance, attribute), f"must be a string id or None, got {_kind(value)}", "pass a str")


def _string(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str):
        raise _invalid(_where(instance, attribute), f"must be a string id, got {_kind(value)}", "pass a str")


def _optional_bool(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, bool):
        raise _invalid(_where(instance, attribute), f"must be True, False or None, got {_kind(value)}", "pass a bool")


_Model = TypeVar("_Model")


def replace_checked(instance: _Model, **changes: Any) -> _Model:
    """``attrs.evolve(instance, **changes)`` without running converters and validators again: for
    changes the caller has already checked (a store's own stamps, ids it validated), on an object that
    was checked when it was made. Every frozen model object can only be made checked, so a copy is too."""
    cls: Any = type(instance)
    copy: _Model = _copier(cls)(instance, changes)
    return copy


@functools.lru_cache(maxsize=64)
def _copier(cls: Any) -> Callable[[Any, dict[str, Any]], Any]:
    """A function copying an instance of the attrs class ``cls`` field by field, with changes: straight-line
    code writing each slot through its descriptor (what ``object.__setattr__`` does, without the lookup)."""
    names = [field.name for field in attrs.fields(cls)]
    setters: dict[str, Any] = {"new": object.__new__, "cls": cls}
    lines = ["def copy(instance, changes):", "    made = new(cls)"]
    for index, name in enumerate(names):
        setters[f"set{index}"] = slot_setter(cls, name)
        lines.append(f"    set{index}(made, changes[{name!r}] if {name!r} in changes else instance.{name})")
    lines.append("    return made")
    exec("\n".join(lines), setters)  # the names are the class's own field names
    made: Callable[[Any, dict[str, Any]], Any] = setters["copy"]
    return made


def slot_setter(cls: Any, name: str) -> Callable[[Any, Any], None]:
    """What writes field ``name`` of the attrs class ``cls`` on a new instance without its checks: the
    slot descriptor's own ``__set__`` (what ``object.__setattr__`` finds by name, without the lookup),
    or ``object.__setattr__`` for a field with no slot."""
    slot: Any = next((k.__dict__[name] for k in cls.__mro__ if name in k.__dict__), None)
    return slot.__set__ if hasattr(slot, "__set__") else _object_setter(name)


def _object_setter(name: str) -> Callable[[Any, Any], None]:
    def set_field(target: Any, value: Any) -> None:
        object.__setattr__(target, name, value)

    return set_field


@functools.lru_cache(maxsize=4096)
def _is_timestamp(value: str) -> bool:
    """Whether ``value`` parses as an ISO-8601 timestamp (remembered: a snapshot's stamps are checked each
    time a copy of it is made)."""
    from genkit_sessions.model.clock import parse_timestamp

    try:
        parse_timestamp(value)
    except ValueError:
        return False
    return True


def _timestamp(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An ISO-8601 timestamp; ``""`` (created_at only) means "the store fills it in"."""
    if value is None and attribute.name != "created_at":
        return
    _text(instance, attribute, value)
    if value == "" and attribute.name == "created_at":
        return
    if not _is_timestamp(value):
        raise _invalid(
            _where(instance, attribute),
            f"{value!r} is not an ISO-8601 timestamp",
            "pass one such as '2026-01-31T12:00:00.000000Z', or leave it unset for the store to stamp",
        ) from None


def _instance(kind: type, label: str, optional: bool = False) -> Any:
    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is None and optional:
            return
        if not isinstance(value, kind):
            raise _invalid(
                _where(instance, attribute),
                f"must be {label}{' or None' if optional else ''}, got {_kind(value)}",
                f"build one with {kind.__name__}(...) or decode JSON with from_wire({kind.__name__}, data)",
            )

    return check


def _members(kinds: Callable[[], tuple[type, ...]], label: str) -> Any:
    """Every member of a tuple field is one of ``kinds()`` (a function, so later classes can be named)."""

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is None:
            return
        allowed = kinds()
        for index, item in enumerate(value):
            if not isinstance(item, allowed):
                raise _invalid(
                    f"{_where(instance, attribute)}[{index}]",
                    f"must be {label}, got {_kind(item)}",
                    f"pass a sequence of {label} objects (from_wire decodes JSON into them)",
                )

    return check


def _tuple(value: Iterable[Any]) -> tuple[Any, ...]:
    if isinstance(value, tuple):
        return value
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise _invalid(
            "a sequence field",
            f"must be a list or tuple, got {_kind(value)}",
            "wrap a single item in a list: [item]",
        )
    return tuple(value)


def _optional_tuple(value: Iterable[Any] | None) -> tuple[Any, ...] | None:
    return None if value is None else _tuple(value)


def _role(value: Role | str) -> Role | str:
    """One of the four known roles as the enum member; any other string kept as it is."""
    if isinstance(value, Role):
        return value
    if not isinstance(value, str):
        raise _invalid(
            "Message.role", f"must be a string, got {_kind(value)}", "pass 'user', 'model', 'system' or 'tool'"
        )
    return _ROLES.get(value, value)


def _parent(value: str | None) -> str | None:
    """``""`` is how Genkit Python writes "no parent" for a root: read it as None."""
    return None if value == "" else value


def _enum_member(kind: type[enum.Enum], field: str) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if value is None or isinstance(value, kind):
            return value
        if isinstance(value, str):
            try:
                return kind(value)
            except ValueError:
                pass
        allowed = ", ".join(repr(m.value) for m in kind)
        raise _invalid(field, f"{value!r} is not one of {allowed}", f"pass one of them or a {kind.__name__} member")

    return convert


_status_member = _enum_member(SnapshotStatus, "status")
_finish_reason_member = _enum_member(FinishReason, "finish_reason")


def _optional_status(value: SnapshotStatus | str | None) -> SnapshotStatus | None:
    status: SnapshotStatus | None = _status_member(value)
    return status


def _optional_finish_reason(value: FinishReason | str | None) -> FinishReason | None:
    reason: FinishReason | None = _finish_reason_member(value)
    return reason


def _unknown_fields(value: Mapping[str, Any]) -> FrozenDict:
    fields = _frozen_mapping(value, "UnknownPart.fields")
    for key, item in fields.items():
        kind = _PART_KINDS.get(key) or (CustomPart if key == "custom" else None)
        if kind is not None and item is not None:
            raise _invalid(
                "UnknownPart.fields",
                f"holds the known part kind {key!r}",
                f"make it a {kind.__name__}; UnknownPart is for kinds this version does not know",
            )
        meant = next((k for k in _FOLDED_KIND_KEYS if _folded(k) == _folded(key) and k != key), None)
        if meant is not None:
            raise _invalid(
                "UnknownPart.fields",
                f"holds {key!r}, which looks like the part key {meant!r} (JSON holding it is refused)",
                f"send {meant!r} (keys are camelCase), or give the key another name",
            )
    return fields


# --- how deeply parts nest ------------------------------------------------------------------

MAX_PART_DEPTH = MAX_WIRE_DEPTH - 5
"""How many levels of JSON objects and arrays one part may nest, itself included: a part sits 5 levels
down in a snapshot's JSON (snapshot, state, messages, message, content; or artifacts, artifact, parts),
so a snapshot holding it stays within :data:`~genkit_sessions.model.wire.MAX_WIRE_DEPTH`, the depth the
wire decoder reads. Only tool responses (``content`` of parts) can nest parts in parts."""


def _json_height(value: Any) -> int:
    """How many levels of objects and arrays a frozen JSON value nests (0 for a scalar)."""
    if isinstance(value, FrozenDict):
        if value._height is not None:
            return value._height
        return 1 + max((_json_height(v) for v in value.values()), default=0)
    if isinstance(value, tuple):
        return 1 + max((_json_height(v) for v in value), default=0)
    return 0


def _wire_height(obj: Any) -> int:
    """How many levels of objects and arrays ``obj``'s wire JSON nests: a model object is an object whose
    ``extra`` keys sit beside its fields, a tuple of model objects an array."""
    if isinstance(obj, UnknownPart):
        return max(1, _json_height(obj.fields))
    if isinstance(obj, (tuple, Messages)):
        return 1 + max((_wire_height(v) for v in obj), default=0)
    if not attrs.has(type(obj)):
        return _json_height(obj)
    height = 0
    for field in attrs.fields(type(obj)):
        value = getattr(obj, field.name)
        if field.name == "extra":
            height = max(height, max((_json_height(v) for v in value.values()), default=0))
        elif value is not None and not isinstance(value, str):
            height = max(height, _wire_height(value))
    return 1 + height


def _shallow_enough(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A tool response whose parts nest so deeply that a snapshot holding it could not be read back is
    refused when it is built (its JSON would be deeper than the wire decoder reads)."""
    if not value:
        return
    height = _wire_height(instance)
    if height > MAX_PART_DEPTH - 1:
        raise _invalid(
            _where(instance, attribute),
            f"nests {height + 1} levels of JSON objects and arrays as a part; a part may nest at most "
            f"{MAX_PART_DEPTH}, so that a snapshot holding it stays within the {MAX_WIRE_DEPTH} levels the "
            "wire format reads",
            "nest fewer tool responses inside one another, or carry the deep data as text",
        )


# --- parts ---------------------------------------------------------------------------------


@attrs.frozen
class Media:
    """A media reference: a URL (often a data: URL) and its content type."""

    url: str = attrs.field(validator=_text)
    content_type: str | None = attrs.field(default=None, validator=_optional_text)
    extra: FrozenDict = _extra("Media")


@attrs.frozen
class ToolRequest:
    """A model's request to call a tool. ``partial`` marks a request still being streamed."""

    name: str = attrs.field(validator=_text)
    ref: str | None = attrs.field(default=None, validator=_optional_text)
    input: JsonValue = _json("input")
    partial: bool | None = attrs.field(default=None, validator=_optional_bool)
    extra: FrozenDict = _extra("ToolRequest")


@attrs.frozen
class ToolResponse:
    """A tool's answer to a :class:`ToolRequest`: its JSON ``output`` and, for tools that
    answer with rich content (text, media), ``content`` as parts."""

    name: str = attrs.field(validator=_text)
    ref: str | None = attrs.field(default=None, validator=_optional_text)
    output: JsonValue = _json("output")
    content: tuple[Part, ...] | None = attrs.field(
        default=None,
        converter=_optional_tuple,
        validator=[_members(lambda: PART_TYPES, "a part"), _shallow_enough],
    )
    extra: FrozenDict = _extra("ToolResponse")


@attrs.frozen
class Resource:
    """A reference to an external resource by URI."""

    uri: str = attrs.field(validator=_text)
    extra: FrozenDict = _extra("Resource")


@attrs.frozen
class TextPart:
    """Plain text."""

    text: str = attrs.field(validator=_text)
    metadata: JsonValue = _json("metadata")
    custom: JsonValue = _json("custom")
    extra: FrozenDict = _extra("TextPart")


@attrs.frozen
class MediaPart:
    """An image, audio or other media item."""

    media: Media = attrs.field(validator=_instance(Media, "a Media"))
    metadata: JsonValue = _json("metadata")
    custom: JsonValue = _json("custom")
    extra: FrozenDict = _extra("MediaPart")


@attrs.frozen
class ToolRequestPart:
    """A tool call requested by the model."""

    tool_request: ToolRequest = attrs.field(validator=_instance(ToolRequest, "a ToolRequest"))
    metadata: JsonValue = _json("metadata")
    custom: JsonValue = _json("custom")
    extra: FrozenDict = _extra("ToolRequestPart")


@attrs.frozen
class ToolResponsePart:
    """The result of a tool call."""

    tool_response: ToolResponse = attrs.field(validator=_instance(ToolResponse, "a ToolResponse"))
    metadata: JsonValue = _json("metadata")
    custom: JsonValue = _json("custom")
    extra: FrozenDict = _extra("ToolResponsePart")


@attrs.frozen
class DataPart:
    """Structured JSON data."""

    data: JsonValue = _json("data")
    metadata: JsonValue = _json("metadata")
    custom: JsonValue = _json("custom")
    extra: FrozenDict = _extra("DataPart")


@attrs.frozen
class CustomPart:
    """Plugin-defined content."""

    custom: JsonValue = _json("custom")
    metadata: JsonValue = _json("metadata")
    extra: FrozenDict = _extra("CustomPart")


@attrs.frozen
class ReasoningPart:
    """A model's reasoning text."""

    reasoning: str = attrs.field(validator=_text)
    metadata: JsonValue = _json("metadata")
    custom: JsonValue = _json("custom")
    extra: FrozenDict = _extra("ReasoningPart")


@attrs.frozen
class ResourcePart:
    """A reference to a resource."""

    resource: Resource = attrs.field(validator=_instance(Resource, "a Resource"))
    metadata: JsonValue = _json("metadata")
    custom: JsonValue = _json("custom")
    extra: FrozenDict = _extra("ResourcePart")


@attrs.frozen
class UnknownPart:
    """A part of a kind this version does not know, kept exactly as it came."""

    fields: FrozenDict = attrs.field(converter=_unknown_fields)


_PART_KINDS: dict[str, type] = {
    "text": TextPart,
    "media": MediaPart,
    "toolRequest": ToolRequestPart,
    "toolResponse": ToolResponsePart,
    "data": DataPart,
    "reasoning": ReasoningPart,
    "resource": ResourcePart,
}
"""The exclusive part kinds by wire key. ``custom`` is not one of them: as in Genkit's schema, it may ride
on any other kind (kept in that part's ``extra``), and is the kind only when it is alone."""

_FOLDED_KIND_KEYS = (*_PART_KINDS, "custom", "metadata")
"""The keys an unknown part may not hold a near miss of (the wire decoder refuses them)."""


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

PART_TYPES: tuple[type, ...] = get_args(Part)
"""The part classes, for ``isinstance`` checks."""


# --- messages, artifacts, state -------------------------------------------------------------


@attrs.frozen
class Message:
    """One message of a conversation.

    ``role`` is a :class:`Role` for the four roles Genkit defines and the plain
    string for any other (Genkit accepts any role string, so we keep it)."""

    role: Role | str = attrs.field(converter=_role, validator=_text)
    content: tuple[Part, ...] = attrs.field(converter=_tuple, validator=_members(lambda: PART_TYPES, "a part"))
    metadata: JsonValue = _json("metadata")
    extra: FrozenDict = _extra("Message")

    @classmethod
    def of_text(cls, role: Role | str, text: str) -> Message:
        """A message holding a single text part."""
        return cls(role=role, content=(TextPart(text),))

    @property
    def text(self) -> str:
        """The concatenated text of the message's text parts."""
        return "".join(p.text for p in self.content if isinstance(p, TextPart))


class Messages(Sequence[Message]):
    """An immutable sequence of messages that a child snapshot shares with its parent.

    It reads like a tuple (``len``, indexing, slicing, iteration, ``==`` with tuples and other
    ``Messages``, ``hash``), and ``messages + more`` returns a new ``Messages``. When ``messages``
    ends where its backing list ends (the usual case: a chat's newest turn extends its leaf), the
    new sequence shares that list and only the added messages are stored, so a chain of n
    snapshots costs O(n) memory, not O(n^2) pointers. Otherwise (a fork: a second child of one
    snapshot, or a turn from an older one) the new sequence copies the prefix once and grows its
    own list. Nothing can change the messages a ``Messages`` holds: the backing list only ever
    grows past every view's end, under a lock. Every item is checked to be a :class:`Message`.
    """

    __slots__ = ("_items", "_length")

    _items: list[Message]
    _length: int

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        if isinstance(messages, (str, bytes, bytearray, Mapping, Message)) or not isinstance(messages, Iterable):
            raise _invalid(
                "Messages",
                f"takes an iterable of Message, got {_kind(messages)}",
                "wrap a single message in a list: Messages([message])",
            )
        items = list(messages)
        _check_messages(items, 0, "Messages")
        self._items = items
        self._length = len(items)

    @classmethod
    def _of(cls, items: list[Message], length: int) -> Messages:
        """A view of the first ``length`` items of ``items`` (checked by the caller)."""
        view: Messages = object.__new__(cls)
        view._items = items
        view._length = length
        return view

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Message, ...]: ...

    def __getitem__(self, index: int | slice) -> Message | tuple[Message, ...]:
        """One message, or a slice as a tuple (as a tuple's slice is)."""
        length = self._length
        if isinstance(index, slice):
            start, stop, step = index.indices(length)
            if step > 0:
                return tuple(self._items[start:stop:step])
            items = self._items
            return tuple(items[i] for i in range(start, stop, step))  # a negative stop is no index here
        try:
            position = index.__index__()
        except AttributeError:
            raise TypeError(f"Messages indices must be integers or slices, not {type(index).__name__}") from None
        if position < 0:
            position += length
        if not 0 <= position < length:
            raise IndexError("Messages index out of range")
        return self._items[position]

    def __iter__(self) -> Iterator[Message]:
        # Always bounded by this view's length: the backing list may grow (another view extending it)
        # while the iteration runs, and what it adds is not this sequence's.
        return itertools.islice(self._items, self._length)

    def __reversed__(self) -> Iterator[Message]:
        items = self._items
        return (items[i] for i in range(self._length - 1, -1, -1))

    def __contains__(self, value: object) -> bool:
        return any(item is value or item == value for item in self)

    def __add__(self, other: object) -> Messages:
        if isinstance(other, Messages):
            more: list[Message] = list(other)
        elif isinstance(other, tuple):
            more = list(other)
            _check_messages(more, self._length, "Messages")
        else:
            return NotImplemented
        return self._extended(more)

    def __radd__(self, other: object) -> Messages:
        if not isinstance(other, tuple):
            return NotImplemented
        return Messages((*other, *self))

    def extends(self, prefix: Messages) -> bool:
        """Whether this sequence begins with the very messages of ``prefix`` because both are views of one
        backing list (a chat's turn and the turns before it are): known at once, without comparing a
        message. False says nothing more: the two may still agree message by message."""
        return prefix._items is self._items and prefix._length <= self._length

    def _extended(self, more: list[Message]) -> Messages:
        """This sequence followed by ``more`` (checked), sharing the backing list when this view ends where
        it ends."""
        if not more:
            return self
        length = self._length
        if length:
            items = self._items
            with _GROWING:
                if len(items) == length:
                    items.extend(more)
                    return Messages._of(items, length + len(more))
            copied = items[:length]
        else:
            copied = []
        copied.extend(more)
        return Messages._of(copied, len(copied))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Messages):
            if other._length != self._length:
                return False
            if other._items is self._items:
                return True
        elif isinstance(other, tuple):
            if len(other) != self._length:
                return False
        else:
            return NotImplemented
        return all(a is b or a == b for a, b in zip(self, other, strict=True))

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Messages({list(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Messages, (tuple(self),))

    def __copy__(self) -> Messages:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Messages:
        return self  # immutable, and so are the messages it holds


_GROWING = threading.Lock()
"""Held while a :class:`Messages` checks that it ends where its backing list ends and extends it."""


def _check_messages(items: Sequence[Any], offset: int, where: str) -> None:
    for index, item in enumerate(items):
        if not isinstance(item, Message):
            raise _invalid(
                f"{where}[{offset + index}]",
                f"must be a Message, got {_kind(item)}",
                "pass a sequence of Message objects (from_wire decodes JSON into them)",
            )


def _messages(value: Iterable[Message] | None) -> Messages | None:
    """``SessionState.messages``: any sequence of messages, held as :class:`Messages` (kept as it is when it
    already is one)."""
    if value is None or type(value) is Messages:
        return value
    items = _tuple(value)
    _check_messages(items, 0, "SessionState.messages")
    return Messages._of(list(items), len(items))


EMPTY_MESSAGES = Messages()


@attrs.frozen
class Artifact:
    """A named output of the session, such as a generated file."""

    parts: tuple[Part, ...] = attrs.field(converter=_tuple, validator=_members(lambda: PART_TYPES, "a part"))
    name: str | None = attrs.field(default=None, validator=_optional_text)
    metadata: JsonValue = _json("metadata")
    extra: FrozenDict = _extra("Artifact")


@attrs.frozen
class SessionState:
    """What a session carries from turn to turn: messages, custom JSON state, artifacts.

    ``None`` means the key is absent on the wire (Genkit writers omit empty
    fields); use :attr:`message_list` and :attr:`artifact_list` to read them as
    tuples.
    """

    session_id: str | None = attrs.field(default=None, validator=_optional_string)
    messages: Messages | None = attrs.field(default=None, converter=_messages)
    custom: JsonValue = _json("custom")
    artifacts: tuple[Artifact, ...] | None = attrs.field(
        default=None, converter=_optional_tuple, validator=_members(lambda: (Artifact,), "an Artifact")
    )
    extra: FrozenDict = _extra("SessionState")

    @property
    def message_list(self) -> Messages:
        """The messages, or an empty :class:`Messages` when there are none."""
        messages = self.messages
        return EMPTY_MESSAGES if messages is None else messages

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

    status: str | None = attrs.field(default=None, validator=_optional_text)
    message: str = attrs.field(kw_only=True, validator=_text)
    details: JsonValue = _json("details")
    extra: FrozenDict = _extra("ErrorInfo")


# --- snapshots and init ----------------------------------------------------------------------


@attrs.frozen
class SessionSnapshot:
    """An immutable capture of a session after a turn: one node of the session tree.

    ``status`` of ``None`` is how old writers say completed; read
    :attr:`effective_status` or :meth:`status_at` instead of the raw field.
    ``created_at`` is filled by the store on the first write (until then ``""``: the wire form of
    such a snapshot has no ``createdAt``, and does not decode until it is saved). ``parent_id`` is
    None for a root, however the wire said it (absent, or ``""`` as Genkit
    Python writes it; the wire converter keeps the ``""`` for the round trip).
    """

    snapshot_id: str = attrs.field(validator=_string)
    session_id: str | None = attrs.field(default=None, validator=_optional_string)
    parent_id: str | None = attrs.field(default=None, converter=_parent, validator=_optional_string)
    created_at: str = attrs.field(default="", validator=_timestamp)
    updated_at: str | None = attrs.field(default=None, validator=_timestamp)
    heartbeat_at: str | None = attrs.field(default=None, validator=_timestamp)
    status: SnapshotStatus | None = attrs.field(default=None, converter=_optional_status)
    finish_reason: FinishReason | None = attrs.field(default=None, converter=_optional_finish_reason)
    error: ErrorInfo | None = attrs.field(default=None, validator=_instance(ErrorInfo, "an ErrorInfo", optional=True))
    state: SessionState | None = attrs.field(
        default=None, validator=_instance(SessionState, "a SessionState", optional=True)
    )
    extra: FrozenDict = _extra("SessionSnapshot")

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


@attrs.frozen(init=False)
class AgentInit:
    """What a client sends to start a turn: a session id, a snapshot id, or its own state."""

    session_id: str | None = attrs.field(default=None, validator=_optional_string)
    snapshot_id: str | None = attrs.field(default=None, validator=_optional_string)
    state: SessionState | None = attrs.field(
        default=None, validator=_instance(SessionState, "a SessionState", optional=True)
    )

    def __init__(
        self, session_id: str | None = None, snapshot_id: str | None = None, state: SessionState | None = None
    ) -> None:
        # Made once a turn: the common case (ids that are strings or None) is checked inline; anything
        # else goes through the fields' own validators, which say what is wrong.
        if not (
            (session_id is None or type(session_id) is str)
            and (snapshot_id is None or type(snapshot_id) is str)
            and (state is None or type(state) is SessionState)
        ):
            fields = attrs.fields(AgentInit)
            _optional_string(self, fields.session_id, session_id)
            _optional_string(self, fields.snapshot_id, snapshot_id)
            _instance(SessionState, "a SessionState", optional=True)(self, fields.state, state)
        _SET_INIT_SESSION_ID(self, session_id)
        _SET_INIT_SNAPSHOT_ID(self, snapshot_id)
        _SET_INIT_STATE(self, state)


# The slots' own setters (what object.__setattr__ finds by name), for the AgentInit made on every turn.
_SET_INIT_SESSION_ID = slot_setter(AgentInit, "session_id")
_SET_INIT_SNAPSHOT_ID = slot_setter(AgentInit, "snapshot_id")
_SET_INIT_STATE = slot_setter(AgentInit, "state")
