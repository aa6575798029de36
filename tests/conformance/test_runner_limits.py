"""A store that hangs or raises asyncio.CancelledError fails the case it is in, and the run goes on;
a KeyboardInterrupt still stops the run."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

import genkit_sessions_conformance as conformance
from genkit_sessions import GenkitError, InMemorySessionStore, Status
from genkit_sessions.model.types import SessionSnapshot
from genkit_sessions_conformance.cli import main

LISTING = "S11-list-creation-order"
PLAIN = "S1-both-selectors"


class _ListRaises(InMemorySessionStore):
    """An in-memory store whose list_snapshots raises ``error``."""

    error: BaseException = asyncio.CancelledError()

    def list_snapshots(self, session_id: str, *, context: Any = None) -> Sequence[SessionSnapshot]:
        raise self.error


class _CancelledWhileListing(_ListRaises):
    error = asyncio.CancelledError("the client went away")


class _InterruptedWhileListing(_ListRaises):
    error = KeyboardInterrupt()


_RELEASE = threading.Event()


class _ListBlocks(InMemorySessionStore):
    """A blocking store whose list_snapshots never returns (until the test releases it)."""

    def list_snapshots(self, session_id: str, *, context: Any = None) -> Sequence[SessionSnapshot]:
        _RELEASE.wait()
        return []


def _awaits_forever() -> Any:
    async_store = InMemorySessionStore().aio

    async def list_snapshots(session_id: str, *, context: Any = None) -> Sequence[SessionSnapshot]:
        await asyncio.Event().wait()
        return []

    async_store.list_snapshots = list_snapshots
    return async_store


@pytest.fixture
def release_blocked_stores() -> Iterator[None]:
    _RELEASE.clear()
    yield
    _RELEASE.set()


def test_a_store_raising_cancelled_error_fails_that_case_and_the_run_goes_on() -> None:
    report = conformance.run_suite(_CancelledWhileListing, ids=[LISTING, PLAIN])
    outcomes = {r.case.id: r for r in report.results}
    assert outcomes[PLAIN].outcome == "passed"
    failed = outcomes[LISTING]
    assert failed.outcome == "failed" and not report.ok
    assert "the store raised asyncio.CancelledError (the client went away)" in failed.message
    assert failed.message.startswith("[S11] ")


def test_an_async_store_raising_cancelled_error_fails_that_case() -> None:
    def make() -> Any:
        store = InMemorySessionStore().aio

        async def list_snapshots(session_id: str, *, context: Any = None) -> Sequence[SessionSnapshot]:
            raise asyncio.CancelledError

        store.list_snapshots = list_snapshots
        return store

    report = conformance.run_suite(make, ids=[LISTING, PLAIN])
    assert [r.outcome for r in report.results] == ["passed", "failed"]
    assert "asyncio.CancelledError" in report.results[1].message


def test_the_command_line_reports_a_store_cancelled_error_as_a_failed_case(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--store", f"{__name__}:_CancelledWhileListing", "--case", LISTING, "--case", PLAIN]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert f"{LISTING}: [S11] the store raised asyncio.CancelledError" in out and "FAIL: required" in out


def test_a_keyboard_interrupt_from_a_store_still_stops_the_run() -> None:
    with pytest.raises(KeyboardInterrupt):
        conformance.run_suite(_InterruptedWhileListing, ids=[LISTING, PLAIN])


@pytest.mark.usefixtures("release_blocked_stores")
@pytest.mark.parametrize("factory", [_ListBlocks, _awaits_forever], ids=["blocking", "async"])
def test_a_hanging_store_fails_that_case_naming_the_timeout_and_the_run_goes_on(factory: Any) -> None:
    report = conformance.run_suite(factory, ids=[LISTING, PLAIN], case_timeout=0.5)
    outcomes = {r.case.id: r for r in report.results}
    assert outcomes[PLAIN].outcome == "passed"
    hung = outcomes[LISTING]
    assert hung.outcome == "failed" and not report.ok
    assert "did not finish within the per-case timeout of 0.5 s" in hung.message
    assert "--case-timeout SECONDS" in hung.message and "case_timeout=" in hung.message


@pytest.mark.usefixtures("release_blocked_stores")
def test_the_command_line_fails_a_hanging_case_after_case_timeout_and_finishes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--store", f"{__name__}:_ListBlocks", "--case", LISTING, "--case", PLAIN, "--case-timeout", "0.5"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "per-case timeout of 0.5 s" in out and "| all " in out


@pytest.mark.usefixtures("release_blocked_stores")
def test_a_store_that_hangs_the_capability_probe_is_deadline_exceeded() -> None:
    class ProbeBlocks(InMemorySessionStore):
        def save_snapshot(self, *args: Any, **kwargs: Any) -> Any:
            _RELEASE.wait()

    with pytest.raises(GenkitError) as raised:
        conformance.run_suite(ProbeBlocks, ids=[PLAIN], case_timeout=0.5)
    assert raised.value.status is Status.DEADLINE_EXCEEDED
    assert "the capability probe" in raised.value.message and "--case-timeout" in raised.value.message


@pytest.mark.parametrize("value", ["0", "-1", "soon", "inf"])
def test_a_case_timeout_that_is_not_a_positive_number_is_refused(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--case-timeout", value])
    assert exited.value.code == 2
    assert "--case-timeout" in capsys.readouterr().err


def test_run_suite_refuses_a_case_timeout_that_is_not_positive() -> None:
    with pytest.raises(GenkitError) as raised:
        conformance.run_suite(InMemorySessionStore, ids=[PLAIN], case_timeout=0)
    assert raised.value.status is Status.INVALID_ARGUMENT and "case_timeout 0" in raised.value.message
