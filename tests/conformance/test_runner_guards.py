"""The runner never passes on nothing, refuses a factory that makes no stores with one error, runs a
factory's context manager around each case, and explains each failure with its description and rule."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

import genkit_sessions_conformance as conformance
from genkit_sessions import GenkitError, InMemorySessionStore, Status
from genkit_sessions.cli.main import main as genkit_sessions_main
from genkit_sessions_conformance.cli import main
from genkit_sessions_conformance.report import render_summary
from genkit_sessions_conformance.rules import RULES
from tests.conformance.broken_stores import OldestLeaf


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--case", "no-such-case"], "no case has this id"),
        (["--case", "R12-linear-chai"], "did you mean R12-linear-chain"),
        (["--area", "bogus"], "no such area; the areas are concurrency, history, ids"),
        (["--area", "ids", "--area", "bogus"], "--area bogus: no such area"),
        (["--area", "ids", "--case", "R12-linear-chain"], "no case matches both --area and --case"),
    ],
)
def test_a_selection_of_no_case_exits_non_zero_saying_why(argv: list[str], says: str) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code not in (0, None)
    assert says in str(exited.value.code)


def test_run_cases_on_an_empty_selection_raises_instead_of_passing() -> None:
    with pytest.raises(GenkitError) as raised:
        conformance.run_suite(InMemorySessionStore, ids=["no-such-case"])
    assert raised.value.status is Status.INVALID_ARGUMENT
    assert "no conformance case was selected" in raised.value.message


def test_a_factory_that_returns_no_store_is_one_error_naming_the_protocol() -> None:
    with pytest.raises(GenkitError) as raised:
        conformance.run_suite(dict)
    assert raised.value.status is Status.INVALID_ARGUMENT
    assert "returned dict, which is not a store" in raised.value.message
    assert "get_snapshot and save_snapshot" in raised.value.message


def test_the_command_line_reports_a_non_store_factory_once_and_fails() -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--store", "genkit_sessions:mint_id"])
    text = str(exited.value.code)
    assert text.startswith("--store genkit_sessions:mint_id: the store factory") and "returned str" in text


def test_a_factory_that_raises_is_reported_as_the_factory_failing() -> None:
    def broken() -> InMemorySessionStore:
        raise RuntimeError("no credentials")

    with pytest.raises(GenkitError, match="raised RuntimeError: no credentials"):
        conformance.run_suite(broken, areas=["ids"])


def test_a_context_manager_factory_is_entered_and_exited_around_every_case() -> None:
    opened: list[str] = []
    closed: list[str] = []

    @contextlib.contextmanager
    def namespace() -> Iterator[InMemorySessionStore]:
        opened.append("store")
        yield InMemorySessionStore()
        closed.append("store")

    report = conformance.run_suite(namespace, areas=["store"])
    report.assert_passed()
    ran = sum(1 for r in report.results if r.outcome != "skipped")
    assert len(opened) == len(closed) == ran + 1  # each case, and the capability probe


def test_an_async_context_manager_factory_yields_an_async_store() -> None:
    exits: list[bool] = []

    @contextlib.asynccontextmanager
    async def namespace() -> AsyncIterator[object]:
        yield InMemorySessionStore().aio
        exits.append(True)

    report = conformance.run_suite(namespace, areas=["resolver"])
    report.assert_passed()
    assert len(exits) == sum(1 for r in report.results if r.outcome != "skipped") + 1


def test_a_context_manager_yielding_no_store_is_refused() -> None:
    @contextlib.contextmanager
    def nothing() -> Iterator[None]:
        yield None

    with pytest.raises(GenkitError, match="context manager that yields NoneType, which is not a store"):
        conformance.run_suite(nothing, areas=["store"])


def test_the_terminal_report_explains_each_failure_with_its_description_and_rule() -> None:
    report = conformance.run_suite(OldestLeaf, areas=["store"])
    failed = next(r for r in report.failures if r.case.rule == "S8")
    text = render_summary(report)
    assert f"why the case exists: {failed.case.description}" in text
    assert f"S8: {RULES['S8']}" in text
    assert "docs/contract.md" in text


def test_genkit_sessions_conformance_imports_a_store_module_from_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "first_hour_store.py").write_text(
        "from genkit_sessions import InMemorySessionStore\n\ndef make():\n    return InMemorySessionStore()\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert genkit_sessions_main(["conformance", "--store", "first_hour_store:make", "--area", "ids"]) == 0
