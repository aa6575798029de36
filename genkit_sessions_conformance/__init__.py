"""The conformance suite of genkit_sessions: language-neutral cases and a runner for any store.

Run it from a shell (``python -m genkit_sessions_conformance --store module:factory``) or from
one test in a store author's own CI::

    import genkit_sessions_conformance as conformance

    def test_my_store_conforms():
        conformance.run_suite(MyStore).assert_passed()
"""

from genkit_sessions_conformance.cases import CAPABILITIES, PROFILES, Case, CaseFormatError, load_cases
from genkit_sessions_conformance.runner import CaseResult, StoreFactory, SuiteReport, run_cases, run_suite

__all__ = [
    "CAPABILITIES",
    "PROFILES",
    "Case",
    "CaseFormatError",
    "CaseResult",
    "StoreFactory",
    "SuiteReport",
    "load_cases",
    "run_cases",
    "run_suite",
]
