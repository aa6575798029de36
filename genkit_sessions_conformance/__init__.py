"""The conformance suite of genkit_sessions: language-neutral cases and a runner for any store.

Run it from a shell (``python -m genkit_sessions_conformance --store module:factory``, or
``genkit-sessions conformance --store module:factory``) or from a store author's own tests::

    import genkit_sessions_conformance as conformance

    def test_my_store_conforms():
        conformance.run_suite(MyStore).assert_passed()

    test_case = conformance.conformance_tests(MyStore)  # one pytest test per case, by case id

The rules the cases pin are stated in ``docs/contract.md`` of the repository; ``conformance/IMPLEMENTING.md``
(installed as ``genkit_sessions_conformance/data/IMPLEMENTING.md``) says what a store must implement.
"""

from genkit_sessions_conformance.cases import (
    CAPABILITIES,
    PROFILES,
    SHIPPED_DIR,
    Capability,
    Case,
    CaseFormatError,
    load_cases,
)
from genkit_sessions_conformance.pytest_plugin import conformance_tests
from genkit_sessions_conformance.rules import RULES
from genkit_sessions_conformance.runner import CaseResult, StoreFactory, SuiteReport, run_cases, run_suite

__all__ = [
    "CAPABILITIES",
    "PROFILES",
    "RULES",
    "SHIPPED_DIR",
    "Capability",
    "Case",
    "CaseFormatError",
    "CaseResult",
    "StoreFactory",
    "SuiteReport",
    "conformance_tests",
    "load_cases",
    "run_cases",
    "run_suite",
]
