"""Genkit's own Python store (an optional dependency) runs through the adapter and produces the published table."""

from __future__ import annotations

from pathlib import Path

import pytest

import genkit_sessions_conformance as conformance
from genkit_sessions_conformance.report import GENERATED_MARKER, render_markdown

pytest.importorskip("genkit.exp.agent")

from genkit_sessions_conformance.adapters.genkit_peer import GenkitPeerStore

DOC = Path(__file__).resolve().parents[2] / "docs" / "conformance-genkit-peer.md"
COMMAND = (
    "python -m genkit_sessions_conformance --store genkit_sessions_conformance.adapters.genkit_peer:GenkitPeerStore "
    "--profile walk-back "
    "--markdown docs/conformance-genkit-peer.md"
)


@pytest.fixture(scope="module")
def peer_report() -> conformance.SuiteReport:
    return conformance.run_suite(GenkitPeerStore, profile="walk-back", store_name="GenkitPeerStore")


def test_peer_run_completes_with_every_case_judged(peer_report: conformance.SuiteReport) -> None:
    assert len(peer_report.results) == len(conformance.load_cases())
    assert peer_report.count("passed") > 0
    assert not [r for r in peer_report.results if "could not run" in r.message]


def test_peer_passes_what_it_implements_and_fails_parent_checks(peer_report: conformance.SuiteReport) -> None:
    outcome = {r.case.id: r.outcome for r in peer_report.results}
    assert outcome["S5-completed-to-failed"] == "passed"
    assert outcome["S8-fork-newest-leaf"] == "passed"
    assert outcome["S7-missing-parent"] == "failed"
    assert outcome["S10-same-id-two-tenants"] == "skipped"


def test_published_table_matches_a_fresh_run(peer_report: conformance.SuiteReport) -> None:
    published = DOC.read_text(encoding="utf-8").split(GENERATED_MARKER, 1)
    assert len(published) == 2, f"{DOC} lost its marker line"
    fresh = render_markdown(peer_report, COMMAND)
    assert GENERATED_MARKER + published[1] == fresh, f"regenerate with: {COMMAND}"
