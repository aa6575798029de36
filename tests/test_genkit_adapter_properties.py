"""Generated snapshots through the Genkit adapter lose nothing (contract rule G3), whatever they hold.

The snapshots come from the wire strategies of ``tests/model/test_wire.py``: every part kind, unknown
keys at every level, parts without a kind, null data parts, metadata and custom riders. Each is stored
verbatim, then Genkit's agent runtime is played through :class:`GenkitSessionStore` as it behaves:
it rewrites the snapshot with what it was handed, finishes a pending turn (a status, a finish reason and
one more message), or saves a new snapshot that carries the stored one's messages and artifacts over
and appends a message. What the store
holds afterwards must be what it held before, down to the JSON of every key Genkit cannot see.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genkit_sessions import InMemorySessionStore, SessionSnapshot, from_wire, to_wire
from tests.model.test_wire import same_json, snapshots

agent = pytest.importorskip("genkit.exp.agent")
genkit = pytest.importorskip("genkit")

from genkit_sessions.genkit import GenkitSessionStore  # noqa: E402

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
STAMPED = ("updatedAt",)  # the store stamps these on every change (S4)


def _stored(data: dict[str, Any]) -> tuple[InMemorySessionStore, SessionSnapshot]:
    """A store holding ``data`` verbatim, as a root of session ``sess`` (the ids are the one thing replaced:
    the wire strategies draw any string, and the store refuses invalid ids before it looks further) and
    a status (a save stamps a snapshot without one as completed, S4; expired is never stored, only read)."""
    status = data.get("status", "completed")
    data = {**data, "snapshotId": "snap", "sessionId": "sess", "status": "pending" if status == "expired" else status}
    data.pop("parentId", None)
    if isinstance(data.get("state"), dict) and "sessionId" in data["state"]:
        data["state"] = {**data["state"], "sessionId": "sess"}
    snapshot = from_wire(SessionSnapshot, data)
    store = InMemorySessionStore()
    store.restore_snapshots([snapshot])
    return store, snapshot


def _without(wire: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in wire.items() if k not in keys}


@SETTINGS
@given(snapshots(unknown=True), st.booleans())
def test_a_genkit_rewrite_of_what_it_was_handed_stores_the_snapshot_as_it_was(
    data: dict[str, Any], read_first: bool
) -> None:
    store, original = _stored(data)
    adapter = GenkitSessionStore(store.aio)

    async def rewrite() -> None:
        if read_first:  # Genkit's runtime usually loads the snapshot before it saves it
            await adapter.get_snapshot(snapshot_id=original.snapshot_id)
        await adapter.save_snapshot(original.snapshot_id, lambda theirs: theirs)

    asyncio.run(rewrite())
    after = store.get_snapshot(snapshot_id=original.snapshot_id)
    assert after is not None
    assert same_json(_without(to_wire(after), STAMPED), _without(to_wire(original), STAMPED))


@SETTINGS
@given(snapshots(unknown=True), st.booleans())
def test_a_genkit_turn_carrying_a_snapshots_messages_and_artifacts_over_keeps_their_stored_form(
    data: dict[str, Any], read_first: bool
) -> None:
    data = {**data, "status": "completed", "state": {**data.get("state", {}), "sessionId": "sess"}}
    data.pop("error", None)
    data.pop("finishReason", None)
    store, parent = _stored(data)
    adapter = GenkitSessionStore(store.aio)

    async def turn() -> None:
        if read_first:
            theirs = await adapter.get_snapshot(snapshot_id=parent.snapshot_id)
        else:  # a different adapter instance read it: this one must fetch the parent to merge it back
            theirs = await GenkitSessionStore(store.aio).get_snapshot(snapshot_id=parent.snapshot_id)
        assert theirs is not None
        state = theirs.state.model_copy(
            update={
                "messages": [
                    *(theirs.state.messages or []),
                    genkit.Message(role="user", content=[genkit.Part(text="next")]),
                ]
            }
        )

        def child(current: Any) -> Any:
            assert current is None
            return agent.SessionSnapshot(
                snapshot_id="child",
                session_id=parent.session_id,
                parent_id=parent.snapshot_id,
                created_at="2026-12-05T00:00:00Z",
                status="completed",
                state=state,
            )

        await adapter.save_snapshot("child", child)

    asyncio.run(turn())
    saved = store.get_snapshot(snapshot_id="child")
    assert saved is not None and saved.state is not None
    wire, before = to_wire(saved.state), to_wire(parent.state)
    assert same_json(wire.get("messages", [])[:-1], before.get("messages", []))
    assert same_json(wire["messages"][-1], {"role": "user", "content": [{"text": "next"}]})
    assert same_json(wire.get("artifacts"), before.get("artifacts"))
    assert same_json(wire.get("custom"), before.get("custom"))


@SETTINGS
@given(snapshots(unknown=True))
def test_a_genkit_rewrite_finishing_a_pending_turn_keeps_every_key_it_could_not_see(data: dict[str, Any]) -> None:
    data = {**data, "status": "pending", "state": {**data.get("state", {}), "sessionId": "sess"}}
    data.pop("finishReason", None)
    store, pending = _stored(data)
    adapter = GenkitSessionStore(store.aio)

    def finish(theirs: Any) -> Any:
        messages = [*(theirs.state.messages or []), genkit.Message(role="model", content=[genkit.Part(text="done")])]
        state = theirs.state.model_copy(update={"messages": messages})
        done = {"status": agent.SnapshotStatus.COMPLETED, "finish_reason": agent.AgentFinishReason.STOP, "state": state}
        return theirs.model_copy(update=done)

    asyncio.run(adapter.save_snapshot(pending.snapshot_id, finish))
    after = store.get_snapshot(snapshot_id=pending.snapshot_id)
    assert after is not None and after.state is not None
    wire, before = to_wire(after), to_wire(pending)
    assert (wire["status"], wire["finishReason"]) == ("completed", "stop")
    unknown = {k: v for k, v in before.items() if k not in wire or k in ("error", "heartbeatAt", "parentId")}
    assert same_json({k: wire.get(k) for k in unknown}, unknown)  # the snapshot's own keys Genkit cannot see
    state, stored = wire["state"], before["state"]
    assert same_json(state["messages"][:-1], stored.get("messages", []))
    assert same_json(
        {k: v for k, v in state.items() if k != "messages"}, {k: v for k, v in stored.items() if k != "messages"}
    )
