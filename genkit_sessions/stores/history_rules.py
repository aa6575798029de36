"""What every store's bounded history read shares (contract rule H2): checking the bounds and cutting a window."""

from __future__ import annotations

import json
from collections.abc import Sequence

from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.types import Message
from genkit_sessions.model.wire import to_wire
from genkit_sessions.stores.protocol import HistoryWindow

__all__ = ["check_bounds", "message_bytes", "window_of"]


def check_bounds(max_messages: int | None, max_bytes: int | None) -> None:
    """INVALID_ARGUMENT unless each bound is None or a positive int."""
    for name, value in (("max_messages", max_messages), ("max_bytes", max_bytes)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"{name} must be a positive int or None, got {value!r}",
                reason=Reason.INVALID_INPUT,
            )


def message_bytes(message: Message) -> int:
    """A message's size as the window counts it: its compact wire JSON in UTF-8."""
    return len(json.dumps(to_wire(message), separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def window_of(
    messages: Sequence[Message], max_messages: int | None, max_bytes: int | None, older_left_out: bool = False
) -> HistoryWindow:
    """The newest ``messages`` within the bounds, oldest first; ``older_left_out`` says the caller already
    left out messages older than ``messages``."""
    count = len(messages) if max_messages is None else min(max_messages, len(messages))
    if max_bytes is not None:
        used, taken = 0, 0
        while taken < count:
            size = message_bytes(messages[len(messages) - 1 - taken])
            if used + size > max_bytes:
                break
            used += size
            taken += 1
        count = taken
    kept = tuple(messages[len(messages) - count :]) if count else ()
    return HistoryWindow(kept, older_left_out or count < len(messages))
