"""Conditions and updates as small objects, serialised with placeholders.

Every attribute name and value reaches DynamoDB as a placeholder (``#n0``,
``:v0``), so no name can collide with a reserved word and no value is ever
spliced into an expression. Conditions combine with ``&`` and ``|``::

    cond = exists("pk") & (eq("hv", {"S": version}) | not_exists("hv"))
    params = render(condition=cond, update=Update().set("leaf", {"S": leaf}).add("ids", {"SS": [leaf]}))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

__all__ = ["Condition", "Update", "eq", "exists", "lt", "not_exists", "render", "size_lt"]


class _Placeholders:
    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.values: dict[str, Any] = {}

    def name(self, attribute: str) -> str:
        for placeholder, known in self.names.items():
            if known == attribute:
                return placeholder
        placeholder = f"#n{len(self.names)}"
        self.names[placeholder] = attribute
        return placeholder

    def value(self, value: dict[str, Any]) -> str:
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = value
        return placeholder


@attrs.frozen
class Condition:
    """A condition expression, rendered against shared placeholders."""

    _render: Callable[[_Placeholders], str]

    def __and__(self, other: Condition) -> Condition:
        return Condition(lambda p: f"({self._render(p)} AND {other._render(p)})")

    def __or__(self, other: Condition) -> Condition:
        return Condition(lambda p: f"({self._render(p)} OR {other._render(p)})")

    def text(self, placeholders: _Placeholders) -> str:
        """The expression text, registering its names and values."""
        return self._render(placeholders)


def exists(attribute: str) -> Condition:
    """``attribute_exists(attribute)``."""
    return Condition(lambda p: f"attribute_exists({p.name(attribute)})")


def not_exists(attribute: str) -> Condition:
    """``attribute_not_exists(attribute)``."""
    return Condition(lambda p: f"attribute_not_exists({p.name(attribute)})")


def eq(attribute: str, value: dict[str, Any]) -> Condition:
    """``attribute = value``."""
    return Condition(lambda p: f"{p.name(attribute)} = {p.value(value)}")


def lt(attribute: str, value: dict[str, Any]) -> Condition:
    """``attribute < value``."""
    return Condition(lambda p: f"{p.name(attribute)} < {p.value(value)}")


def gt(attribute: str, value: dict[str, Any]) -> Condition:
    """``attribute > value``."""
    return Condition(lambda p: f"{p.name(attribute)} > {p.value(value)}")


def size_lt(attribute: str, value: dict[str, Any]) -> Condition:
    """``size(attribute) < value``."""
    return Condition(lambda p: f"size({p.name(attribute)}) < {p.value(value)}")


@attrs.define
class Update:
    """An update expression: SET, ADD, REMOVE and DELETE clauses."""

    _set: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list)
    _defaults: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list)
    _add: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list)
    _remove: list[str] = attrs.field(factory=list)
    _delete: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list)

    def set(self, attribute: str, value: dict[str, Any]) -> Update:
        """``SET attribute = value``."""
        self._set.append((attribute, value))
        return self

    def set_default(self, attribute: str, value: dict[str, Any]) -> Update:
        """``SET attribute = if_not_exists(attribute, value)``: keep what is there, else write ``value``."""
        self._defaults.append((attribute, value))
        return self

    def add(self, attribute: str, value: dict[str, Any]) -> Update:
        """``ADD attribute value`` (a number or a set)."""
        self._add.append((attribute, value))
        return self

    def remove(self, attribute: str) -> Update:
        """``REMOVE attribute``."""
        self._remove.append(attribute)
        return self

    def delete(self, attribute: str, value: dict[str, Any]) -> Update:
        """``DELETE attribute value``: take elements out of a set (a set left empty goes)."""
        self._delete.append((attribute, value))
        return self

    def text(self, p: _Placeholders) -> str:
        """The expression text, registering its names and values."""
        clauses = []
        sets = [f"{p.name(a)} = {p.value(v)}" for a, v in self._set]
        sets += [f"{p.name(a)} = if_not_exists({p.name(a)}, {p.value(v)})" for a, v in self._defaults]
        if sets:
            clauses.append("SET " + ", ".join(sets))
        if self._add:
            clauses.append("ADD " + ", ".join(f"{p.name(a)} {p.value(v)}" for a, v in self._add))
        if self._remove:
            clauses.append("REMOVE " + ", ".join(p.name(a) for a in self._remove))
        if self._delete:
            clauses.append("DELETE " + ", ".join(f"{p.name(a)} {p.value(v)}" for a, v in self._delete))
        return " ".join(clauses)


def render(*, condition: Condition | None = None, update: Update | None = None) -> dict[str, Any]:
    """The request parameters for a condition and/or an update, with every placeholder they use."""
    placeholders = _Placeholders()
    params: dict[str, Any] = {}
    if update is not None:
        params["UpdateExpression"] = update.text(placeholders)
    if condition is not None:
        params["ConditionExpression"] = condition.text(placeholders)
    if placeholders.names:
        params["ExpressionAttributeNames"] = placeholders.names
    if placeholders.values:
        params["ExpressionAttributeValues"] = placeholders.values
    return params
