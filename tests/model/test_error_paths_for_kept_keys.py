"""A bad value under a key the model does not know is reported at its JSON path: the key sits in the object
on the wire, so the path names no Python field (``extra``, ``UnknownPart``)."""

from __future__ import annotations

from typing import Any

import pytest

from genkit_sessions import GenkitError, SessionSnapshot, from_wire

BASE = {"snapshotId": "s", "createdAt": "2026-01-01T00:00:00Z"}


@pytest.mark.parametrize(
    ("extra", "path"),
    [
        ({"state": {"x-ext": {"a": "\ud800"}}}, "$.state['x-ext'].a"),
        ({"x-top": {"a": "\ud800"}}, "$['x-top'].a"),
        ({"xTop": [1, {"b": "\udfff"}]}, "$.xTop[1].b"),
        (
            {"state": {"messages": [{"role": "user", "content": [{"futureKind": {"a": "\ud800"}}]}]}},
            "$.state.messages[0].content[0].futureKind.a",
        ),
        (
            {"state": {"messages": [{"role": "user", "content": [{"text": "x", "x-k": ["\ud800"]}]}]}},
            "$.state.messages[0].content[0]['x-k'][0]",
        ),
    ],
    ids=["state-unknown-key", "snapshot-unknown-key", "snapshot-camel-key", "unknown-part-kind", "part-unknown-key"],
)
def test_a_bad_value_under_an_unknown_key_is_reported_at_its_json_path(extra: dict[str, Any], path: str) -> None:
    with pytest.raises(GenkitError) as caught:
        from_wire(SessionSnapshot, {**BASE, **extra})
    assert caught.value.status == "INVALID_ARGUMENT" and caught.value.reason == "INVALID_INPUT"
    assert path in caught.value.message
    assert "extra" not in caught.value.message and "UnknownPart" not in caught.value.message


def test_a_bad_value_in_a_known_field_keeps_its_camel_case_path() -> None:
    with pytest.raises(GenkitError) as caught:
        from_wire(SessionSnapshot, {**BASE, "state": {"custom": {"a": "\ud800"}}})
    assert "$.state.custom.a" in caught.value.message
