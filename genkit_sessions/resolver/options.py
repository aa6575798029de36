"""Options a resolution runs with: request context, validator, R13 policy, heartbeat timeout."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

import attrs

from genkit_sessions.model.clock import Clock, utc_now
from genkit_sessions.stores.protocol import Context

__all__ = ["ResumePolicy", "SessionStoreOptions", "StateValidator"]

StateValidator = Callable[[Any], "Iterable[str] | None"]
"""Checks a session's custom state; returns findings (empty or None when it is fine).

Raising ``ValueError`` or ``TypeError`` counts as one finding, its message.
"""


class ResumePolicy(str, enum.Enum):
    """What a session-id resume does when the leaf is not completed (rule R13)."""

    REJECT = "reject"
    """Raise FAILED_PRECONDITION / SNAPSHOT_NOT_RESUMABLE: the Go and Java rule, our default."""
    WALK_BACK = "walk-back"
    """Resume from the nearest completed ancestor of the leaf: the JS and Python rule."""

    def __str__(self) -> str:
        return self.value


def _timeout(value: timedelta | float) -> timedelta:
    timeout = value if isinstance(value, timedelta) else timedelta(seconds=value)
    if timeout <= timedelta(0):
        raise ValueError(f"heartbeat_timeout must be positive, got {timeout}")
    return timeout


@attrs.frozen
class SessionStoreOptions:
    """How a resolution reads the store and judges what it finds.

    ``context`` is passed to every store call (stores derive the tenant from it).
    ``heartbeat_timeout`` (a ``timedelta`` or seconds) makes a pending snapshot
    whose last heartbeat is older read as expired. ``clock`` is the time source
    for that judgement.
    """

    context: Context = None
    state_validator: StateValidator | None = None
    resume_policy: ResumePolicy = attrs.field(default=ResumePolicy.REJECT, converter=ResumePolicy)
    heartbeat_timeout: timedelta = attrs.field(default=timedelta(seconds=60), converter=_timeout)
    clock: Clock = utc_now
