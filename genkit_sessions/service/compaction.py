"""Compaction (contract rule V12): when a trigger fires on the active view, a strategy says how many leading
messages it covers and which summary messages replace them.

Both are plain callables, so a caller's own function works as either. Shipped: a message-count and a
token-count trigger, and :class:`KeepLastStrategy`, which keeps the last N messages verbatim and asks
a caller-supplied function for the summary (no model dependency here). Whatever the strategy, the
service never splits a tool request from its tool response: a boundary that would leave a tool
response at the head of the kept tail, its request covered, moves back (:func:`safe_boundary`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, runtime_checkable

import attrs

from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.types import Message, Role, TextPart, ToolResponsePart
from genkit_sessions.model.wire import to_wire

__all__ = [
    "Compaction",
    "CompactionStrategy",
    "CompactionTrigger",
    "KeepLastStrategy",
    "MessageCountTrigger",
    "Summarizer",
    "TokenCountTrigger",
    "approximate_tokens",
    "safe_boundary",
]


@attrs.frozen
class Compaction:
    """A strategy's answer: the first ``covered`` active messages are replaced by ``summary``."""

    covered: int
    summary: tuple[Message, ...] = attrs.field(converter=tuple[Message, ...])


@runtime_checkable
class CompactionTrigger(Protocol):
    """Decides, from the active view, whether to compact now."""

    def __call__(self, messages: Sequence[Message]) -> bool:
        """True to compact ``messages`` (the active view, oldest first)."""
        ...


@runtime_checkable
class CompactionStrategy(Protocol):
    """Plans a compaction of the active view. On the async service it may return an awaitable."""

    def __call__(self, messages: Sequence[Message]) -> Compaction | Awaitable[Compaction]:
        """How many leading messages to cover, and the summary that replaces them."""
        ...


Summarizer = Callable[[Sequence[Message]], Message | str | Sequence[Message] | Awaitable[object]]
"""Turns the covered messages into the summary: a message, a text (a model message holding it), or
several messages; on the async service it may be a coroutine function."""


def approximate_tokens(message: Message) -> int:
    """A model-free token estimate: about four characters of text (or of JSON, for other parts) per token."""
    chars = 0
    for part in message.content:
        if isinstance(part, TextPart):
            chars += len(part.text)
        else:
            chars += len(json.dumps(to_wire(part), separators=(",", ":"), default=str))
    return chars // 4 + 1


@attrs.frozen
class MessageCountTrigger:
    """Fires when the active view holds more than ``max_messages`` messages."""

    max_messages: int

    def __attrs_post_init__(self) -> None:
        _positive("max_messages", self.max_messages)

    def __call__(self, messages: Sequence[Message]) -> bool:
        return len(messages) > self.max_messages


@attrs.frozen
class TokenCountTrigger:
    """Fires when the active view's tokens (``count`` per message; an estimate by default) pass ``max_tokens``."""

    max_tokens: int
    count: Callable[[Message], int] = approximate_tokens

    def __attrs_post_init__(self) -> None:
        _positive("max_tokens", self.max_tokens)

    def __call__(self, messages: Sequence[Message]) -> bool:
        total = 0
        for message in messages:
            total += self.count(message)
            if total > self.max_tokens:
                return True
        return False


@attrs.frozen
class KeepLastStrategy:
    """Covers everything but the last ``keep`` messages and summarises it with ``summarize``."""

    keep: int
    summarize: Summarizer

    def __attrs_post_init__(self) -> None:
        if isinstance(self.keep, bool) or not isinstance(self.keep, int) or self.keep < 0:
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"keep must be a non-negative int, got {self.keep!r}",
                reason=Reason.INVALID_INPUT,
            )

    def __call__(self, messages: Sequence[Message]) -> Compaction | Awaitable[Compaction]:
        covered = safe_boundary(messages, max(0, len(messages) - self.keep))
        if covered == 0:
            return Compaction(0, ())
        summary = self.summarize(messages[:covered])
        if isinstance(summary, Awaitable):
            return _later(covered, summary)
        return Compaction(covered, summary_messages(summary))


async def _later(covered: int, summary: Awaitable[object]) -> Compaction:
    return Compaction(covered, summary_messages(await summary))


def summary_messages(summary: object) -> tuple[Message, ...]:
    """A summarizer's answer as messages: a text becomes one model message."""
    if isinstance(summary, str):
        return (Message(role=Role.MODEL, content=(TextPart(summary),)),)
    if isinstance(summary, Message):
        return (summary,)
    if isinstance(summary, Sequence) and all(isinstance(m, Message) for m in summary):
        return tuple(summary)
    raise GenkitError(
        Status.INVALID_ARGUMENT,
        f"the summarizer returned {type(summary).__name__}; return a Message, a str or a list of Messages",
        reason=Reason.INVALID_INPUT,
    )


def safe_boundary(messages: Sequence[Message], covered: int) -> int:
    """``covered``, moved back so that the kept tail does not start with a tool response (whose request
    would then be covered, leaving an orphaned tool result in what the model sees)."""
    covered = max(0, min(covered, len(messages)))
    while 0 < covered < len(messages) and _answers_tool(messages[covered]):
        covered -= 1
    return covered


def _answers_tool(message: Message) -> bool:
    return message.role is Role.TOOL or any(isinstance(p, ToolResponsePart) for p in message.content)


def _positive(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise GenkitError(
            Status.INVALID_ARGUMENT, f"{name} must be a positive int, got {value!r}", reason=Reason.INVALID_INPUT
        )
