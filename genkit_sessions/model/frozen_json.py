"""Immutable JSON values: objects become :class:`FrozenDict`, arrays become tuples.

Free-form JSON (custom state, part data, metadata, tool inputs) is frozen when
a model object is built, so a snapshot read from a store can be shared with the
caller instead of deep-copied, and nothing the caller holds can change what the
store holds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NoReturn, TypeAlias

from genkit_sessions.errors import GenkitError, Reason, Status

__all__ = [
    "MAX_INT_DIGITS",
    "MAX_JSON_DEPTH",
    "MAX_WIRE_DEPTH",
    "FrozenDict",
    "JsonObject",
    "JsonValue",
    "freeze",
    "check_json",
    "json_problem",
    "short_path",
    "strict_equal",
    "text_problem",
    "thaw",
]

JsonValue: TypeAlias = bool | int | float | str | Sequence["JsonValue"] | Mapping[str, "JsonValue"] | None
"""Any JSON value, plain (``dict``, ``list``) or frozen (:class:`FrozenDict`, ``tuple``): what custom
state, error details and the values of :func:`~genkit_sessions.to_wire`'s output are. Narrow it with
``isinstance`` (``Mapping``, ``Sequence``, ``str``...) before indexing."""

JsonObject: TypeAlias = dict[str, JsonValue]
"""A JSON object as plain data: what :func:`~genkit_sessions.to_wire` returns and what a client sends."""

MAX_JSON_DEPTH = 64
"""How deeply free-form JSON (custom state, part data, metadata, tool input) may nest objects and
arrays. Deeper values are refused when a model object is built, in every store alike, instead of
exhausting the stack of whichever component first walks them."""

MAX_WIRE_DEPTH = 2 * MAX_JSON_DEPTH
"""How deeply a whole wire document may nest: room for the model's own levels (snapshot, state,
messages, parts) around free-form JSON of :data:`MAX_JSON_DEPTH` levels."""

MAX_INT_DIGITS = 4300
"""How many decimal digits an integer may have: Python's default limit on converting between ``int`` and
text, so ``json.dumps`` can write every integer a model object holds and ``json.loads`` can read it back.
Larger integers are refused when a model object is built (store them as strings)."""

_INT_LIMIT = 10**MAX_INT_DIGITS

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _immutable(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(
        "FrozenDict is immutable: build a new value (dict(value) gives a mutable copy) and store that instead"
    )


class FrozenDict(dict):  # type: ignore[type-arg]
    """A ``dict`` that refuses mutation and can be hashed.

    It stays a ``dict`` subclass so ``json.dumps`` and equality with plain dicts
    work unchanged.
    """

    __slots__ = ("_hash", "_height")

    __setitem__ = _immutable
    __delitem__ = _immutable
    __ior__ = _immutable
    clear = _immutable
    pop = _immutable
    popitem = _immutable
    setdefault = _immutable
    update = _immutable

    def __init__(self, items: Mapping[str, Any] | Iterable[tuple[str, Any]] = ()) -> None:
        dict.__init__(self, items)
        self._hash: int | None = None
        self._height: int | None = None
        """How deeply it nests, once :func:`freeze` has checked it is JSON (None until then)."""

    def __hash__(self) -> int:  # type: ignore[override]
        if self._hash is None:
            self._hash = hash(frozenset(self.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self


def text_problem(value: str) -> str | None:
    """What makes ``value`` unusable as JSON text (a lone surrogate), or None when it is fine."""
    surrogate = _SURROGATE.search(value)
    if surrogate is None:
        return None
    return f"is not valid Unicode (lone surrogate U+{ord(surrogate.group()):04X} at index {surrogate.start()})"


def json_problem(
    value: Any, path: str = "$", max_depth: int = MAX_JSON_DEPTH, *, check_text: bool = True
) -> tuple[str, str] | None:
    """The first reason ``value`` is not a JSON value a store can keep, as ``(path, problem)``; None when
    it is one. JSON here means objects with string keys, arrays, strings of valid Unicode, finite
    numbers, booleans and null, nested at most ``max_depth`` levels. Iterative, so any depth is safe.
    ``check_text=False`` leaves string values to the caller (the wire decoder lets each field judge its
    own, so an id gets the id rules' reason)."""
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if item is None or isinstance(item, bool):
            continue
        if isinstance(item, int):
            if not -_INT_LIMIT < item < _INT_LIMIT:
                return where, _huge_int_problem(item)
            continue
        if isinstance(item, str):
            problem = text_problem(item) if check_text else None
            if problem is not None:
                return where, f"the string {problem}"
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return where, f"{item!r} is not a JSON number (JSON has no NaN or Infinity)"
            continue
        if isinstance(item, FrozenDict) and item._height is not None:
            if depth + item._height > max_depth:
                return where, f"nests more than {max_depth} levels of objects and arrays"
            continue
        if isinstance(item, (Mapping, list, tuple)):
            if depth >= max_depth:
                return where, f"nests more than {max_depth} levels of objects and arrays"
            if isinstance(item, Mapping):
                for key, child in item.items():
                    if not isinstance(key, str):
                        return where, f"has the key {key!r} ({type(key).__name__}); JSON object keys are strings"
                    problem = text_problem(key)
                    if problem is not None:
                        return where, f"has a key that {problem}"
                    step = f"{where}.{key}" if key.isidentifier() else f"{where}[{key!r}]"
                    stack.append((child, step, depth + 1))
            else:
                stack.extend((child, f"{where}[{i}]", depth + 1) for i, child in enumerate(item))
            continue
        return where, f"is a {type(item).__name__}, which JSON cannot hold"
    return None


def _huge_int_problem(value: int) -> str:
    digits = int(abs(value).bit_length() * 0.30103) + 1  # about: str() itself refuses so many digits
    return (
        f"is an integer of about {digits} digits; JSON text with more than {MAX_INT_DIGITS} digits cannot be "
        "written or read back: store it as a string"
    )


def short_path(path: str, limit: int = 100) -> str:
    """A JSON path cut in the middle when it is too long to read."""
    return path if len(path) <= limit else f"{path[: limit // 2]}...{path[-limit // 2 :]}"


def check_json(value: Any, what: str) -> None:
    """Raise INVALID_ARGUMENT naming ``what`` and the path when ``value`` is not storable JSON."""
    found = json_problem(value, what)
    if found is not None:
        where, problem = found
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"{short_path(where)}: {problem}; pass JSON data only: dicts with string keys, lists, strings, finite "
            f"numbers (integers of at most {MAX_INT_DIGITS} digits), booleans and None, nested at most "
            f"{MAX_JSON_DEPTH} deep",
            details={"field": what, "inner": where[len(what) :], "problem": problem},
            reason=Reason.INVALID_INPUT,
        )


def freeze(value: Any, what: str = "value") -> Any:
    """Return ``value`` with every dict made a :class:`FrozenDict` and every list a tuple.

    Raises :class:`GenkitError` (INVALID_ARGUMENT) naming ``what`` and the path of the first
    part that is not JSON (see :func:`json_problem`).
    """
    if isinstance(value, (str, int, float, bool)) or value is None:
        if isinstance(value, (str, float)) or (isinstance(value, int) and not -_INT_LIMIT < value < _INT_LIMIT):
            check_json(value, what)
        return value
    if isinstance(value, FrozenDict) and value._height is not None:
        return value
    check_json(value, what)
    return _freeze(value)[0]


def _freeze(value: Any) -> tuple[Any, int]:
    """The frozen value and how many levels of objects and arrays it nests (0 for a scalar)."""
    if isinstance(value, FrozenDict) and value._height is not None:
        return value, value._height
    if isinstance(value, Mapping):
        height = 0
        items = []
        for k, v in value.items():
            child, child_height = _freeze(v)
            items.append((k, child))
            height = max(height, child_height)
        frozen = FrozenDict(items)
        frozen._height = height + 1
        return frozen, frozen._height
    if isinstance(value, (list, tuple)):
        children = [_freeze(v) for v in value]
        return tuple(c for c, _ in children), 1 + max((h for _, h in children), default=0)
    return value, 0


def thaw(value: Any) -> Any:
    """Return a plain, mutable JSON copy of a frozen value (dicts and lists)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def strict_equal(a: Any, b: Any) -> bool:
    """JSON equality as the text sees it: ``1``, ``1.0`` and ``true`` differ, and so do ``0.0`` and ``-0.0``
    (Python's ``==`` equates each pair). Mappings compare by keys, sequences in order."""
    if a is b:
        return True
    if isinstance(a, dict):  # FrozenDict included
        return isinstance(b, dict) and a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return (
            isinstance(b, (list, tuple))
            and len(a) == len(b)
            and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
        )
    if type(a) is not type(b) or a != b:
        return False
    return type(a) is not float or math.copysign(1.0, a) == math.copysign(1.0, b)
