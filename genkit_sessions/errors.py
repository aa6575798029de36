"""Status-carrying errors shared by the resolver, the stores and the wire format.

Every failure a user can see is a :class:`GenkitError`: a gRPC-style status
name, a message that says what was wrong and what to do, optional details and
an optional stable machine-readable reason. The graceful-failure payload an
agent puts in its output (:class:`ErrorInfo`, in ``genkit_sessions.model``)
carries the same status, message and details as plain data.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the alias lives with the JSON helpers, which import this module
    from genkit_sessions.model.frozen_json import JsonValue

__all__ = ["GenkitError", "Reason", "Status"]


class Status(str, enum.Enum):
    """The gRPC-style status names Genkit uses on the wire, each with its HTTP code.

    Members compare equal to their plain names: ``Status.NOT_FOUND == "NOT_FOUND"``.
    """

    OK = "OK"
    CANCELLED = "CANCELLED"
    UNKNOWN = "UNKNOWN"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    NOT_FOUND = "NOT_FOUND"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
    FAILED_PRECONDITION = "FAILED_PRECONDITION"
    ABORTED = "ABORTED"
    OUT_OF_RANGE = "OUT_OF_RANGE"
    UNIMPLEMENTED = "UNIMPLEMENTED"
    INTERNAL = "INTERNAL"
    UNAVAILABLE = "UNAVAILABLE"
    DATA_LOSS = "DATA_LOSS"

    def __str__(self) -> str:
        return self.value

    @property
    def http_code(self) -> int:
        """The HTTP status code Genkit maps this status to."""
        return _HTTP_CODES[self]


_HTTP_CODES: dict[Status, int] = {
    Status.OK: 200,
    Status.CANCELLED: 499,
    Status.UNKNOWN: 500,
    Status.INVALID_ARGUMENT: 400,
    Status.DEADLINE_EXCEEDED: 504,
    Status.NOT_FOUND: 404,
    Status.ALREADY_EXISTS: 409,
    Status.PERMISSION_DENIED: 403,
    Status.UNAUTHENTICATED: 401,
    Status.RESOURCE_EXHAUSTED: 429,
    Status.FAILED_PRECONDITION: 400,
    Status.ABORTED: 409,
    Status.OUT_OF_RANGE: 400,
    Status.UNIMPLEMENTED: 501,
    Status.INTERNAL: 500,
    Status.UNAVAILABLE: 503,
    Status.DATA_LOSS: 500,
}


class Reason(str, enum.Enum):
    """Stable reasons carried on errors, for programs that branch on them."""

    SNAPSHOT_NOT_FOUND = "SNAPSHOT_NOT_FOUND"
    SNAPSHOT_NOT_RESUMABLE = "SNAPSHOT_NOT_RESUMABLE"
    SESSION_STORE_NOT_CONFIGURED = "SESSION_STORE_NOT_CONFIGURED"
    SESSION_ID_REQUIRED = "SESSION_ID_REQUIRED"
    INVALID_SESSION_ID = "INVALID_SESSION_ID"
    INVALID_SNAPSHOT_ID = "INVALID_SNAPSHOT_ID"
    INVALID_INPUT = "INVALID_INPUT"
    ASYNC_NOT_SUPPORTED = "ASYNC_NOT_SUPPORTED"
    SESSION_EXISTS = "SESSION_EXISTS"
    SESSION_NOT_FOUND = "SESSION_NOT_FOUND"
    VERSION_CONFLICT = "VERSION_CONFLICT"
    RESTORE_TOO_LARGE = "RESTORE_TOO_LARGE"

    def __str__(self) -> str:
        return self.value


class GenkitError(Exception):
    """An error that names a status, says what to do, and knows its HTTP code.

    ``status`` and ``reason`` accept the enum members or their plain names.
    """

    status: Status
    message: str
    details: JsonValue
    """Optional JSON data about the failure (``{"rule": "R9", "snapshotId": ..., "status": ...}``)."""
    reason: str | None

    def __init__(
        self,
        status: Status | str,
        message: str,
        details: JsonValue = None,
        reason: Reason | str | None = None,
    ) -> None:
        try:
            self.status = Status(status)
        except ValueError:
            raise ValueError(f"unknown status name {status!r}; use one of {[s.value for s in Status]}") from None
        self.message = message
        self.details = details
        self.reason = None if reason is None else str(reason)
        super().__init__(message)

    @property
    def http_code(self) -> int:
        """The HTTP status code for :attr:`status`."""
        return self.status.http_code

    def __str__(self) -> str:
        reason = f" [{self.reason}]" if self.reason else ""
        return f"{self.status.value}{reason}: {self.message}"

    def __repr__(self) -> str:
        return (
            f"GenkitError(status={self.status.value!r}, message={self.message!r}, "
            f"details={self.details!r}, reason={self.reason!r})"
        )

    def payload_details(self) -> JsonValue:
        """Details for a failure payload: the error's details, with its reason folded in."""
        if self.reason is None:
            return self.details
        if self.details is None:
            return {"reason": self.reason}
        if isinstance(self.details, Mapping):
            return {"reason": self.reason, **self.details}
        return {"reason": self.reason, "details": self.details}
