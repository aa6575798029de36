"""The runner never passes on nothing, refuses a factory that makes no stores with one error, runs a
factory's context manager around each case, and explains each failure with its description and rule."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

import genkit_sessions_conformance as conformance
from genkit_sessions import GenkitError, InMemorySessionStore, Status
from genkit_sessions.cli.main import main as genkit_sessions_main
from genkit_sessions_conformance.cases import parse_case_file
from genkit_sessions_conformance.cli import main
from genkit_sessions_conformance.report import render_summary
from genkit_sessions_conformance.rules import RULES
from tests.conformance.broken_stores import OldestLeaf


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--case", "no-such-case"], "no case has this id"),
        (["--case", "R12-linear-chai"], "did you mean R12-linear-chain"),
        (["--case", "R12-linear-chain", "--case", "R12-linear-chai"], "--case 'R12-linear-chai' (did you mean"),
        (["--area", "bogus"], "no such area; the areas are concurrency, history, ids"),
        (["--area", "ids", "--area", "bogus"], "--area 'bogus': no such area"),
        (["--area", "stroe"], "--area 'stroe' (did you mean store?)"),
        (["--area", "ids", "--case", "R12-linear-chain"], "no case matches both --area and --case"),
    ],
)
def test_a_selection_naming_a_missing_case_or_area_is_invalid_argument_and_exits_non_zero(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("INVALID_ARGUMENT: ") and says in captured.err
    assert "Traceback" not in captured.err and captured.out == ""


def test_genkit_sessions_conformance_reports_an_unknown_case_once_as_invalid_argument(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert genkit_sessions_main(["conformance", "--case", "R12-linear-chai"]) != 0
    err = capsys.readouterr().err
    assert err.startswith("INVALID_ARGUMENT: --case 'R12-linear-chai' (did you mean R12-linear-chain")
    assert err.count("INVALID_ARGUMENT") == 1


def test_a_bad_store_spec_from_python_m_is_invalid_argument_without_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--store", "memory"]) == 2
    assert capsys.readouterr().err.startswith("INVALID_ARGUMENT: --store 'memory': use MODULE:FACTORY")


@pytest.mark.parametrize(
    ("selection", "says"),
    [
        ({"ids": ["R12-linear-chain", "R12-linear-chai"]}, "--case 'R12-linear-chai' (did you mean R12-linear-chain"),
        ({"areas": ["ids", "stroe"]}, "--area 'stroe' (did you mean store?): no such area; the areas are"),
        ({"ids": ["no-such-case"]}, "--case 'no-such-case': no case has this id"),
        ({"areas": ["ids"], "ids": ["R12-linear-chain"]}, "no case matches both --area and --case"),
    ],
)
def test_run_suite_refuses_a_selection_with_a_missing_case_or_area_instead_of_dropping_it(
    selection: dict[str, list[str]], says: str
) -> None:
    with pytest.raises(GenkitError) as raised:
        conformance.run_suite(InMemorySessionStore, **selection)  # type: ignore[arg-type]
    assert raised.value.status is Status.INVALID_ARGUMENT
    assert says in raised.value.message


def test_run_cases_on_an_empty_selection_raises_instead_of_passing() -> None:
    with pytest.raises(GenkitError) as raised:
        asyncio.run(conformance.run_cases(InMemorySessionStore, []))
    assert raised.value.status is Status.INVALID_ARGUMENT
    assert "no conformance case was selected" in raised.value.message


def test_a_factory_that_returns_no_store_is_one_error_naming_the_protocol() -> None:
    with pytest.raises(GenkitError) as raised:
        conformance.run_suite(dict)
    assert raised.value.status is Status.INVALID_ARGUMENT
    assert "returned dict, which is not a store" in raised.value.message
    assert "get_snapshot and save_snapshot" in raised.value.message


def test_the_command_line_reports_a_non_store_factory_once_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--store", "genkit_sessions:mint_id"]) == 2
    text = capsys.readouterr().err
    assert text.startswith("INVALID_ARGUMENT: --store genkit_sessions:mint_id: the store factory")
    assert "returned str" in text and text.count("\n") == 1


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


@pytest.mark.parametrize(
    "step",
    [
        {"op": "save", "snapshotId": "a", "mutator": {"write": {"sessionId": "s1", "status": "no-such-status"}}},
        {"op": "restore", "snapshots": [{"snapshotId": "a", "sessionId": "s1", "state": {"messages": "not a list"}}]},
        {"op": "service", "call": "append", "args": {"sessionId": "s1", "messages": [{"role": "user"}]}},
    ],
    ids=["mutator", "restore", "service"],
)
def test_a_case_whose_own_data_does_not_decode_fails_though_it_expects_invalid_argument(step: dict) -> None:
    raw = {
        "id": "x",
        "rule": "S3",
        "description": "d",
        "steps": [{**step, "expect": {"raise": {"status": "INVALID_ARGUMENT"}}}],
    }
    (case,) = parse_case_file({"area": "store", "cases": [raw]})
    report = asyncio.run(conformance.run_cases(InMemorySessionStore, [case]))
    (result,) = report.results
    assert result.outcome == "failed"
    assert "could not run: the case's own" in result.message and "fix the case" in result.message
