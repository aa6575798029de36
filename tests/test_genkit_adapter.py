"""A real Genkit agent (``genkit==0.12.0``) on our stores through ``genkit_sessions.genkit`` (contract rule G1-G4).

The model is a Python function (no network). Every scenario runs on the
in-memory store and on DynamoDB over a moto server, and asserts what is stored,
read back through our own store API, not only what Genkit answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from genkit_sessions import GenkitError, SessionSnapshot, from_wire, to_wire

genkit = pytest.importorskip("genkit")
agent_api = pytest.importorskip("genkit.exp.agent")
pytest.importorskip("genkit._ai._agents._runtime")  # the scenarios set its heartbeat interval

from genkit_sessions.genkit import GenkitSessionStore, to_genkit_error  # noqa: E402
from tests.conftest import STORE_BACKENDS  # noqa: E402
from tests.genkit_scenarios import SCENARIOS, Ours, Scenario, make_agent, run_scenario  # noqa: E402

BACKENDS = ["memory", "dynamodb-server"]


@pytest.fixture(params=BACKENDS)
def ours(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh store of each backend (sync face; ``.aio`` is what Genkit runs on)."""
    factory = next(STORE_BACKENDS[request.param](request))
    yield factory()


def run(ours: Any, scenario: Callable[[], Awaitable[None]]) -> None:
    """Run a scenario on a fresh event loop, closing the store's async face afterwards."""

    async def main() -> None:
        try:
            await scenario()
        finally:
            closer = getattr(ours.aio, "aclose", None)
            if closer is not None:
                await closer()

    asyncio.run(main())


# --- G1: the agent runs unchanged (the scenarios of tests/genkit_scenarios.py) ---------------------


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.run.__name__ for s in SCENARIOS])
def test_a_genkit_agent_scenario_stores_what_genkit_did(ours: Any, scenario: Scenario, tmp_path: Path) -> None:
    run_scenario(Ours(ours.aio), scenario, tmp_path)


# --- G3: nothing is lost ------------------------------------------------------------------------------

RICH_STATE = {
    "sessionId": "s1",
    "x-memory": {"facts": ["likes tea"]},
    "messages": [
        {"role": "user", "content": [{"text": "hello", "x-lang": "en"}, {"metadata": {"kindless": True}}]},
        {"role": "model", "content": [{"text": "echo hello"}], "x-reply-to": 0},
    ],
    "artifacts": [{"name": "notes", "parts": [{"text": "n", "x-format": "md"}], "x-rev": 3}],
}


def test_a_genkit_turn_from_a_snapshot_with_keys_genkit_refuses_keeps_them_in_the_new_snapshot(ours: Any) -> None:
    async def scenario() -> None:
        root = {"snapshotId": "root", "sessionId": "s1", "createdAt": "2026-01-01T00:00:00Z", "status": "completed"}
        await ours.aio.restore_snapshots([from_wire(SessionSnapshot, {**root, "x-trace": 1, "state": RICH_STATE})])
        agent = make_agent(GenkitSessionStore(ours.aio))
        out = await agent.chat(snapshot_id="root").send("more")

        child = to_wire(await ours.aio.get_snapshot(snapshot_id=out.snapshot_id))
        assert child["parentId"] == "root" and "x-trace" not in child  # the root's own keys stay on the root
        state = child["state"]
        assert state["messages"][:2] == RICH_STATE["messages"]
        assert [m["content"][0]["text"] for m in state["messages"][2:]] == ["more", "echo more"]
        assert state["x-memory"] == RICH_STATE["x-memory"] and state["artifacts"] == RICH_STATE["artifacts"]

    run(ours, scenario)


def test_a_genkit_rewrite_of_a_snapshot_with_keys_genkit_refuses_keeps_every_one(ours: Any) -> None:
    async def scenario() -> None:
        wire = {
            "snapshotId": "p",
            "sessionId": "s1",
            "parentId": "",
            "createdAt": "2026-01-01T00:00:00Z",
            "status": "pending",
            "x-trace": {"id": 7},
            "error": {"status": "INTERNAL", "message": "m", "x-code": 9},
            "state": RICH_STATE,
        }
        await ours.aio.restore_snapshots([from_wire(SessionSnapshot, wire)])
        adapter = GenkitSessionStore(ours.aio, remember=0)

        def beat(existing: Any) -> Any:  # what Genkit's heartbeat does to a pending snapshot
            return existing.model_copy(update={"heartbeat_at": "2026-01-01T00:00:05+00:00"})

        saved = await adapter.save_snapshot("p", beat)
        assert saved is not None and saved.heartbeat_at is not None
        stored = to_wire(await ours.aio.get_snapshot(snapshot_id="p"))
        assert stored["heartbeatAt"] and stored["status"] == "pending"
        assert {k: v for k, v in stored.items() if k not in ("heartbeatAt", "updatedAt")} == wire

        before = await agent_api_abort(adapter, "p")
        assert before == "pending"
        stored = to_wire(await ours.aio.get_snapshot(snapshot_id="p"))
        assert stored["status"] == "aborted" and stored["x-trace"] == {"id": 7} and stored["state"] == RICH_STATE

    run(ours, scenario)


async def agent_api_abort(store: Any, snapshot_id: str) -> str | None:
    """Abort the way Genkit's agent does: one save whose mutator flips pending to aborted."""
    from genkit._ai._agents._snapshot import abort_snapshot_in_store

    status = await abort_snapshot_in_store(store=store, snapshot_id=snapshot_id)
    return None if status is None else str(status.value)


# --- G4: errors reach Genkit as its own ---------------------------------------------------------------


def test_our_errors_reach_genkit_as_its_genkit_error_with_the_same_status_message_and_reason(ours: Any) -> None:
    async def scenario() -> None:
        adapter = GenkitSessionStore(ours.aio)
        with pytest.raises(genkit.GenkitError) as raised:
            await adapter.get_snapshot(snapshot_id="a\x00b")
        with pytest.raises(GenkitError) as direct:
            await ours.aio.get_snapshot(snapshot_id="a\x00b")
        assert raised.value.status == direct.value.status == "INVALID_ARGUMENT"
        assert raised.value.original_message == direct.value.message
        assert raised.value.details["reason"] == direct.value.reason == "INVALID_SNAPSHOT_ID"

        def orphan(_: Any) -> Any:
            return agent_api.SessionSnapshot(
                snapshot_id="c", parent_id="ghost", created_at="", state=agent_api.SessionState(session_id="s")
            )

        with pytest.raises(genkit.GenkitError) as refused:
            await adapter.save_snapshot("c", orphan)
        assert refused.value.status == "INVALID_ARGUMENT" and "ghost" in refused.value.original_message
        assert await ours.aio.get_snapshot(snapshot_id="c") is None

    run(ours, scenario)


def test_a_reason_genkit_does_not_define_reaches_it_in_the_details() -> None:
    error = to_genkit_error(GenkitError("INVALID_ARGUMENT", "async mutator", reason="ASYNC_NOT_SUPPORTED"))
    assert error.status == "INVALID_ARGUMENT" and error.original_message == "async mutator"
    assert error.details["reason"] == "ASYNC_NOT_SUPPORTED"


def test_wrapping_a_blocking_store_is_refused_naming_the_async_face() -> None:
    from genkit_sessions import InMemorySessionStore

    class Blocking:
        def get_snapshot(self, **_: Any) -> None: ...

    with pytest.raises(GenkitError, match=r"store\.aio") as info:
        GenkitSessionStore(Blocking())  # type: ignore[arg-type]
    assert info.value.status == "INVALID_ARGUMENT"
    assert isinstance(GenkitSessionStore(InMemorySessionStore().aio), agent_api.SnapshotSubscriber)
