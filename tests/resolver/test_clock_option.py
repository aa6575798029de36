"""SessionStoreOptions' ``clock``: a function returning a timezone-aware datetime, refused otherwise."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from genkit_sessions import (
    AgentInit,
    GenkitError,
    InMemorySessionStore,
    SessionResolver,
    SessionStoreOptions,
    SnapshotStatus,
)


@pytest.mark.parametrize(
    "clock", [datetime.now, lambda: "now", lambda: None, 5], ids=["naive", "a string", "None", "not a function"]
)
def test_options_refuse_a_clock_not_returning_an_aware_datetime(clock: Any) -> None:
    with pytest.raises(GenkitError) as caught:
        SessionStoreOptions(clock=clock)
    assert caught.value.status == "INVALID_ARGUMENT"
    assert "clock" in caught.value.message and "lambda: datetime.now(timezone.utc)" in caught.value.message


def test_an_aware_clock_in_another_zone_judges_a_pending_snapshot_expired() -> None:
    store = InMemorySessionStore()
    session = SessionResolver.resolve(store, True, AgentInit(session_id="chat")).session
    assert session is not None
    pending = session.save(SnapshotStatus.PENDING)
    later = timezone(timedelta(hours=-5))
    opts = SessionStoreOptions(clock=lambda: datetime.now(later) + timedelta(minutes=5))
    with pytest.raises(GenkitError) as caught:
        SessionResolver.resolve(store, True, AgentInit(snapshot_id=pending.snapshot_id), opts)
    assert caught.value.details["status"] == "expired"
