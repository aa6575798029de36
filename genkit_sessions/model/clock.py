"""Timestamps in Genkit's wire form: ISO-8601 strings in UTC."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

from genkit_sessions.errors import GenkitError, Reason, Status

__all__ = [
    "Clock",
    "MonotonicStamper",
    "check_clock",
    "format_timestamp",
    "guarded_clock",
    "parse_timestamp",
    "utc_now",
]

Clock = Callable[[], datetime]
"""A function returning the current time as an aware datetime."""


def utc_now() -> datetime:
    """The current time in UTC."""
    return datetime.now(timezone.utc)


def check_clock(clock: object, option: str = "clock") -> None:
    """INVALID_ARGUMENT naming ``option`` unless ``clock`` is a function returning a timezone-aware
    datetime. It is read once to tell: a naive datetime (``datetime.now``) would be compared with the
    aware instants every store keeps, so every option that takes a clock refuses it up front."""
    if clock is utc_now:
        return
    advice = f"pass for example {option}=lambda: datetime.now(timezone.utc)"
    if not callable(clock):
        problem = f"got {type(clock).__name__} {clock!r:.60}"
    else:
        try:
            moment = clock()
        except Exception as exc:
            problem = f"it raised {type(exc).__name__}: {exc} when read"
        else:
            if isinstance(moment, datetime) and moment.utcoffset() is not None:
                return
            problem = (
                f"it returned a naive datetime ({moment!r:.60}), which names no instant"
                if isinstance(moment, datetime)
                else f"it returned {type(moment).__name__} {moment!r:.60}"
            )
    raise GenkitError(
        Status.INVALID_ARGUMENT,
        f"{option} must be a function returning a timezone-aware datetime, but {problem}; {advice}",
        reason=Reason.INVALID_INPUT,
    )


def guarded_clock(clock: Clock) -> Clock:
    """``clock``, raising UNAVAILABLE when a read fails, so a store's caller sees a status and knows a retry
    may succeed (a caller's clock can fail where the default one cannot: ``utc_now`` is returned as it is)."""
    if clock is utc_now:
        return clock

    def read() -> datetime:
        try:
            return clock()
        except Exception as exc:
            raise GenkitError(
                Status.UNAVAILABLE,
                f"the store's clock failed ({type(exc).__name__}: {exc}) and nothing was written; retry the "
                "call, and check the clock= function given to the store",
            ) from exc

    return read


def format_timestamp(moment: datetime) -> str:
    """``2026-11-29T23:06:05.123456Z``: fixed width, so the strings sort chronologically."""
    m = moment if moment.tzinfo is timezone.utc else moment.astimezone(timezone.utc)
    if m.year < 1000:  # as strftime writes it
        return m.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}.{m.microsecond:06d}Z"


_ISO_8601 = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})"
    r"(?:[Tt ](?P<hm>\d{2}:\d{2})(?::(?P<s>\d{2})(?:[.,](?P<frac>\d+))?)?)?"
    r"(?P<tz>[Zz]|[+-]\d{2}(?::?\d{2})?)?"
)


def parse_timestamp(text: str) -> datetime:
    """Parse an ISO-8601 timestamp (``Z`` or an offset; naive means UTC; any number of
    fractional digits, as JavaScript, Go and Java write them).

    Raises ``ValueError`` naming the text when it is not a timestamp.
    """
    match = _ISO_8601.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{text!r} is not an ISO-8601 timestamp")
    fraction = (match["frac"] or "")[:6].ljust(6, "0")
    tz = match["tz"] or "+00:00"
    if tz in ("Z", "z"):
        tz = "+00:00"
    elif len(tz) == 3:
        tz += ":00"
    elif ":" not in tz:
        tz = f"{tz[:3]}:{tz[3:]}"
    normal = f"{match['date']}T{match['hm'] or '00:00'}:{match['s'] or '00'}.{fraction}{tz}"
    try:
        return datetime.fromisoformat(normal)
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO-8601 timestamp") from None


class MonotonicStamper:
    """Hands out wire timestamps that strictly increase, even within one microsecond.

    Stores use it so that "most recently created" is never a tie within one store. With the default
    clock it reads ``time.time_ns()`` and formats only the microseconds anew while the second stays
    the same (the text is exactly what :func:`format_timestamp` writes).
    """

    def __init__(self, clock: Clock = utc_now) -> None:
        self._clock = clock
        self._last: datetime | None = None
        self._last_us = 0
        self._second = -1
        self._prefix = ""
        self._lock = threading.Lock()

    def __call__(self) -> str:
        if self._clock is not utc_now:
            with self._lock:
                moment = self._clock()
                if self._last is not None and moment <= self._last:
                    moment = self._last + timedelta(microseconds=1)
                self._last = moment
                return format_timestamp(moment)
        with self._lock:
            micros = time.time_ns() // 1000
            if micros <= self._last_us:
                micros = self._last_us + 1
            self._last_us = micros
            second, fraction = divmod(micros, 1_000_000)
            if second != self._second:
                self._second = second
                self._prefix = format_timestamp(datetime.fromtimestamp(second, timezone.utc))[:-8]
            return f"{self._prefix}.{fraction:06d}Z"
