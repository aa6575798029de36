"""The whole suite against the DynamoDB store: on in-process moto and on a moto server over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import genkit_sessions_conformance as conformance

try:
    from tests.dynamodb_backends import make_client, server_endpoint, store_factory
except ImportError as exc:  # the DynamoDB store or its test backends are not there
    pytest.skip(f"genkit_sessions.dynamodb is not importable: {exc}", allow_module_level=True)


@pytest.fixture
def inprocess() -> Iterator[Any]:
    from moto import mock_aws

    with mock_aws():
        yield store_factory(make_client(), offload=True)


def _required_failures(report: conformance.SuiteReport) -> list[str]:
    return [f"{r.case.id}: {r.message}" for r in report.failures if r.case.level == "must"]


def test_dynamodb_on_inprocess_moto_passes_every_required_case(inprocess: Any) -> None:
    report = conformance.run_suite(inprocess, profile="reject", store_name="dynamodb-inprocess")
    assert _required_failures(report) == []
    # In-process moto lives in this process: its stores cannot be opened from another one.
    assert {name for name, found in report.capabilities.items() if not found} == {"processes"}


def test_dynamodb_async_face_passes_every_required_case_under_walk_back(inprocess: Any) -> None:
    report = conformance.run_suite(lambda: inprocess().aio, profile="walk-back", store_name="dynamodb-inprocess-aio")
    assert _required_failures(report) == []


def test_dynamodb_over_a_moto_server_passes_every_required_case() -> None:
    factory = store_factory(make_client(server_endpoint()))
    report = conformance.run_suite(factory, profile="reject", store_name="dynamodb-server")
    assert _required_failures(report) == []


def test_the_moto_server_factory_races_writers_in_processes_on_a_linearizable_backend() -> None:
    from genkit_sessions_conformance.factories import dynamodb_moto_server

    report = conformance.run_suite(dynamodb_moto_server, areas=["concurrency"], store_name="dynamodb-server")
    assert [r.case.id for r in report.results if r.outcome != "passed"] == []
    assert report.capabilities["processes"] and report.linearizable == "yes"


def test_cli_factory_runs_the_store_area_on_inprocess_moto() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "genkit_sessions_conformance",
            "--store",
            "genkit_sessions_conformance.factories:dynamodb_moto",
            "--area",
            "store",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "| store " in done.stdout
