"""Running a hypothesis state machine against one store backend."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine

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
