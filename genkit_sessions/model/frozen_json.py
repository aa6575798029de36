"""Immutable JSON values: objects become :class:`FrozenDict`, arrays become tuples.

Free-form JSON (custom state, part data, metadata, tool inputs) is frozen when
a model object is built, so a snapshot read from a store can be shared with the
caller instead of deep-copied, and nothing the caller holds can change what the
store holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NoReturn

__all__ = ["FrozenDict", "freeze", "thaw"]


def _immutable(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(
        "FrozenDict is immutable: build a new value (dict(value) gives a mutable copy) and store that instead"
    )


class FrozenDict(dict):  # type: ignore[type-arg]
    """A ``dict`` that refuses mutation and can be hashed.

    It stays a ``dict`` subclass so ``json.dumps`` and equality with plain dicts
    work unchanged.
    """

    __slots__ = ("_hash",)

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


def freeze(value: Any) -> Any:
    """Return ``value`` with every dict made a :class:`FrozenDict` and every list a tuple."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, FrozenDict):
        return value
    if isinstance(value, Mapping):
        return FrozenDict((k, freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Return a plain, mutable JSON copy of a frozen value (dicts and lists)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value
