"""A store's ``clock`` option: a function returning a timezone-aware datetime, refused otherwise."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from genkit_sessions import GenkitError, SessionSnapshot, SessionState
from genkit_sessions.model.clock import parse_timestamp, utc_now
from tests.conftest import StoreFactory

BAD_CLOCKS: dict[str, Callable[[], Any]] = {
    "naive datetime.now": datetime.now,
    "naive utcnow": lambda: datetime.now(timezone.utc).replace(tzinfo=None),
    "a string": lambda: "now",
    "a timestamp number": lambda: 1_700_000_000.0,
}


@pytest.mark.parametrize("clock", sorted(BAD_CLOCKS))
def test_a_clock_not_returning_an_aware_datetime_is_refused_when_the_store_is_made(
    make_store: StoreFactory, clock: str
) -> None:
    with pytest.raises(GenkitError) as caught:
        make_store(clock=BAD_CLOCKS[clock])
    assert caught.value.status == "INVALID_ARGUMENT"
    assert "clock" in caught.value.message and "datetime.now(timezone.utc)" in caught.value.message


def test_a_clock_that_is_not_a_function_or_raises_is_refused(make_store: StoreFactory) -> None:
    def broken() -> datetime:
        raise OSError("no time source")

    for clock in (utc_now(), broken):
        with pytest.raises(GenkitError) as caught:
            make_store(clock=clock)
        assert caught.value.status == "INVALID_ARGUMENT" and "datetime.now(timezone.utc)" in caught.value.message


def test_an_aware_clock_in_another_zone_stamps_utc_and_ttl_sessions_stay_readable(make_store: StoreFactory) -> None:
    tokyo = timezone(timedelta(hours=9))
    store = make_store(clock=lambda: datetime.now(tokyo))
    store.create_session("x", ttl=timedelta(hours=1))
    saved = store.save_snapshot(
        "a", lambda _: SessionSnapshot(snapshot_id="a", session_id="x", state=SessionState(session_id="x"))
    )
    assert saved.created_at.endswith("Z")
    assert abs(parse_timestamp(saved.created_at) - utc_now()) < timedelta(minutes=1)
    assert store.get_snapshot(session_id="x").snapshot_id == "a"
