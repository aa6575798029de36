"""Snapshot and session ids: validation shared by every store, and minting.

An id is a non-empty string of at most 512 UTF-8 bytes with no control
characters and not only whitespace. The same limits hold in every store, so
data can move between them. Minted ids are UUID4 strings.
"""

from __future__ import annotations

import os
import re

from genkit_sessions.errors import GenkitError, Reason, Status

__all__ = ["MAX_ID_BYTES", "id_problem", "mint_id", "validate_id"]

MAX_ID_BYTES = 512
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def mint_id() -> str:
    """A new random id: a UUID version 4, in its usual text form (built from 16 random bytes directly,
    which is what ``str(uuid.uuid4())`` gives, at a fraction of its cost)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def id_problem(value: object) -> str | None:
    """What is wrong with ``value`` as an id, or None when it is valid."""
    # The common case first: printable ASCII (no control characters, no surrogates, one byte a
    # character), not empty and not only spaces. Everything else takes the full checks below.
    if (
        type(value) is str
        and value.isascii()
        and value.isprintable()
        and 0 < len(value) <= MAX_ID_BYTES
        and (value[0] != " " or value.strip())
    ):
        return None
    if not isinstance(value, str):
        return f"must be a string, got {type(value).__name__}"
    if not value.strip():
        return "must not be empty or whitespace-only"
    surrogate = _SURROGATE.search(value)
    if surrogate:
        return f"is not valid Unicode text (lone surrogate U+{ord(surrogate.group()):04X} at index {surrogate.start()})"
    if len(value) > MAX_ID_BYTES // 4 and len(value.encode("utf-8")) > MAX_ID_BYTES:
        return f"is {len(value.encode('utf-8'))} UTF-8 bytes long; the limit is {MAX_ID_BYTES}"
    match = _CONTROL.search(value)
    if match:
        return f"contains the control character U+{ord(match.group()):04X} at index {match.start()}"
    return None


def shown(value: object) -> str:
    """``repr(value)`` cut to 80 characters, for naming a bad value in an error message."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def validate_id(value: object, field: str, reason: Reason) -> str:
    """Return ``value`` when it is a valid id; raise INVALID_ARGUMENT naming ``field`` otherwise."""
    problem = id_problem(value)
    if problem is not None:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"{field} {shown(value)} {problem}; pass a non-empty id of at most {MAX_ID_BYTES} UTF-8 bytes "
            "without control characters",
            reason=reason,
        )
    return value  # type: ignore[return-value]
