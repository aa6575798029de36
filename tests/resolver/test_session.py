"""Recording a turn's end through the session a resolution returns."""

from __future__ import annotations

import asyncio

import pytest

from genkit_sessions import (
    AgentInit,
    Artifact,
    ErrorInfo,
    GenkitError,
    InMemorySessionStore,
    Message,
    SessionResolver,
    SnapshotStatus,
    TextPart,
)


def fresh(store: InMemorySessionStore) -> object:
    resolution = SessionResolver.resolve(store, True, AgentInit())
    assert resolution.session is not None
    return resolution.session


def test_save_writes_a_child_of_the_origin_with_status_finish_reason_and_error() -> None:
    store = InMemorySessionStore()
    session = SessionResolver.resolve(store, True, AgentInit()).session
    assert session is not None
    session.add_messages(Message.of_text("user", "hi"))
    first = session.save(finish_reason="stop")
    assert first.parent_id is None and first.status is SnapshotStatus.COMPLETED and first.finish_reason == "stop"
    session.add_messages(Message.of_text("user", "again"))
    failed = session.save("failed", finish_reason="failed", error=GenkitError("DEADLINE_EXCEEDED", "model timed out"))
    assert failed.parent_id == first.snapshot_id
    assert failed.error == ErrorInfo(status="DEADLINE_EXCEEDED", message="model timed out")
    assert [m.text for m in failed.state.message_list] == ["hi", "again"]
    assert store.get_snapshot(session_id=session.id) == failed


def test_pending_save_is_updated_in_place_by_the_final_save() -> None:
    store = InMemorySessionStore()
    session = SessionResolver.resolve(store, True, AgentInit()).session
    assert session is not None
    reserved = session.snapshot_id
    pending = session.save("pending", finish_reason="detached")
    store.heartbeat(reserved)
    session.add_messages(Message.of_text("model", "done"))
    done = session.save(finish_reason="stop")
    assert pending.snapshot_id == done.snapshot_id == reserved
    assert done.created_at == pending.created_at and done.heartbeat_at is not None
    assert [s.snapshot_id for s in store.list_snapshots(session.id)] == [reserved]
    assert session.snapshot_id != reserved and session.origin == done


def test_a_turn_aborted_while_running_cannot_be_completed() -> None:
    store = InMemorySessionStore()
    session = SessionResolver.resolve(store, True, AgentInit()).session
    assert session is not None
    session.save("pending")
    assert store.abort_snapshot(session.snapshot_id) is SnapshotStatus.PENDING
    with pytest.raises(GenkitError) as caught:
        session.save(finish_reason="stop")
    assert caught.value.status == "FAILED_PRECONDITION"
    assert store.get_snapshot(snapshot_id=session.snapshot_id).status is SnapshotStatus.ABORTED


def test_artifacts_with_the_same_name_replace_and_custom_state_updates() -> None:
    store = InMemorySessionStore()
    session = SessionResolver.resolve(store, True, AgentInit()).session
    assert session is not None
    session.add_artifacts(Artifact(name="plan.md", parts=[TextPart("v1")]), Artifact(parts=[TextPart("anon")]))
    session.add_artifacts(Artifact(name="plan.md", parts=[TextPart("v2")]))
    session.set_custom({"step": 1})
    session.update_custom(lambda c: {**c, "step": c["step"] + 1})
    saved = session.save()
    assert [(a.name, a.parts[0].text) for a in saved.state.artifact_list] == [(None, "anon"), ("plan.md", "v2")]
    assert saved.state.custom == {"step": 2}


def test_async_session_saves_with_asave_and_refuses_save() -> None:
    store = InMemorySessionStore()

    async def turn() -> None:
        resolution = await SessionResolver.aresolve(store.aio, True, AgentInit())
        session = resolution.session
        assert session is not None
        with pytest.raises(GenkitError, match="asave"):
            session.save()
        saved = await session.asave(finish_reason="stop")
        assert (await store.aio.get_snapshot(session_id=session.id)) == saved

    asyncio.run(turn())


def test_sync_session_refuses_asave() -> None:
    session = SessionResolver.resolve(InMemorySessionStore(), True, AgentInit()).session
    assert session is not None
    with pytest.raises(GenkitError, match="save"):
        asyncio.run(session.asave())


def test_artifacts_of_one_name_in_one_call_keep_the_last_as_successive_calls_would() -> None:
    draft = Artifact(name="report", parts=[TextPart("draft")])
    other = Artifact(name="notes", parts=[TextPart("notes")])
    final = Artifact(name="report", parts=[TextPart("final")])
    anonymous = Artifact(parts=[TextPart("anon")])
    one_call = SessionResolver.resolve(None, False, None).session
    successive = SessionResolver.resolve(None, False, None).session
    assert one_call is not None and successive is not None
    one_call.add_artifacts(draft, anonymous, other, final, anonymous)
    for artifact in (draft, anonymous, other, final, anonymous):
        successive.add_artifacts(artifact)
    texts = [(a.name, a.parts[0].text) for a in one_call.state.artifact_list]
    assert texts == [(None, "anon"), ("notes", "notes"), ("report", "final"), (None, "anon")]
    assert one_call.state.artifact_list == successive.state.artifact_list
