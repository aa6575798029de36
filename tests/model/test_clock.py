"""Timestamps: whatever ISO-8601 form another Genkit SDK writes parses the same on every Python."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genkit_sessions.model.clock import MonotonicStamper, format_timestamp, parse_timestamp

moments = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9000, 1, 1), timezones=st.just(timezone.utc))
offsets = st.integers(min_value=-14 * 60, max_value=14 * 60).map(lambda m: timezone(timedelta(minutes=m)))


@given(moments, st.integers(min_value=1, max_value=9), offsets)
def test_any_fraction_length_and_offset_parses_to_the_same_instant(moment: datetime, digits: int, tz: timezone) -> None:
    local = moment.astimezone(tz)
    micros = f"{local.microsecond:06d}"
    fraction = (micros + "000")[:digits]  # JavaScript writes 3 digits, Go up to 9
    text = local.strftime("%Y-%m-%dT%H:%M:%S") + "." + fraction + local.strftime("%z")
    expected = moment.replace(microsecond=int(fraction[:6].ljust(6, "0")))
    assert parse_timestamp(text) == expected


@given(moments)
def test_our_format_round_trips_and_sorts_like_time(moment: datetime) -> None:
    assert parse_timestamp(format_timestamp(moment)) == moment
    later = moment + timedelta(microseconds=1)
    if later.year < 10000:
        assert format_timestamp(moment) < format_timestamp(later)


@pytest.mark.parametrize(
    "text", ["2026-01-01T00:00:00.5Z", "2026-01-01T00:00:00z", "2026-01-01T00:00:00+0530", "2026-01-01T00:00:00-07"]
)
def test_forms_older_pythons_reject_are_read(text: str) -> None:
    assert parse_timestamp(text).tzinfo is not None


@pytest.mark.parametrize(
    "text", ["", "yesterday", "2026-13-01T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T00:00Z1"]
)
def test_non_timestamps_are_refused_naming_the_text(text: str) -> None:
    with pytest.raises(ValueError, match="not an ISO-8601 timestamp"):
        parse_timestamp(text)


def test_stamper_never_repeats_or_goes_back_even_when_the_clock_does() -> None:
    fixed = datetime(2026, 1, 1, tzinfo=timezone.utc)
    ticks = iter([fixed, fixed, fixed - timedelta(seconds=5), fixed + timedelta(seconds=1)])
    stamp = MonotonicStamper(lambda: next(ticks))
    stamps = [stamp() for _ in range(4)]
    assert stamps == sorted(stamps) and len(set(stamps)) == 4
