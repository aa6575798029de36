"""The matcher: compares an actual JSON value with an expected pattern from a case.

Patterns are plain JSON with a few ``$`` tokens, so any language can implement
them (IMPLEMENTING.md lists them):

* an object matches when every expected key matches (extra actual keys are fine);
* an array matches element by element and must have the same length;
* ``{"$exact": v}`` matches only a deep-equal value (no extra keys anywhere);
* ``{"$absent": true}`` matches a missing key (or null);
* ``{"$any": true}`` matches any present value (null is absent, as for ``$absent``);
* ``{"$uuid": true}`` matches a UUID4 string, ``{"$timestamp": true}`` an ISO-8601 one;
* ``{"$contains": "text"}`` matches a string containing ``text``;
* ``{"$length": n}`` matches an array or string of length ``n``;
* ``{"$capture": "name"}`` matches any present (non-null) value and remembers it;
* ``{"$same": "name"}`` matches a value equal to the one captured as ``name``;
* ``{"$notBefore": "name"}`` matches a timestamp no earlier than the captured one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, MutableMapping
from typing import Any

from genkit_sessions.model.clock import parse_timestamp

__all__ = ["TOKENS", "Mismatch", "match"]

_UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
TOKENS = frozenset(
    {"$exact", "$absent", "$any", "$uuid", "$timestamp", "$contains", "$length", "$capture", "$same", "$notBefore"}
)
_MISSING: Any = object()


class Mismatch(Exception):
    """Raised by :func:`match`: ``path`` is a JSON path, ``problem`` says what differed."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{problem} at {path}")


def _token(pattern: Any) -> str | None:
    if isinstance(pattern, Mapping) and len(pattern) == 1:
        (key,) = pattern
        if key in TOKENS:
            return str(key)
    return None


def _show(value: Any) -> str:
    if value is _MISSING:
        return "nothing"
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _is_timestamp(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        parse_timestamp(value)
    except ValueError:
        return False
    return True


def match(
    actual: Any,
    expected: Any,
    captures: MutableMapping[str, Any] | None = None,
    path: str = "$",
) -> None:
    """Check ``actual`` against the pattern ``expected``; raise :class:`Mismatch` at the first difference.

    ``captures`` collects ``$capture`` values and answers ``$same`` / ``$notBefore``.
    """
    captures = {} if captures is None else captures
    token = _token(expected)
    if token is not None:
        _match_token(actual, token, expected[token], captures, path)
        return
    if actual is _MISSING:
        raise Mismatch(path, f"expected {_show(expected)}, found nothing")
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            raise Mismatch(path, f"expected an object, found {_show(actual)}")
        for key, sub in expected.items():
            match(actual.get(key, _MISSING), sub, captures, f"{path}.{key}")
        return
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)):
            raise Mismatch(path, f"expected an array, found {_show(actual)}")
        if len(actual) != len(expected):
            raise Mismatch(path, f"expected {len(expected)} items, found {len(actual)}: {_show(actual)}")
        for index, (a, e) in enumerate(zip(actual, expected, strict=False)):
            match(a, e, captures, f"{path}[{index}]")
        return
    if not _equal(actual, expected):
        raise Mismatch(path, f"expected {_show(expected)}, found {_show(actual)}")


def _equal(actual: Any, expected: Any) -> bool:
    """JSON equality: booleans are not numbers, and 1 == 1.0."""
    if isinstance(actual, bool) or isinstance(expected, bool):
        return type(actual) is type(expected) and actual == expected
    if isinstance(expected, Mapping):
        return (
            isinstance(actual, Mapping)
            and actual.keys() == expected.keys()
            and all(_equal(actual[k], expected[k]) for k in expected)
        )
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(expected)
            and all(_equal(a, e) for a, e in zip(actual, expected, strict=False))
        )
    return bool(type(actual) is type(expected) or (_number(actual) and _number(expected))) and actual == expected


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _match_token(actual: Any, token: str, arg: Any, captures: MutableMapping[str, Any], path: str) -> None:
    if token == "$absent":
        if actual is not _MISSING and actual is not None:
            raise Mismatch(path, f"expected no value, found {_show(actual)}")
        return
    if actual is _MISSING or (actual is None and token in ("$any", "$capture")):
        raise Mismatch(path, f"expected a value ({token}), found {'nothing' if actual is _MISSING else 'null'}")
    if token == "$exact":
        if not _equal(actual, arg):
            raise Mismatch(path, f"expected exactly {_show(arg)}, found {_show(actual)}")
    elif token == "$any":
        pass
    elif token == "$uuid":
        if not (isinstance(actual, str) and _UUID4.match(actual)):
            raise Mismatch(path, f"expected a UUID4 string, found {_show(actual)}")
    elif token == "$timestamp":
        if not _is_timestamp(actual):
            raise Mismatch(path, f"expected an ISO-8601 timestamp, found {_show(actual)}")
    elif token == "$contains":
        if not (isinstance(actual, str) and str(arg) in actual):
            raise Mismatch(path, f"expected a string containing {arg!r}, found {_show(actual)}")
    elif token == "$length":
        if not (isinstance(actual, (str, list, tuple)) and len(actual) == arg):
            raise Mismatch(path, f"expected length {arg}, found {_show(actual)}")
    elif token == "$capture":
        captures[str(arg)] = actual
    elif token == "$same":
        if str(arg) not in captures:
            raise Mismatch(path, f"nothing was captured as {arg!r}")
        if not _equal(actual, captures[str(arg)]):
            raise Mismatch(
                path, f"expected the value captured as {arg!r} ({_show(captures[str(arg)])}), found {_show(actual)}"
            )
    elif token == "$notBefore":
        earlier = captures.get(str(arg))
        if not (_is_timestamp(actual) and _is_timestamp(earlier)):
            raise Mismatch(path, f"expected a timestamp not before {arg!r} ({_show(earlier)}), found {_show(actual)}")
        if parse_timestamp(actual) < parse_timestamp(earlier):  # type: ignore[arg-type]
            raise Mismatch(path, f"expected a timestamp not before {_show(earlier)}, found {_show(actual)}")
