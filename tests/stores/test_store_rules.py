"""Every store rule S1-S12, against every store backend (see tests/conftest.py)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
import pytest

from genkit_sessions import (
    FrozenDict,
    GenkitError,
    Message,
    Messages,
    SessionSnapshot,
    SessionState,
    SnapshotStatus,
    TextPart,
)
from genkit_sessions.model.clock import parse_timestamp


def snap(
    snapshot_id: str,
    session_id: str | None = "s",
    parent_id: str | None = None,
    status: SnapshotStatus | str | None = SnapshotStatus.COMPLETED,
    text: str = "hello",
    custom: Any = None,
) -> SessionSnapshot:
    return SessionSnapshot(
        snapshot_id=snapshot_id,
        session_id=session_id,
        parent_id=parent_id,
        status=status,
        state=SessionState(session_id=session_id, messages=(Message.of_text("user", text),), custom=custom),
    )


def put(store: Any, snapshot: SessionSnapshot, context: Any = None) -> SessionSnapshot:
    saved = store.save_snapshot(snapshot.snapshot_id, lambda _: snapshot, context=context)
    assert saved is not None
    return saved


def error_of(action: Any) -> GenkitError:
    with pytest.raises(GenkitError) as caught:
        action()
    return caught.value


# --- S1 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("selectors", [{}, {"snapshot_id": "a", "session_id": "s"}], ids=["neither", "both"])
def test_s1_get_snapshot_needs_exactly_one_selector(store: Any, selectors: dict[str, str]) -> None:
    error = error_of(lambda: store.get_snapshot(**selectors))
    assert error.status == "INVALID_ARGUMENT"
    assert "exactly one" in error.message


@pytest.mark.parametrize("field", ["snapshot_id", "session_id"])
@pytest.mark.parametrize("bad", ["", "  ", "a\x00b", "x" * 513], ids=["empty", "blank", "control", "long"])
def test_s1_get_snapshot_rejects_invalid_ids(store: Any, field: str, bad: str) -> None:
    assert error_of(lambda: store.get_snapshot(**{field: bad})).status == "INVALID_ARGUMENT"


# --- S2 ----------------------------------------------------------------------------------------


def test_s2_absent_snapshot_and_session_read_as_none(store: Any) -> None:
    assert store.get_snapshot(snapshot_id="missing") is None
    assert store.get_snapshot(session_id="missing") is None


def test_s2_snapshot_of_another_tenant_reads_as_none(store: Any) -> None:
    put(store, snap("a"), context={"tenant": "acme"})
    assert store.get_snapshot(snapshot_id="a", context={"tenant": "globex"}) is None
    assert store.get_snapshot(session_id="s", context={"tenant": "globex"}) is None
    assert store.get_snapshot(snapshot_id="a", context={"tenant": "acme"}) is not None


# --- S3 ----------------------------------------------------------------------------------------


def test_s3_mutator_sees_none_then_the_current_snapshot(store: Any) -> None:
    seen: list[SessionSnapshot | None] = []

    def record(current: SessionSnapshot | None) -> SessionSnapshot:
        seen.append(current)
        return snap("a", text=f"write {len(seen)}")

    store.save_snapshot("a", record)
    first = store.get_snapshot(snapshot_id="a")
    store.save_snapshot("a", record)
    assert seen[0] is None
    assert seen[-1] == first
    assert store.get_snapshot(snapshot_id="a").state.messages[0].text == f"write {len(seen)}"


def test_s3_mutator_returning_none_writes_nothing(store: Any) -> None:
    assert store.save_snapshot("a", lambda _: None) is None
    assert store.get_snapshot(snapshot_id="a") is None
    original = put(store, snap("a"))
    assert store.save_snapshot("a", lambda _: None) is None
    assert store.get_snapshot(snapshot_id="a") == original


def test_s3_mutator_that_raises_leaves_the_store_unchanged(store: Any) -> None:
    original = put(store, snap("a"))

    def explode(_: SessionSnapshot | None) -> SessionSnapshot:
        raise ValueError("the mutator's own bug")

    with pytest.raises(ValueError, match="the mutator's own bug"):
        store.save_snapshot("a", explode)
    assert store.get_snapshot(snapshot_id="a") == original


def test_s3_async_mutator_is_rejected_with_invalid_argument(store: Any) -> None:
    async def mutator(_: SessionSnapshot | None) -> SessionSnapshot:
        return snap("a")

    error = error_of(lambda: store.save_snapshot("a", mutator))
    assert error.status == "INVALID_ARGUMENT" and "async" in error.message
    assert store.get_snapshot(snapshot_id="a") is None


def test_s3_mutator_returning_a_wrong_type_is_rejected(store: Any) -> None:
    error = error_of(lambda: store.save_snapshot("a", lambda _: {"snapshotId": "a"}))
    assert error.status == "INVALID_ARGUMENT"


# --- S4 ----------------------------------------------------------------------------------------


def test_s4_store_stamps_id_timestamps_and_default_status(store: Any) -> None:
    raw = SessionSnapshot(snapshot_id="ignored", state=SessionState(session_id="s"), created_at="1999-01-01T00:00:00Z")
    saved = store.save_snapshot("a", lambda _: raw)
    assert saved.snapshot_id == "a"
    assert saved.status is SnapshotStatus.COMPLETED
    assert saved.session_id == "s"
    assert saved.created_at != "1999-01-01T00:00:00Z"
    assert saved.updated_at == saved.created_at
    assert abs(parse_timestamp(saved.created_at) - datetime.now(timezone.utc)) < timedelta(minutes=1)
    assert store.get_snapshot(snapshot_id="a") == saved


def test_s4_created_at_is_kept_and_updated_at_advances(store: Any) -> None:
    first = put(store, snap("a", status="pending"))
    second = store.save_snapshot(
        "a", lambda cur: attrs.evolve(cur, status="completed", created_at="2000-01-01T00:00:00Z")
    )
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at


def test_s4_session_id_missing_everywhere_is_invalid_argument(store: Any) -> None:
    error = error_of(lambda: store.save_snapshot("a", lambda _: SessionSnapshot(snapshot_id="a")))
    assert error.status == "INVALID_ARGUMENT" and error.reason == "SESSION_ID_REQUIRED"


def test_s4_disagreeing_session_ids_are_invalid_argument(store: Any) -> None:
    bad = SessionSnapshot(snapshot_id="a", session_id="s", state=SessionState(session_id="t"))
    assert error_of(lambda: store.save_snapshot("a", lambda _: bad)).status == "INVALID_ARGUMENT"


@pytest.mark.parametrize("bad", ["", " ", "x\ny", "z" * 600], ids=["empty", "blank", "newline", "long"])
def test_s4_invalid_snapshot_or_session_ids_are_refused_on_write(store: Any, bad: str) -> None:
    assert error_of(lambda: store.save_snapshot(bad, lambda _: snap("a"))).status == "INVALID_ARGUMENT"
    assert error_of(lambda: store.save_snapshot("a", lambda _: snap("a", session_id=bad))).status == "INVALID_ARGUMENT"


# --- S5 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("terminal", ["completed", "failed", "aborted"])
@pytest.mark.parametrize("target", ["pending", "aborting", "completed", "failed", "aborted"])
def test_s5_terminal_status_is_absorbing(store: Any, terminal: str, target: str) -> None:
    original = put(store, snap("a", status=terminal))
    change = lambda cur: attrs.evolve(cur, status=target)  # noqa: E731
    if target == terminal:
        assert store.save_snapshot("a", change).status == terminal
        return
    error = error_of(lambda: store.save_snapshot("a", change))
    assert error.status == "FAILED_PRECONDITION"
    assert store.get_snapshot(snapshot_id="a") == original


def test_s5_terminal_snapshot_may_still_rewrite_its_state(store: Any) -> None:
    put(store, snap("a"))
    saved = store.save_snapshot("a", lambda cur: snap("a", text="edited"))
    assert saved.state.messages[0].text == "edited"


@pytest.mark.parametrize("target", ["aborting", "completed", "failed", "aborted"])
def test_s5_running_snapshot_moves_to_any_status(store: Any, target: str) -> None:
    put(store, snap("a", status="pending"))
    assert store.save_snapshot("a", lambda cur: attrs.evolve(cur, status=target)).status == target


def test_s5_expired_is_never_written(store: Any) -> None:
    error = error_of(lambda: store.save_snapshot("a", lambda _: snap("a", status="expired")))
    assert error.status == "INVALID_ARGUMENT" and "computed on read" in error.message
    assert store.get_snapshot(snapshot_id="a") is None


# --- S6 ----------------------------------------------------------------------------------------


def test_s6_snapshot_never_changes_session(store: Any) -> None:
    original = put(store, snap("a", status="pending"))
    error = error_of(lambda: store.save_snapshot("a", lambda _: snap("a", session_id="other", status="pending")))
    assert error.status == "FAILED_PRECONDITION"
    assert store.get_snapshot(snapshot_id="a") == original


def test_s6_snapshot_never_changes_parent(store: Any) -> None:
    put(store, snap("root"))
    put(store, snap("root2"))
    original = put(store, snap("a", parent_id="root", status="pending"))
    for parent in ("root2", None):
        error = error_of(lambda p=parent: store.save_snapshot("a", lambda cur: attrs.evolve(cur, parent_id=p)))
        assert error.status == "FAILED_PRECONDITION"
    assert store.get_snapshot(snapshot_id="a") == original


# --- S7 ----------------------------------------------------------------------------------------


def test_s7_parent_must_exist(store: Any) -> None:
    error = error_of(lambda: put(store, snap("a", parent_id="ghost")))
    assert error.status == "INVALID_ARGUMENT"
    assert store.get_snapshot(snapshot_id="a") is None


def test_s7_parent_must_be_in_the_same_session(store: Any) -> None:
    put(store, snap("p", session_id="other"))
    assert error_of(lambda: put(store, snap("a", parent_id="p"))).status == "INVALID_ARGUMENT"
    assert store.get_snapshot(snapshot_id="a") is None


def test_s7_parent_must_be_in_the_same_tenant(store: Any) -> None:
    put(store, snap("p"), context={"tenant": "acme"})
    assert error_of(lambda: put(store, snap("a", parent_id="p"), context={"tenant": "globex"})).status == (
        "INVALID_ARGUMENT"
    )
    put(store, snap("a", parent_id="p"), context={"tenant": "acme"})


# --- S8 ----------------------------------------------------------------------------------------


def test_s8_session_lookup_returns_the_most_recently_created_leaf(store: Any) -> None:
    put(store, snap("root"))
    put(store, snap("left", parent_id="root"))
    put(store, snap("right", parent_id="root", status="pending"))
    assert store.get_snapshot(session_id="s").snapshot_id == "right"
    put(store, snap("left-2", parent_id="left"))
    assert store.get_snapshot(session_id="s").snapshot_id == "left-2"
    # Updating an older leaf does not make it the session's leaf.
    store.save_snapshot("right", lambda cur: attrs.evolve(cur, status="completed"))
    assert store.get_snapshot(session_id="s").snapshot_id == "left-2"


def test_s8_sessions_have_independent_leaves(store: Any) -> None:
    put(store, snap("a1", session_id="a"))
    put(store, snap("b1", session_id="b"))
    put(store, snap("a2", session_id="a", parent_id="a1"))
    assert store.get_snapshot(session_id="a").snapshot_id == "a2"
    assert store.get_snapshot(session_id="b").snapshot_id == "b1"


# --- S9 ----------------------------------------------------------------------------------------


def test_s9_reads_cannot_change_what_is_stored(store: Any) -> None:
    put(store, snap("a", custom={"todo": ["pack"]}))
    read = store.get_snapshot(snapshot_id="a")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        read.status = SnapshotStatus.FAILED  # type: ignore[misc]
    with pytest.raises(TypeError):
        read.state.custom["todo"] = ["unpack"]
    assert isinstance(read.state.custom, FrozenDict)
    assert isinstance(read.state.messages, Messages) and isinstance(read.state.custom["todo"], tuple)
    with pytest.raises(TypeError):
        read.state.messages[0] = Message.of_text("user", "x")  # type: ignore[index]
    assert not hasattr(read.state.messages, "append")
    changed = attrs.evolve(read, state=attrs.evolve(read.state, messages=(Message.of_text("user", "x"),)))
    assert changed != read
    longer = read.state.messages + (Message.of_text("model", "shared"),)  # noqa: RUF005 (shares the backing list)
    assert len(longer) == 2 and len(read.state.messages) == 1
    assert store.get_snapshot(snapshot_id="a").state.messages[0].content == (TextPart("hello"),)
    assert len(store.get_snapshot(snapshot_id="a").state.messages) == 1


def test_s9_values_given_to_the_store_are_frozen_copies(store: Any) -> None:
    custom = {"todo": ["pack"]}
    put(store, snap("a", custom=custom))
    custom["todo"].append("sneaky")
    assert store.get_snapshot(snapshot_id="a").state.custom == {"todo": ("pack",)}


# --- S10 ---------------------------------------------------------------------------------------


def test_s10_same_ids_in_two_tenants_are_unrelated(store: Any) -> None:
    acme, globex = {"tenant": "acme"}, {"tenant": "globex"}
    put(store, snap("a", text="acme's"), context=acme)
    put(store, snap("a", text="globex's", status="pending"), context=globex)
    assert store.get_snapshot(snapshot_id="a", context=acme).state.messages[0].text == "acme's"
    assert store.get_snapshot(snapshot_id="a", context=globex).state.messages[0].text == "globex's"
    store.save_snapshot("a", lambda cur: attrs.evolve(cur, status="failed"), context=globex)
    assert store.get_snapshot(snapshot_id="a", context=acme).status is SnapshotStatus.COMPLETED
    assert store.get_snapshot(snapshot_id="a") is None


def test_s10_tenant_function_decides_the_tenant(make_store: Any) -> None:
    store = make_store(tenant_of=lambda ctx: (ctx or {}).get("auth", {}).get("org", ""))
    put(store, snap("a"), context={"auth": {"org": "acme"}})
    assert store.get_snapshot(snapshot_id="a", context={"auth": {"org": "acme"}}) is not None
    assert store.get_snapshot(snapshot_id="a", context={"auth": {"org": "globex"}}) is None


# --- S11 ---------------------------------------------------------------------------------------


def test_s11_list_snapshots_returns_the_tree_in_creation_order(store: Any) -> None:
    put(store, snap("root"))
    put(store, snap("b", parent_id="root"))
    put(store, snap("a", parent_id="root"))
    put(store, snap("other", session_id="t"))
    assert [s.snapshot_id for s in store.list_snapshots("s")] == ["root", "b", "a"]
    assert list(store.list_snapshots("nobody")) == []


def test_s11_delete_session_removes_its_whole_tree_only(store: Any) -> None:
    put(store, snap("root"))
    put(store, snap("child", parent_id="root"))
    put(store, snap("other", session_id="t"))
    assert store.delete_session("s") == 2
    assert store.get_snapshot(snapshot_id="root") is None
    assert store.get_snapshot(session_id="s") is None
    assert list(store.list_snapshots("s")) == []
    assert store.get_snapshot(snapshot_id="other") is not None
    assert store.delete_session("s") == 0


@pytest.mark.parametrize("running", ["pending", "aborting"])
def test_s11_abort_flips_a_running_snapshot_and_reports_what_it_was(store: Any, running: str) -> None:
    put(store, snap("a", status=running))
    assert store.abort_snapshot("a") == running
    assert store.get_snapshot(snapshot_id="a").status is SnapshotStatus.ABORTED


@pytest.mark.parametrize("terminal", ["completed", "failed", "aborted"])
def test_s11_abort_leaves_a_terminal_snapshot_alone(store: Any, terminal: str) -> None:
    original = put(store, snap("a", status=terminal))
    assert store.abort_snapshot("a") == terminal
    assert store.get_snapshot(snapshot_id="a") == original


def test_s11_abort_of_a_missing_snapshot_returns_none(store: Any) -> None:
    assert store.abort_snapshot("ghost") is None
    assert store.get_snapshot(snapshot_id="ghost") is None


def test_s11_heartbeat_stamps_a_running_snapshot(store: Any) -> None:
    put(store, snap("a", status="pending"))
    beat = store.heartbeat("a")
    assert beat.heartbeat_at is not None and beat.status is SnapshotStatus.PENDING
    assert store.get_snapshot(snapshot_id="a").heartbeat_at == beat.heartbeat_at
    later = store.heartbeat("a")
    assert later.heartbeat_at > beat.heartbeat_at


def test_s11_heartbeat_refuses_missing_and_terminal_snapshots(store: Any) -> None:
    assert error_of(lambda: store.heartbeat("ghost")).status == "NOT_FOUND"
    put(store, snap("a"))
    assert error_of(lambda: store.heartbeat("a")).status == "FAILED_PRECONDITION"


def test_s11_watch_status_streams_changes_and_ends_after_a_terminal_one(store: Any) -> None:
    put(store, snap("a", status="pending"))

    async def scenario() -> list[str]:
        seen: list[str] = []

        async def watch() -> None:
            async for status in store.watch_status("a"):
                seen.append(status.value)

        watcher = asyncio.create_task(watch())
        while not seen:
            await asyncio.sleep(0.01)
        await asyncio.to_thread(store.save_snapshot, "a", lambda cur: attrs.evolve(cur, status="aborting"))
        while len(seen) < 2:
            await asyncio.sleep(0.01)
        await asyncio.to_thread(store.abort_snapshot, "a")
        await asyncio.wait_for(watcher, timeout=20)
        return seen

    assert asyncio.run(scenario()) == ["pending", "aborting", "aborted"]


def test_s11_watch_status_of_a_missing_snapshot_is_not_found(store: Any) -> None:
    async def scenario() -> None:
        async for _ in store.watch_status("ghost"):
            pass

    with pytest.raises(GenkitError) as caught:
        asyncio.run(scenario())
    assert caught.value.status == "NOT_FOUND"


def test_s11_async_face_offers_the_same_operations(store: Any) -> None:
    aio = store.aio

    async def scenario() -> None:
        saved = await aio.save_snapshot("a", lambda _: snap("a", status="pending"))
        assert (await aio.get_snapshot(snapshot_id="a")) == saved
        assert (await aio.get_snapshot(session_id="s")) == saved
        assert [s.snapshot_id for s in await aio.list_snapshots("s")] == ["a"]
        assert (await aio.heartbeat("a")).heartbeat_at is not None
        assert (await aio.abort_snapshot("a")) is SnapshotStatus.PENDING
        assert (await aio.delete_session("s")) == 1
        assert (await aio.get_snapshot(snapshot_id="a")) is None

    asyncio.run(scenario())


# --- S12 ---------------------------------------------------------------------------------------


def test_s12_a_bad_tenant_function_surfaces_as_a_status_error(make_store: Any) -> None:
    store = make_store(tenant_of=lambda ctx: 42)
    error = error_of(lambda: store.get_snapshot(snapshot_id="a"))
    assert error.status == "INVALID_ARGUMENT" and "tenant" in error.message


def test_s11_a_watcher_abandoned_with_its_event_loop_never_breaks_a_writer(store: Any) -> None:
    put(store, snap("a", status="pending"))

    async def start_watching() -> None:
        stream = store.watch_status("a")
        assert (await stream.__anext__()).value == "pending"  # subscribed, then the loop goes away

    loop = asyncio.new_event_loop()
    loop.run_until_complete(start_watching())
    loop.close()
    assert store.abort_snapshot("a") is SnapshotStatus.PENDING
    assert store.get_snapshot(snapshot_id="a").status is SnapshotStatus.ABORTED


def test_s11_restore_refuses_a_batch_with_a_sessionless_snapshot_and_writes_none_of_it(store: Any) -> None:
    good = attrs.evolve(snap("a"), created_at="2026-01-01T00:00:00Z")
    sessionless = SessionSnapshot(snapshot_id="b", created_at="2026-01-01T00:00:00Z")
    error = error_of(lambda: store.restore_snapshots([good, sessionless]))
    assert error.status == "INVALID_ARGUMENT" and error.reason == "SESSION_ID_REQUIRED"
    assert store.get_snapshot(snapshot_id="a") is None
