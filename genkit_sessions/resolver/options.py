"""Options a resolution runs with: request context, validator, R13 policy, heartbeat timeout."""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import Any

import attrs

from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.clock import Clock, check_clock, utc_now
from genkit_sessions.stores.protocol import Context

__all__ = ["ResumePolicy", "SessionStoreOptions", "StateValidator"]

StateValidator = Callable[[Any], "Iterable[str] | str | bool | None"]
"""Checks a session's custom state (rule R17), a plain function of it; what it returns is read as:

* ``None``, ``True`` or an empty list: the state is fine;
* a list (tuple, set, any iterable but a mapping) of findings: each one a string, rejecting the state;
* one string: one finding; ``False``: one finding saying the validator refused the state.

Raising ``ValueError`` or ``TypeError`` counts as one finding, its message. Any other answer (a number,
a mapping, an awaitable) is misuse, raised as INVALID_ARGUMENT; an ``async def`` validator is refused
when the options are made, since the rules cannot await it.
"""


class ResumePolicy(str, enum.Enum):
    """What a session-id resume does when the leaf is not completed (rule R13)."""

    REJECT = "reject"
    """Raise FAILED_PRECONDITION / SNAPSHOT_NOT_RESUMABLE: the Go and Java rule, our default."""
    WALK_BACK = "walk-back"
    """Resume from the nearest completed ancestor of the leaf: the JS and Python rule."""

    def __str__(self) -> str:
        return self.value


def _invalid(message: str) -> GenkitError:
    return GenkitError(Status.INVALID_ARGUMENT, message, reason=Reason.INVALID_INPUT)


def _timeout(value: timedelta | float) -> timedelta:
    if isinstance(value, bool) or not isinstance(value, (timedelta, int, float)):
        raise _invalid(
            f"heartbeat_timeout must be a datetime.timedelta or a number of seconds, got {value!r}; "
            "pass for example timedelta(seconds=60)"
        )
    try:
        timeout = value if isinstance(value, timedelta) else timedelta(seconds=value)
    except (OverflowError, ValueError):
        raise _invalid(f"heartbeat_timeout {value!r} is out of range; pass for example timedelta(seconds=60)") from None
    if timeout <= timedelta(0):
        raise _invalid(f"heartbeat_timeout must be positive, got {timeout}; pass for example timedelta(seconds=60)")
    return timeout


def _policy(value: ResumePolicy | str) -> ResumePolicy:
    if isinstance(value, str):
        try:
            return ResumePolicy(value)
        except ValueError:
            pass
    raise _invalid(
        f"resume_policy must be one of {', '.join(repr(p.value) for p in ResumePolicy)}, got {value!r}; "
        "pass ResumePolicy.REJECT or ResumePolicy.WALK_BACK"
    )


def _context(instance: Any, attribute: Any, value: Any) -> None:
    if value is not None and not isinstance(value, Mapping):
        raise _invalid(
            f"context must be a mapping or None, got {type(value).__name__}; pass for example "
            "context={'tenant': 'acme'}"
        )


def _function(instance: Any, attribute: Any, value: Any) -> None:
    if value is not None and not callable(value):
        raise _invalid(f"{attribute.name} must be a function, got {type(value).__name__}")


def _clock(instance: Any, attribute: Any, value: Any) -> None:
    check_clock(value, attribute.name)


def _validator(instance: Any, attribute: Any, value: Any) -> None:
    _function(instance, attribute, value)
    if inspect.iscoroutinefunction(value):
        raise _invalid(
            "state_validator must be a plain function, got an async one, which the resolution rules cannot "
            "await; drop 'async' from it and return its findings (a list of strings, empty when the state is fine)"
        )


@attrs.frozen
class SessionStoreOptions:
    """How a resolution reads the store and judges what it finds.

    ``context`` is passed to every store call (stores derive the tenant from it).
    ``heartbeat_timeout`` (a ``timedelta`` or seconds) makes a pending snapshot
    whose last heartbeat is older read as expired. ``clock`` is the time source
    for that judgement: a function returning a timezone-aware datetime (a naive one
    is INVALID_ARGUMENT).
    """

    context: Context = attrs.field(default=None, validator=_context)
    state_validator: StateValidator | None = attrs.field(default=None, validator=_validator)
    resume_policy: ResumePolicy = attrs.field(default=ResumePolicy.REJECT, converter=_policy)
    heartbeat_timeout: timedelta = attrs.field(default=timedelta(seconds=60), converter=_timeout)
    clock: Clock = attrs.field(default=utc_now, validator=_clock)
