"""The pytest entry point: one test per case, with the outcome pytest shows for each."""

from __future__ import annotations

import pytest

from genkit_sessions_conformance.factories import memory
from genkit_sessions_conformance.pytest_plugin import conformance_tests

pytest_plugins = ["pytester"]

test_memory_store_case = conformance_tests(memory, areas=["store", "ids"])


def test_a_broken_store_fails_its_cases_by_id(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from genkit_sessions_conformance.pytest_plugin import conformance_tests
        from tests.conformance.broken_stores import OldestLeaf

        test_broken = conformance_tests(OldestLeaf, areas=["store"])
        """
    )
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 1 and outcomes.get("passed", 0) >= 1
    result.stdout.fnmatch_lines(["*S8-fork-newest-leaf*"])
    result.stdout.fnmatch_lines(["*why the case exists:*", "*S8: a lookup by session id returns the session's leaf*"])


@pytest.mark.parametrize(
    ("selection", "says"),
    [
        ('areas=["store", "stroe"]', "--area 'stroe' (did you mean store?)"),
        ('ids=["R12-linear-chai"]', "--case 'R12-linear-chai' (did you mean R12-linear-chain"),
    ],
)
def test_the_plugin_refuses_a_missing_area_or_case_at_collection_instead_of_dropping_it(
    pytester: pytest.Pytester, selection: str, says: str
) -> None:
    pytester.makepyfile(
        f"""
        from genkit_sessions_conformance.factories import memory
        from genkit_sessions_conformance.pytest_plugin import conformance_tests

        test_typo = conformance_tests(memory, {selection})
        """
    )
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    assert result.ret != 0
    assert result.parseoutcomes().get("passed", 0) == 0
    result.stdout.fnmatch_lines([f"*INVALID_ARGUMENT: {says}*"])


def test_the_plugin_runs_only_the_case_ids_given() -> None:
    marks = conformance_tests(memory, ids=["R12-linear-chain"]).pytestmark  # type: ignore[attr-defined]
    assert [case.id for case in marks[0].args[1]] == ["R12-linear-chain"]
