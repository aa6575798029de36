"""A real Genkit agent (``genkit==0.12.0``) on our stores through ``genkit_sessions.genkit`` (SPEC G1-G4).

The model is a Python function (no network). Every scenario runs on the
in-memory store and on DynamoDB over a moto server, and asserts what is stored,
read back through our own store API, not only what Genkit answered.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from genkit_sessions import GenkitError, SessionSnapshot, SnapshotStatus, from_wire, to_wire

genkit = pytest.importorskip("genkit")
agent_api = pytest.importorskip("genkit.exp.agent")
runtime = pytest.importorskip("genkit._ai._agents._runtime")

from genkit import ActionRunContext, Message, ModelRequest, ModelResponse, Part, Role  # noqa: E402
from genkit.exp import Genkit  # noqa: E402

from genkit_sessions.genkit import GenkitSessionStore, to_genkit_error  # noqa: E402
from tests.conftest import STORE_BACKENDS  # noqa: E402

BACKENDS = ["memory", "dynamodb-server"]


@pytest.fixture(params=BACKENDS)
def ours(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh store of each backend (sync face; ``.aio`` is what Genkit runs on)."""
    factory = next(STORE_BACKENDS[request.param](request))
    yield factory()


class Model:
    """A model as a Python function: echoes the last user text; "boom" raises; "slow" waits for ``release``."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = asyncio.Event()

    async def respond(self, request: ModelRequest, ctx: ActionRunContext) -> ModelResponse:
        text = request.messages[-1].content[0].text
        if text == "boom":
            raise RuntimeError("the model exploded")
        if text == "slow":
            self.started.set()
            await self.release.wait()
        return ModelResponse(message=Message(role=Role.MODEL, content=[Part(text=f"echo {text}")]))


def make_agent(store: Any, model: Model | None = None) -> Any:
    ai = Genkit()
    ai.define_model(name="echo", fn=(model or Model()).respond)
    return ai.define_agent(name="chat", model="echo", store=store)


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


def texts(snapshot: SessionSnapshot | None) -> list[str]:
    assert snapshot is not None and snapshot.state is not None
    return [m.text for m in snapshot.state.message_list]


async def turn(agent: Any, init: dict[str, Any], text: str, context: dict[str, Any] | None = None) -> Any:
    """One turn as a server runs it: the init and the request context handed to the agent action."""
    conn = await agent.stream_bidi(agent_api.AgentInit.model_validate(init), context=context)
    await conn.send(agent_api.AgentInput(message=Message(role=Role.USER, content=[Part(text=text)])))
    await conn.close()
    async for _ in conn.receive():
        pass
    return await conn.output()


async def until(check: Callable[[], Awaitable[bool]], seconds: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "timed out waiting"
        await asyncio.sleep(0.01)


# --- G1: the agent runs unchanged -----------------------------------------------------------------


def test_a_multi_turn_chat_resumed_by_session_id_stores_one_chain(ours: Any) -> None:
    async def scenario() -> None:
        agent = make_agent(GenkitSessionStore(ours.aio))
        chat = agent.chat()
        first = await chat.send("hello")
        second = await chat.send("again")
        third = await agent.chat(session_id=first.session_id).send("third")
        assert third.text == "echo third"

        chain = await ours.aio.list_snapshots(first.session_id)
        assert [s.snapshot_id for s in chain] == [first.snapshot_id, second.snapshot_id, third.snapshot_id]
        assert [s.parent_id for s in chain] == [None, first.snapshot_id, second.snapshot_id]
        assert all(s.status is SnapshotStatus.COMPLETED for s in chain)
        assert to_wire(chain[0])["parentId"] == ""  # the root as Genkit wrote it
        leaf = await ours.aio.get_snapshot(session_id=first.session_id)
        assert leaf is not None and leaf.snapshot_id == third.snapshot_id
        assert texts(leaf) == ["hello", "echo hello", "again", "echo again", "third", "echo third"]

    run(ours, scenario)


def test_a_turn_whose_model_raises_stores_a_failed_snapshot_and_the_next_turn_resumes_before_it(ours: Any) -> None:
    async def scenario() -> None:
        agent = make_agent(GenkitSessionStore(ours.aio))
        chat = agent.chat()
        first = await chat.send("hello")
        failed = await turn(agent, {"sessionId": first.session_id}, "boom")
        assert failed.finish_reason.value == "failed" and failed.error.status == "INTERNAL"

        stored = await ours.aio.list_snapshots(first.session_id)
        bad = [s for s in stored if s.status is SnapshotStatus.FAILED]
        assert len(bad) == 1 and bad[0].parent_id == first.snapshot_id
        assert bad[0].error is not None and bad[0].error.status == "INTERNAL"
        assert texts(bad[0])[-1] == "boom"

        resumed = await turn(agent, {"sessionId": first.session_id}, "after")
        after = await ours.aio.get_snapshot(snapshot_id=resumed.snapshot_id)
        assert after is not None and after.status is SnapshotStatus.COMPLETED
        assert after.parent_id in {s.snapshot_id for s in stored if s.status is SnapshotStatus.COMPLETED}
        assert texts(after) == ["hello", "echo hello", "after", "echo after"]

    run(ours, scenario)


def test_resuming_by_snapshot_id_forks_the_tree_and_the_fork_becomes_the_leaf(ours: Any) -> None:
    async def scenario() -> None:
        agent = make_agent(GenkitSessionStore(ours.aio))
        chat = agent.chat()
        first = await chat.send("hello")
        await chat.send("again")
        fork = await agent.chat(snapshot_id=first.snapshot_id).send("instead")

        forked = await ours.aio.get_snapshot(snapshot_id=fork.snapshot_id)
        assert forked is not None and forked.parent_id == first.snapshot_id
        assert texts(forked) == ["hello", "echo hello", "instead", "echo instead"]
        children = [s for s in await ours.aio.list_snapshots(first.session_id) if s.parent_id == first.snapshot_id]
        assert len(children) == 2
        leaf = await ours.aio.get_snapshot(session_id=first.session_id)
        assert leaf is not None and leaf.snapshot_id == fork.snapshot_id

    run(ours, scenario)


def test_a_detached_turn_is_stored_pending_takes_heartbeats_and_completes(
    ours: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runtime, "DEFAULT_HEARTBEAT_INTERVAL_MS", 20)

    async def scenario() -> None:
        model = Model()
        agent = make_agent(GenkitSessionStore(ours.aio), model)
        chat = agent.chat()
        first = await chat.send("hello")
        task = await chat.detach("slow")
        pending = await ours.aio.get_snapshot(snapshot_id=task.snapshot_id)
        assert pending is not None and pending.status is SnapshotStatus.PENDING
        assert pending.parent_id == first.snapshot_id and pending.heartbeat_at is not None
        beats = {pending.heartbeat_at}

        async def beaten() -> bool:
            now = await ours.aio.get_snapshot(snapshot_id=task.snapshot_id)
            beats.add(now.heartbeat_at)
            return len(beats) >= 3

        await until(beaten)
        model.release.set()

        async def completed() -> bool:
            now = await ours.aio.get_snapshot(snapshot_id=task.snapshot_id)
            return now.status is SnapshotStatus.COMPLETED

        await until(completed)
        done = await ours.aio.get_snapshot(snapshot_id=task.snapshot_id)
        assert texts(done) == ["hello", "echo hello", "slow", "echo slow"]
        assert done.parent_id == first.snapshot_id

    run(ours, scenario)


@pytest.mark.parametrize("through", ["genkit", "our store"])
def test_aborting_a_detached_turn_stores_aborted_and_the_turn_never_overwrites_it(ours: Any, through: str) -> None:
    async def scenario() -> None:
        model = Model()
        agent = make_agent(GenkitSessionStore(ours.aio), model)
        chat = agent.chat()
        await chat.send("hello")
        task = await chat.detach("slow")
        await model.started.wait()
        if through == "genkit":
            before = await agent.abort(task.snapshot_id)
            assert before is not None and before.value == "pending"
        else:
            assert await ours.aio.abort_snapshot(task.snapshot_id) is SnapshotStatus.PENDING
        aborted = await ours.aio.get_snapshot(snapshot_id=task.snapshot_id)
        assert aborted is not None and aborted.status is SnapshotStatus.ABORTED

        model.release.set()
        snapshot = await task.wait(interval=0.01)
        assert snapshot.status.value == "aborted"
        await asyncio.sleep(0.05)  # the background turn has finished and skipped its write
        still = await ours.aio.get_snapshot(snapshot_id=task.snapshot_id)
        assert still is not None and still.status is SnapshotStatus.ABORTED and texts(still)[-1] == "slow"

    run(ours, scenario)


def test_the_request_context_picks_the_tenant_and_tenants_do_not_see_each_other(ours: Any) -> None:
    async def scenario() -> None:
        agent = make_agent(GenkitSessionStore(ours.aio))
        acme, globex = {"tenant": "acme"}, {"tenant": "globex"}
        out = await turn(agent, {"sessionId": "shared"}, "for acme", context=acme)

        stored = await ours.aio.get_snapshot(session_id="shared", context=acme)
        assert stored is not None and stored.snapshot_id == out.snapshot_id and texts(stored)[0] == "for acme"
        assert await ours.aio.get_snapshot(session_id="shared", context=globex) is None
        assert await ours.aio.get_snapshot(session_id="shared") is None

        other = await turn(agent, {"sessionId": "shared"}, "for globex", context=globex)
        theirs = await ours.aio.get_snapshot(session_id="shared", context=globex)
        assert theirs is not None and theirs.snapshot_id == other.snapshot_id
        assert texts(theirs) == ["for globex", "echo for globex"]
        missing = await turn(agent, {"snapshotId": out.snapshot_id}, "peek", context=globex)
        assert missing.finish_reason.value == "failed" and missing.error.status == "NOT_FOUND"

    run(ours, scenario)


def test_a_session_written_by_genkits_file_store_is_imported_and_resumed(ours: Any, tmp_path: Path) -> None:
    async def scenario() -> None:
        file_agent = make_agent(agent_api.FileSessionStore(str(tmp_path)))
        chat = file_agent.chat()
        first = await chat.send("hello")
        await chat.send("again")
        written = [from_wire(SessionSnapshot, p.read_text(encoding="utf-8")) for p in sorted(tmp_path.glob("*.json"))]
        assert len(written) == 2
        assert await ours.aio.restore_snapshots(written) == 2

        agent = make_agent(GenkitSessionStore(ours.aio))
        resumed = await agent.chat(session_id=first.session_id).send("third")
        leaf = await ours.aio.get_snapshot(session_id=first.session_id)
        assert leaf is not None and leaf.snapshot_id == resumed.snapshot_id
        assert texts(leaf) == ["hello", "echo hello", "again", "echo again", "third", "echo third"]
        root = await ours.aio.get_snapshot(snapshot_id=first.snapshot_id)
        on_disk = json.loads((tmp_path / f"{first.snapshot_id}.json").read_text(encoding="utf-8"))
        assert on_disk["parentId"] == "" and to_wire(root) == on_disk

    run(ours, scenario)


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
