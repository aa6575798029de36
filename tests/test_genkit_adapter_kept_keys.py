"""G3 through a real Genkit agent, for items Genkit writes back in another form: a part carrying an explicit
null for another part kind (``"media": null``, as writers that serialise absent fields as null send) and a
message with empty ``metadata``. Genkit's dump drops the null and its agent drops the empty metadata; the
keys Genkit's models refuse (``x-lang``, ``x-k``) stay in our store across a turn and a rewrite."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from genkit_sessions import InMemorySessionStore, SessionSnapshot, from_wire, to_wire

pytest.importorskip("genkit")
pytest.importorskip("genkit.exp.agent")

from genkit_sessions.genkit import GenkitSessionStore
from tests.genkit_scenarios import make_agent

USER = {"role": "user", "content": [{"text": "hello", "media": None, "x-lang": "en"}]}
STATE = {"sessionId": "s1", "messages": [USER, {"role": "model", "content": [{"text": "echo hello"}]}]}
ROOT = {
    "snapshotId": "root",
    "sessionId": "s1",
    "createdAt": "2026-01-01T00:00:00Z",
    "status": "completed",
    "state": STATE,
}


def _turn_from(root: dict[str, Any]) -> dict[str, Any]:
    async def scenario() -> Any:
        ours = InMemorySessionStore()
        await ours.aio.restore_snapshots([from_wire(SessionSnapshot, root)])
        agent = make_agent(GenkitSessionStore(ours.aio))
        out = await agent.chat(snapshot_id="root").send("more")
        return to_wire(await ours.aio.get_snapshot(snapshot_id=out.snapshot_id))

    child: dict[str, Any] = asyncio.run(scenario())
    return child


def test_a_genkit_turn_keeps_a_refused_key_on_a_part_with_a_null_kind_key() -> None:
    child = _turn_from(ROOT)
    assert child["state"]["messages"][0] == USER


def test_a_genkit_rewrite_keeps_a_refused_key_on_a_part_with_a_null_kind_key() -> None:
    async def scenario() -> Any:
        ours = InMemorySessionStore()
        await ours.aio.restore_snapshots([from_wire(SessionSnapshot, {**ROOT, "status": "pending"})])
        adapter = GenkitSessionStore(ours.aio, remember=0)
        await adapter.save_snapshot(
            "root", lambda existing: existing.model_copy(update={"heartbeat_at": "2026-01-01T00:00:05+00:00"})
        )
        return to_wire(await ours.aio.get_snapshot(snapshot_id="root"))

    stored = asyncio.run(scenario())
    assert stored["state"]["messages"][0] == USER


def test_a_genkit_turn_keeps_a_refused_key_on_a_message_with_empty_metadata() -> None:
    model = {"role": "model", "content": [{"text": "yo"}], "metadata": {}, "x-k": 1}
    child = _turn_from(
        {**ROOT, "state": {"sessionId": "s1", "messages": [{"role": "user", "content": [{"text": "hi"}]}, model]}}
    )
    assert child["state"]["messages"][1] == model


def test_a_message_genkit_changed_is_stored_as_genkit_wrote_it() -> None:
    """The tolerance is for Genkit's own normalisations only: null in free-form JSON still tells messages
    apart, so a stored message is never put back for one that differs from it."""
    from genkit_sessions.genkit import _match_form

    assert _match_form({"role": "user", "content": [{"text": "a", "media": None}], "metadata": {}}) == _match_form(
        {"role": "user", "content": [{"text": "a"}]}
    )
    assert _match_form({"role": "user", "content": [{"data": {"a": None}}]}) != _match_form(
        {"role": "user", "content": [{"data": {}}]}
    )
    assert _match_form({"role": "user", "content": [{"text": "a"}], "metadata": {"k": 1}}) != _match_form(
        {"role": "user", "content": [{"text": "a"}]}
    )
