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
