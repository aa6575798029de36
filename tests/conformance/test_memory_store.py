"""The whole suite against our in-memory store: every case passes, sync and async, in both profiles."""

from __future__ import annotations

import pytest

import genkit_sessions_conformance as conformance
from genkit_sessions_conformance.factories import memory, memory_async


@pytest.mark.parametrize("profile", conformance.PROFILES)
@pytest.mark.parametrize("factory", [memory, memory_async], ids=["sync", "async"])
def test_in_memory_store_passes_every_case(factory: conformance.StoreFactory, profile: str) -> None:
    report = conformance.run_suite(factory, profile=profile)
    assert [r.message for r in report.failures] == []
    assert report.ok
    # Every capability but processes: a store in one process's memory cannot be opened from another.
    assert {name for name, found in report.capabilities.items() if not found} == {"processes"}
    skipped = {r.message for r in report.results if r.outcome == "skipped"}
    assert skipped == {f"profile {'walk-back' if profile == 'reject' else 'reject'} only", "store lacks processes"}


def test_store_authors_can_assert_from_one_test() -> None:
    conformance.run_suite(memory, areas=["store"]).assert_passed()
