"""R17: what a state validator may return, and how a validator that cannot work is refused."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from genkit_sessions import AgentInit, GenkitError, SessionResolver, SessionState, SessionStoreOptions

HYDRATE = AgentInit(state=SessionState(custom={"name": "bob"}))


def resolve_with(validator: Callable[[Any], Any]) -> Any:
    return SessionResolver.resolve(None, False, HYDRATE, SessionStoreOptions(state_validator=validator))


@pytest.mark.parametrize("accepting", [None, [], (), True, set()], ids=repr)
def test_a_validator_answering_none_nothing_or_true_accepts_the_state(accepting: Any) -> None:
    resolution = resolve_with(lambda custom: accepting)
    assert resolution.ok and resolution.rule == "R3"


def test_a_validator_answering_one_string_is_one_finding() -> None:
    resolution = resolve_with(lambda custom: "name too long")
    assert not resolution.ok and resolution.rule == "R17"
    assert resolution.error.details["findings"] == ("name too long",)


def test_a_validator_answering_false_rejects_the_state_with_one_finding() -> None:
    resolution = resolve_with(lambda custom: False)
    assert not resolution.ok and resolution.rule == "R17"
    assert resolution.error.status == "INVALID_ARGUMENT"
    assert len(resolution.error.details["findings"]) == 1


def test_a_validator_answering_several_findings_keeps_each_whole() -> None:
    resolution = resolve_with(lambda custom: ["name too long", "no plan"])
    assert resolution.error is not None and resolution.error.details["findings"] == ("name too long", "no plan")


def test_an_async_validator_is_refused_when_the_options_are_made() -> None:
    async def validator(custom: Any) -> list[str]:
        return []

    with pytest.raises(GenkitError) as caught:
        SessionStoreOptions(state_validator=validator)
    assert caught.value.status == "INVALID_ARGUMENT"
    assert "state_validator" in caught.value.message and "async" in caught.value.message


def test_a_validator_returning_an_awaitable_is_invalid_argument_raised_not_a_finding() -> None:
    async def check(custom: Any) -> list[str]:
        return []

    with pytest.raises(GenkitError) as caught:
        resolve_with(lambda custom: check(custom))
    assert caught.value.status == "INVALID_ARGUMENT" and "awaitable" in caught.value.message
    # and the async driver says the same
    with pytest.raises(GenkitError):
        asyncio.run(
            SessionResolver.aresolve(
                None, False, HYDRATE, SessionStoreOptions(state_validator=lambda custom: check(custom))
            )
        )


@pytest.mark.parametrize("answer", [1, 0.5, object(), {"name": "too long"}, b"bytes"], ids=lambda a: type(a).__name__)
def test_a_validator_returning_something_else_is_invalid_argument_saying_what_to_return(answer: Any) -> None:
    with pytest.raises(GenkitError) as caught:
        resolve_with(lambda custom: answer)
    assert caught.value.status == "INVALID_ARGUMENT"
    assert "state_validator" in caught.value.message and "list of findings" in caught.value.message
