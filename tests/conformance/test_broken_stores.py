"""Each deliberately broken store fails the suite, and a failure message names the rule it breaks."""

from __future__ import annotations

from typing import Any

import pytest

import genkit_sessions_conformance as conformance
from tests.conformance.broken_stores import BROKEN_STORES, LeakyTenants


@pytest.mark.parametrize("broken", list(BROKEN_STORES), ids=lambda cls: cls.__name__)
def test_suite_fails_a_broken_store_naming_the_rule(broken: type[Any]) -> None:
    rule = BROKEN_STORES[broken]
    claims = ["tenancy"] if broken is LeakyTenants else []
    report = conformance.run_suite(broken, claims=claims)
    assert not report.ok
    naming = [r for r in report.failures if r.message.startswith(f"[{rule}]")]
    assert naming, f"no failure names {rule}: {[r.message for r in report.failures]}"


def test_leaky_store_without_a_tenancy_claim_is_reported_as_lacking_tenancy() -> None:
    report = conformance.run_suite(LeakyTenants)
    assert report.capabilities["tenancy"] is False
    assert any(r.message == "store lacks tenancy" for r in report.results if r.outcome == "skipped")


def test_claimed_capability_that_detection_misses_is_reported() -> None:
    report = conformance.run_suite(LeakyTenants, areas=["store"], claims=["tenancy"])
    assert report.claimed_not_detected == ("tenancy",)
