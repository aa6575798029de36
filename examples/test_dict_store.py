"""A store author's test file: the conformance suite run on ``DictSessionStore`` (``dict_store.py``).

Copy it next to your store and change the import. ``pytest examples/test_dict_store.py`` runs it:
one test runs the whole suite under each R13 profile, and ``test_case`` is one pytest test per case,
named by its id, so a failure reads as the rule it breaks.
"""

from __future__ import annotations

import pytest
from dict_store import DictSessionStore

import genkit_sessions_conformance as conformance


@pytest.mark.parametrize("profile", conformance.PROFILES)
def test_dict_store_passes_the_conformance_suite(profile: str) -> None:
    report = conformance.run_suite(DictSessionStore, profile=profile)
    report.assert_passed()
    assert report.count("passed") > 250  # the suite ran; a store without the optional methods skips more


test_case = conformance.conformance_tests(DictSessionStore, areas=["store", "ids"])
