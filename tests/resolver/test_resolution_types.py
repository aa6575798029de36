"""A resolution's type narrows on ``ok``, and JSON crosses the public surface as JsonValue, not Any."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from genkit_sessions import (
    AgentInit,
    ErrorInfo,
    GenkitError,
    InMemorySessionStore,
    Resolution,
    ResolutionFailure,
    ResolvedSession,
    SessionResolver,
    SessionStoreOptions,
)

ROOT = Path(__file__).resolve().parents[2]

CHECKED = """
from typing_extensions import assert_type
from genkit_sessions import (
    AgentInit, ErrorInfo, GenkitError, InMemorySessionStore, JsonObject, JsonValue, Session, SessionResolver, to_wire,
)

resolution = SessionResolver.resolve(InMemorySessionStore(), True, AgentInit())
if resolution.ok:
    assert_type(resolution.session, Session)
    assert_type(resolution.session.custom, JsonValue)
    assert_type(to_wire(resolution.session.state), JsonObject)
else:
    assert_type(resolution.error, ErrorInfo)
    assert_type(resolution.error.details, JsonValue)
assert_type(GenkitError("NOT_FOUND", "gone").details, JsonValue)
"""

UNCHECKED = """
from genkit_sessions import AgentInit, InMemorySessionStore, SessionResolver

resolution = SessionResolver.resolve(InMemorySessionStore(), True, AgentInit())
resolution.session.save()  # not narrowed: session may be None
"""


def _mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "uses_resolution.py"
    path.write_text(source, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_checking_ok_tells_mypy_which_resolution_it_is(tmp_path: Path) -> None:
    checked = _mypy(tmp_path, CHECKED)
    assert checked.returncode == 0, checked.stdout
    unchecked = _mypy(tmp_path, UNCHECKED)
    assert unchecked.returncode == 1 and 'Item "None" of "Session | None"' in unchecked.stdout, unchecked.stdout


def test_resolve_returns_a_resolved_session_or_a_failure_both_resolutions() -> None:
    store = InMemorySessionStore()
    resolved = SessionResolver.resolve(store, True, AgentInit())
    assert isinstance(resolved, ResolvedSession) and isinstance(resolved, Resolution) and resolved.ok is True

    class Unreachable(InMemorySessionStore):
        def get_snapshot(self, **kwargs: object) -> None:  # type: ignore[override]
            raise GenkitError("UNAVAILABLE", "the backend is down")

    failed = SessionResolver.resolve(Unreachable(), True, AgentInit(session_id="s1"), SessionStoreOptions())
    assert isinstance(failed, ResolutionFailure) and failed.ok is False and failed.session is None
    assert isinstance(failed.error, ErrorInfo) and failed.error.status == "UNAVAILABLE" and failed.rule == "R15"


def test_the_resolver_builds_a_resolved_session_equal_to_the_constructors_with_every_field_set() -> None:
    from genkit_sessions.resolver.resolver import _resolved
    from genkit_sessions.resolver.rules import ResolutionSource

    store = InMemorySessionStore()
    made = SessionResolver.resolve(store, True, AgentInit(session_id="s"))
    assert made.ok
    # The resolver sets each slot itself: a field added to ResolvedSession must be added there too.
    assert [f.name for f in attrs.fields(ResolvedSession)] == ["rule", "session", "source", "snapshot", "error"]
    built = ResolvedSession(rule=made.rule, session=made.session, snapshot=made.snapshot, source=made.source)
    assert made == built and repr(made) == repr(built) and hash(made) == hash(built)
    fast = _resolved("R12", made.session, None, ResolutionSource.RESUMED_BY_SESSION_ID)
    assert fast == ResolvedSession(rule="R12", session=made.session, source=ResolutionSource.RESUMED_BY_SESSION_ID)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        fast.rule = "R1"  # type: ignore[misc]
