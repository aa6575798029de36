"""Genkit's camelCase JSON wire format, owned by one cattrs converter.

``from_wire`` decodes strictly (wrong types are errors, not coerced) and keeps
every key it does not know in the object's ``extra`` mapping; ``to_wire``
writes those keys back, so ``to_wire(from_wire(cls, data)) == data`` for any
Genkit JSON. A key whose value is ``null`` reads as absent, as Genkit's own
schemas treat it. :class:`AgentInit` is the exception to keeping unknown keys:
a client typing ``sessionID`` gets INVALID_ARGUMENT rather than a silently
fresh session.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping
from types import UnionType
from typing import Any, TypeVar, Union, get_args, get_origin

import attrs
import cattrs
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
)
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.clock import parse_timestamp
from genkit_sessions.model.frozen_json import MAX_WIRE_DEPTH, FrozenDict, JsonObject, json_problem, short_path, thaw
from genkit_sessions.model.types import (
    _PART_KINDS,
    _ROLES,
    AgentInit,
    CustomPart,
    FinishReason,
    Message,
    Messages,
    Part,
    Role,
    SessionSnapshot,
    SnapshotStatus,
    TextPart,
    UnknownPart,
)

__all__ = ["MAX_WIRE_DEPTH", "converter", "from_wire", "messages_from_wire", "to_wire"]

T = TypeVar("T")

converter = cattrs.Converter(unstruct_collection_overrides={tuple: list}, detailed_validation=True)
"""The converter that owns the wire format. Use :func:`to_wire` / :func:`from_wire`."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


# Strict scalars: cattrs would otherwise turn 123 into "123".
def _strict(kind: type, label: str) -> Callable[[Any, Any], Any]:
    def structure(value: Any, _: Any) -> Any:
        if type(value) is bool and kind is not bool:
            raise TypeError(f"expected {label}, got a boolean")
        if not isinstance(value, kind):
            raise TypeError(f"expected {label}, got {_json_kind(value)}")
        return value

    return structure


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "an array"
    return type(value).__name__


converter.register_structure_hook(str, _strict(str, "a string"))
converter.register_structure_hook(bool, _strict(bool, "a boolean"))
converter.register_unstructure_hook(FrozenDict, thaw)


def _structure_enum(value: Any, cls: type[enum.Enum]) -> Any:
    try:
        return cls(value)
    except ValueError:
        allowed = ", ".join(repr(m.value) for m in cls)
        raise ValueError(f"{value!r} is not one of {allowed}") from None


def _structure_role(value: Any, _: Any) -> Role | str:
    if type(value) is not str:
        raise TypeError(f"expected a string, got {_json_kind(value)}")
    return _ROLES.get(value, value)


# A message role: the enum member for the four known roles, any other string kept as it is.
converter.register_structure_hook_func(lambda t: t == Union[Role, str], _structure_role)  # noqa: UP007

for _enum in (Role, SnapshotStatus, FinishReason):
    # Registered per class: these are str subclasses, so the str hook would otherwise win.
    converter.register_structure_hook(_enum, _structure_enum)
    converter.register_unstructure_hook(_enum, lambda member: member.value)


def _structure_messages(data: Any, _: Any) -> Messages:
    return Messages(converter.structure(data, tuple[Message, ...]))


# A message history is a JSON array; in the model, a :class:`Messages` (a tuple-like shared sequence).
converter.register_structure_hook(Messages, _structure_messages)
converter.register_unstructure_hook(Messages, lambda messages: [converter.unstructure(m, Message) for m in messages])


# --- classes with an ``extra`` field keep unknown keys --------------------------------------

_REQUIRED_KEYS: dict[type, tuple[str, ...]] = {SessionSnapshot: ("snapshotId", "createdAt")}
_KEPT_FORMS: dict[type, tuple[tuple[str, Any], ...]] = {SessionSnapshot: (("parentId", ""),)}
"""Wire values the model reads as absent but the JSON keeps: ``parentId: ""`` is a root as Genkit
Python writes it. The model holds None; ``extra`` keeps the ``""`` so the round trip is exact."""
_TIMESTAMP_FIELDS: dict[type, tuple[str, ...]] = {SessionSnapshot: ("created_at", "updated_at", "heartbeat_at")}


def _has_extra(cls: Any) -> bool:
    return attrs.has(cls) and any(f.name == "extra" for f in attrs.fields(cls))


def _is_array(field_type: Any) -> bool:
    """True for ``tuple[X, ...]`` and ``tuple[X, ...] | None``: fields whose JSON is an array."""
    if get_origin(field_type) is tuple or field_type is Messages:
        return True
    return get_origin(field_type) in (Union, UnionType) and any(_is_array(arg) for arg in get_args(field_type))


def _at_field(exc: Exception, name: str, cls: type) -> Exception:
    """Tag ``exc`` with the attribute it is about, as cattrs does, so the error names its JSON path."""
    exc.__notes__ = [AttributeValidationNote(f"Structuring {cls.__name__} @ attribute {name}", name, cls)]  # type: ignore[attr-defined]
    return exc


def _folded(key: str) -> str:
    """A key with case and separators folded away: ``sessionID``, ``session_id`` and ``Session-Id`` agree."""
    return key.replace("_", "").replace("-", "").replace(" ", "").casefold()


def near_miss(key: str, known: Mapping[str, str]) -> str | None:
    """The known key ``key`` is a near miss of (same letters, other case or separators), or None."""
    found = known.get(_folded(key))
    return found if found is not None and found != key else None


def _near_miss_error(cls: type, key: str, meant: str) -> Exception:
    what = "a part kind" if cls is UnknownPart else f"a {cls.__name__} field"
    return ValueError(f"the key {key!r} is not {what} but looks like {meant!r}; keys are camelCase: send {meant!r}")


def _extra_structure_factory(cls: type) -> Callable[[Any, Any], Any]:
    wire_fields = [f for f in attrs.fields(attrs.resolve_types(cls)) if f.name != "extra"]
    known = frozenset(_camel(f.name) for f in wire_fields)
    folded = {_folded(k): k for k in known}
    # cattrs would read any iterable as an array (an object as its keys), so arrays are checked here.
    arrays = tuple((_camel(f.name), f.name) for f in wire_fields if _is_array(f.type))
    required = _REQUIRED_KEYS.get(cls, ())
    timestamps = _TIMESTAMP_FIELDS.get(cls, ())
    kept_forms = _KEPT_FORMS.get(cls, ())
    base: Callable[[Any, Any], Any] = make_dict_structure_fn(
        cls,
        converter,
        extra=override(omit=True),
        **{f.name: override(rename=_camel(f.name)) for f in wire_fields},  # type: ignore[arg-type]
    )

    def structure(data: Any, _: Any) -> Any:
        if not isinstance(data, Mapping):
            raise TypeError(f"expected a JSON object for {cls.__name__}, got {_json_kind(data)}")
        for key in required:
            if data.get(key) is None:
                raise ValueError(f"{cls.__name__} requires the key {key!r}")
        not_arrays = [
            _at_field(TypeError(f"expected an array, got {_json_kind(data[key])}"), name, cls)
            for key, name in arrays
            if data.get(key) is not None and not isinstance(data[key], (list, tuple))
        ]
        if not_arrays:
            raise ClassValidationError(f"While structuring {cls.__name__}", not_arrays, cls)
        obj = base(data, cls)
        for name in timestamps:
            text = getattr(obj, name)
            if text is not None:
                try:
                    parse_timestamp(text)
                except ValueError as exc:
                    raise ValueError(f"{exc} at key {_camel(name)!r}") from None
        unknown = {k: v for k, v in data.items() if k not in known}
        for key in unknown:
            meant = near_miss(key, folded)
            if meant is not None:
                raise _near_miss_error(cls, key, meant)
        for key, form in kept_forms:
            if key in data and type(data[key]) is type(form) and data[key] == form:
                unknown[key] = form
        return attrs.evolve(obj, extra=unknown) if unknown else obj

    return structure


def _extra_unstructure_factory(cls: type) -> Callable[[Any], Any]:
    wire_fields = [f for f in attrs.fields(cls) if f.name != "extra"]
    base: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(
        cls,
        converter,
        _cattrs_omit_if_default=True,
        extra=override(omit=True),
        **{f.name: override(rename=_camel(f.name)) for f in wire_fields},  # type: ignore[arg-type]
    )

    def unstructure(obj: Any) -> dict[str, Any]:
        data = base(obj)
        for key, value in obj.extra.items():
            data.setdefault(key, thaw(value))
        return data

    return unstructure


converter.register_structure_hook_factory(_has_extra, _extra_structure_factory)
converter.register_unstructure_hook_factory(_has_extra, _extra_unstructure_factory)


# --- parts: exactly one kind key decides the class -------------------------------------------

_FOLDED_PART_KINDS = {_folded(kind): kind for kind in (*_PART_KINDS, "custom", "metadata")}


def _structure_part(data: Any, _: Any) -> Any:
    if not isinstance(data, Mapping):
        raise TypeError(f"expected a JSON object for a part, got {_json_kind(data)}")
    kinds = [key for key in _PART_KINDS if data.get(key) is not None]
    if len(kinds) > 1:
        raise ValueError(
            f"a part holds exactly one of {', '.join(_PART_KINDS)} (custom may ride on any); "
            f"this one holds {', '.join(kinds)}"
        )
    if kinds:
        return converter.structure(data, _PART_KINDS[kinds[0]])
    if data.get("custom") is not None:
        return converter.structure(data, CustomPart)
    for key in data:
        meant = near_miss(key, _FOLDED_PART_KINDS)
        if meant is not None:
            raise _near_miss_error(UnknownPart, key, meant)
    return UnknownPart(data)


converter.register_structure_hook(Part, _structure_part)
converter.register_structure_hook(UnknownPart, lambda data, _: UnknownPart(data))
converter.register_unstructure_hook(UnknownPart, lambda part: thaw(part.fields))


# --- AgentInit: strict, unknown keys are errors ----------------------------------------------

converter.register_structure_hook(
    AgentInit,
    make_dict_structure_fn(
        AgentInit,
        converter,
        _cattrs_forbid_extra_keys=True,
        session_id=override(rename="sessionId"),
        snapshot_id=override(rename="snapshotId"),
    ),
)
converter.register_unstructure_hook(
    AgentInit,
    make_dict_unstructure_fn(
        AgentInit,
        converter,
        _cattrs_omit_if_default=True,
        session_id=override(rename="sessionId"),
        snapshot_id=override(rename="snapshotId"),
    ),
)


# --- public helpers --------------------------------------------------------------------------


def to_wire(obj: object) -> JsonObject:
    """Encode a model object (a snapshot, a state, a message, a part, an init, an error) as Genkit's
    camelCase JSON: a plain ``dict`` whose values are plain JSON (dicts, lists, strings, numbers)."""
    encoded: JsonObject = converter.unstructure(obj)
    return encoded


def messages_from_wire(data: list[Any]) -> tuple[Message, ...]:
    """Decode a JSON array of messages, as ``from_wire(Message, m)`` does for each.

    A message that is a role and text parts only (most of a chat history) is
    built directly, skipping the converter; anything else goes through it, so
    the result and the errors are exactly those of :func:`from_wire`.
    """
    return tuple(_plain_text_message(m) or from_wire(Message, m) for m in data)


def _plain_text_message(data: Any) -> Message | None:
    if type(data) is not dict or data.keys() != {"role", "content"}:
        return None
    role, content = data["role"], data["content"]
    if type(role) is not str or role not in _ROLES or type(content) is not list:
        return None
    parts = []
    for part in content:
        if type(part) is not dict or len(part) != 1 or type(part.get("text")) is not str:
            return None
        parts.append(TextPart(part["text"]))
    return Message(_ROLES[role], tuple(parts))


def from_wire(cls: type[T], data: Any) -> T:
    """Decode Genkit JSON into ``cls``.

    ``data`` is a parsed JSON value, or JSON text (``str`` / ``bytes``). Raises
    :class:`GenkitError` with INVALID_ARGUMENT (reason INVALID_INPUT) whose
    message names the JSON path of every bad field.
    """
    name = getattr(cls, "__name__", str(cls))
    if isinstance(data, (str, bytes, bytearray)):
        try:
            data = json.loads(data)
        except RecursionError:
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"{name} JSON nests objects and arrays thousands of levels deep at $; the limit is "
                f"{MAX_WIRE_DEPTH} levels: send a flatter document",
                reason=Reason.INVALID_INPUT,
            ) from None
        except ValueError as exc:
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"{name} is not valid JSON: {exc}; send a JSON object",
                reason=Reason.INVALID_INPUT,
            ) from None
    found = json_problem(data, "$", MAX_WIRE_DEPTH, check_text=False)
    if found is not None:
        where, problem = found
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"{name} JSON is invalid: {short_path(where)} {problem}; send JSON nested at most {MAX_WIRE_DEPTH} "
            "levels deep, with string keys and finite numbers",
            details={"problems": [f"{problem} at {where}"]},
            reason=Reason.INVALID_INPUT,
        )
    if attrs.has(cls) and not isinstance(data, Mapping):
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"{name} JSON is invalid: expected a JSON object at $, got {_json_kind(data)}; send a JSON object",
            details={"problems": [f"expected a JSON object, got {_json_kind(data)} at $"]},
            reason=Reason.INVALID_INPUT,
        )
    try:
        return converter.structure(data, cls)
    except (
        ClassValidationError,
        IterableValidationError,
        ForbiddenExtraKeysError,
        GenkitError,
        TypeError,
        ValueError,
    ) as exc:
        problems = _describe(exc, "$")
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"{name} JSON is invalid: {'; '.join(problems)}; fix the field(s) named and send it again",
            details={"problems": problems},
            reason=Reason.INVALID_INPUT,
        ) from None


def _describe(exc: BaseException, path: str) -> list[str]:
    """Flatten a cattrs error tree into ``"<problem> at <json path>"`` lines, camelCase keys."""
    if isinstance(exc, ForbiddenExtraKeysError):
        keys = ", ".join(sorted(exc.extra_fields))
        folded = {_folded(_camel(f.name)): _camel(f.name) for f in attrs.fields(exc.cl)}
        hints = [f"{k!r} looks like {near_miss(k, folded)!r}" for k in sorted(exc.extra_fields) if near_miss(k, folded)]
        hint = f"; {', '.join(hints)}" if hints else ""
        return [f"unknown key(s) {keys} at {path} (keys are camelCase: sessionId, snapshotId, state{hint})"]
    if isinstance(exc, (ClassValidationError, IterableValidationError)):
        lines: list[str] = []
        with_notes, without_notes = exc.group_exceptions()
        for sub in without_notes:
            lines.extend(_describe(sub, path))
        for sub, note in with_notes:
            if isinstance(exc, IterableValidationError):
                step = f"{path}[{note.index}]"
            else:
                step = f"{path}.{_camel(note.name)}"  # type: ignore[union-attr]
            lines.extend(_describe(sub, step))
        return lines
    if isinstance(exc, KeyError):
        return [f"a required key is missing at {path}"]
    if isinstance(exc, GenkitError):
        details = exc.details if isinstance(exc.details, Mapping) else {}
        field = details.get("field")
        if isinstance(field, str) and "problem" in details:
            head, inner = field.split("[")[0].split(".")[0], details.get("inner", "")
            # Keys kept in ``extra`` (and an unknown part's fields) sit in the object itself on the wire.
            kept = head == "extra" or field.startswith("UnknownPart.fields")
            step = f"{path}{inner}" if kept else f"{path}.{_camel(head)}{inner}"
            return [f"{details['problem']} at {short_path(step)}"]
        return [f"{exc.message} at {path}"]
    return [f"{exc} at {path}"]
