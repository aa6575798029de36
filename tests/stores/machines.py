"""Running a hypothesis state machine against one store backend, and what the differential machines share."""

from __future__ import annotations

import collections
import os
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine

from genkit_sessions import GenkitError
from tests.conftest import STORE_BACKENDS


def run_machine(
    base: type[RuleBasedStateMachine],
    store_backend: str,
    request: pytest.FixtureRequest,
    *,
    examples: int,
    steps: int,
    **attributes: Any,
) -> None:
    """Run ``base``'s sequences, each machine given ``make`` (the backend's store factory) and
    ``attributes`` as class attributes; the backend's resources are released afterwards."""
    factory_fixture = STORE_BACKENDS[store_backend](request)
    make = next(factory_fixture)
    try:
        machine = type(
            f"{base.__name__}_{store_backend.replace('-', '_')}",
            (base,),
            {"make": staticmethod(make), **attributes},
        )
        machine.TestCase.settings = settings(  # type: ignore[attr-defined]
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        machine.TestCase().runTest()  # type: ignore[attr-defined]
    finally:
        factory_fixture.close()  # type: ignore[attr-defined]


class StepClock:
    """The one time source every store of a differential sequence reads. It ticks a millisecond at each
    step and moves on when the sequence says; it never moves during a step.

    The tick keeps the stamps of the two sides alike. Each store instance stamps a microsecond past
    the last stamp it made, so on a clock that stood still one store (memory) and two instances
    (DynamoDB) would stamp different instants, and what createdAt orders (a listing, a search)
    would differ for no fault of either."""

    TICK = timedelta(milliseconds=1)

    def __init__(self) -> None:
        self.now = datetime(2030, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def tick(self) -> None:
        self.now += self.TICK


def outcome(action: Callable[[], Any], plain: Callable[[Any], Any]) -> tuple[str, Any]:
    """What a call gave, as both sides must agree on it: ``("ok", plain(answer))`` or
    ``("error", status)``."""
    try:
        return "ok", plain(action())
    except GenkitError as error:
        return "error", error.status.value


class Agreement:
    """The steps of a differential run that agreed, and the errors both sides gave alike, by status."""

    def __init__(self) -> None:
        self.sequences = 0
        self.steps = 0
        self.errors: collections.Counter[str] = collections.Counter()

    def check(self, step: int, expected: tuple[str, Any], got: tuple[str, Any]) -> Any:
        """Memory's outcome ``expected`` and DynamoDB's ``got`` must be equal; the answer they agree on."""
        assert got == expected, f"step {step}: in memory {expected}, on DynamoDB {got}"
        self.steps += 1
        if expected[0] == "error":
            self.errors[expected[1]] += 1
        return expected[1]

    def report(self, what: str) -> None:
        """With ``GENKIT_FUZZ_REPORT`` set, print the counts."""
        if os.environ.get("GENKIT_FUZZ_REPORT"):
            print(
                f"\n{what}: {self.sequences} sequences, {self.steps} agreeing steps, "
                f"agreed errors by status {dict(sorted(self.errors.items()))}"
            )
