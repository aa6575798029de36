"""One pytest test per case, for a store author's own CI.

In a test module::

    from genkit_sessions_conformance.pytest_plugin import conformance_tests

    test_my_store = conformance_tests(MyStore, profile="walk-back", claims=["tenancy"])

pytest then reports every case by its id: a failed required case fails, a failed ``should`` case
is an expected failure (xfail), and a case the store lacks the capability for is skipped. For a
single test instead, call ``conformance.run_suite(MyStore).assert_passed()``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from genkit_sessions_conformance.cases import Case, select_cases
from genkit_sessions_conformance.rules import CONTRACT, rule_text
from genkit_sessions_conformance.runner import DEFAULT_CASE_TIMEOUT, StoreFactory, detect_within, run_cases

__all__ = ["conformance_tests"]


def conformance_tests(
    factory: StoreFactory,
    *,
    profile: str = "reject",
    claims: Iterable[str] = (),
    areas: Iterable[str] | None = None,
    ids: Iterable[str] | None = None,
    case_timeout: float = DEFAULT_CASE_TIMEOUT,
) -> Callable[[Case], None]:
    """A pytest test function parametrized over the shipped cases (of ``areas`` and ``ids``, None: all),
    run against ``factory``'s stores.

    An area or an id that names no case is INVALID_ARGUMENT when the test module is collected, so a
    typo is a collection error, never a run that passes on fewer cases.
    """
    import pytest

    cases = select_cases(areas, ids)
    claimed = tuple(claims)
    detected: dict[str, bool] = {}

    @pytest.mark.parametrize("case", cases, ids=[case.id for case in cases])
    def test_case(case: Case) -> None:
        if not detected:
            detected.update(asyncio.run(detect_within(factory, case_timeout)))
        report = asyncio.run(
            run_cases(factory, [case], profile=profile, claims=claimed, detected=detected, case_timeout=case_timeout)
        )
        result = report.results[0]
        if result.outcome == "skipped":
            pytest.skip(result.message)
        if result.outcome == "failed":
            explained = (
                f"{result.message}\n  why the case exists: {case.description}\n"
                f"  {case.rule}: {rule_text(case.rule)} ({CONTRACT})"
            )
            if case.level == "should":
                pytest.xfail(explained)
            pytest.fail(explained, pytrace=False)

    test_case.__doc__ = f"Each conformance case against {getattr(factory, '__qualname__', factory)!s}."
    marked: Any = test_case
    return marked  # type: ignore[no-any-return]
