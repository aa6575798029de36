"""S11 watches end: every write's status reaches a watcher, and no watch outlives its snapshot.

Each test runs on every store backend (in memory, DynamoDB on in-process moto and on the moto server).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import pytest

from genkit_sessions import GenkitError, Message, SessionSnapshot, SessionState, SnapshotStatus

_TIMEOUT = 20.0


def snap(snapshot_id: str, status: str = "completed", parent_id: str | None = None) -> SessionSnapshot:
    return SessionSnapshot(
        snapshot_id=snapshot_id,
        session_id="s",
        parent_id=parent_id,
        status=status,
        created_at="2026-01-01T00:00:00.000000Z",
        state=SessionState(session_id="s", messages=(Message.of_text("user", snapshot_id),)),
    )


def put(store: Any, snapshot: SessionSnapshot, context: Any = None) -> None:
    store.save_snapshot(snapshot.snapshot_id, lambda _: snapshot, context=context)


async def watch_while(
    store: Any, snapshot_id: str, act: Callable[[list[str]], Awaitable[None]], context: Any = None
) -> tuple[list[str], GenkitError | None]:
    """Watch ``snapshot_id``; once its first status arrives, run ``act`` (given the statuses seen so far);
    collect what the watch yields and the error that ended it (None when it ended after a terminal one)."""
    seen: list[str] = []
    first = asyncio.Event()

    async def watch() -> GenkitError | None:
        try:
            async for status in store.watch_status(snapshot_id, context=context):
                seen.append(SnapshotStatus(status).value)
                first.set()
        except GenkitError as error:
            first.set()
            return error
        return None

    watcher = asyncio.create_task(watch())
    await asyncio.wait_for(first.wait(), _TIMEOUT)
    await act(seen)
    return seen, await asyncio.wait_for(watcher, _TIMEOUT)


def test_a_watch_ends_with_not_found_when_its_session_is_deleted(store: Any) -> None:
    put(store, snap("a", "pending"))

    async def delete(_: list[str]) -> None:
        assert await asyncio.to_thread(store.delete_session, "s") == 1

    seen, error = asyncio.run(watch_while(store, "a", delete))
    assert seen == ["pending"]
    assert error is not None and error.status == "NOT_FOUND" and "deleted" in error.message


def test_a_watch_of_a_snapshot_whose_session_was_deleted_is_not_found_at_once(store: Any) -> None:
    put(store, snap("a", "pending"))
    store.delete_session("s")

    async def watch() -> None:
        async for _ in store.watch_status("a"):
            pytest.fail("a deleted snapshot yielded a status")

    with pytest.raises(GenkitError) as caught:
        asyncio.run(watch())
    assert caught.value.status == "NOT_FOUND"


def test_a_watch_yields_the_terminal_status_a_restore_sets_and_ends(store: Any) -> None:
    put(store, snap("a", "pending"))

    async def restore(_: list[str]) -> None:
        await asyncio.to_thread(store.restore_snapshots, [snap("a", "completed")])

    seen, error = asyncio.run(watch_while(store, "a", restore))
    assert error is None
    assert seen == ["pending", "completed"]


async def seen_until(seen: list[str], status: str) -> None:
    for _ in range(_WAIT_STEPS):
        if seen[-1] == status:
            return
        await asyncio.sleep(0.01)
    pytest.fail(f"the watch never yielded {status}: {seen}")


_WAIT_STEPS = 2000


def test_a_watch_follows_a_restore_through_a_running_status_then_a_write_that_ends_it(store: Any) -> None:
    put(store, snap("a", "pending"))

    async def restore_then_abort(seen: list[str]) -> None:
        await asyncio.to_thread(store.restore_snapshots, [snap("a", "aborting")])
        await seen_until(seen, "aborting")
        assert await asyncio.to_thread(store.abort_snapshot, "a") is SnapshotStatus.ABORTING

    seen, error = asyncio.run(watch_while(store, "a", restore_then_abort))
    assert error is None
    assert seen == ["pending", "aborting", "aborted"]


def test_a_watch_ends_with_the_terminal_status_any_save_sets(store: Any) -> None:
    put(store, snap("a", "pending"))

    async def fail(_: list[str]) -> None:
        await asyncio.to_thread(
            store.save_snapshot, "a", lambda current: attrs.evolve(current, status=SnapshotStatus.FAILED)
        )

    seen, error = asyncio.run(watch_while(store, "a", fail))
    assert error is None
    assert seen == ["pending", "failed"]


def test_a_watch_sees_only_its_own_tenant_and_ends_when_that_tenant_deletes(store: Any) -> None:
    acme, globex = {"tenant": "acme"}, {"tenant": "globex"}
    put(store, snap("a", "pending"), context=acme)
    put(store, snap("a", "pending"), context=globex)

    async def delete_elsewhere_then_here(seen: list[str]) -> None:
        await asyncio.to_thread(store.delete_session, "s", context=globex)
        await asyncio.to_thread(store.save_snapshot, "a", lambda c: attrs.evolve(c, status="aborting"), context=acme)
        await seen_until(seen, "aborting")
        await asyncio.to_thread(store.delete_session, "s", context=acme)

    seen, error = asyncio.run(watch_while(store, "a", delete_elsewhere_then_here, context=acme))
    assert error is not None and error.status == "NOT_FOUND"
    assert seen == ["pending", "aborting"]
