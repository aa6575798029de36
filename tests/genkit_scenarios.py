"""End-to-end scenarios of a real Genkit agent (``genkit==0.12.0``) on a session store, store-neutral.

Each scenario runs a Genkit agent whose model is a Python function (no network) on the store of a
:class:`Backend`, then reads back what is stored through that store's own API, as wire JSON. A check
that fails raises :class:`Differs` with a one-line reason. ``tests/test_genkit_adapter.py`` runs them on
our stores through ``genkit_sessions.genkit``; ``benchmarks/genkit_scenarios.py`` runs them on Genkit's
own ``InMemorySessionStore`` as well and prints where it differs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genkit import ActionRunContext, Message, ModelRequest, ModelResponse, Part, Role
from genkit._ai._agents import _runtime as runtime
from genkit._ai._agents._snapshot import abort_snapshot_in_store
from genkit.exp import Genkit
from genkit.exp import agent as agent_api

from genkit_sessions import SessionSnapshot, from_wire, to_wire
from genkit_sessions.genkit import GenkitSessionStore

Wire = dict[str, Any]


class Differs(AssertionError):
    """A scenario's check failed: the store did something other than what the scenario expects."""


def expect(condition: object, reason: str) -> None:
    if not condition:
        raise Differs(reason)


class Model:
    """A model as a Python function: echoes the last user text; "boom" raises; "slow" waits for ``release``."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = asyncio.Event()

    async def respond(self, request: ModelRequest[Any], ctx: ActionRunContext) -> ModelResponse:
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


async def turn(agent: Any, init: dict[str, Any], text: str, context: dict[str, Any] | None = None) -> Any:
    """One turn as a server runs it: the init and the request context handed to the agent action."""
    conn = await agent.stream_bidi(agent_api.AgentInit.model_validate(init), context=context)
    await conn.send(agent_api.AgentInput(message=Message(role=Role.USER, content=[Part(text=text)])))
    await conn.close()
    async for _ in conn.receive():
        pass
    return await conn.output()


async def until(check: Callable[[], Awaitable[bool]], reason: str, seconds: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not await check():
        expect(asyncio.get_running_loop().time() < deadline, reason)
        await asyncio.sleep(0.01)


def texts(snapshot: Wire | None) -> list[str]:
    """The text of every message of a stored snapshot's state."""
    expect(snapshot is not None and snapshot.get("state") is not None, "a snapshot expected is not stored")
    assert snapshot is not None
    return ["".join(p.get("text", "") for p in m["content"]) for m in snapshot["state"].get("messages", [])]


def parent(snapshot: Wire) -> str | None:
    return snapshot.get("parentId") or None


# --- backends: the store Genkit runs on, and that store's own reads ---------------------------------


class Backend:
    """A store for Genkit (:attr:`store`) and reads of what it stored, as wire JSON, through its own API."""

    name = ""
    store: Any

    async def get(self, snapshot_id: str, context: dict[str, Any] | None = None) -> Wire | None:
        raise NotImplementedError

    async def leaf(self, session_id: str, context: dict[str, Any] | None = None) -> Wire | None:
        raise NotImplementedError

    async def session(self, session_id: str) -> list[Wire]:
        """The session's snapshots, oldest first."""
        raise NotImplementedError

    async def abort(self, snapshot_id: str) -> str | None:
        """Abort through the store's own API; the status before, or None."""
        raise NotImplementedError

    async def restore(self, snapshots: Iterable[Wire]) -> int:
        raise NotImplementedError

    async def close(self) -> None:
        pass


class Ours(Backend):
    """One of our stores (its async face) through the adapter."""

    def __init__(self, aio: Any, name: str = "ours") -> None:
        self.aio, self.name = aio, name
        self.store = GenkitSessionStore(aio)

    async def get(self, snapshot_id: str, context: dict[str, Any] | None = None) -> Wire | None:
        found = await self.aio.get_snapshot(snapshot_id=snapshot_id, context=context)
        return None if found is None else to_wire(found)

    async def leaf(self, session_id: str, context: dict[str, Any] | None = None) -> Wire | None:
        found = await self.aio.get_snapshot(session_id=session_id, context=context)
        return None if found is None else to_wire(found)

    async def session(self, session_id: str) -> list[Wire]:
        return [to_wire(s) for s in await self.aio.list_snapshots(session_id)]

    async def abort(self, snapshot_id: str) -> str | None:
        before = await self.aio.abort_snapshot(snapshot_id)
        return None if before is None else str(before.value)

    async def restore(self, snapshots: Iterable[Wire]) -> int:
        count: int = await self.aio.restore_snapshots([from_wire(SessionSnapshot, w) for w in snapshots])
        return count

    async def close(self) -> None:
        closer = getattr(self.aio, "aclose", None)
        if closer is not None:
            await closer()


class GenkitInMemory(Backend):
    """Genkit's own ``InMemorySessionStore``, used directly (it has no list: its dict is read)."""

    name = "Genkit InMemorySessionStore"

    def __init__(self) -> None:
        self.store = agent_api.InMemorySessionStore()

    @staticmethod
    def _wire(snapshot: Any) -> Wire | None:
        return None if snapshot is None else dict(snapshot.model_dump(mode="json", by_alias=True, exclude_none=True))

    async def get(self, snapshot_id: str, context: dict[str, Any] | None = None) -> Wire | None:
        return self._wire(await self.store.get_snapshot(snapshot_id=snapshot_id, context=context))

    async def leaf(self, session_id: str, context: dict[str, Any] | None = None) -> Wire | None:
        return self._wire(await self.store.get_snapshot(session_id=session_id, context=context))

    async def session(self, session_id: str) -> list[Wire]:
        owned = [self._wire(s) for s in self.store.snapshots.values() if s.state.session_id == session_id]
        return sorted((w for w in owned if w is not None), key=lambda w: str(w.get("createdAt")))

    async def abort(self, snapshot_id: str) -> str | None:
        before = await abort_snapshot_in_store(store=self.store, snapshot_id=snapshot_id)
        return None if before is None else str(before.value)

    async def restore(self, snapshots: Iterable[Wire]) -> int:
        count = 0
        for wire in snapshots:
            snapshot = agent_api.SessionSnapshot.model_validate(wire)
            self.store.snapshots[snapshot.snapshot_id] = snapshot
            count += 1
        return count


# --- the scenarios -----------------------------------------------------------------------------------


async def multi_turn_chat(b: Backend, workdir: Path) -> None:
    agent = make_agent(b.store)
    chat = agent.chat()
    first = await chat.send("hello")
    second = await chat.send("again")
    third = await agent.chat(session_id=first.session_id).send("third")
    expect(third.text == "echo third", f"the third turn answered {third.text!r}")

    chain = await b.session(first.session_id)
    expect(
        [s["snapshotId"] for s in chain] == [first.snapshot_id, second.snapshot_id, third.snapshot_id],
        "the session does not hold the three turns' snapshots",
    )
    expect([parent(s) for s in chain] == [None, first.snapshot_id, second.snapshot_id], "the turns are not one chain")
    expect(all(s["status"] == "completed" for s in chain), "a turn's snapshot is not completed")
    expect(chain[0].get("parentId") == "", "the root's parentId is not stored as Genkit wrote it ('')")
    leaf = await b.leaf(first.session_id)
    expect(leaf is not None and leaf["snapshotId"] == third.snapshot_id, "the session's leaf is not the last turn")
    expect(
        texts(leaf) == ["hello", "echo hello", "again", "echo again", "third", "echo third"],
        "the leaf does not hold the whole conversation",
    )


async def failed_turn_and_resume(b: Backend, workdir: Path) -> None:
    agent = make_agent(b.store)
    first = await agent.chat().send("hello")
    failed = await turn(agent, {"sessionId": first.session_id}, "boom")
    expect(failed.finish_reason.value == "failed", "the turn whose model raised did not fail")
    expect(failed.error.status == "INTERNAL", "the failed turn's error is not INTERNAL")

    stored = await b.session(first.session_id)
    bad = [s for s in stored if s["status"] == "failed"]
    expect(len(bad) == 1 and parent(bad[0]) == first.snapshot_id, "no one failed snapshot under the first turn")
    expect(bad[0].get("error", {}).get("status") == "INTERNAL", "the failed snapshot holds no INTERNAL error")
    expect(texts(bad[0])[-1] == "boom", "the failed snapshot does not end with the failed input")

    resumed = await turn(agent, {"sessionId": first.session_id}, "after")
    after = await b.get(resumed.snapshot_id)
    expect(after is not None and after["status"] == "completed", "the resumed turn is not completed")
    assert after is not None
    completed = {s["snapshotId"] for s in stored if s["status"] == "completed"}
    expect(parent(after) in completed, "the resume did not start from a completed snapshot")
    expect(texts(after) == ["hello", "echo hello", "after", "echo after"], "the resume carried the failed turn over")


async def fork_by_snapshot_id(b: Backend, workdir: Path) -> None:
    agent = make_agent(b.store)
    chat = agent.chat()
    first = await chat.send("hello")
    await chat.send("again")
    fork = await agent.chat(snapshot_id=first.snapshot_id).send("instead")

    forked = await b.get(fork.snapshot_id)
    expect(forked is not None and parent(forked) == first.snapshot_id, "the fork's parent is not the snapshot resumed")
    expect(texts(forked) == ["hello", "echo hello", "instead", "echo instead"], "the fork holds the other branch")
    children = [s for s in await b.session(first.session_id) if parent(s) == first.snapshot_id]
    expect(len(children) == 2, "the resumed snapshot does not have two children")
    leaf = await b.leaf(first.session_id)
    expect(leaf is not None and leaf["snapshotId"] == fork.snapshot_id, "the fork is not the session's leaf")


async def detached_turn_with_heartbeats(b: Backend, workdir: Path) -> None:
    interval = runtime.DEFAULT_HEARTBEAT_INTERVAL_MS
    runtime.DEFAULT_HEARTBEAT_INTERVAL_MS = 20
    try:
        model = Model()
        agent = make_agent(b.store, model)
        chat = agent.chat()
        first = await chat.send("hello")
        task = await chat.detach("slow")
        pending = await b.get(task.snapshot_id)
        expect(pending is not None and pending["status"] == "pending", "the detached turn is not stored pending")
        assert pending is not None
        expect(parent(pending) == first.snapshot_id, "the detached turn's parent is not the first turn")
        expect(pending.get("heartbeatAt"), "the pending snapshot has no heartbeat")
        beats = {pending.get("heartbeatAt")}

        async def beaten() -> bool:
            now = await b.get(task.snapshot_id)
            beats.add(None if now is None else now.get("heartbeatAt"))
            return len(beats) >= 3

        await until(beaten, "the pending snapshot took no new heartbeats")
        model.release.set()

        async def completed() -> bool:
            now = await b.get(task.snapshot_id)
            return now is not None and now["status"] == "completed"

        await until(completed, "the detached turn never completed")
        done = await b.get(task.snapshot_id)
        expect(texts(done) == ["hello", "echo hello", "slow", "echo slow"], "the completed turn lacks its answer")
        assert done is not None
        expect(parent(done) == first.snapshot_id, "the completed turn changed its parent")
    finally:
        runtime.DEFAULT_HEARTBEAT_INTERVAL_MS = interval


async def _abort(b: Backend, through_genkit: bool) -> None:
    model = Model()
    agent = make_agent(b.store, model)
    chat = agent.chat()
    await chat.send("hello")
    task = await chat.detach("slow")
    await model.started.wait()
    if through_genkit:
        before = await agent.abort(task.snapshot_id)
        expect(before is not None and before.value == "pending", "Genkit's abort did not find the turn pending")
    else:
        expect(await b.abort(task.snapshot_id) == "pending", "the store's abort did not find the turn pending")
    aborted = await b.get(task.snapshot_id)
    expect(aborted is not None and aborted["status"] == "aborted", "the aborted turn is not stored aborted")

    model.release.set()
    snapshot = await task.wait(interval=0.01)
    expect(snapshot.status.value == "aborted", "the detached task did not end aborted")
    await asyncio.sleep(0.05)  # the background turn has finished and skipped its write
    still = await b.get(task.snapshot_id)
    expect(still is not None and still["status"] == "aborted", "the finished turn overwrote the abort")
    expect(texts(still)[-1] == "slow", "the aborted snapshot lost its input")


async def abort_through_genkit(b: Backend, workdir: Path) -> None:
    await _abort(b, through_genkit=True)


async def abort_through_the_store(b: Backend, workdir: Path) -> None:
    await _abort(b, through_genkit=False)


async def tenancy_from_the_request_context(b: Backend, workdir: Path) -> None:
    agent = make_agent(b.store)
    acme, globex = {"tenant": "acme"}, {"tenant": "globex"}
    out = await turn(agent, {"sessionId": "shared"}, "for acme", context=acme)

    stored = await b.leaf("shared", context=acme)
    expect(stored is not None and stored["snapshotId"] == out.snapshot_id, "acme's turn is not acme's leaf")
    expect(texts(stored)[0] == "for acme", "acme's leaf does not hold acme's turn")
    expect(await b.leaf("shared", context=globex) is None, "acme's session is readable by tenant globex")
    expect(await b.leaf("shared") is None, "acme's session is readable without a tenant")

    other = await turn(agent, {"sessionId": "shared"}, "for globex", context=globex)
    theirs = await b.leaf("shared", context=globex)
    expect(theirs is not None and theirs["snapshotId"] == other.snapshot_id, "globex's turn is not globex's leaf")
    expect(texts(theirs) == ["for globex", "echo for globex"], "globex's turn resumed acme's conversation")
    missing = await turn(agent, {"snapshotId": out.snapshot_id}, "peek", context=globex)
    expect(
        missing.finish_reason.value == "failed" and missing.error.status == "NOT_FOUND",
        "globex resumed acme's snapshot by id",
    )


async def file_store_session_imported(b: Backend, workdir: Path) -> None:
    file_agent = make_agent(agent_api.FileSessionStore(str(workdir)))
    chat = file_agent.chat()
    first = await chat.send("hello")
    await chat.send("again")
    on_disk = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(workdir.glob("*.json"))]
    expect(len(on_disk) == 2, "Genkit's FileSessionStore did not write two snapshots")
    expect(await b.restore(on_disk) == 2, "the store did not import both snapshots")

    agent = make_agent(b.store)
    resumed = await agent.chat(session_id=first.session_id).send("third")
    leaf = await b.leaf(first.session_id)
    expect(leaf is not None and leaf["snapshotId"] == resumed.snapshot_id, "the resumed turn is not the leaf")
    expect(
        texts(leaf) == ["hello", "echo hello", "again", "echo again", "third", "echo third"],
        "the resume lost the imported conversation",
    )
    root = await b.get(first.snapshot_id)
    written = json.loads((workdir / f"{first.snapshot_id}.json").read_text(encoding="utf-8"))
    expect(written["parentId"] == "" and root == written, "the imported root does not read back as written")


@dataclass(frozen=True)
class Scenario:
    name: str
    run: Callable[[Backend, Path], Awaitable[None]]


SCENARIOS = [
    Scenario("multi-turn chat by session id", multi_turn_chat),
    Scenario("a model that raises, and the resume", failed_turn_and_resume),
    Scenario("resume by snapshot id (a fork)", fork_by_snapshot_id),
    Scenario("detached turn with heartbeats", detached_turn_with_heartbeats),
    Scenario("abort through Genkit", abort_through_genkit),
    Scenario("abort through the store's own API", abort_through_the_store),
    Scenario("tenancy from the request context", tenancy_from_the_request_context),
    Scenario("FileSessionStore session imported and resumed", file_store_session_imported),
]


def run_scenario(backend: Backend, scenario: Scenario, workdir: Path) -> None:
    """Run one scenario on a fresh event loop, closing the backend afterwards; raises :class:`Differs`."""

    async def main() -> None:
        try:
            await scenario.run(backend, workdir)
        finally:
            await backend.close()

    asyncio.run(main())
